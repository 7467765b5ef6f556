package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// MHMatch is ip6tables -m mh: the type of the IPv6 mobility header, a
// range of 0..255.
type MHMatch struct {
	Min, Max uint8
	Invert   bool
}

// mhTypes are the mobility header type names, each type's first name
// being the one -L prints.
var mhTypes = []struct {
	name string
	typ  uint8
}{
	{"binding-refresh-request", 0}, {"brr", 0},
	{"home-test-init", 1}, {"hoti", 1},
	{"careof-test-init", 2}, {"coti", 2},
	{"home-test", 3}, {"hot", 3},
	{"careof-test", 4}, {"cot", 4},
	{"binding-update", 5}, {"bu", 5},
	{"binding-acknowledgement", 6}, {"ba", 6},
	{"binding-error", 7}, {"be", 7},
}

var mhMatchSpec = ExtSpec{
	Name:     "mh",
	Family:   IPv6,
	Options:  []OptDef{{Name: "mh-type", Arg: RequiredArg, ID: 0, Invert: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &MHMatch{Max: 0xff} },
}

var _ = RegisterMatch(&mhMatchSpec)

func (m *MHMatch) Name() string { return "mh" }

// mhType reads a type: a case-insensitive prefix of a name (the first
// name it begins, unless another has exactly its length), else a number.
func mhType(s string) (uint8, error) {
	match := -1
	for i, t := range mhTypes {
		if len(s) <= len(t.name) && strings.EqualFold(t.name[:len(s)], s) {
			if match < 0 || len(t.name) == len(s) {
				match = i
			}
		}
	}
	if match >= 0 {
		return mhTypes[match].typ, nil
	}
	if v, ok := strtoui(s, 0, 0xff); ok {
		return uint8(v), nil
	}
	return 0, Paramf("Invalid MH type `%s'", s)
}

func (m *MHMatch) Parse(p *OptArg) error {
	lo, hi, isRange := strings.Cut(p.Arg, ":")
	var err error
	if !isRange {
		if m.Min, err = mhType(lo); err != nil {
			return err
		}
		m.Max = m.Min
	} else {
		m.Min, m.Max = 0, 0xff
		if lo != "" {
			if m.Min, err = mhType(lo); err != nil {
				return err
			}
		}
		if hi != "" {
			if m.Max, err = mhType(hi); err != nil {
				return err
			}
		}
		if m.Min > m.Max {
			return Paramf("Invalid MH type range (min > max)")
		}
	}
	m.Invert = p.Invert
	return nil
}

func (m *MHMatch) Final(*Rule, OptSet) error { return nil }

func (m *MHMatch) full() bool { return m.Min == 0 && m.Max == 0xff }

// Save: ip6tables 1.8.9 leaves out the full range, inverted or not.
func (m *MHMatch) Save(b *strings.Builder, _ *Rule) {
	if !m.full() {
		m.save(b)
	}
}

// SaveExact keeps an inverted full range (it never matches).
func (m *MHMatch) SaveExact(b *strings.Builder, _ *Rule) {
	if !m.full() || m.Invert {
		m.save(b)
	}
}

func (m *MHMatch) save(b *strings.Builder) {
	b.WriteString(invMark(m.Invert))
	if m.Min == m.Max {
		fmt.Fprintf(b, " --mh-type %d", m.Min)
	} else {
		fmt.Fprintf(b, " --mh-type %d:%d", m.Min, m.Max)
	}
}

func (m *MHMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" mh")
	if m.full() && !m.Invert {
		return
	}
	name := func(t uint8) string {
		if !numeric {
			for _, n := range mhTypes {
				if n.typ == t {
					return n.name
				}
			}
		}
		return fmt.Sprint(t)
	}
	b.WriteByte(' ')
	if m.Invert {
		b.WriteByte('!')
	}
	b.WriteString(name(m.Min))
	if m.Min != m.Max {
		b.WriteString(":" + name(m.Max))
	}
}

// NftExprs: the xtables match (struct ip6t_mh: types[2], invflags),
// which the kernel allows only after -p mh. nft's "mh type" would also
// need the exthdr walk xt_mh does not do.
func (m *MHMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u8(m.Min)
	x.u8(m.Max)
	var inv uint8
	if m.Invert {
		inv = 1
	}
	x.u8(inv)
	return []expr.Any{compatMatch("mh", 0, x)}, nil
}
