package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// TCPMatch is -m tcp (also loaded implicitly by -p tcp).
type TCPMatch struct {
	Src, Dst  PortRange
	Option    uint8
	OptionInv bool
	HasOption bool
	FlagMask  uint8
	FlagCmp   uint8
	FlagsInv  bool
	HasFlags  bool
	seenSrc   bool
	seenDst   bool
	// readBack: Src and Dst are already as read back (a merge's result)
	readBack bool
}

const (
	tcpOptSport = iota
	tcpOptDport
	tcpOptSyn
	tcpOptFlags
	tcpOptOption
)

var tcpMatchSpec = ExtSpec{
	Name: "tcp",
	Options: []OptDef{
		{Name: "source-port", Arg: RequiredArg, ID: tcpOptSport},
		{Name: "sport", Arg: RequiredArg, ID: tcpOptSport},
		{Name: "destination-port", Arg: RequiredArg, ID: tcpOptDport},
		{Name: "dport", Arg: RequiredArg, ID: tcpOptDport},
		{Name: "syn", Arg: NoArg, ID: tcpOptSyn},
		{Name: "tcp-flags", Arg: RequiredArg, ID: tcpOptFlags},
		{Name: "tcp-option", Arg: RequiredArg, ID: tcpOptOption},
	},
	NewMatch: func(Family) MatchExt { return &TCPMatch{Src: AnyPorts, Dst: AnyPorts} },
}

var _ = RegisterMatch(&tcpMatchSpec)

func (m *TCPMatch) Name() string { return "tcp" }

var tcpFlagNames = []struct {
	name string
	bit  uint8
}{{"FIN", 0x01}, {"SYN", 0x02}, {"RST", 0x04}, {"PSH", 0x08}, {"ACK", 0x10}, {"URG", 0x20}, {"ALL", 0x3f}, {"NONE", 0}}

func parseTCPFlags(s string) (uint8, error) {
	var v uint8
	for _, f := range strings.Split(s, ",") {
		found := false
		for _, n := range tcpFlagNames {
			if strings.EqualFold(f, n.name) {
				v |= n.bit
				found = true
				break
			}
		}
		if !found {
			return 0, Paramf("Unknown TCP flag `%s'", f)
		}
	}
	return v, nil
}

// TCPFlagsString prints flags as "FIN,SYN" or "NONE".
func TCPFlagsString(f uint8) string {
	var parts []string
	for _, n := range tcpFlagNames[:6] {
		if f&n.bit != 0 {
			parts = append(parts, n.name)
		}
	}
	if len(parts) == 0 {
		return "NONE"
	}
	return strings.Join(parts, ",")
}

func (m *TCPMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tcpOptSport, tcpOptDport:
		which, seen, dst := "source-port", &m.seenSrc, &m.Src
		if p.Def.ID == tcpOptDport {
			which, seen, dst = "destination-port", &m.seenDst, &m.Dst
		}
		if *seen {
			return Paramf("Only one `--%s' allowed", which)
		}
		r, err := ParsePortRange(p.Arg, "tcp")
		if err != nil {
			return err
		}
		r.Invert = p.Invert
		*dst, *seen = r, true
	case tcpOptSyn:
		if m.HasFlags {
			return Paramf("Only one of `--syn' or `--tcp-flags'  allowed")
		}
		m.FlagMask, m.FlagCmp, m.FlagsInv, m.HasFlags = 0x17, 0x02, p.Invert, true
	case tcpOptFlags:
		if m.HasFlags {
			return Paramf("Only one of `--syn' or `--tcp-flags'  allowed")
		}
		cmp, ok := p.NextArg()
		if !ok {
			return Paramf("--tcp-flags requires two args.")
		}
		mask, err := parseTCPFlags(p.Arg)
		if err != nil {
			return err
		}
		c, err := parseTCPFlags(cmp)
		if err != nil {
			return err
		}
		m.FlagMask, m.FlagCmp, m.FlagsInv, m.HasFlags = mask, c, p.Invert, true
	case tcpOptOption:
		if m.HasOption {
			return Paramf("Only one `--tcp-option' allowed")
		}
		v, ok := strtoui(p.Arg, 1, 255)
		if !ok {
			return Paramf("Bad TCP option \"%s\"", p.Arg)
		}
		m.Option, m.OptionInv, m.HasOption = uint8(v), p.Invert, true
	}
	return nil
}

// Final refuses what iptables-nft refuses when it turns the match into
// payload expressions: ports or flags without -p tcp. A match that stays
// xt_tcp (an option, or nothing to test) is left to the kernel.
func (m *TCPMatch) Final(r *Rule, _ OptSet) error {
	if m.OptionInv || m.Option != 0 || m.allZero() {
		return nil
	}
	if r.Proto != 6 {
		return Paramf("TCP match requires '-p tcp'")
	}
	return nil
}

