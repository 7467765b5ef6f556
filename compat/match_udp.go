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
	// readBack: Src and Dst are already as read back (a merge's result)
	readBack bool
}

var udpMatchSpec = ExtSpec{
	Name: "udp",
	Options: []OptDef{
		{Name: "source-port", Arg: RequiredArg, ID: tcpOptSport},
		{Name: "sport", Arg: RequiredArg, ID: tcpOptSport},
		{Name: "destination-port", Arg: RequiredArg, ID: tcpOptDport},
		{Name: "dport", Arg: RequiredArg, ID: tcpOptDport},
	},
	NewMatch: func(Family) MatchExt { return &UDPMatch{Src: AnyPorts, Dst: AnyPorts} },
}

var _ = RegisterMatch(&udpMatchSpec)

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
	if !m.allZero() && r.Proto != 17 {
		return Paramf("UDP match requires '-p udp'")
	}
	return nil
}

// Vanishes says iptables-nft turns the match into no expression at all:
// it has ports, but only full ranges (inverted or not; see Vanisher).
func (m *UDPMatch) Vanishes() bool {
	return !m.allZero() && m.Src.Full() && m.Dst.Full()
}

// Merge combines udp matches with ports, as read-back does (see Merger).
func (m *UDPMatch) Merge(next Match) (Match, bool) {
	n, ok := next.(*UDPMatch)
	if !ok || m.allZero() || n.allZero() {
		return nil, false
	}
	c := *m
	c.Src, c.Dst = readBackMerge(c.Src, n.Src), readBackMerge(c.Dst, n.Dst)
	c.seenSrc, c.seenDst, c.readBack = c.seenSrc || n.seenSrc, c.seenDst || n.seenDst, true
	return &c, true
}

func (m *UDPMatch) Save(b *strings.Builder, _ *Rule) {
	src, dst := m.ports()
	savePorts(b, "sport", src)
	savePorts(b, "dport", dst)
}

// ports are the ranges as the kernel's expressions read back (the match
// is native: see allZero).
func (m *UDPMatch) ports() (src, dst PortRange) {
	if m.readBack {
		return m.Src, m.Dst
	}
	return m.Src.nativeRange(), m.Dst.nativeRange()
}

// allZero says the match tests nothing: iptables-nft keeps it as xt_udp
// (native otherwise).
func (m *UDPMatch) allZero() bool { return m.Src == AnyPorts && m.Dst == AnyPorts }

// SaveExact is Save keeping an inverted full port range, which -S leaves
// out, so that the rule's text reads back as the same match (one that
// vanishes, see Vanishes).
func (m *UDPMatch) SaveExact(b *strings.Builder, _ *Rule) {
	saveExactPorts(b, "sport", m.Src)
	saveExactPorts(b, "dport", m.Dst)
}

// ExactIsSave: the two forms differ only where a range reads back as
// another.
func (m *UDPMatch) ExactIsSave() bool {
	return m.Src.saveIsExact(true) && m.Dst.saveIsExact(true)
}

func (m *UDPMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" udp")
	// (native: no expression holds an inverted full range)
	ListPorts(b, "spt", m.Src.nativeRange(), "udp", numeric)
	ListPorts(b, "dpt", m.Dst.nativeRange(), "udp", numeric)
}

// NftExprs translates the udp match: the first-fragment test (xt_udp
// never matches a non-first IPv4 fragment; see firstFragmentExprs), then
// source and destination ports.
func (m *UDPMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if m.allZero() {
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
