package compat

import "strings"

// PhysdevMatch is -m physdev: the bridge ports of a bridged packet.
type PhysdevMatch struct {
	In, Out      string
	Bitmask, Inv uint8 // physdevIn | physdevOut | physdevIsIn | physdevIsOut | physdevBridged
}

const (
	physdevIn      = 1
	physdevOut     = 2
	physdevIsIn    = 4
	physdevIsOut   = 8
	physdevBridged = 16
)

const (
	physdevOptIn = iota
	physdevOptOut
	physdevOptIsIn
	physdevOptIsOut
	physdevOptBridged
)

func init() {
	RegisterMatch(&ExtSpec{
		Name: "physdev",
		Options: []OptDef{
			{Name: "physdev-in", Arg: RequiredArg, ID: physdevOptIn, Invert: true},
			{Name: "physdev-out", Arg: RequiredArg, ID: physdevOptOut, Invert: true},
			{Name: "physdev-is-in", Arg: NoArg, ID: physdevOptIsIn, Invert: true},
			{Name: "physdev-is-out", Arg: NoArg, ID: physdevOptIsOut, Invert: true},
			{Name: "physdev-is-bridged", Arg: NoArg, ID: physdevOptBridged, Invert: true},
		},
		X6:       true,
		NewMatch: func(Family) MatchExt { return &PhysdevMatch{} },
	})
}

func (m *PhysdevMatch) Name() string { return "physdev" }

func (m *PhysdevMatch) Parse(p *OptArg) error {
	flag := uint8(1) << uint(p.Def.ID)
	switch p.Def.ID {
	case physdevOptIn, physdevOptOut:
		if len(p.Arg) >= 16 {
			return Paramf("interface name `%s' must be shorter than IFNAMSIZ (%d)", p.Arg, 15)
		}
		if p.Def.ID == physdevOptIn {
			m.In = p.Arg
		} else {
			m.Out = p.Arg
		}
	}
	m.Bitmask |= flag
	if p.Invert {
		m.Inv |= flag
	}
	return nil
}

func (m *PhysdevMatch) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("PHYSDEV: no physdev option specified")
	}
	return nil
}

func (m *PhysdevMatch) write(b *strings.Builder) {
	flag := func(f uint8, s string) {
		if m.Bitmask&f != 0 {
			b.WriteString(invMark(m.Inv&f != 0) + s)
		}
	}
	flag(physdevIsIn, " --physdev-is-in")
	flag(physdevIn, " --physdev-in "+m.In)
	flag(physdevIsOut, " --physdev-is-out")
	flag(physdevOut, " --physdev-out "+m.Out)
	flag(physdevBridged, " --physdev-is-bridged")
}

func (m *PhysdevMatch) Save(b *strings.Builder, _ *Rule) { m.write(b) }

func (m *PhysdevMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" PHYSDEV match")
	m.write(b)
}
