package compat

import "strings"

// AddrtypeMatch is -m addrtype (revision 1): the routing type of the
// source and/or destination address.
type AddrtypeMatch struct {
	Src, Dst       uint16 // bit i = addrtypeNames[i]
	SrcInv, DstInv bool
	LimitIn        bool
	LimitOut       bool
}

const (
	addrtypeOptSrc = iota
	addrtypeOptDst
	addrtypeOptLimitIn
	addrtypeOptLimitOut
)

var addrtypeNames = []string{"UNSPEC", "UNICAST", "LOCAL", "BROADCAST", "ANYCAST", "MULTICAST",
	"BLACKHOLE", "UNREACHABLE", "PROHIBIT", "THROW", "NAT", "XRESOLVE"}

var addrtypeOpts = []OptDef{
	{Name: "src-type", Arg: RequiredArg, ID: addrtypeOptSrc, Invert: true},
	{Name: "dst-type", Arg: RequiredArg, ID: addrtypeOptDst, Invert: true},
	{Name: "limit-iface-in", Arg: NoArg, ID: addrtypeOptLimitIn},
	{Name: "limit-iface-out", Arg: NoArg, ID: addrtypeOptLimitOut},
}

func init() {
	RegisterMatch(&ExtSpec{
		Name:     "addrtype",
		Options:  addrtypeOpts,
		X6:       true,
		NewMatch: func(Family) MatchExt { return &AddrtypeMatch{} },
	})
}

func (m *AddrtypeMatch) Name() string { return "addrtype" }

// addrtypeOne matches a name case-insensitively against the type names;
// like the reference, a prefix of a name is enough.
func addrtypeOne(s string) (uint16, bool) {
	for i, n := range addrtypeNames {
		if len(s) <= len(n) && strings.EqualFold(s, n[:len(s)]) {
			return 1 << uint(i), true
		}
	}
	return 0, false
}

func parseAddrtypes(arg string) (uint16, error) {
	var mask uint16
	for {
		comma := strings.IndexByte(arg, ',')
		if comma < 0 {
			break
		}
		v, ok := addrtypeOne(arg[:comma])
		if comma == 0 || !ok {
			return 0, Paramf("addrtype: bad type `%s'", arg)
		}
		mask |= v
		arg = arg[comma+1:]
	}
	v, ok := addrtypeOne(arg)
	if arg == "" || !ok {
		return 0, Paramf("addrtype: bad type \"%s\"", arg)
	}
	return mask | v, nil
}

func (m *AddrtypeMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case addrtypeOptSrc, addrtypeOptDst:
		v, err := parseAddrtypes(p.Arg)
		if err != nil {
			return err
		}
		if p.Def.ID == addrtypeOptSrc {
			m.Src |= v
			m.SrcInv = m.SrcInv || p.Invert
		} else {
			m.Dst |= v
			m.DstInv = m.DstInv || p.Invert
		}
	case addrtypeOptLimitIn:
		m.LimitIn = true
	case addrtypeOptLimitOut:
		m.LimitOut = true
	}
	return nil
}

func (m *AddrtypeMatch) Final(_ *Rule, seen OptSet) error {
	if !seen.Has(addrtypeOptSrc) && !seen.Has(addrtypeOptDst) {
		return Paramf("addrtype: you must specify --src-type or --dst-type")
	}
	return x6Fcheck("addrtype", addrtypeOpts, seen, map[int]x6Rel{
		addrtypeOptLimitIn:  {excl: bit(addrtypeOptLimitOut)},
		addrtypeOptLimitOut: {excl: bit(addrtypeOptLimitIn)},
	})
}

func addrtypeString(mask uint16) string {
	var parts []string
	for i, n := range addrtypeNames {
		if mask&(1<<uint(i)) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ",")
}

func (m *AddrtypeMatch) Save(b *strings.Builder, _ *Rule) {
	if m.Src != 0 {
		b.WriteString(invMark(m.SrcInv) + " --src-type " + addrtypeString(m.Src))
	}
	if m.Dst != 0 {
		b.WriteString(invMark(m.DstInv) + " --dst-type " + addrtypeString(m.Dst))
	}
	if m.LimitIn {
		b.WriteString(" --limit-iface-in")
	}
	if m.LimitOut {
		b.WriteString(" --limit-iface-out")
	}
}

func (m *AddrtypeMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" ADDRTYPE match")
	if m.Src != 0 {
		b.WriteString(" src-type ")
		if m.SrcInv {
			b.WriteByte('!')
		}
		b.WriteString(addrtypeString(m.Src))
	}
	if m.Dst != 0 {
		b.WriteString(" dst-type ")
		if m.DstInv {
			b.WriteByte('!')
		}
		b.WriteString(addrtypeString(m.Dst))
	}
	if m.LimitIn {
		b.WriteString(" limit-in")
	}
	if m.LimitOut {
		b.WriteString(" limit-out")
	}
}
