package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// MarkTarget is -j MARK (revision 2): the packet mark becomes
// (mark & ^Mask) ^ Value. All option spellings reduce to this pair.
type MarkTarget struct {
	Value, Mask uint32
}

const (
	tgMarkOptSet = iota
	tgMarkOptAnd
	tgMarkOptOr
	tgMarkOptXor
	tgMarkOptSetX
)

const tgMarkAnyOp = 1<<tgMarkOptSet | 1<<tgMarkOptAnd | 1<<tgMarkOptOr | 1<<tgMarkOptXor | 1<<tgMarkOptSetX

var tgMarkOptions = []OptDef{
	{Name: "set-xmark", Arg: RequiredArg, ID: tgMarkOptSetX},
	{Name: "set-mark", Arg: RequiredArg, ID: tgMarkOptSet},
	{Name: "and-mark", Arg: RequiredArg, ID: tgMarkOptAnd},
	{Name: "or-mark", Arg: RequiredArg, ID: tgMarkOptOr},
	{Name: "xor-mark", Arg: RequiredArg, ID: tgMarkOptXor},
}

var tgMarkRels = map[int]x6Rel{
	tgMarkOptSetX: {excl: tgMarkAnyOp}, tgMarkOptSet: {excl: tgMarkAnyOp}, tgMarkOptAnd: {excl: tgMarkAnyOp},
	tgMarkOptOr: {excl: tgMarkAnyOp}, tgMarkOptXor: {excl: tgMarkAnyOp},
}

var markTargetSpec = ExtSpec{
	Name:      "MARK",
	X6:        true,
	Options:   tgMarkOptions,
	NewTarget: func(Family) TargetExt { return &MarkTarget{} },
}

var _ = RegisterTarget(&markTargetSpec)

func (t *MarkTarget) Name() string { return "MARK" }

// tgParseMarkOp turns one of the MARK/CONNMARK value options into the
// (value, mask) pair of the xor-with-mask operation.
func tgParseMarkOp(p *OptArg, id, setX, set, and, or, xor int) (value, mask uint32, err error) {
	switch id {
	case setX, set:
		v, m, err := tgMarkMask(p)
		if err != nil {
			return 0, 0, err
		}
		if id == set {
			m |= v
		}
		return v, m, nil
	}
	v, err := tgUint(p, 0, 0xffffffff)
	if err != nil {
		return 0, 0, err
	}
	switch id {
	case and:
		return 0, ^uint32(v), nil
	case or:
		return uint32(v), uint32(v), nil
	case xor:
		return uint32(v), 0, nil
	}
	return 0, 0, nil
}

func (t *MarkTarget) Parse(p *OptArg) error {
	v, m, err := tgParseMarkOp(p, p.Def.ID, tgMarkOptSetX, tgMarkOptSet, tgMarkOptAnd, tgMarkOptOr, tgMarkOptXor)
	if err != nil {
		return err
	}
	t.Value, t.Mask = v, m
	return nil
}

func (t *MarkTarget) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("MARK: One of the --set-xmark, --{and,or,xor,set}-mark options is required")
	}
	return x6Fcheck("MARK", tgMarkOptions, seen, tgMarkRels)
}

func (t *MarkTarget) Save(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, " --set-xmark 0x%x/0x%x", t.Value, t.Mask)
}

// tgMarkOpString is how -L names a (value, mask) operation.
func tgMarkOpString(value, mask uint32) string {
	switch {
	case value == 0:
		return fmt.Sprintf("and 0x%x", ^mask)
	case value == mask:
		return fmt.Sprintf("or 0x%x", value)
	case mask == 0:
		return fmt.Sprintf("xor 0x%x", value)
	case mask == 0xffffffff:
		return fmt.Sprintf("set 0x%x", value)
	}
	return fmt.Sprintf("xset 0x%x/0x%x", value, mask)
}

func (t *MarkTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" MARK " + tgMarkOpString(t.Value, t.Mask))
}

// NftExprs sets the packet mark to (mark & ^Mask) ^ Value, as MARK
// revision 2 does: `meta mark set`, from an immediate for a full mask.
func (t *MarkTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	out := tgXsetExprs(&expr.Meta{Key: expr.MetaKeyMARK, Register: 1}, t.Value, t.Mask)
	return append(out, tgMetaSet(expr.MetaKeyMARK)), nil
}
