package compat

import (
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// TestHookRestrictedMatches: owner, mac and addrtype with an interface
// limit are native only in chains whose hooks the kernel
// allows them in; elsewhere, user chains included, they keep their
// xtables form (which the kernel then refuses as iptables-nft's).
func TestHookRestrictedMatches(t *testing.T) {
	for _, tc := range []struct {
		args   string
		chain  string
		native bool
	}{
		{"-m owner --uid-owner 0", "OUTPUT", true},
		{"-m owner --uid-owner 0", "POSTROUTING", true},
		{"-m owner --uid-owner 0", "", true},
		{"-m owner --uid-owner 0", "INPUT", false},
		{"-m owner --uid-owner 0", "PREROUTING", false},
		{"-m owner --uid-owner 0", "ISTIO_OUTPUT", false},
		{"-m mac --mac-source 00:11:22:33:44:55", "INPUT", true},
		{"-m mac --mac-source 00:11:22:33:44:55", "FORWARD", true},
		{"-m mac --mac-source 00:11:22:33:44:55", "PREROUTING", true},
		{"-m mac --mac-source 00:11:22:33:44:55", "OUTPUT", false},
		{"-m mac ! --mac-source 00:11:22:33:44:55", "user", false},
		{"-m addrtype --src-type LOCAL --limit-iface-in", "INPUT", true},
		{"-m addrtype --src-type LOCAL --limit-iface-out", "OUTPUT", true},
		{"-m addrtype --src-type LOCAL --limit-iface-in", "OUTPUT", false},
		// xt_addrtype checks hooks only when its rule is made: a user
		// chain's rule takes any jump (fib would refuse some)
		{"-m addrtype --src-type LOCAL --limit-iface-in", "user", false},
		{"-m addrtype --dst-type LOCAL --limit-iface-out", "user", false},
		{"-m addrtype --dst-type LOCAL", "user", true},
	} {
		cmd, err := Parse(IPv4, append([]string{"-A", "X"}, strings.Fields(tc.args)...), ParseOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		r := cmd.Rules[0]
		es, err := r.Matches[0].(NftExpresser).NftExprs(&NftContext{Family: IPv4, Rule: r, Table: "filter", Chain: tc.chain})
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		_, isXt := es[0].(*expr.Match)
		if isXt == tc.native {
			t.Errorf("%s in %q: %#v, want native %v", tc.args, tc.chain, es, tc.native)
		}
		if m, ok := es[0].(*expr.Match); ok && m.Name == "mac" {
			info := []byte(*m.Info.(*xt.Unknown))
			inv := byte(0)
			if strings.Contains(tc.args, "!") {
				inv = 1
			}
			want := []byte{0, 0x11, 0x22, 0x33, 0x44, 0x55, 0, 0, inv, 0, 0, 0, 0, 0, 0, 0}
			if string(info) != string(want) {
				t.Errorf("mac info %x, want %x", info, want)
			}
		}
	}
}

// TestTCPOptionCompat: --tcp-option makes the whole tcp match the xt tcp
// match (struct xt_tcp, revision 0) with ports, flags and inversions.
func TestTCPOptionCompat(t *testing.T) {
	cmd, err := Parse(IPv4, strings.Fields("-A X -p tcp ! --sport 1:5 --dport 22 ! --tcp-option 5 --syn"), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := cmd.Rules[0]
	es, err := r.Matches[0].(NftExpresser).NftExprs(&NftContext{Family: IPv4, Rule: r, Table: "filter"})
	if err != nil || len(es) != 1 {
		t.Fatalf("%#v, %v", es, err)
	}
	m := es[0].(*expr.Match)
	info := []byte(*m.Info.(*xt.Unknown))
	want := []byte{1, 0, 5, 0, 22, 0, 22, 0, 5, 0x17, 0x02, 1 | 8, 0, 0, 0, 0}
	if m.Name != "tcp" || m.Rev != 0 || string(info) != string(want) {
		t.Errorf("%s rev %d info %x, want %x", m.Name, m.Rev, info, want)
	}
}
