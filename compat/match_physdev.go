package compat

import (
	"bytes"
	"strings"

	"github.com/google/nftables/expr"
)

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

var physdevMatchSpec = ExtSpec{
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
}

var _ = RegisterMatch(&physdevMatchSpec)

func (m *PhysdevMatch) Name() string { return "physdev" }

func (m *PhysdevMatch) Parse(p *OptArg) error {
	flag := uint8(1) << uint(p.Def.ID)
	switch p.Def.ID {
	case physdevOptIn, physdevOptOut:
		if len(p.Arg) >= 16 {
			return Paramf("interface name `%s' must be shorter than IFNAMSIZ (%d)", p.Arg, 15)
		}
		if strings.ContainsAny(p.Arg, "/ ") {
			// xtables_parse_interface, as for -i and -o
			p.Warn("Warning: weird character in interface `" + p.Arg + "' ('/' and ' ' are not allowed by the kernel).\n")
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

func (m *PhysdevMatch) write(b *strings.Builder, exact bool) {
	flag := func(f uint8, s string) {
		if m.Bitmask&f != 0 {
			b.WriteString(invMark(m.Inv&f != 0) + s)
		}
	}
	in, out := m.In, m.Out
	if exact {
		in, out = exactWord(in), exactWord(out)
	}
	flag(physdevIsIn, " --physdev-is-in")
	flag(physdevIn, " --physdev-in "+in)
	flag(physdevIsOut, " --physdev-is-out")
	flag(physdevOut, " --physdev-out "+out)
	flag(physdevBridged, " --physdev-is-bridged")
}

func (m *PhysdevMatch) Save(b *strings.Builder, _ *Rule) { m.write(b, false) }

// SaveExact quotes a port name with a space or a quote (-S prints it as
// is), so that the rule's kept text reads back as the same rule.
func (m *PhysdevMatch) SaveExact(b *strings.Builder, _ *Rule) { m.write(b, true) }

// ExactIsSave: the names need no quotes.
func (m *PhysdevMatch) ExactIsSave() bool {
	return !ifaceNeedsQuote(m.In) && !ifaceNeedsQuote(m.Out)
}

func (m *PhysdevMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" PHYSDEV match")
	m.write(b, false)
}

// NftExprs: nftables cannot see the bridge ports of br_netfilter, so
// this is the xtables match (struct xt_physdev_info).
func (m *PhysdevMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	for _, name := range []string{m.In, m.Out} {
		x.raw([]byte(name), 16)
		mask := make([]byte, 0, 16)
		switch {
		case name == "":
		case strings.HasSuffix(name, "+"):
			mask = append(mask, bytes.Repeat([]byte{0xff}, len(name)-1)...)
		default:
			mask = append(mask, bytes.Repeat([]byte{0xff}, len(name)+1)...)
		}
		x.raw(mask, 16)
	}
	x.u8(physdevKernelBits(m.Inv))
	x.u8(physdevKernelBits(m.Bitmask))
	return []expr.Any{compatMatch("physdev", 0, x)}, nil
}

// physdevKernelBits maps physdev* bits to the kernel's XT_PHYSDEV_OP_*
// (IN 1, OUT 2, BRIDGED 4, ISIN 8, ISOUT 16).
func physdevKernelBits(v uint8) uint8 {
	var k uint8
	for _, p := range [][2]uint8{{physdevIn, 1}, {physdevOut, 2}, {physdevBridged, 4}, {physdevIsIn, 8}, {physdevIsOut, 16}} {
		if v&p[0] != 0 {
			k |= p[1]
		}
	}
	return k
}
