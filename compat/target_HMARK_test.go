package compat

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// TestHmark: -S, the -L -n target text and the xt_hmark_info blob are
// what iptables-nft 1.8.9 printed and put in the kernel (read back
// through the nftables library) for the same options.
func TestHmark(t *testing.T) {
	const r = " --hmark-rnd 0x1 --hmark-mod 2"
	tests := []struct {
		fam              Family
		opts             string
		save, list, blob string
	}{
		{IPv4, "--hmark-tuple src,dst,sport,dport,proto --hmark-mod 10 --hmark-offset 100 --hmark-rnd 0xfeedcafe",
			"--hmark-src-prefix 32 --hmark-dst-prefix 32 --hmark-sport-mask 0xffff --hmark-dport-mask 0xffff --hmark-proto-mask 0xffff --hmark-rnd 0xfeedcafe --hmark-mod 10 --hmark-offset 100",
			"HMARK mod 10 + 0x64 src-prefix 32 dst-prefix 32 sport-mask 0xffff dport-mask 0xffff proto-mask 0xffff rnd 0xfeedcafe ",
			"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff00000000c30f0000ffff0000fecaedfe0a0000006400000000000000"},
		{IPv4, "--hmark-tuple src,dst" + r,
			"--hmark-src-prefix 32 --hmark-dst-prefix 32 --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 src-prefix 32 dst-prefix 32 rnd 0x1 ",
			"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff0000000000000000030600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-tuple ct,src" + r,
			"--hmark-src-prefix 32 --hmark-rnd 0x00000001 --hmark-mod 2 --hmark-tuple ct",
			"HMARK mod 2 ct, src-prefix 32 rnd 0x1 ",
			"ffffffffffffffffffffffffffffffff000000000000000000000000000000000000000000000000011600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-tuple ct" + r,
			"--hmark-rnd 0x00000001 --hmark-mod 2 --hmark-tuple ct",
			"HMARK mod 2 ct, rnd 0x1 ",
			"00000000000000000000000000000000000000000000000000000000000000000000000000000000001600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-src-prefix 24 --hmark-dst-prefix 16" + r,
			"--hmark-src-prefix 24 --hmark-dst-prefix 16 --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 src-prefix 24 dst-prefix 16 rnd 0x1 ",
			"ffffff00000000000000000000000000ffff00000000000000000000000000000000000000000000030600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-tuple spi" + r,
			"--hmark-spi-mask 0xffffffff --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 spi-mask 0xffffffff rnd 0x1 ",
			"0000000000000000000000000000000000000000000000000000000000000000ffffffff00000000080600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-tuple sp,d" + r,
			"--hmark-dst-prefix 32 --hmark-sport-mask 0xffff --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 dst-prefix 32 sport-mask 0xffff rnd 0x1 ",
			"00000000000000000000000000000000ffffffffffffffffffffffffffffffffffff000000000000420600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-src-prefix 33" + r,
			"--hmark-src-prefix 32 --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 src-prefix 32 rnd 0x1 ",
			"ffffffffffffffffffffffffffffffff000000000000000000000000000000000000000000000000010600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-src-prefix 300" + r,
			"--hmark-src-prefix 32 --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 src-prefix 32 rnd 0x1 ",
			"ffffffffffffffffffffffffffffffff000000000000000000000000000000000000000000000000010600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-src-prefix 255.0.255.0" + r,
			"--hmark-src-prefix 32 --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 src-prefix 32 rnd 0x1 ",
			"ffffffffffffffffffffffffffffffff000000000000000000000000000000000000000000000000010600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-src-prefix 0" + r,
			"--hmark-src-prefix 0 --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 src-prefix 0 rnd 0x1 ",
			"00000000000000000000000000000000000000000000000000000000000000000000000000000000010600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-dst-prefix 255.255.0.0" + r,
			"--hmark-dst-prefix 16 --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 dst-prefix 16 rnd 0x1 ",
			"00000000000000000000000000000000ffff00000000000000000000000000000000000000000000020600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-sport 80 --hmark-dport 0x50 --hmark-proto-mask 7" + r,
			"--hmark-sport 0x0050 --hmark-dport 0x0050 --hmark-proto-mask 0x07 --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 sport 0x50 dport 0x50 proto-mask 0x7 rnd 0x1 ",
			"00000000000000000000000000000000000000000000000000000000000000000000000000500050300700000700000001000000020000000000000000000000"},
		{IPv4, "--hmark-spi 0x1234 --hmark-spi-mask 0xff00" + r,
			"--hmark-spi-mask 0x0000ff00 --hmark-spi 0x00001234 --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 spi-mask 0xff00 spi 0x1234 rnd 0x1 ",
			"00000000000000000000000000000000000000000000000000000000000000000000ff00000012340c0600000000000001000000020000000000000000000000"},
		{IPv4, "--hmark-mod 3 --hmark-offset 0 --hmark-tuple SRC --hmark-rnd 0x1",
			"--hmark-src-prefix 32 --hmark-rnd 0x00000001 --hmark-mod 3 --hmark-offset 0",
			"HMARK mod 3 + 0x0 src-prefix 32 rnd 0x1 ",
			"ffffffffffffffffffffffffffffffff000000000000000000000000000000000000000000000000010e00000000000001000000030000000000000000000000"},
		{IPv6, "--hmark-tuple src,dst,sport,dport,proto" + r,
			"--hmark-src-prefix 128 --hmark-dst-prefix 128 --hmark-sport-mask 0xffff --hmark-dport-mask 0xffff --hmark-proto-mask 0xffff --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 src-prefix  dst-prefix  sport-mask 0xffff dport-mask 0xffff proto-mask 0xffff rnd 0x1 ",
			"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff00000000c3070000ffff000001000000020000000000000000000000"},
		{IPv6, "--hmark-src-prefix 64 --hmark-dst-prefix 0" + r,
			"--hmark-src-prefix 64 --hmark-dst-prefix 0 --hmark-rnd 0x00000001 --hmark-mod 2",
			"HMARK mod 2 src-prefix 64 dst-prefix 0 rnd 0x1 ",
			"ffffffffffffffff0000000000000000000000000000000000000000000000000000000000000000030600000000000001000000020000000000000000000000"},
	}
	for _, tc := range tests {
		args := append([]string{"-t", "mangle", "-A", "PREROUTING", "-j", "HMARK"}, strings.Fields(tc.opts)...)
		cmd, err := Parse(tc.fam, args, ParseOptions{})
		if err != nil {
			t.Errorf("%v: %v", args, err)
			continue
		}
		if got, want := SaveRule(cmd.Chain, cmd.Rules[0], false), "-A PREROUTING -j HMARK "+tc.save; got != want {
			t.Errorf("%v -S:\n got %q\nwant %q", args, got, want)
		}
		row := (ListFormat{Numeric: true}).ListRule(cmd.Rules[0], 1)
		if !strings.HasPrefix(row, "HMARK ") || !strings.HasSuffix(row, "            "+tc.list+"\n") {
			t.Errorf("%v -L -n:\n got %q\nwant suffix %q", args, row, tc.list)
		}
		// the exact form parses back to the same target
		var b strings.Builder
		ht := cmd.Rules[0].Target.(*HmarkTarget)
		ht.SaveExact(&b, cmd.Rules[0])
		back, err := Parse(tc.fam, append([]string{"-t", "mangle", "-A", "PREROUTING", "-j", "HMARK"}, strings.Fields(b.String())...), ParseOptions{})
		if err != nil {
			t.Errorf("%v: exact form %q: %v", args, b.String(), err)
		} else if bt := back.Rules[0].Target.(*HmarkTarget); bt.SrcMask != ht.SrcMask || bt.DstMask != ht.DstMask ||
			bt.PortMask != ht.PortMask || bt.PortSet != ht.PortSet || bt.Flags != ht.Flags || bt.ProtoMask != ht.ProtoMask ||
			bt.Rnd != ht.Rnd || bt.Mod != ht.Mod || bt.Offset != ht.Offset {
			t.Errorf("%v: exact form %q parses back to %+v, not %+v", args, b.String(), *bt, *ht)
		}
		es, err := ht.NftExprs(nil)
		if err != nil {
			t.Fatal(err)
		}
		tg := es[0].(*expr.Target)
		if got := hex.EncodeToString(*tg.Info.(*xt.Unknown)); tg.Name != "HMARK" || tg.Rev != 0 || got != tc.blob {
			t.Errorf("%v blob %s %d\n got %s\nwant %s", args, tg.Name, tg.Rev, got, tc.blob)
		}
	}
}

