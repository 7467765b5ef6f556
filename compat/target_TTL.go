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

func init() {
	RegisterTarget(&ExtSpec{
		Name:      "TTL",
		Family:    IPv4,
		X6:        true,
		Options:   tgTtlOptions("ttl"),
		NewTarget: func(Family) TargetExt { return &TTLTarget{} },
	})
}

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
// --ttl-inc/--ttl-dec saturate at 255/0, which no nftables expression
// computes (an exact form would need a 256-entry anonymous map per rule,
// which our rule encoding does not carry), and the kernel binds the
// xtables target to a table named "mangle": not supported. Outside the
// mangle table the kernel refuses the target.
func (t *TTLTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	name := "TTL"
	if t.IPv6 {
		name = "HL"
	}
	if ctx.Table != "mangle" {
		return tgRefused(name, 0, 2), nil
	}
	if t.Mode != tgTtlSet {
		opt := "--ttl-inc/--ttl-dec"
		if t.IPv6 {
			opt = "--hl-inc/--hl-dec"
		}
		return nil, tgNotInTable(name, "mangle", opt+" (they saturate at 255 and 0)")
	}
	if t.IPv6 {
		return []expr.Any{tgImm(1, []byte{t.Value}),
			&expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 7, Len: 1}}, nil
	}
	return tgHeaderRewrite(8, []byte{0x00, 0xff}, []byte{t.Value, 0}, true), nil
}
