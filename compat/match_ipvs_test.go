package compat

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// TestIpvsPrint: the -L -n texts are what iptables-nft 1.8.9 printed
// (iptables -v -A) for the same options; the kernel here has no xt_ipvs,
// so the reference lists no such rule and -S follows ipvs_mt_save.
func TestIpvsPrint(t *testing.T) {
	tests := []struct {
		fam     Family
		opts    string
		save    string
		numeric string
	}{
		{IPv4, "--vaddr 1.2.3.4/24 --vport 80 --vdir REPLY ! --vmethod MASQ --vproto tcp ! --vportctl 21",
			"--vproto 6 --vaddr 1.2.3.4/24 --vport 80 --vdir REPLY ! --vmethod MASQ ! --vportctl 21",
			"vproto 6 vaddr 1.2.3.4/24 vport 80 vdir REPLY ! vmethod MASQ ! vportctl 21"},
		{IPv4, "! --ipvs", "! --ipvs", "! ipvs"},
		{IPv4, "--ipvs", "--ipvs", "ipvs"},
		{IPv4, "--vaddr localhost --vmethod gate", "--vaddr 127.0.0.1 --vmethod GATE", "vaddr 127.0.0.1 vmethod GATE"},
		{IPv4, "! --vaddr 10.0.0.0/255.255.0.0 --vport http --vmethod IPIP",
			"! --vaddr 10.0.0.0/16 --vport 80 --vmethod IPIP", "! vaddr 10.0.0.0/16 vport 80 vmethod IPIP"},
		{IPv4, "--vaddr 1.2.3.4/33", "--vaddr 1.2.3.4", "vaddr 1.2.3.4"},
		{IPv4, "--vaddr 1.2.3.4/255.0.255.0", "--vaddr 1.2.3.4", "vaddr 1.2.3.4"},
		{IPv4, "--vaddr 0.0.0.0/0", "--vaddr 0.0.0.0/0", "vaddr 0.0.0.0/0"},
		{IPv4, "--vproto 0 --vport 0", "--vproto 0 --vport 0", "vproto 0 vport 0"},
		{IPv4, "--vmethod masq --vdir reply", "--vdir REPLY --vmethod MASQ", "vdir REPLY vmethod MASQ"},
		{IPv4, "--ipvs --vdir ORIGINAL", "--vdir ORIGINAL", "vdir ORIGINAL"},
		{IPv6, "--vaddr 2001:db8::1/64 --vport 443", "--vaddr 2001:db8::1/64 --vport 443", "vaddr 2001:db8::1/64 vport 443"},
		{IPv6, "--vaddr ::1", "--vaddr ::1", "vaddr ::1"},
		{IPv6, "! --vaddr ::/0", "! --vaddr ::/0", "! vaddr ::/0"},
	}
	for _, tc := range tests {
		args := append([]string{"-A", "INPUT", "-m", "ipvs"}, strings.Fields(tc.opts)...)
		cmd, err := Parse(tc.fam, args, ParseOptions{})
		if err != nil {
			t.Errorf("%v: %v", args, err)
			continue
		}
		if got, want := SaveRule(cmd.Chain, cmd.Rules[0], false), "-A INPUT -m ipvs "+tc.save; got != want {
			t.Errorf("%v -S:\n got %q\nwant %q", args, got, want)
		}
		row := (ListFormat{Numeric: true}).ListRule(cmd.Rules[0], 1)
		if want := "   " + tc.numeric + "\n"; !strings.HasSuffix(row, want) {
			t.Errorf("%v -L -n:\n got %q\nwant suffix %q", args, row, want)
		}
	}
}

// TestIpvsErrors: the messages iptables-nft 1.8.9 gave (after its
// missing-module notice, which is the kernel's business).
func TestIpvsErrors(t *testing.T) {
	tests := []struct{ opts, msg string }{
		{"", "IPVS: At least one option is required"},
		{"--vdir foo", `ipvs: Bad value for "--vdir" option: "foo"`},
		{"--vmethod x", `ipvs: Bad value for "--vmethod" option: "x"`},
		{"! --vdir ORIGINAL", `ipvs: option "--vdir" cannot be inverted.`},
		{"--vport xyz", `Port "xyz" does not resolve to anything.`},
		{"--vproto foo", `unknown protocol "foo" specified`},
		{"--vproto 256", `unknown protocol "256" specified`},
		{"--vport 80 --vport 81", `ipvs: option "--vport" can only be used once.`},
		{"--ipvs --ipvs", `ipvs: option "--ipvs" can only be used once.`},
		{"! --ipvs --vdir ORIGINAL", "! --ipvs cannot be together with other options"},
		{"! --ipvs --vport 1", "! --ipvs cannot be together with other options"},
	}
	for _, tc := range tests {
		args := append([]string{"-A", "INPUT", "-m", "ipvs"}, strings.Fields(tc.opts)...)
		_, err := Parse(IPv4, args, ParseOptions{})
		if err == nil {
			t.Errorf("%v: accepted", args)
			continue
		}
		got := Format(err, "iptables", -1)
		if !strings.Contains(got, "(nf_tables): "+tc.msg+"\n") || StatusOf(err) != 2 {
			t.Errorf("%v:\n got (rc %d) %q\nwant %q", args, StatusOf(err), got, tc.msg)
		}
	}
}

// TestIpvsBlob: struct xt_ipvs_mtinfo as the kernel lays it out.
func TestIpvsBlob(t *testing.T) {
	cmd, err := Parse(IPv4, strings.Fields("-A INPUT -m ipvs --vaddr 10.1.2.3/16 --vport 8080 --vproto udp --vdir REPLY ! --vmethod GATE --vportctl 21"), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	es, err := cmd.Rules[0].Matches[0].(*IpvsMatch).NftExprs(nil)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := es[0].(*expr.Match)
	if !ok || m.Name != "ipvs" || m.Rev != 0 {
		t.Fatalf("got %#v", es[0])
	}
	want := make([]byte, 40)
	copy(want[0:], []byte{10, 1, 2, 3})
	copy(want[16:], []byte{255, 255, 0, 0})
	copy(want[32:], []byte{
		0x1f, 0x90, // vport 8080, big endian
		17,    // l4proto
		3,     // IP_VS_CONN_F_DROUTE
		0, 21, // vportctl
		ipvsDir | ipvsMethod, // invert
		ipvsProperty | ipvsProto | ipvsVAddr | ipvsVPort | ipvsDir | ipvsMethod | ipvsVPortCtl,
	})
	if got := []byte(*m.Info.(*xt.Unknown)); !bytes.Equal(got, want) {
		t.Errorf("blob\n got %x\nwant %x", got, want)
	}
}
