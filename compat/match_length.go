package compat

import (
	"strconv"
	"strings"
)

// LengthMatch is -m length: the layer-3 packet length within a range.
type LengthMatch struct {
	Min, Max uint16
	Invert   bool
}

func init() {
	RegisterMatch(&ExtSpec{
		Name:     "length",
		Options:  []OptDef{{Name: "length", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true}},
		X6:       true,
		NewMatch: func(Family) MatchExt { return &LengthMatch{} },
	})
}

func (m *LengthMatch) Name() string { return "length" }

func (m *LengthMatch) Parse(p *OptArg) error {
	v, err := x6Range(p, 0, 0xffff, 2)
	if err != nil {
		return err
	}
	m.Min, m.Max = uint16(v[0]), uint16(v[0])
	if len(v) > 1 {
		m.Max = uint16(v[1])
	}
	m.Invert = m.Invert || p.Invert
	return nil
}

func (m *LengthMatch) Final(*Rule, OptSet) error { return nil }

func (m *LengthMatch) rangeString() string {
	if m.Min == m.Max {
		return strconv.Itoa(int(m.Min))
	}
	return strconv.Itoa(int(m.Min)) + ":" + strconv.Itoa(int(m.Max))
}

func (m *LengthMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(invMark(m.Invert) + " --length " + m.rangeString())
}

func (m *LengthMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" length ")
	if m.Invert {
		b.WriteByte('!')
	}
	b.WriteString(m.rangeString())
}