// TestHmarkErrors: the messages iptables-nft 1.8.9 gave.
func TestHmarkErrors(t *testing.T) {
	tests := []struct {
		fam       Family
		opts, msg string
	}{
		{IPv4, "", "--hmark-mod is mandatory\n"},
		{IPv4, "--hmark-mod 10", "--hmark-rnd is mandatory\n"},
		{IPv4, "--hmark-mod 10 --hmark-rnd 0x1", "you have to specify --hmark-tuple at least\n"},
		{IPv4, "--hmark-mod 0", "HMARK: bad value for option \"--hmark-mod\", or out of range (1-4294967295).\n\n"},
		{IPv4, "--hmark-tuple foo --hmark-mod 3", "Bad type \"foo\"\n"},
		{IPv4, "--hmark-tuple ,src --hmark-mod 4", "Bad type \",src\"\n"},
		{IPv4, "--hmark-tuple src, --hmark-mod 4", "\"--hmark-tuple\" requires a list of types with no spaces, e.g. src,dst,sport,dport,proto\n"},
		{IPv4, "--hmark-tuple src --hmark-tuple dst", "HMARK: option \"--hmark-tuple\" can only be used once.\n\n"},
		{IPv4, "--hmark-tuple dport --hmark-dport-mask 0xf", "HMARK: option \"--hmark-dport-mask\" can only be used once.\n\n"},
		{IPv4, "--hmark-mod 3 --hmark-spi-mask 1 --hmark-sport-mask 2 --hmark-rnd 0x1", "you cannot use --hmark-spi-mask and --hmark-?port-mask,at the same time\n"},
		{IPv4, "--hmark-mod 3 --hmark-sport 0x10000", "HMARK: bad value for option \"--hmark-sport\", or out of range (0-65535).\n\n"},
		{IPv4, "--hmark-src-prefix x", "HMARK: bad value for option \"--hmark-src-prefix\", neither a valid network mask nor valid CIDR (0-32).\n\n"},
		{IPv4, "--hmark-src-prefix ffff::", "HMARK: bad value for option \"--hmark-src-prefix\", neither a valid network mask nor valid CIDR (0-32).\n\n"},
		{IPv6, "--hmark-dst-prefix 129", "HMARK: bad value for option \"--hmark-dst-prefix\", neither a valid network mask nor valid CIDR (0-128).\n\n"},
		{IPv6, "--hmark-src-prefix 255.0.0.0", "HMARK: bad value for option \"--hmark-src-prefix\", neither a valid network mask nor valid CIDR (0-128).\n\n"},
	}
	for _, tc := range tests {
		args := append([]string{"-t", "mangle", "-A", "PREROUTING", "-j", "HMARK"}, strings.Fields(tc.opts)...)
		_, err := Parse(tc.fam, args, ParseOptions{})
		if err == nil {
			t.Errorf("%v: accepted", args)
			continue
		}
		if got := Format(err, "iptables", -1); !strings.Contains(got, "(nf_tables): "+tc.msg+"Try") || StatusOf(err) != 2 {
			t.Errorf("%v:\n got (rc %d) %q\nwant %q", args, StatusOf(err), got, tc.msg)
		}
	}
}
