package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// MarkMatch is -m mark --mark V[/M].
type MarkMatch struct {
	Mark, Mask uint32
	Invert     bool
}

var markMatchSpec = ExtSpec{
	Name: "mark",
	X6:   true,
	Options: []OptDef{
		{Name: "mark", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true},
	},
	NewMatch: func(Family) MatchExt { return &MarkMatch{} },
}

var _ = RegisterMatch(&markMatchSpec)

func (m *MarkMatch) Name() string { return "mark" }

func (m *MarkMatch) Parse(p *OptArg) error {
	v, mask, err := parseMarkMask("mark", "mark", p.Arg)
	if err != nil {
		return err
	}
	m.Mark, m.Mask, m.Invert = v, mask, p.Invert
	return nil
}

func (m *MarkMatch) Final(*Rule, OptSet) error { return nil }

// markString prints "0xV" or "0xV/0xM" (the mask only when not all ones).
func markString(v, mask uint32) string {
	if mask == 0xffffffff {
		return fmt.Sprintf("0x%x", v)
	}
	return fmt.Sprintf("0x%x/0x%x", v, mask)
}

func (m *MarkMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(bang(m.Invert) + " --mark " + markString(m.Mark, m.Mask))
}

func (m *MarkMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" mark match" + bang(m.Invert) + " " + markString(m.Mark, m.Mask))
}

// NftExprs: meta mark, masked unless the mask is all ones, compared
// with the value; `!` turns the compare into neq. Bits of the value
// outside the mask make the rule never match, as in xt mark.
func (m *MarkMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	return append([]expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1}}, maskedCmpExprs(m.Mark, m.Mask, m.Invert)...), nil
}
