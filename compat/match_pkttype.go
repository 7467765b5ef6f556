package compat

import (
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// PkttypeMatch is -m pkttype: the link-layer packet type.
type PkttypeMatch struct {
	Type   uint8 // PACKET_HOST 0, BROADCAST 1, MULTICAST 2, OTHERHOST 3
	Invert bool
}

var pkttypeNames = []struct {
	name string
	typ  uint8
}{{"unicast", 0}, {"broadcast", 1}, {"multicast", 2}, {"otherhost", 3},
	{"bcast", 1}, {"mcast", 2}, {"host", 0}}

var pkttypeMatchSpec = ExtSpec{
	Name:     "pkttype",
	Options:  []OptDef{{Name: "pkt-type", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &PkttypeMatch{} },
}

var _ = RegisterMatch(&pkttypeMatchSpec)

func (m *PkttypeMatch) Name() string { return "pkttype" }

func (m *PkttypeMatch) Parse(p *OptArg) error {
	for _, n := range pkttypeNames {
		if strings.EqualFold(p.Arg, n.name) {
			m.Type = n.typ
			m.Invert = m.Invert || p.Invert
			return nil
		}
	}
	return Paramf("Bad packet type '%s'", p.Arg)
}

func (m *PkttypeMatch) Final(*Rule, OptSet) error { return nil }

func (m *PkttypeMatch) typeString() string {
	for _, n := range pkttypeNames {
		if n.typ == m.Type {
			return n.name
		}
	}
	return strconv.Itoa(int(m.Type))
}

func (m *PkttypeMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(invMark(m.Invert) + " --pkt-type " + m.typeString())
}

func (m *PkttypeMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" PKTTYPE ")
	if m.Invert {
		b.WriteByte('!')
	}
	b.WriteString("= " + m.typeString())
}

// NftExprs: "meta pkttype" resolves PACKET_LOOPBACK exactly as
// xt_pkttype does (multicast or broadcast by address family).
func (m *PkttypeMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	return []expr.Any{metaLoad(expr.MetaKeyPKTTYPE), cmpReg(m.Invert, []byte{m.Type})}, nil
}
