package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// HelperMatch is -m helper: the conntrack helper of the connection.
type HelperMatch struct {
	Helper string
	Invert bool
}

var helperMatchSpec = ExtSpec{
	Name:     "helper",
	Options:  []OptDef{{Name: "helper", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &HelperMatch{} },
}

var _ = RegisterMatch(&helperMatchSpec)

func (m *HelperMatch) Name() string { return "helper" }

func (m *HelperMatch) Parse(p *OptArg) error {
	// the kernel structure holds 29 characters and a NUL
	m.Helper = p.Arg
	if len(m.Helper) > 29 {
		m.Helper = m.Helper[:29]
	}
	if p.Invert {
		m.Invert = true
	}
	return nil
}

func (m *HelperMatch) Final(*Rule, OptSet) error { return nil }

func (m *HelperMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(invMark(m.Invert) + " --helper " + SaveQuote(m.Helper))
}

func (m *HelperMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" helper match ")
	if m.Invert {
		b.WriteString("! ")
	}
	b.WriteString("\"" + m.Helper + "\"")
}

// NftExprs: the xtables match (struct xt_helper_info). xt_helper tests
// the helper of the master connection (and "!" matches untracked
// packets); "ct helper" reads the connection's own.
func (m *HelperMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	var inv uint32
	if m.Invert {
		inv = 1
	}
	x.u32(inv)
	x.raw([]byte(m.Helper), 30)
	x.align(4)
	return []expr.Any{compatMatch("helper", 0, x)}, nil
}
