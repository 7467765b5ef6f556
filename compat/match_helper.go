package compat

import "strings"

// HelperMatch is -m helper: the conntrack helper of the connection.
type HelperMatch struct {
	Helper string
	Invert bool
}

func init() {
	RegisterMatch(&ExtSpec{
		Name:     "helper",
		Options:  []OptDef{{Name: "helper", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true}},
		X6:       true,
		NewMatch: func(Family) MatchExt { return &HelperMatch{} },
	})
}

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
