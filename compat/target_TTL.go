package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// TTLTarget is -j TTL (IPv4) and, with IPv6 set, -j HL: it sets,
// decrements or increments the TTL / hop limit.
type TTLTarget struct {
	IPv6  bool
	Mode  uint8 // tgTtlSet, tgTtlInc, tgTtlDec
	Value uint8
}

const (
	tgTtlSet = iota
	tgTtlInc
	tgTtlDec
)

const tgTtlAny = 1<<tgTtlSet | 1<<tgTtlInc | 1<<tgTtlDec

var tgTtlRels = map[int]x6Rel{tgTtlSet: {excl: tgTtlAny}, tgTtlInc: {excl: tgTtlAny}, tgTtlDec: {excl: tgTtlAny}}

func tgTtlOptions(pfx string) []OptDef {
	return []OptDef{
		{Name: pfx + "-set", Arg: RequiredArg, ID: tgTtlSet},
		{Name: pfx + "-dec", Arg: RequiredArg, ID: tgTtlDec},
		{Name: pfx + "-inc", Arg: RequiredArg, ID: tgTtlInc},
	}
}

var ttlTargetSpec = ExtSpec{
	Name:      "TTL",
	Family:    IPv4,
	X6:        true,
	Options:   tgTtlOptions("ttl"),
	NewTarget: func(Family) TargetExt { return &TTLTarget{} },
}

var _ = RegisterTarget(&ttlTargetSpec)

func (t *TTLTarget) Name() string {
	if t.IPv6 {
		return "HL"
	}
	return "TTL"
}

func (t *TTLTarget) Parse(p *OptArg) error {
	min := uint64(1)
	if p.Def.ID == tgTtlSet {
		min = 0
	}
	v, err := tgUint(p, min, 255)
	if err != nil {
		return err
	}
	t.Mode, t.Value = uint8(p.Def.ID), uint8(v)
	return nil
}

func (t *TTLTarget) Final(_ *Rule, seen OptSet) error {
	if seen&tgTtlAny == 0 {
		return Paramf("%s: You must specify an action", t.Name())
	}
	pfx := "ttl"
	if t.IPv6 {
		pfx = "hl"
	}
	return x6Fcheck(t.Name(), tgTtlOptions(pfx), seen, tgTtlRels)
}

func (t *TTLTarget) Save(b *strings.Builder, _ *Rule) {
	pfx := "ttl"
	if t.IPv6 {
		pfx = "hl"
	}
	switch t.Mode {
	case tgTtlSet:
		fmt.Fprintf(b, " --%s-set", pfx)
	case tgTtlDec:
		fmt.Fprintf(b, " --%s-dec", pfx)
	case tgTtlInc:
		fmt.Fprintf(b, " --%s-inc", pfx)
	}
	fmt.Fprintf(b, " %d", t.Value)
}

func (t *TTLTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" " + t.Name() + " ")
	switch t.Mode {
	case tgTtlSet:
		b.WriteString("set to")
	case tgTtlDec:
		b.WriteString("decrement by")
	case tgTtlInc:
		b.WriteString("increment by")
	}
	fmt.Fprintf(b, " %d", t.Value)
}

// NftExprs: --ttl-set / --hl-set is `ip ttl set` / `ip6 hoplimit set`.
// --ttl-inc/--ttl-dec (and the HL twins) add or subtract and stop at 255
// and 0, which no nftables expression computes: the field is mapped
// through a 256-entry constant map made with the rule (ValueMap), then
// written back, for IPv4 with the header checksum updated as xt_TTL does.
// The TTL is the high byte of its 16-bit checksum word, so a one-byte
// write updates the checksum exactly. Outside the mangle table the kernel
// refuses the xtables target, as it does iptables-nft's.
func (t *TTLTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	name := "TTL"
	if t.IPv6 {
		name = "HL"
	}
	if ctx.Table != "mangle" {
		return tgRefused(name, 0, 2), nil
	}
	if t.Mode == tgTtlSet {
		if t.IPv6 {
			return []expr.Any{tgImm(1, []byte{t.Value}),
				&expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 7, Len: 1}}, nil
		}
		return tgHeaderRewrite(8, []byte{0x00, 0xff}, []byte{t.Value, 0}, true), nil
	}
	n := int(t.Value)
	m := byteMap(func(b int) int { return max(b-n, 0) })
	if t.Mode == tgTtlInc {
		m = byteMap(func(b int) int { return min(b+n, 255) })
	}
	off := uint32(8)
	if t.IPv6 {
		off = 7
	}
	w := &expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 1}
	if !t.IPv6 {
		w.CsumType, w.CsumOffset = expr.CsumTypeInet, 10
	}
	return []expr.Any{
		&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 1},
		m, w,
	}, nil
}
