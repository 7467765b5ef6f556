package compat

import (
	"strings"

	"encoding/binary"

	"github.com/google/nftables/expr"
)

// MultiportMatch is -m multiport (revision 1: up to 15 ports, where a
// range takes two).
type MultiportMatch struct {
	// Dir is "sports", "dports" or "ports".
	Dir    string
	Ports  []PortRange
	Invert bool
	proto  string
	seen   OptSet
}

const (
	mpOptSource = iota
	mpOptDest
	mpOptBoth
)

var multiportMatchSpec = ExtSpec{
	Name: "multiport",
	// Not X6: xtables names an option by its canonical name in the
	// "can only be used once" message, whichever alias was typed, so
	// Parse does that check itself.
	Options: []OptDef{
		{Name: "source-ports", Arg: RequiredArg, ID: mpOptSource, Invert: true},
		{Name: "sports", Arg: RequiredArg, ID: mpOptSource, Invert: true},
		{Name: "destination-ports", Arg: RequiredArg, ID: mpOptDest, Invert: true},
		{Name: "dports", Arg: RequiredArg, ID: mpOptDest, Invert: true},
		{Name: "ports", Arg: RequiredArg, ID: mpOptBoth, Invert: true},
	},
	NewMatch: func(Family) MatchExt { return &MultiportMatch{} },
}

var _ = RegisterMatch(&multiportMatchSpec)

func (m *MultiportMatch) Name() string { return "multiport" }

// multiportProto names the protocols multiport works with.
var multiportProto = map[uint8]string{6: "tcp", 17: "udp", 136: "udplite", 132: "sctp", 33: "dccp"}

var mpCanonical = [...]string{"source-ports", "destination-ports", "ports"}

func (m *MultiportMatch) Parse(p *OptArg) error {
	if m.seen.Has(p.Def.ID) {
		return Paramf("multiport: option \"--%s\" can only be used once.\n", mpCanonical[p.Def.ID])
	}
	m.seen |= 1 << uint(p.Def.ID)
	r := p.Rule
	proto, ok := multiportProto[r.Proto]
	switch {
	case r.ProtoSet && ok && !r.ProtoInv:
	case !r.ProtoSet:
		return Paramf("multiport needs `-p tcp', `-p udp', `-p udplite', `-p sctp' or `-p dccp'")
	default:
		return Paramf("multiport only works with TCP, UDP, UDPLITE, SCTP and DCCP")
	}
	m.proto = proto
	m.Dir = [...]string{"sports", "dports", "ports"}[p.Def.ID]
	m.Invert = p.Invert
	m.Ports = nil
	elems := strings.Split(p.Arg, ",")
	n := 0
	for _, e := range elems {
		if n >= 15 {
			return Paramf("too many ports specified")
		}
		lo, hi, isRange := strings.Cut(e, ":")
		a, err := xtParsePort(lo, proto)
		if err != nil {
			return err
		}
		pr := PortRange{Min: a, Max: a}
		n++
		if isRange {
			if n >= 15 {
				return Paramf("too many ports specified")
			}
			b, err := xtParsePort(hi, proto)
			if err != nil {
				return err
			}
			if a >= b {
				return Paramf("invalid portrange specified")
			}
			pr.Max = b
			n++
		}
		m.Ports = append(m.Ports, pr)
	}
	return nil
}

func (m *MultiportMatch) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("multiport expection an option")
	}
	return exclusive("multiport", seen, []int{mpOptSource, mpOptDest, mpOptBoth},
		mpCanonical[:], [][2]int{{0, 1}, {0, 2}, {1, 2}})
}

func (m *MultiportMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(bang(m.Invert) + " --" + m.Dir + " ")
	m.writePorts(b, true)
}

func (m *MultiportMatch) writePorts(b *strings.Builder, numeric bool) {
	for i, p := range m.Ports {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(PortName(p.Min, m.proto, numeric))
		if p.Max != p.Min {
			b.WriteByte(':')
			b.WriteString(PortName(p.Max, m.proto, numeric))
		}
	}
}

func (m *MultiportMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" multiport " + m.Dir + " ")
	if m.Invert {
		b.WriteString(" !")
	}
	m.writePorts(b, numeric)
}

// NftExprs uses the xt multiport match, revision 1: a list of ports and
// ranges is not expressible natively without an anonymous set, and the
// xt match also keeps the xtables rule that fragments never match.
// struct xt_multiport_v1: flags (0 source, 1 destination, 2 either),
// count, 15 host-order ports, 15 range flags (a range is two entries,
// the first flagged), invert.
func (m *MultiportMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	info := make([]byte, 48)
	info[0] = map[string]byte{"sports": 0, "dports": 1, "ports": 2}[m.Dir]
	n := 0
	for _, p := range m.Ports {
		if n >= 15 {
			return nil, Paramf("too many ports specified")
		}
		binary.NativeEndian.PutUint16(info[2+2*n:], p.Min)
		n++
		if p.Max != p.Min {
			if n >= 15 {
				return nil, Paramf("too many ports specified")
			}
			info[32+n-1] = 1
			binary.NativeEndian.PutUint16(info[2+2*n:], p.Max)
			n++
		}
	}
	info[1] = byte(n)
	if m.Invert {
		info[47] = 1
	}
	return []expr.Any{xtMatch("multiport", 1, info)}, nil
}
