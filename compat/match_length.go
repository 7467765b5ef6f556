package compat

import (
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// LengthMatch is -m length: the layer-3 packet length within a range.
type LengthMatch struct {
	Min, Max uint16
	Invert   bool
}

var lengthMatchSpec = ExtSpec{
	Name:     "length",
	Options:  []OptDef{{Name: "length", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &LengthMatch{} },
}

var _ = RegisterMatch(&lengthMatchSpec)

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

// NftExprs tests the length field of the IP header, as xt_length does
// (not skb->len). IPv4: total length (nh+2). IPv6: xt_length computes
// payload length + 40 in 16 bits, so the range moves down by 40 modulo
// 2^16; a range that wraps becomes the negated complement.
func (m *LengthMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Family == IPv4 || m.Min > m.Max {
		off := uint32(2)
		if ctx.Family == IPv6 {
			off = 4
		}
		return []expr.Any{nhLoad(off, 2), rangeReg(m.Invert, be16(m.Min), be16(m.Max))}, nil
	}
	a, b := m.Min-40, m.Max-40 // uint16 arithmetic wraps as the kernel's does
	if a <= b {
		return []expr.Any{nhLoad(4, 2), rangeReg(m.Invert, be16(a), be16(b))}, nil
	}
	return []expr.Any{nhLoad(4, 2), rangeReg(!m.Invert, be16(b+1), be16(a-1))}, nil
}