// allZero says the match tests nothing (no ports, flags or option).
func (m *TCPMatch) allZero() bool {
	return m.Src == AnyPorts && m.Dst == AnyPorts && m.FlagMask == 0 && m.FlagCmp == 0 && !m.FlagsInv &&
		m.Option == 0 && !m.OptionInv
}

// Vanishes says iptables-nft turns the match into no expression at all:
// it is native (see NftExprs) but tests nothing there, its ports being
// full ranges (inverted or not: iptables-nft leaves out a full range
// whatever its inversion) and its flags mask empty (inverted or not).
// Read back, such a rule shows no tcp match (see Vanisher). Its packets
// are those NftExprs gives, as before: the listing only follows
// iptables-nft's.
func (m *TCPMatch) Vanishes() bool {
	return !m.HasOption && !m.allZero() && m.FlagMask == 0 && m.Src.Full() && m.Dst.Full()
}

// showFlags says whether the flags test is there to print: iptables-nft
// leaves out a native test with an empty mask (inverted or not); the
// xtables match (with --tcp-option) keeps it.
func (m *TCPMatch) showFlags() bool {
	return m.HasFlags && (m.FlagMask != 0 || m.FlagsInv && m.HasOption)
}

// Native reports whether iptables-nft expresses this match with native
// payload expressions (and so merges it with a neighbour on read-back):
// all but a match with an option or with nothing to test.
func (m *TCPMatch) Native() bool {
	return !m.HasOption && !m.allZero()
}

// Merge combines native tcp matches as iptables-nft's read-back does:
// later values win, and an inversion once read stays (it ORs the
// invflags).
func (m *TCPMatch) Merge(next Match) (Match, bool) {
	n, ok := next.(*TCPMatch)
	if !ok || !m.Native() || !n.Native() {
		return nil, false
	}
	c := *m
	c.Src, c.Dst = readBackMerge(c.Src, n.Src), readBackMerge(c.Dst, n.Dst)
	c.seenSrc, c.seenDst, c.readBack = c.seenSrc || n.seenSrc, c.seenDst || n.seenDst, true
	if n.HasFlags && n.FlagMask != 0 { // (an empty mask is no expression)
		inv := c.FlagsInv && c.FlagMask != 0
		c.FlagMask, c.FlagCmp, c.FlagsInv, c.HasFlags = n.FlagMask, n.FlagCmp, n.FlagsInv || inv, true
	}
	return &c, true
}

// savePorts prints a port option as iptables does: not a range of all
// ports, inverted or not. With exact it keeps an inverted one, which
// tests something (no packet meets it).
func savePorts(b *strings.Builder, opt string, r PortRange) {
	if r.Min == 0 && r.Max == 0xffff {
		return
	}
	if r.Invert {
		b.WriteString(" !")
	}
	b.WriteString(" --" + opt + " ")
	b.WriteString(r.SaveString())
}

// saveExactPorts writes a port option unless it spans every port
// uninverted (as given or not, the same match).
func saveExactPorts(b *strings.Builder, opt string, r PortRange) {
	if r == AnyPorts {
		return
	}
	if r.Invert {
		b.WriteString(" !")
	}
	b.WriteString(" --" + opt + " ")
	b.WriteString(r.SaveString())
}

func (m *TCPMatch) Save(b *strings.Builder, _ *Rule) {
	src, dst := m.Src, m.Dst
	if m.Native() && !m.readBack {
		src, dst = src.nativeRange(), dst.nativeRange()
	}
	savePorts(b, "sport", src)
	savePorts(b, "dport", dst)
	if m.HasOption {
		if m.OptionInv {
			b.WriteString(" !")
		}
		fmt.Fprintf(b, " --tcp-option %d", m.Option)
	}
	if m.showFlags() {
		if m.FlagsInv {
			b.WriteString(" !")
		}
		b.WriteString(" --tcp-flags " + TCPFlagsString(m.FlagMask) + " " + TCPFlagsString(m.FlagCmp))
	}
}

// SaveExact is Save keeping what -S leaves out: an inverted full port
// range and a flags test with an empty mask, so that the rule's text
// reads back as the same match (one that vanishes, see Vanishes).
func (m *TCPMatch) SaveExact(b *strings.Builder, _ *Rule) {
	saveExactPorts(b, "sport", m.Src)
	saveExactPorts(b, "dport", m.Dst)
	if m.HasOption {
		if m.OptionInv {
			b.WriteString(" !")
		}
		fmt.Fprintf(b, " --tcp-option %d", m.Option)
	}
	if m.HasFlags && (m.FlagMask != 0 || m.FlagCmp != 0 || m.FlagsInv) {
		if m.FlagsInv {
			b.WriteString(" !")
		}
		b.WriteString(" --tcp-flags " + TCPFlagsString(m.FlagMask) + " " + TCPFlagsString(m.FlagCmp))
	}
}

