package compat

import (
	"strings"
	"testing"
)

// TestMatchAList checks the -L rows of the icmp, icmp6, multiport,
// conntrack, state, comment, set, limit, recent, mark and connmark
// matches against what iptables-nft 1.8.9 printed for the same rules
// (`-L INPUT -n` and `-L INPUT`). The non-numeric rows use the
// service and host names of /etc/services and /etc/hosts.
func TestMatchAList(t *testing.T) {
	tests := []struct {
		fam     Family
		args    []string
		numeric string
		names   string
	}{
		{IPv4, []string{"-A", "INPUT", "-p", "icmp", "--icmp-type", "echo-request"},
			"           1    --  0.0.0.0/0            0.0.0.0/0            icmptype 8",
			"           icmp --  anywhere             anywhere             icmp echo-request"},
		{IPv4, []string{"-A", "INPUT", "-p", "icmp", "!", "--icmp-type", "8"},
			"           1    --  0.0.0.0/0            0.0.0.0/0            icmp !type 8",
			"           icmp --  anywhere             anywhere             icmp !echo-request"},
		{IPv4, []string{"-A", "INPUT", "-p", "icmp", "--icmp-type", "3/4"},
			"           1    --  0.0.0.0/0            0.0.0.0/0            icmptype 3 code 4",
			"           icmp --  anywhere             anywhere             icmp fragmentation-needed"},
		{IPv4, []string{"-A", "INPUT", "-p", "icmp", "--icmp-type", "any"},
			"           1    --  0.0.0.0/0            0.0.0.0/0            icmptype 255",
			"           icmp --  anywhere             anywhere             icmp any"},
		{IPv4, []string{"-A", "INPUT", "-p", "icmp", "--icmp-type", "99/0"},
			"           1    --  0.0.0.0/0            0.0.0.0/0            icmptype 99 code 0",
			"           icmp --  anywhere             anywhere             icmptype 99 code 0"},
		{IPv4, []string{"-A", "INPUT", "-p", "icmp", "--icmp-type", "3/8"},
			"           1    --  0.0.0.0/0            0.0.0.0/0            icmptype 3 code 8",
			"           icmp --  anywhere             anywhere             icmptype 3 code 8"},
		{IPv6, []string{"-A", "INPUT", "-p", "icmpv6", "--icmpv6-type", "echo-request"},
			"           58   --  ::/0                 ::/0                 ipv6-icmptype 128",
			"           ipv6-icmp --  anywhere             anywhere             ipv6-icmp echo-request"},
		{IPv6, []string{"-A", "INPUT", "-p", "icmpv6", "!", "--icmpv6-type", "1/4"},
			"           58   --  ::/0                 ::/0                 ipv6-icmp !type 1 code 4",
			"           ipv6-icmp --  anywhere             anywhere             ipv6-icmp !port-unreachable"},
		{IPv6, []string{"-A", "INPUT", "-p", "icmpv6", "--icmpv6-type", "2/1"},
			"           58   --  ::/0                 ::/0                 ipv6-icmptype 2 code 1",
			"           ipv6-icmp --  anywhere             anywhere             ipv6-icmptype 2 code 1"},
		{IPv4, []string{"-A", "INPUT", "-p", "tcp", "-m", "multiport", "--dports", "80,443,22"},
			"           6    --  0.0.0.0/0            0.0.0.0/0            multiport dports 80,443,22",
			"           tcp  --  anywhere             anywhere             multiport dports http,https,ssh"},
		{IPv4, []string{"-A", "INPUT", "-p", "tcp", "-m", "multiport", "!", "--sports", "1:1024,2000"},
			"           6    --  0.0.0.0/0            0.0.0.0/0            multiport sports  !1:1024,2000",
			"           tcp  --  anywhere             anywhere             multiport sports  !tcpmux:1024,cisco-sccp"},
		{IPv4, []string{"-A", "INPUT", "-p", "udp", "-m", "multiport", "--ports", "53,67:68"},
			"           17   --  0.0.0.0/0            0.0.0.0/0            multiport ports 53,67:68",
			"           udp  --  anywhere             anywhere             multiport ports domain,bootps:bootpc"},
		{IPv4, []string{"-A", "INPUT", "-p", "sctp", "-m", "multiport", "--dports", "1,2"},
			"           132  --  0.0.0.0/0            0.0.0.0/0            multiport dports 1,2",
			"           sctp --  anywhere             anywhere             multiport dports 1,2"},
		{IPv4, []string{"-A", "INPUT", "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            ctstate RELATED,ESTABLISHED",
			"           all  --  anywhere             anywhere             ctstate RELATED,ESTABLISHED"},
		{IPv4, []string{"-A", "INPUT", "-m", "conntrack", "!", "--ctstate", "NEW", "--ctproto", "tcp", "--ctorigsrc", "127.0.0.1", "--ctorigdst", "10.0.0.0/8", "--ctrepldst", "0.0.0.0/0"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            ! ctstate NEW ctproto 6 ctorigsrc 127.0.0.1 ctorigdst 10.0.0.0/8 ctrepldst 0.0.0.0/0",
			"           all  --  anywhere             anywhere             ! ctstate NEW ctproto 6 ctorigsrc localhost ctorigdst 10.0.0.0/8 ctrepldst anywhere"},
		{IPv4, []string{"-A", "INPUT", "-m", "conntrack", "--ctorigsrcport", "22:80", "!", "--ctrepldstport", "5", "--ctstatus", "ASSURED,CONFIRMED", "--ctexpire", "10:20", "--ctdir", "REPLY"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            ctorigsrcport 22:80 ! ctrepldstport 5 ctstatus ASSURED,CONFIRMED ctexpire 10:20 ctdir REPLY",
			"           all  --  anywhere             anywhere             ctorigsrcport 22:80 ! ctrepldstport 5 ctstatus ASSURED,CONFIRMED ctexpire 10:20 ctdir REPLY"},
		{IPv6, []string{"-A", "INPUT", "-m", "conntrack", "--ctorigsrc", "2001:db8::1", "!", "--ctrepldst", "2001:db8::/32", "--ctstatus", "NONE"},
			"           0    --  ::/0                 ::/0                 ctorigsrc 2001:db8::1 ! ctrepldst 2001:db8::/32 ctstatus NONE",
			"           all  --  anywhere             anywhere             ctorigsrc 2001:db8::1 ! ctrepldst 2001:db8::/32 ctstatus NONE"},
		{IPv4, []string{"-A", "INPUT", "-m", "state", "--state", "NEW,ESTABLISHED"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            state NEW,ESTABLISHED",
			"           all  --  anywhere             anywhere             state NEW,ESTABLISHED"},
		{IPv4, []string{"-A", "INPUT", "-m", "state", "!", "--state", "INVALID"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            ! state INVALID",
			"           all  --  anywhere             anywhere             ! state INVALID"},
		{IPv4, []string{"-A", "INPUT", "-m", "comment", "--comment", "hello world"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            /* hello world */",
			"           all  --  anywhere             anywhere             /* hello world */"},
		{IPv4, []string{"-A", "INPUT", "-m", "set", "--match-set", "s1", "src"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            match-set s1 src",
			"           all  --  anywhere             anywhere             match-set s1 src"},
		{IPv4, []string{"-A", "INPUT", "-m", "set", "!", "--match-set", "s2", "dst,src", "--return-nomatch", "!", "--update-counters", "!", "--update-subcounters", "!", "--packets-eq", "1", "--bytes-gt", "2"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            ! match-set s2 dst,src return-nomatch ! update-counters ! update-subcounters ! packets-eq 1 bytes-gt 2",
			"           all  --  anywhere             anywhere             ! match-set s2 dst,src return-nomatch ! update-counters ! update-subcounters ! packets-eq 1 bytes-gt 2"},
		{IPv4, []string{"-A", "INPUT", "-m", "limit"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            limit: avg 3/hour burst 5",
			"           all  --  anywhere             anywhere             limit: avg 3/hour burst 5"},
		{IPv4, []string{"-A", "INPUT", "-m", "limit", "--limit", "7/min", "--limit-burst", "10"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            limit: avg 7/min burst 10",
			"           all  --  anywhere             anywhere             limit: avg 7/min burst 10"},
		{IPv4, []string{"-A", "INPUT", "-m", "recent", "--update", "--seconds", "60", "--reap", "--hitcount", "5", "--rttl", "--name", "x", "--rdest", "--mask", "255.255.255.0"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            recent: UPDATE seconds: 60 reap hit_count: 5 TTL-Match name: x side: dest mask: 255.255.255.0",
			"           all  --  anywhere             anywhere             recent: UPDATE seconds: 60 reap hit_count: 5 TTL-Match name: x side: dest mask: 255.255.255.0"},
		{IPv4, []string{"-A", "INPUT", "-m", "recent", "!", "--rcheck"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            ! recent: CHECK name: DEFAULT side: source mask: 255.255.255.255",
			"           all  --  anywhere             anywhere             ! recent: CHECK name: DEFAULT side: source mask: 255.255.255.255"},
		{IPv6, []string{"-A", "INPUT", "-m", "recent", "--set"},
			"           0    --  ::/0                 ::/0                 recent: SET name: DEFAULT side: source mask: ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
			"           all  --  anywhere             anywhere             recent: SET name: DEFAULT side: source mask: ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{IPv4, []string{"-A", "INPUT", "-m", "mark", "--mark", "5"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            mark match 0x5",
			"           all  --  anywhere             anywhere             mark match 0x5"},
		{IPv4, []string{"-A", "INPUT", "-m", "mark", "!", "--mark", "0x5/0xff"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            mark match ! 0x5/0xff",
			"           all  --  anywhere             anywhere             mark match ! 0x5/0xff"},
		{IPv4, []string{"-A", "INPUT", "-m", "connmark", "--mark", "5"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            connmark match  0x5",
			"           all  --  anywhere             anywhere             connmark match  0x5"},
		{IPv4, []string{"-A", "INPUT", "-m", "connmark", "!", "--mark", "7/3"},
			"           0    --  0.0.0.0/0            0.0.0.0/0            connmark match ! 0x7/0x3",
			"           all  --  anywhere             anywhere             connmark match ! 0x7/0x3"},
		{IPv4, []string{"-A", "INPUT", "-p", "tcp", "--dport", "22", "-m", "multiport", "--dports", "80", "-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "x", "-j", "ACCEPT"},
			"ACCEPT     6    --  0.0.0.0/0            0.0.0.0/0            tcp dpt:22 multiport dports 80 ctstate NEW /* x */",
			"ACCEPT     tcp  --  anywhere             anywhere             tcp dpt:ssh multiport dports http ctstate NEW /* x */"},
	}
	for _, tc := range tests {
		cmd, err := Parse(tc.fam, tc.args, ParseOptions{})
		if err != nil {
			t.Errorf("%s: %v", strings.Join(tc.args, " "), err)
			continue
		}
		r := cmd.Rules[0]
		if got := (ListFormat{Numeric: true}).ListRule(r, 1); got != tc.numeric+"\n" {
			t.Errorf("%s -L -n:\n got %q\nwant %q", strings.Join(tc.args, " "), got, tc.numeric+"\n")
		}
		if got := (ListFormat{}).ListRule(r, 1); got != tc.names+"\n" {
			t.Errorf("%s -L:\n got %q\nwant %q", strings.Join(tc.args, " "), got, tc.names+"\n")
		}
	}
}
