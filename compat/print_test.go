package compat

import (
	"strings"
	"testing"
)

// Expected strings below are what iptables-nft 1.8.9 printed (spec §3).

func TestFormatNum(t *testing.T) {
	f := ListFormat{Verbose: true}
	for _, c := range []struct {
		n    uint64
		want string
	}{
		{0, "    0 "}, {99999, "99999 "}, {100000, " 100K "}, {999999, "1000K "},
		{123456789, " 123M "}, {98765432100, "  99G "}, {12345678901234, "  12T "}, {123456789012345, " 123T "},
	} {
		if got := f.FormatNum(c.n, false); got != c.want {
			t.Errorf("FormatNum(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := f.FormatNum(123456789, true); got != "123M " {
		t.Errorf("notable: %q", got)
	}
	x := ListFormat{Verbose: true, Exact: true}
	if got := x.FormatNum(4, false); got != "       4 " {
		t.Errorf("exact: %q", got)
	}
}

func TestChainHeader(t *testing.T) {
	for _, c := range []struct {
		f      ListFormat
		policy string
		cnt    Counters
		want   string
	}{
		{ListFormat{Verbose: true, Numeric: true, LineNumbers: true}, "DROP", Counters{},
			"Chain INPUT (policy DROP 0 packets, 0 bytes)\nnum   pkts bytes target     prot opt in     out     source               destination         \n"},
		{ListFormat{Verbose: true, Numeric: true, Exact: true}, "DROP", Counters{},
			"Chain INPUT (policy DROP 0 packets, 0 bytes)\n    pkts      bytes target     prot opt in     out     source               destination         \n"},
		{ListFormat{}, "DROP", Counters{},
			"Chain INPUT (policy DROP)\ntarget     prot opt source               destination         \n"},
		{ListFormat{Verbose: true}, "ACCEPT", Counters{Packets: 123456789, Bytes: 98765432100},
			"Chain INPUT (policy ACCEPT 123M packets, 99G bytes)\n pkts bytes target     prot opt in     out     source               destination         \n"},
	} {
		if got := c.f.ChainHeader("INPUT", c.policy, c.cnt, 0); got != c.want {
			t.Errorf("got\n%q\nwant\n%q", got, c.want)
		}
	}
	if got := (ListFormat{}).ChainHeader("web", "", Counters{}, 1); got[:26] != "Chain web (1 references)\nt" {
		t.Errorf("user chain header: %q", got)
	}
}

func mustRule(t *testing.T, f Family, args ...string) *Rule {
	t.Helper()
	cmd, err := Parse(f, args, ParseOptions{})
	if err != nil {
		t.Fatalf("%v: %s", args, Format(err, "iptables", -1))
	}
	return cmd.Rules[0]
}

func TestListRule(t *testing.T) {
	for _, c := range []struct {
		f    ListFormat
		fam  Family
		args []string
		cnt  Counters
		want string
	}{
		{ListFormat{Verbose: true, Numeric: true, LineNumbers: true}, IPv4, []string{"-A", "INPUT", "-i", "lo", "-j", "ACCEPT"}, Counters{4, 336},
			"1        4   336 ACCEPT     0    --  lo     *       0.0.0.0/0            0.0.0.0/0           \n"},
		{ListFormat{Verbose: true, Numeric: true, LineNumbers: true}, IPv4, []string{"-A", "INPUT", "-s", "192.168.1.0/24", "-p", "tcp", "--dport", "22", "-j", "ACCEPT"}, Counters{},
			"1        0     0 ACCEPT     6    --  *      *       192.168.1.0/24       0.0.0.0/0            tcp dpt:22\n"},
		{ListFormat{Verbose: true, Numeric: true}, IPv4, []string{"-A", "INPUT", "-p", "udp", "--sport", "53", "-j", "ACCEPT"}, Counters{},
			"    0     0 ACCEPT     17   --  *      *       0.0.0.0/0            0.0.0.0/0            udp spt:53\n"},
		{ListFormat{}, IPv4, []string{"-A", "INPUT", "-j", "ACCEPT"}, Counters{},
			"ACCEPT     all  --  anywhere             anywhere            \n"},
		{ListFormat{}, IPv4, []string{"-A", "INPUT", "-p", "tcp", "--dport", "22", "-s", "192.168.1.0/24", "-j", "ACCEPT"}, Counters{},
			"ACCEPT     tcp  --  192.168.1.0/24       anywhere             tcp dpt:ssh\n"},
		{ListFormat{Numeric: true}, IPv4, []string{"-A", "INPUT", "-p", "tcp", "!", "--dport", "22"}, Counters{},
			"           6    --  0.0.0.0/0            0.0.0.0/0            tcp dpt:!22\n"},
		{ListFormat{Numeric: true}, IPv4, []string{"-A", "INPUT", "-p", "tcp", "--sport", "1024:", "--syn"}, Counters{},
			"           6    --  0.0.0.0/0            0.0.0.0/0            tcp spts:1024:65535 flags:0x17/0x02\n"},
		{ListFormat{Numeric: true, Verbose: true, LineNumbers: true}, IPv6, []string{"-A", "INPUT", "-i", "eth0", "!", "-d", "2001:db8::1", "-j", "DROP"}, Counters{},
			"1        0     0 DROP       0    --  eth0   *       ::/0                !2001:db8::1         \n"},
		{ListFormat{Numeric: true}, IPv4, []string{"-A", "INPUT", "!", "-s", "10.0.0.0/8", "-f", "-g", "web"}, Counters{},
			"web        0    -f !10.0.0.0/8           0.0.0.0/0           [goto] \n"},
	} {
		r := mustRule(t, c.fam, c.args...)
		r.Counters = &c.cnt
		if got := c.f.ListRule(r, 1); got != c.want {
			t.Errorf("%v:\ngot  %q\nwant %q", c.args, got, c.want)
		}
	}
}

// TestExactSpecIfaceReadsBack: an interface name with a space or a quote
// (iptables-nft takes it with a warning) prints as is in -S but quoted in
// the exact text kept with the rule, which must parse back to the same
// interfaces.
func TestExactSpecIfaceReadsBack(t *testing.T) {
	for _, name := range []string{"eth 0", `a"b`, "x'y", `b\c`, "tab\tx", "eth0", "br-lan+"} {
		args := []string{"-A", "FORWARD", "-i", name, "-o", name, "-j", "ACCEPT"}
		cmd, err := Parse(IPv4, args, ParseOptions{Table: "filter"})
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		r := cmd.Rules[0]
		var save strings.Builder
		WriteRuleSpec(&save, r, false)
		if want := " -i " + name + " -o " + name + " -j ACCEPT"; save.String() != want {
			t.Errorf("-S %q, want %q", save.String(), want)
		}
		back, err := Parse(IPv4, append([]string{"-A", "FORWARD"}, RestoreWords(ExactSpec(r))...), ParseOptions{Table: "filter"})
		if err != nil {
			t.Fatalf("%q: exact text %q: %v", name, ExactSpec(r), err)
		}
		if got := back.Rules[0]; got.InIface != name || got.OutIface != name {
			t.Errorf("%q: exact text %q reads back as -i %q -o %q", name, ExactSpec(r), got.InIface, got.OutIface)
		}
		if ExactIsCanonical(r) && ExactSpec(r) != save.String() {
			t.Errorf("%q: ExactIsCanonical but %q != %q", name, ExactSpec(r), save.String())
		}
	}
}

// TestExactSpecNamesReadBack: bridge port, set and TEE device names with a
// space or a quote, as -i above.
func TestExactSpecNamesReadBack(t *testing.T) {
	for _, name := range []string{"eth 0", `a"b`, "x'y", `b\c`, "plain"} {
		for _, args := range [][]string{
			{"-m", "physdev", "--physdev-in", name, "!", "--physdev-out", name, "-j", "ACCEPT"},
			{"-m", "set", "!", "--match-set", name, "src,dst", "-j", "ACCEPT"},
			{"-j", "SET", "--add-set", name, "src", "--del-set", name, "dst"},
			{"-j", "TEE", "--gateway", "198.51.100.1", "--oif", name},
		} {
			cmd, err := Parse(IPv4, append([]string{"-A", "FORWARD"}, args...), ParseOptions{Table: "filter"})
			if err != nil {
				t.Fatalf("%q: %v", args, err)
			}
			r := cmd.Rules[0]
			var save strings.Builder
			WriteRuleSpec(&save, r, false)
			back, err := Parse(IPv4, append([]string{"-A", "FORWARD"}, RestoreWords(ExactSpec(r))...), ParseOptions{Table: "filter"})
			if err != nil {
				t.Fatalf("%q: exact text %q: %v", args, ExactSpec(r), err)
			}
			var again strings.Builder
			WriteRuleSpec(&again, back.Rules[0], false)
			if again.String() != save.String() {
				t.Errorf("%q: exact text %q reads back as %q, want %q", args, ExactSpec(r), again.String(), save.String())
			}
			if ExactIsCanonical(r) != (name == "plain") {
				t.Errorf("%q: ExactIsCanonical %v", args, ExactIsCanonical(r))
			}
		}
	}
}
