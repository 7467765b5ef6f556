package compat_test

import (
	"testing"

	"github.com/xdptables/xdptables/compat"
)

// TestMatchBList checks the -L rows of the matches in match_*.go (helper
// b) against what iptables-nft 1.8.9 printed for the same rules: with -n
// (numeric) always, and without -n where the row does not depend on
// /etc/passwd or /etc/protocols.
func TestMatchBList(t *testing.T) {
	tests := []struct {
		fam     compat.Family
		args    []string
		numeric string
		names   string // "" when not checked
	}{
		{compat.IPv4, []string{"-A", "INPUT", "-m", "addrtype", "!", "--src-type", "LOCAL,UNICAST", "!", "--dst-type", "BROADCAST"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            ADDRTYPE match src-type !UNICAST,LOCAL dst-type !BROADCAST\n",
			"           all  --  anywhere             anywhere             ADDRTYPE match src-type !UNICAST,LOCAL dst-type !BROADCAST\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "addrtype", "--dst-type", "local", "--limit-iface-in"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            ADDRTYPE match dst-type LOCAL limit-in\n",
			"           all  --  anywhere             anywhere             ADDRTYPE match dst-type LOCAL limit-in\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "iprange", "!", "--src-range", "1.1.1.1-1.1.1.5", "!", "--dst-range", "2.2.2.2-2.2.2.9"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            source IP range ! 1.1.1.1-1.1.1.5 destination IP range ! 2.2.2.2-2.2.2.9\n",
			"           all  --  anywhere             anywhere             source IP range ! 1.1.1.1-1.1.1.5 destination IP range ! 2.2.2.2-2.2.2.9\n"},
		{compat.IPv6, []string{"-A", "INPUT", "-m", "iprange", "--src-range", "2001:db8::1-2001:db8::5", "!", "--dst-range", "::1-::2"},
			"           0    --  ::/0                 ::/0                 source IP range 2001:db8::1-2001:db8::5 destination IP range ! ::1-::2\n",
			"           all  --  anywhere             anywhere             source IP range 2001:db8::1-2001:db8::5 destination IP range ! ::1-::2\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "length", "!", "--length", "100:200"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            length !100:200\n",
			"           all  --  anywhere             anywhere             length !100:200\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "length", "--length", ":200"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            length 0:200\n",
			"           all  --  anywhere             anywhere             length 0:200\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "mac", "!", "--mac-source", "00:11:22:aa:BB:cc"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            MAC ! 00:11:22:aa:bb:cc\n",
			"           all  --  anywhere             anywhere             MAC ! 00:11:22:aa:bb:cc\n"},
		{compat.IPv4, []string{"-A", "FORWARD", "-m", "physdev", "--physdev-is-bridged", "-j", "ACCEPT"},
			"ACCEPT     0    --  0.0.0.0/0            0.0.0.0/0            PHYSDEV match --physdev-is-bridged\n",
			"ACCEPT     all  --  anywhere             anywhere             PHYSDEV match --physdev-is-bridged\n"},
		{compat.IPv4, []string{"-A", "FORWARD", "-m", "physdev", "!", "--physdev-in", "eth0", "!", "--physdev-out", "eth1", "!", "--physdev-is-in", "!", "--physdev-is-out"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            PHYSDEV match ! --physdev-is-in ! --physdev-in eth0 ! --physdev-is-out ! --physdev-out eth1\n",
			"           all  --  anywhere             anywhere             PHYSDEV match ! --physdev-is-in ! --physdev-in eth0 ! --physdev-is-out ! --physdev-out eth1\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "pkttype", "--pkt-type", "broadcast", "-j", "DROP"},
			"DROP       0    --  0.0.0.0/0            0.0.0.0/0            PKTTYPE = broadcast\n",
			"DROP       all  --  anywhere             anywhere             PKTTYPE = broadcast\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "pkttype", "!", "--pkt-type", "multicast"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            PKTTYPE != multicast\n",
			"           all  --  anywhere             anywhere             PKTTYPE != multicast\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "statistic", "--mode", "random", "!", "--probability", "0.25"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            statistic mode random ! probability 0.25000000000\n",
			"           all  --  anywhere             anywhere             statistic mode random ! probability 0.25000000000\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "statistic", "--mode", "random", "--probability", "0.333333"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            statistic mode random probability 0.33333300008\n",
			"           all  --  anywhere             anywhere             statistic mode random probability 0.33333300008\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "statistic", "--mode", "nth", "--every", "3", "--packet", "2"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            statistic mode nth every 3 packet 2\n",
			"           all  --  anywhere             anywhere             statistic mode nth every 3 packet 2\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "statistic", "--mode", "nth", "!", "--every", "3", "--packet", "0"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            statistic mode nth ! every 3\n",
			"           all  --  anywhere             anywhere             statistic mode nth ! every 3\n"},
		{compat.IPv4, []string{"-A", "OUTPUT", "-m", "owner", "!", "--uid-owner", "1000-2000"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            ! owner UID match 1000-2000\n",
			""},
		{compat.IPv4, []string{"-A", "OUTPUT", "-m", "owner", "--uid-owner", "0", "--gid-owner", "0", "--suppl-groups"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            owner UID match 0 owner GID match 0 incl. suppl. groups\n",
			""},
		{compat.IPv4, []string{"-A", "OUTPUT", "-m", "owner", "!", "--socket-exists", "--uid-owner", "5"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            ! owner socket exists owner UID match 5\n",
			""},
		{compat.IPv4, []string{"-t", "mangle", "-A", "PREROUTING", "-p", "tcp", "-m", "socket", "--transparent", "-j", "ACCEPT"},
			"ACCEPT     6    --  0.0.0.0/0            0.0.0.0/0            socket --transparent\n",
			""},
		{compat.IPv4, []string{"-t", "mangle", "-A", "PREROUTING", "-m", "socket", "--nowildcard", "--transparent", "--restore-skmark"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            socket --transparent --nowildcard --restore-skmark\n",
			"           all  --  anywhere             anywhere             socket --transparent --nowildcard --restore-skmark\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "ttl", "!", "--ttl-eq", "64"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            TTL match TTL != 64\n",
			"           all  --  anywhere             anywhere             TTL match TTL != 64\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "ttl", "--ttl-gt", "0x10"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            TTL match TTL > 16\n",
			"           all  --  anywhere             anywhere             TTL match TTL > 16\n"},
		{compat.IPv6, []string{"-A", "INPUT", "-m", "hl", "--hl-lt", "2"},
			"           0    --  ::/0                 ::/0                 HL match HL < 2\n",
			"           all  --  anywhere             anywhere             HL match HL < 2\n"},
		{compat.IPv6, []string{"-A", "INPUT", "-m", "hl", "!", "--hl-eq", "255"},
			"           0    --  ::/0                 ::/0                 HL match HL != 255\n",
			"           all  --  anywhere             anywhere             HL match HL != 255\n"},
		{compat.IPv6, []string{"-A", "INPUT", "-m", "rt", "!", "--rt-type", "2", "!", "--rt-segsleft", "1:5", "!", "--rt-len", "8"},
			"           0    --  ::/0                 ::/0                 rt type:!2 segslefts:!1:5 length:!8\n",
			"           all  --  anywhere             anywhere             rt type:!2 segslefts:!1:5 length:!8\n"},
		{compat.IPv6, []string{"-A", "INPUT", "-m", "rt", "--rt-type", "0", "--rt-0-addrs", "2001:db8::1,2001:db8::2", "--rt-0-not-strict"},
			"           0    --  ::/0                 ::/0                 rt type:0 0-addrs 2001:db8::1,2001:db8::2 0-not-strict\n",
			"           all  --  anywhere             anywhere             rt type:0 0-addrs 2001:db8::1,2001:db8::2 0-not-strict\n"},
		{compat.IPv6, []string{"-A", "INPUT", "-m", "rt", "!", "--rt-segsleft", "0:4294967295"},
			"           0    --  ::/0                 ::/0                 rt segslefts:!0:4294967295\n",
			"           all  --  anywhere             anywhere             rt segslefts:!0:4294967295\n"},
		{compat.IPv6, []string{"-A", "INPUT", "-m", "frag", "!", "--fragid", "100:200", "!", "--fraglen", "8"},
			"           0    --  ::/0                 ::/0                 frag ids:!100:200 length:!8\n",
			"           all  --  anywhere             anywhere             frag ids:!100:200 length:!8\n"},
		{compat.IPv6, []string{"-A", "INPUT", "-m", "frag", "--fragres", "--fragfirst", "--fragmore"},
			"           0    --  ::/0                 ::/0                 frag  reserved first more\n",
			"           all  --  anywhere             anywhere             frag  reserved first more\n"},
		{compat.IPv6, []string{"-A", "INPUT", "-m", "ipv6header", "!", "--header", "hop,dst,route,frag,auth,esp,none,prot", "--soft"},
			"           0    --  ::/0                 ::/0                 ipv6header flags:!0xFF soft\n",
			""},
		{compat.IPv6, []string{"-A", "INPUT", "-m", "ipv6header", "--header", "frag"},
			"           0    --  ::/0                 ::/0                 ipv6header flags:0x10\n",
			""},
		{compat.IPv4, []string{"-A", "FORWARD", "-p", "tcp", "--tcp-flags", "SYN,RST", "SYN", "-m", "tcpmss", "--mss", "1400:1536", "-j", "DROP"},
			"DROP       6    --  0.0.0.0/0            0.0.0.0/0            tcp flags:0x06/0x02 tcpmss match 1400:1536\n",
			""},
		{compat.IPv4, []string{"-A", "INPUT", "-p", "tcp", "-m", "tcpmss", "!", "--mss", "536:"},
			"           6    --  0.0.0.0/0            0.0.0.0/0            tcpmss match !536:65535\n",
			""},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "dscp", "!", "--dscp-class", "af41"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            DSCP match !0x22\n",
			"           all  --  anywhere             anywhere             DSCP match !0x22\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "dscp", "--dscp", "10"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            DSCP match 0x0a\n",
			"           all  --  anywhere             anywhere             DSCP match 0x0a\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "string", "!", "--string", "GET /", "--algo", "kmp", "--from", "10", "--to", "200"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            STRING match ! \"GET /\" ALGO name kmp FROM 10 TO 200\n",
			"           all  --  anywhere             anywhere             STRING match ! \"GET /\" ALGO name kmp FROM 10 TO 200\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "string", "--hex-string", "|00 01|abc", "--algo", "bm", "--icase"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            STRING match  \"|0001616263|\" ALGO name bm ICASE\n",
			"           all  --  anywhere             anywhere             STRING match  \"|0001616263|\" ALGO name bm ICASE\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "string", "--string", "a\"b\\c", "--algo", "bm"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            STRING match  \"a\\\"b\\\\c\" ALGO name bm\n",
			"           all  --  anywhere             anywhere             STRING match  \"a\\\"b\\\\c\" ALGO name bm\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-p", "esp", "-m", "esp", "!", "--espspi", "100:200"},
			"           50   --  0.0.0.0/0            0.0.0.0/0            esp spis:!100:200\n",
			""},
		{compat.IPv4, []string{"-A", "INPUT", "-p", "ah", "-m", "ah", "--ahspi", "500"},
			"           51   --  0.0.0.0/0            0.0.0.0/0            ah spi:500\n",
			""},
		{compat.IPv6, []string{"-A", "INPUT", "-m", "ah", "--ahspi", "500", "--ahlen", "4", "--ahres"},
			"           0    --  ::/0                 ::/0                 ah spi:500length:4 reserved\n",
			"           all  --  anywhere             anywhere             ah spi:500length:4 reserved\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "cpu", "!", "--cpu", "3"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            cpu ! 3\n",
			"           all  --  anywhere             anywhere             cpu ! 3\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "helper", "!", "--helper", "sip"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            helper match ! \"sip\"\n",
			"           all  --  anywhere             anywhere             helper match ! \"sip\"\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "quota", "!", "--quota", "1000"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            quota: 1000 bytes\n",
			"           all  --  anywhere             anywhere             quota: 1000 bytes\n"},
	}
	for _, tc := range tests {
		cmd, err := compat.Parse(tc.fam, tc.args, compat.ParseOptions{})
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if got := (compat.ListFormat{Numeric: true}).ListRule(cmd.Rules[0], 1); got != tc.numeric {
			t.Errorf("%v -L -n:\n got %q\nwant %q", tc.args, got, tc.numeric)
		}
		if tc.names == "" {
			continue
		}
		if got := (compat.ListFormat{}).ListRule(cmd.Rules[0], 1); got != tc.names {
			t.Errorf("%v -L:\n got %q\nwant %q", tc.args, got, tc.names)
		}
	}
}
