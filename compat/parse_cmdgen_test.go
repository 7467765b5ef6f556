package compat

import (
	"strings"
	"testing"
)

// iptables reads -p, -s, -d, -i, -o and -j from the word getopt last
// consumed: a value glued to the option is the whole word (as measured
// with iptables-nft 1.8.9), while -g, -m and the commands take optarg.
func TestParseGluedValues(t *testing.T) {
	for _, c := range []struct{ args, err string }{
		{"-A INPUT -s1.2.3.4", "host/network `-s1.2.3.4' not found"},
		{"-A INPUT --src=1.2.3.4", "host/network `--src=1.2.3.4' not found"},
		{"-A INPUT -d1.2.3.4", "host/network `-d1.2.3.4' not found"},
		{"-A INPUT ! -ptcp", `unknown protocol "-ptcp" specified`},
		{"-A INPUT --protocol=tcp", `unknown protocol "--protocol=tcp" specified`},
		{"-A INPUT --in-interface=eth0", "interface name `--in-interface=eth0' must be shorter than IFNAMSIZ (15)"},
	} {
		_, err := Parse(IPv4, strings.Fields(c.args), ParseOptions{})
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.args, err, c.err)
		}
	}
	cmd, err := Parse(IPv4, strings.Fields("-A INPUT -ieth0 -jACCEPT -t filter"), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := cmd.Rules[0]; r.InIface != "-ieth0" || cmd.JumpChain != "-jACCEPT" {
		t.Errorf("-ieth0 -jACCEPT: interface %q, jump to %q", r.InIface, cmd.JumpChain)
	}
	cmd, err = Parse(IPv4, strings.Fields("-A INPUT -gweb -mcomment --comment x"), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tt, ok := cmd.Rules[0].Target.(*ChainTarget); !ok || tt.Chain != "web" || !tt.Goto {
		t.Errorf("-gweb: target %#v", cmd.Rules[0].Target)
	}
}

// Measured with iptables-nft 1.8.9: "-w 0" is no wait for -W's check, and
// an empty -N name clashes with a target name.
func TestParseWaitZeroAndEmptyChain(t *testing.T) {
	for _, c := range []struct{ args, err string }{
		{"-w 0 -W 1000 -S", "--wait-interval only makes sense with --wait"},
		{"--wait=00 -W 5 -S", "--wait-interval only makes sense with --wait"},
		{"-w 2 -w 0 -W 5 -S", "--wait-interval only makes sense with --wait"},
		{"-w 2 -W 5 -S", ""},
		{"-w -W 5 -S", ""},
	} {
		_, err := Parse(IPv4, strings.Fields(c.args), ParseOptions{Warn: func(string) {}})
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v, want %q", c.args, err, c.err)
		}
	}
	_, err := Parse(IPv4, []string{"-N", ""}, ParseOptions{})
	if err == nil || !strings.Contains(err.Error(), "chain name may not clash with target name") {
		t.Errorf("-N '': %v", err)
	}
}

// -Z CHAIN N with -L: before it, both list and zero that rule; after it,
// the rule number makes the command -Z CHAIN N alone.
func TestParseZeroNumWithList(t *testing.T) {
	cmd, err := Parse(IPv4, strings.Fields("-Z INPUT 2 -L -v"), ParseOptions{})
	if err != nil || cmd.Op != OpList || !cmd.ZeroToo || !cmd.ZeroNum || cmd.RuleNum != 2 {
		t.Errorf("-Z INPUT 2 -L: %+v %v", cmd, err)
	}
	cmd, err = Parse(IPv4, strings.Fields("-L -Z INPUT 1"), ParseOptions{})
	if err != nil || cmd.Op != OpZeroNum || cmd.ZeroToo || cmd.RuleNum != 1 {
		t.Errorf("-L -Z INPUT 1: %+v %v", cmd, err)
	}
	if _, err := Parse(IPv4, strings.Fields("-L -Z INPUT 1 -n"), ParseOptions{}); err == nil || err.Error() != "Illegal option `-n' with this command" {
		t.Errorf("-L -Z INPUT 1 -n: %v", err)
	}
}

// -N checks the name's length first, when it reads -N.
func TestParseNewChainLengthFirst(t *testing.T) {
	long := strings.Repeat("x", 34)
	for _, args := range [][]string{{"-N", "-" + long}, {"-N", long, "-W", "10"}, {"-N", "a b" + long}} {
		_, err := Parse(IPv4, args, ParseOptions{Warn: func(string) {}})
		if err == nil || !strings.Contains(err.Error(), "too long (must be under 29 chars)") {
			t.Errorf("%q: %v", args, err)
		}
	}
}
