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
}

const (
	tcpOptSport = iota
	tcpOptDport
	tcpOptSyn
	tcpOptFlags
	tcpOptOption
)

func init() {
	RegisterMatch(&ExtSpec{
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
	})
}

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

// Native reports whether iptables-nft expresses this match with native
// payload expressions (and so merges it with a neighbour on read-back).
func (m *TCPMatch) Native() bool {
	return !m.HasOption && (m.seenSrc || m.seenDst || m.HasFlags)
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
	if n.HasFlags {
		c.FlagMask, c.FlagCmp, c.FlagsInv, c.HasFlags = n.FlagMask, n.FlagCmp, n.FlagsInv || c.FlagsInv, true
	}
	return &c, true
}

// savePorts prints a port option as iptables does: not a range of all
// ports, inverted or not. With exact it keeps an inverted one, which
// tests something (no packet meets it).
func savePorts(b *strings.Builder, opt string, r PortRange, exact bool) {
	if r.Min == 0 && r.Max == 0xffff && (!exact || !r.Invert) {
		return
	}
	if r.Invert {
		b.WriteString(" !")
	}
	b.WriteString(" --" + opt + " ")
	b.WriteString(r.SaveString())
}

func (m *TCPMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact is Save keeping what iptables' -S leaves out and the rule
// still tests: an inverted range of all ports, and flags compared under
// an empty mask (NONE SYN), both true for no packet.
func (m *TCPMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

func (m *TCPMatch) save(b *strings.Builder, exact bool) {
	savePorts(b, "sport", m.Src, exact)
	savePorts(b, "dport", m.Dst, exact)
	if m.HasOption {
		if m.OptionInv {
			b.WriteString(" !")
		}
		fmt.Fprintf(b, " --tcp-option %d", m.Option)
	}
	if m.HasFlags && (m.FlagMask != 0 || m.FlagsInv || exact && m.FlagCmp != 0) {
		if m.FlagsInv {
			b.WriteString(" !")
		}
		b.WriteString(" --tcp-flags " + TCPFlagsString(m.FlagMask) + " " + TCPFlagsString(m.FlagCmp))
	}
}

func (m *TCPMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" tcp")
	ListPorts(b, "spt", m.Src, "tcp", numeric)
	ListPorts(b, "dpt", m.Dst, "tcp", numeric)
	if m.HasOption {
		inv := ""
		if m.OptionInv {
			inv = "!"
		}
		fmt.Fprintf(b, " option=%s%d", inv, m.Option)
	}
	if m.HasFlags && (m.FlagMask != 0 || m.FlagsInv) {
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
	// of C outside M (NONE SYN) for none, which iptables-nft 1.8.9 loads
	// as no test at all
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
