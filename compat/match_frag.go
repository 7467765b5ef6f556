package compat

import (
	"fmt"
	"math"
	"strings"

	"github.com/google/nftables/expr"
)

// FragMatch is ip6tables -m frag: the IPv6 fragment header.
type FragMatch struct {
	IDs            [2]uint32
	HdrLen         uint32
	Flags, InvFlag uint8 // fragFlag*
}

const (
	fragFlagIDs   = 0x01
	fragFlagLen   = 0x02
	fragFlagRes   = 0x04
	fragFlagFirst = 0x08
	fragFlagMore  = 0x10
	fragFlagLast  = 0x20
)

const (
	fragOptID = iota
	fragOptLen
	fragOptRes
	fragOptFirst
	fragOptMore
	fragOptLast
)

var fragOpts = []OptDef{
	{Name: "fragid", Arg: RequiredArg, ID: fragOptID, Invert: true},
	{Name: "fraglen", Arg: RequiredArg, ID: fragOptLen, Invert: true},
	{Name: "fragres", Arg: NoArg, ID: fragOptRes},
	{Name: "fragfirst", Arg: NoArg, ID: fragOptFirst},
	{Name: "fragmore", Arg: NoArg, ID: fragOptMore},
	{Name: "fraglast", Arg: NoArg, ID: fragOptLast},
}

var fragMatchSpec = ExtSpec{
	Name:     "frag",
	Family:   IPv6,
	Options:  fragOpts,
	X6:       true,
	NewMatch: func(Family) MatchExt { return &FragMatch{IDs: [2]uint32{0, math.MaxUint32}} },
}

var _ = RegisterMatch(&fragMatchSpec)

func (m *FragMatch) Name() string { return "frag" }

func (m *FragMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case fragOptID:
		v, err := parseU32Range(p)
		if err != nil {
			return err
		}
		m.IDs = v
		m.Flags |= fragFlagIDs
		if p.Invert {
			m.InvFlag |= fragFlagIDs
		}
	case fragOptLen:
		v, err := x6Uint(p, 0, math.MaxUint32)
		if err != nil {
			return err
		}
		m.HdrLen = uint32(v)
		m.Flags |= fragFlagLen
		if p.Invert {
			m.InvFlag |= fragFlagLen
		}
	case fragOptRes:
		m.Flags |= fragFlagRes
	case fragOptFirst:
		m.Flags |= fragFlagFirst
	case fragOptMore:
		m.Flags |= fragFlagMore
	case fragOptLast:
		m.Flags |= fragFlagLast
	}
	return nil
}

func (m *FragMatch) Final(_ *Rule, seen OptSet) error {
	return x6Fcheck("frag", fragOpts, seen, map[int]x6Rel{
		fragOptMore: {excl: bit(fragOptLast)},
		fragOptLast: {excl: bit(fragOptMore)},
	})
}

// idsShown says whether the id range is printed: -L omits only the
// uninverted full range, -S (1.8.9) omits the full range always.
func (m *FragMatch) idsShown(list bool) bool {
	full := m.IDs[0] == 0 && m.IDs[1] == math.MaxUint32
	return !full || (list && m.InvFlag&fragFlagIDs != 0)
}

func (m *FragMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact is Save that keeps a given full id range, which -S drops:
// inverted it never matches, and given at all it sets the flag
// (for the rule's userdata).
func (m *FragMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

// CompareKey: -S prints a given full id range as nothing, like none, but
// the flag it sets makes another struct ip6t_frag, which iptables-nft's
// -C and -D tell apart.
func (m *FragMatch) CompareKey() string {
	return fmt.Sprintf("frag ids given %v", m.Flags&fragFlagIDs != 0)
}

func (m *FragMatch) save(b *strings.Builder, exact bool) {
	if m.idsShown(exact) || exact && m.Flags&fragFlagIDs != 0 {
		fmt.Fprintf(b, "%s --fragid %d", invMark(m.InvFlag&fragFlagIDs != 0), m.IDs[0])
		if m.IDs[0] != m.IDs[1] {
			fmt.Fprintf(b, ":%d", m.IDs[1])
		}
	}
	if m.Flags&fragFlagLen != 0 {
		fmt.Fprintf(b, "%s --fraglen %d", invMark(m.InvFlag&fragFlagLen != 0), m.HdrLen)
	}
	for _, f := range []struct {
		flag uint8
		s    string
	}{{fragFlagRes, " --fragres"}, {fragFlagFirst, " --fragfirst"}, {fragFlagMore, " --fragmore"}, {fragFlagLast, " --fraglast"}} {
		if m.Flags&f.flag != 0 {
			b.WriteString(f.s)
		}
	}
}

func (m *FragMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" frag ")
	inv := func(f uint8) string {
		if m.InvFlag&f != 0 {
			return "!"
		}
		return ""
	}
	if m.idsShown(true) {
		if m.IDs[0] == m.IDs[1] {
			fmt.Fprintf(b, "id:%s%d", inv(fragFlagIDs), m.IDs[0])
		} else {
			fmt.Fprintf(b, "ids:%s%d:%d", inv(fragFlagIDs), m.IDs[0], m.IDs[1])
		}
	}
	if m.Flags&fragFlagLen != 0 {
		fmt.Fprintf(b, " length:%s%d", inv(fragFlagLen), m.HdrLen)
	}
	for _, f := range []struct {
		flag uint8
		s    string
	}{{fragFlagRes, " reserved"}, {fragFlagFirst, " first"}, {fragFlagMore, " more"}, {fragFlagLast, " last"}} {
		if m.Flags&f.flag != 0 {
			b.WriteString(f.s)
		}
	}
}

// NftExprs: the xtables match (struct ip6t_frag): it drops malformed
// packets and tests the fragment header in ways exthdr does not.
func (m *FragMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u32(m.IDs[0])
	x.u32(m.IDs[1])
	x.u32(m.HdrLen)
	// as libxt_frag: --fragid sets the flag, even for the full range
	x.u8(m.Flags)
	x.u8(m.InvFlag)
	return []expr.Any{compatMatch("frag", 0, x)}, nil
}
