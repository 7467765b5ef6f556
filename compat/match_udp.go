package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// UDPMatch is -m udp (also loaded implicitly by -p udp).
type UDPMatch struct {
	Src, Dst PortRange
	seenSrc  bool
	seenDst  bool
}

func init() {
	RegisterMatch(&ExtSpec{
		Name: "udp",
		Options: []OptDef{
			{Name: "source-port", Arg: RequiredArg, ID: tcpOptSport},
			{Name: "sport", Arg: RequiredArg, ID: tcpOptSport},
			{Name: "destination-port", Arg: RequiredArg, ID: tcpOptDport},
			{Name: "dport", Arg: RequiredArg, ID: tcpOptDport},
		},
		NewMatch: func(Family) MatchExt { return &UDPMatch{Src: AnyPorts, Dst: AnyPorts} },
	})
}

func (m *UDPMatch) Name() string { return "udp" }

func (m *UDPMatch) Parse(p *OptArg) error {
	which, seen, dst := "source-port", &m.seenSrc, &m.Src
	if p.Def.ID == tcpOptDport {
		which, seen, dst = "destination-port", &m.seenDst, &m.Dst
	}
	if *seen {
		return Paramf("udp: option \"--%s\" can only be used once.\n", which)
	}
	r, err := ParseMPortRange("udp", which, p.Arg)
	if err != nil {
		return err
	}
	r.Invert = p.Invert
	*dst, *seen = r, true
	return nil
}

// Final refuses ports without -p udp, as iptables-nft does when it turns
// the match into payload expressions (it keeps xt_udp for a match with
// nothing to test).
func (m *UDPMatch) Final(r *Rule, _ OptSet) error {
	if (m.Src != AnyPorts || m.Dst != AnyPorts) && r.Proto != 17 {
		return Paramf("UDP match requires '-p udp'")
	}
	return nil
}

// Merge combines udp matches with ports, as read-back does (see Merger).
func (m *UDPMatch) Merge(next Match) (Match, bool) {
	n, ok := next.(*UDPMatch)
	if !ok || !(m.seenSrc || m.seenDst) || !(n.seenSrc || n.seenDst) {
		return nil, false
	}
	c := *m
	if n.seenSrc {
		inv := c.Src.Invert
		c.Src, c.seenSrc = n.Src, true
		c.Src.Invert = c.Src.Invert || inv
	}
	if n.seenDst {
		inv := c.Dst.Invert
		c.Dst, c.seenDst = n.Dst, true
		c.Dst.Invert = c.Dst.Invert || inv
	}
	return &c, true
}

func (m *UDPMatch) Save(b *strings.Builder, _ *Rule) {
	savePorts(b, "sport", m.Src, false)
	savePorts(b, "dport", m.Dst, false)
}

// SaveExact is Save keeping an inverted range of all ports, which -S
// leaves out and no packet meets.
func (m *UDPMatch) SaveExact(b *strings.Builder, _ *Rule) {
	savePorts(b, "sport", m.Src, true)
	savePorts(b, "dport", m.Dst, true)
}

func (m *UDPMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" udp")
	ListPorts(b, "spt", m.Src, "udp", numeric)
	ListPorts(b, "dpt", m.Dst, "udp", numeric)
}

// NftExprs translates the udp match: the first-fragment test (xt_udp
// never matches a non-first IPv4 fragment; see firstFragmentExprs), then
// source and destination ports.
func (m *UDPMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if m.Src == AnyPorts && m.Dst == AnyPorts {
		// a match with nothing to test stays xt_udp in iptables-nft
		// (which the kernel refuses without -p udp): xt_udp still skips
		// the non-first fragments, IPv6 ones too, which nft cannot tell
		// in one rule, and drops a packet too short for a UDP header
		x := &xtBlob{}
		x.u16(0)
		x.u16(0xffff)
		x.u16(0)
		x.u16(0xffff)
		x.u8(0)
		return []expr.Any{compatMatch("udp", 0, x)}, nil
	}
	out := firstFragmentExprs(ctx.Rule)
	out = append(out, PortExprs(0, m.Src)...)
	return append(out, PortExprs(2, m.Dst)...), nil
}
