package compat

import (
	"net/netip"
	"strings"

	"github.com/google/nftables/expr"
)

// IPRangeMatch is -m iprange (revision 1): source and/or destination
// address within an inclusive range.
type IPRangeMatch struct {
	SrcMin, SrcMax netip.Addr
	DstMin, DstMax netip.Addr
	SrcInv, DstInv bool
	HasSrc, HasDst bool
}

const (
	iprangeOptSrc = iota
	iprangeOptDst
)

var iprangeMatchSpec = ExtSpec{
	Name: "iprange",
	Options: []OptDef{
		{Name: "src-range", Arg: RequiredArg, ID: iprangeOptSrc, Invert: true},
		{Name: "dst-range", Arg: RequiredArg, ID: iprangeOptDst, Invert: true},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &IPRangeMatch{} },
}

var _ = RegisterMatch(&iprangeMatchSpec)

func (m *IPRangeMatch) Name() string { return "iprange" }

// Warning returns the notice iptables prints for a reversed range, or "".
func (m *IPRangeMatch) Warning() string {
	var s string
	if m.HasSrc && m.SrcMin.Compare(m.SrcMax) > 0 {
		s += "xt_iprange: range " + m.SrcMin.String() + "-" + m.SrcMax.String() + " is reversed and will never match\n"
	}
	if m.HasDst && m.DstMin.Compare(m.DstMax) > 0 {
		s += "xt_iprange: range " + m.DstMin.String() + "-" + m.DstMax.String() + " is reversed and will never match\n"
	}
	return s
}

func (m *IPRangeMatch) Parse(p *OptArg) error {
	opt := "--" + p.Def.Name
	from, to, isRange := strings.Cut(p.Arg, "-")
	if !isRange {
		to = from
	}
	lo, ok := numericAddr(from, p.Family)
	if !ok {
		return badValue("iprange", opt, from)
	}
	hi, ok := numericAddr(to, p.Family)
	if !ok {
		return badValue("iprange", opt, to)
	}
	if p.Def.ID == iprangeOptSrc {
		m.SrcMin, m.SrcMax, m.SrcInv, m.HasSrc = lo, hi, p.Invert, true
	} else {
		m.DstMin, m.DstMax, m.DstInv, m.HasDst = lo, hi, p.Invert, true
	}
	return nil
}

func (m *IPRangeMatch) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("iprange match: You must specify `--src-range' or `--dst-range'")
	}
	return nil
}

func (m *IPRangeMatch) Save(b *strings.Builder, _ *Rule) {
	if m.HasSrc {
		b.WriteString(invMark(m.SrcInv) + " --src-range " + m.SrcMin.String() + "-" + m.SrcMax.String())
	}
	if m.HasDst {
		b.WriteString(invMark(m.DstInv) + " --dst-range " + m.DstMin.String() + "-" + m.DstMax.String())
	}
}

func (m *IPRangeMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	if m.HasSrc {
		b.WriteString(" source IP range" + invMark(m.SrcInv) + " " + m.SrcMin.String() + "-" + m.SrcMax.String())
	}
	if m.HasDst {
		b.WriteString(" destination IP range" + invMark(m.DstInv) + " " + m.DstMin.String() + "-" + m.DstMax.String())
	}
}

// NftExprs compares the address field with the range: a "cmp" for a
// single address, else "range" (big-endian, so memcmp order is numeric
// order); "!" negates; a reversed range never matches, as in the kernel.
func (m *IPRangeMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	srcOff, dstOff, l := uint32(12), uint32(16), uint32(4)
	if ctx.Family == IPv6 {
		srcOff, dstOff, l = 8, 24, 16
	}
	var out []expr.Any
	if m.HasSrc {
		out = append(out, nhLoad(srcOff, l), rangeReg(m.SrcInv, m.SrcMin.AsSlice(), m.SrcMax.AsSlice()))
	}
	if m.HasDst {
		out = append(out, nhLoad(dstOff, l), rangeReg(m.DstInv, m.DstMin.AsSlice(), m.DstMax.AsSlice()))
	}
	return out, nil
}
