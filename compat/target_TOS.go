package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// TosTarget is -j TOS (revision 1, IPv4 and IPv6): the TOS / traffic
// class byte becomes (tos & ^Mask) ^ Value. --and-tos, --or-tos and
// --xor-tos are stored in this form too, as iptables does.
type TosTarget struct {
	Family      Family
	Value, Mask uint8
}

const (
	tgTosOptSet = iota
	tgTosOptAnd
	tgTosOptOr
	tgTosOptXor
)

const tgTosAny = 1<<tgTosOptSet | 1<<tgTosOptAnd | 1<<tgTosOptOr | 1<<tgTosOptXor

var tgTosOptions = []OptDef{
	{Name: "set-tos", Arg: RequiredArg, ID: tgTosOptSet},
	{Name: "and-tos", Arg: RequiredArg, ID: tgTosOptAnd},
	{Name: "or-tos", Arg: RequiredArg, ID: tgTosOptOr},
	{Name: "xor-tos", Arg: RequiredArg, ID: tgTosOptXor},
}

var tgTosRels = map[int]x6Rel{
	tgTosOptSet: {excl: tgTosAny}, tgTosOptAnd: {excl: tgTosAny},
	tgTosOptOr: {excl: tgTosAny}, tgTosOptXor: {excl: tgTosAny},
}

// tgTosSymbols are xtables' TOS names (tos_values.c), in its order.
var tgTosSymbols = []struct {
	value uint8
	name  string
}{
	{0x10, "Minimize-Delay"},
	{0x08, "Maximize-Throughput"},
	{0x04, "Maximize-Reliability"},
	{0x02, "Minimize-Cost"},
	{0x00, "Normal-Service"},
}

var tosTargetSpec = ExtSpec{
	Name:      "TOS",
	X6:        true,
	Options:   tgTosOptions,
	NewTarget: func(f Family) TargetExt { return &TosTarget{Family: f} },
}

var _ = RegisterTarget(&tosTargetSpec)

func (t *TosTarget) Name() string { return "TOS" }

// tgTosMask parses XTTYPE_TOSMASK as revision 1 does: a number (the
// start of the argument is one) with an optional "/mask", the mask
// 0xff by default; else a symbolic name, case-insensitive, whose mask
// is 0x3f.
func tgTosMask(s string) (value, mask uint8, err error) {
	if _, _, ok := tgStrtoul(s, 0, 0xff, false); !ok {
		for _, sym := range tgTosSymbols {
			if strings.EqualFold(s, sym.name) {
				return sym.value, 0x3f, nil
			}
		}
		return 0, 0, Paramf("Symbolic name \"%s\" is unknown", s)
	}
	illegal := Paramf("Illegal value: \"%s\"", s)
	v, rest, _ := tgStrtoul(s, 0, 0xff, false)
	value, mask = uint8(v), 0xff
	if strings.HasPrefix(rest, "/") {
		m, r, ok := tgStrtoul(rest[1:], 0, 0xff, false)
		if !ok {
			return 0, 0, illegal
		}
		mask, rest = uint8(m), r
	}
	if rest != "" {
		return 0, 0, illegal
	}
	return value, mask, nil
}

func (t *TosTarget) Parse(p *OptArg) error {
	if p.Def.ID == tgTosOptSet {
		v, m, err := tgTosMask(p.Arg)
		if err != nil {
			return err
		}
		t.Value, t.Mask = v, m
		return nil
	}
	v, err := tgUint(p, 0, 0xff)
	if err != nil {
		return err
	}
	b := uint8(v)
	switch p.Def.ID {
	case tgTosOptAnd:
		t.Value, t.Mask = 0, ^b
	case tgTosOptOr:
		t.Value, t.Mask = b, b
	case tgTosOptXor:
		t.Value, t.Mask = b, 0
	}
	return nil
}

func (t *TosTarget) Final(_ *Rule, seen OptSet) error {
	if err := x6Fcheck("TOS", tgTosOptions, seen, tgTosRels); err != nil {
		return err
	}
	if seen&tgTosAny == 0 {
		return Paramf("TOS: An action is required")
	}
	return nil
}

func (t *TosTarget) Save(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, " --set-tos 0x%02x/0x%02x", t.Value, t.Mask)
}

// List prints a symbolic name for a 0x3f mask (after "TOS set" with no
// space, and an extra leading space, as tos_try_print_symbolic does),
// else the and/or/xor form the value and mask come from.
func (t *TosTarget) List(b *strings.Builder, _ *Rule, numeric bool) {
	if numeric {
		fmt.Fprintf(b, " TOS set 0x%02x/0x%02x", t.Value, t.Mask)
		return
	}
	if t.Mask == 0x3f {
		for _, sym := range tgTosSymbols {
			if sym.value == t.Value {
				b.WriteString("  TOS set" + sym.name)
				return
			}
		}
	}
	switch {
	case t.Value == 0:
		fmt.Fprintf(b, " TOS and 0x%02x", ^t.Mask)
	case t.Value == t.Mask:
		fmt.Fprintf(b, " TOS or 0x%02x", t.Value)
	case t.Mask == 0:
		fmt.Fprintf(b, " TOS xor 0x%02x", t.Value)
	default:
		fmt.Fprintf(b, " TOS set 0x%02x/0x%02x", t.Value, t.Mask)
	}
}

// NftExprs rewrites the TOS byte (IPv4, with the header checksum
// updated) or the traffic class (IPv6, bits 4-11 of the first 16-bit
// word) as (tos & ^Mask) ^ Value, as xt TOS does. The write goes
// through the aligned 16-bit word, as nft does for sub-word fields, so
// the checksum update is exact. TOS is bound to the mangle table;
// elsewhere the kernel refuses the xtables target, as it does
// iptables-nft's.
func (t *TosTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "mangle" {
		return tgRefused("TOS", 1, 2), nil
	}
	if t.Family == IPv6 {
		m := ^(uint16(t.Mask) << 4)
		x := uint16(t.Value) << 4
		return tgHeaderRewrite(0, []byte{byte(m >> 8), byte(m)}, []byte{byte(x >> 8), byte(x)}, false), nil
	}
	return tgHeaderRewrite(0, []byte{0xff, ^t.Mask}, []byte{0, t.Value}, true), nil
}
