package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// ConnmarkMatch is -m connmark --mark V[/M].
type ConnmarkMatch struct {
	Mark, Mask uint32
	Invert     bool
}

var connmarkMatchSpec = ExtSpec{
	Name: "connmark",
	X6:   true,
	Options: []OptDef{
		{Name: "mark", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true},
	},
	NewMatch: func(Family) MatchExt { return &ConnmarkMatch{} },
}

var _ = RegisterMatch(&connmarkMatchSpec)

func (m *ConnmarkMatch) Name() string { return "connmark" }

func (m *ConnmarkMatch) Parse(p *OptArg) error {
	v, mask, err := parseMarkMask("connmark", "mark", p.Arg)
	if err != nil {
		return err
	}
	m.Mark, m.Mask, m.Invert = v, mask, p.Invert
	return nil
}

func (m *ConnmarkMatch) Final(*Rule, OptSet) error { return nil }

func (m *ConnmarkMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(bang(m.Invert) + " --mark " + markString(m.Mark, m.Mask))
}

func (m *ConnmarkMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	inv := ""
	if m.Invert {
		inv = "!"
	}
	b.WriteString(" connmark match " + inv + " " + markString(m.Mark, m.Mask))
}

// NftExprs: ct mark, masked, compared. A packet without a conntrack
// entry stops the rule at the ct load (no match, also with `!`), which
// is what xt connmark does.
func (m *ConnmarkMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	return append([]expr.Any{&expr.Ct{Key: expr.CtKeyMARK, Register: 1}}, maskedCmpExprs(m.Mark, m.Mask, m.Invert)...), nil
}