// ExactIsSave: the two forms differ only by what SaveExact keeps.
func (m *TCPMatch) ExactIsSave() bool {
	hiddenPorts := !m.Src.saveIsExact(m.Native()) || !m.Dst.saveIsExact(m.Native())
	hiddenFlags := m.HasFlags && !m.showFlags() && (m.FlagMask != 0 || m.FlagCmp != 0 || m.FlagsInv)
	return !hiddenPorts && !hiddenFlags
}

func (m *TCPMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" tcp")
	src, dst := m.Src, m.Dst
	if m.Native() && !m.readBack {
		// (as the kernel's expressions read back)
		src, dst = src.nativeRange(), dst.nativeRange()
	}
	ListPorts(b, "spt", src, "tcp", numeric)
	ListPorts(b, "dpt", dst, "tcp", numeric)
	if m.HasOption {
		inv := ""
		if m.OptionInv {
			inv = "!"
		}
		fmt.Fprintf(b, " option=%s%d", inv, m.Option)
	}
	if m.showFlags() {
		b.WriteString(" flags:")
		if m.FlagsInv {
			b.WriteByte('!')
		}
		if numeric {
			fmt.Fprintf(b, "0x%02X/0x%02X", m.FlagMask, m.FlagCmp)
		} else {
			b.WriteString(TCPFlagsString(m.FlagMask) + "/" + TCPFlagsString(m.FlagCmp))
		}
	}
}

// NftExprs translates the tcp match: flags, then source and destination
// ports, each as a transport-header payload load and a compare. Like
// every xtables match that reads the transport header, xt_tcp never
// matches a non-first IPv4 fragment (also with no option at all), so the
// first-fragment test comes first (see firstFragmentExprs).
//
// --tcp-option walks the TCP options (and drops a packet whose options
// are truncated), which nft's `tcp option` does not do the same way:
// with it the whole match is the xtables tcp match (struct xt_tcp,
// revision 0), as iptables-nft sends it; xt_tcp skips fragments itself.
// So is a match with nothing to test (iptables-nft sends those as xt_tcp
// too, which the kernel refuses without -p tcp): xt_tcp still skips the
// non-first fragments, IPv6 ones too, which nft cannot tell in one rule,
// and drops a packet too short for a TCP header.
func (m *TCPMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if m.HasOption || m.allZero() {
		return []expr.Any{m.xtTCP()}, nil
	}
	out := firstFragmentExprs(ctx.Rule)
	// flags & 0 == 0 holds for every packet; flags & M == C with a bit
	// of C outside M (NONE SYN) for none, as in xt_tcp (iptables-nft
	// 1.8.9 leaves any test of mask NONE out: docs/extensions.md)
	if m.HasFlags && (m.FlagMask != 0 || m.FlagCmp != 0 || m.FlagsInv) {
		op := expr.CmpOpEq
		if m.FlagsInv {
			op = expr.CmpOpNeq
		}
		out = append(out,
			&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{m.FlagMask}, Xor: []byte{0}},
			&expr.Cmp{Op: op, Register: 1, Data: []byte{m.FlagCmp}})
	}
	out = append(out, PortExprs(0, m.Src)...)
	out = append(out, PortExprs(2, m.Dst)...)
	return out, nil
}

// xtTCP is struct xt_tcp: spts[2], dpts[2], option, flg_mask, flg_cmp,
// invflags (XT_TCP_INV_SRCPT 1, DSTPT 2, FLAGS 4, OPTION 8).
func (m *TCPMatch) xtTCP() expr.Any {
	x := &xtBlob{}
	x.u16(m.Src.Min)
	x.u16(m.Src.Max)
	x.u16(m.Dst.Min)
	x.u16(m.Dst.Max)
	x.u8(m.Option)
	var inv uint8
	if m.HasFlags {
		x.u8(m.FlagMask)
		x.u8(m.FlagCmp)
	} else {
		x.u8(0)
		x.u8(0)
	}
	for _, f := range []struct {
		on  bool
		bit uint8
	}{{m.Src.Invert, 1}, {m.Dst.Invert, 2}, {m.HasFlags && m.FlagsInv, 4}, {m.OptionInv, 8}} {
		if f.on {
			inv |= f.bit
		}
	}
	x.u8(inv)
	return compatMatch("tcp", 0, x)
}
