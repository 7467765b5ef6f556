package compat

import (
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// DCCPMatch is -m dccp (also loaded by -p dccp --dport ...): ports,
// packet types and an option number of a DCCP header.
type DCCPMatch struct {
	Src, Dst [2]uint16
	Flags    uint16 // dccpSrc | dccpDst | dccpTypes | dccpOption
	InvFlags uint16
	Types    uint16 // bit n: packet type n; INVALID is bits 10-15
	Option   uint8
}

// xt_dccp's flag bits (XT_DCCP_SRC_PORTS, ...).
const (
	dccpSrc    = 0x01
	dccpDst    = 0x02
	dccpTypes  = 0x04
	dccpOption = 0x08
)

const (
	dccpOptSport = iota
	dccpOptDport
	dccpOptTypes
	dccpOptOption
)

// dccpTypeNames are the packet types by number (DCCP_PKT_*); INVALID
// stands for every type from 10 up.
var dccpTypeNames = []string{"REQUEST", "RESPONSE", "DATA", "ACK", "DATAACK", "CLOSEREQ", "CLOSE", "RESET", "SYNC", "SYNCACK", "INVALID"}

var dccpMatchSpec = ExtSpec{
	Name: "dccp",
	Options: []OptDef{
		{Name: "source-port", Arg: RequiredArg, ID: dccpOptSport, Invert: true},
		{Name: "sport", Arg: RequiredArg, ID: dccpOptSport, Invert: true},
		{Name: "destination-port", Arg: RequiredArg, ID: dccpOptDport, Invert: true},
		{Name: "dport", Arg: RequiredArg, ID: dccpOptDport, Invert: true},
		{Name: "dccp-types", Arg: RequiredArg, ID: dccpOptTypes, Invert: true},
		{Name: "dccp-option", Arg: RequiredArg, ID: dccpOptOption, Invert: true},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &DCCPMatch{} },
}

var _ = RegisterMatch(&dccpMatchSpec)

func (m *DCCPMatch) Name() string { return "dccp" }

func (m *DCCPMatch) Parse(p *OptArg) error {
	var flag uint16
	switch p.Def.ID {
	case dccpOptSport, dccpOptDport:
		// XTTYPE_PORTRC: at most two parts, numbers (cut to 16 bits, as
		// getaddrinfo reads them) or service names, no order check
		name := "source-port"
		if p.Def.ID == dccpOptDport {
			name = "destination-port"
		}
		if strings.Count(p.Arg, ":") > 1 {
			return Paramf("dccp: Too many components for option \"--%s\" (max: 2)\n", name)
		}
		r, err := parseCTPortRange(name, p.Arg)
		if err != nil {
			return err
		}
		if p.Def.ID == dccpOptSport {
			m.Src, flag = r, dccpSrc
		} else {
			m.Dst, flag = r, dccpDst
		}
	case dccpOptTypes:
		m.Types = 0
		for _, w := range strings.Split(p.Arg, ",") {
			if w == "" {
				continue // strtok skips empty words
			}
			i := 0
			for i < len(dccpTypeNames) && !strings.EqualFold(w, dccpTypeNames[i]) {
				i++
			}
			switch {
			case i == len(dccpTypeNames):
				return Paramf("Unknown DCCP type `%s'", w)
			case i == len(dccpTypeNames)-1:
				m.Types |= 0xfc00
			default:
				m.Types |= 1 << i
			}
		}
		flag = dccpTypes
	case dccpOptOption:
		v, err := x6Uint(p, 1, 255)
		if err != nil {
			return err
		}
		m.Option, flag = uint8(v), dccpOption
	}
	m.Flags |= flag
	if p.Invert {
		m.InvFlags |= flag
	}
	return nil
}

func (m *DCCPMatch) Final(*Rule, OptSet) error { return nil }

func dccpRange(r [2]uint16) string {
	if r[0] == r[1] {
		return strconv.Itoa(int(r[0]))
	}
	return strconv.Itoa(int(r[0])) + ":" + strconv.Itoa(int(r[1]))
}

// types prints the type mask: names up to the first of INVALID's bits,
// or every bit number when numeric.
func (m *DCCPMatch) types(b *strings.Builder, numeric bool) {
	b.WriteString(" ")
	first := true
	for i := 0; i < 16; i++ {
		if m.Types&(1<<i) == 0 {
			continue
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		if numeric {
			b.WriteString(strconv.Itoa(i))
			continue
		}
		if i >= 10 {
			b.WriteString("INVALID")
			break
		}
		b.WriteString(dccpTypeNames[i])
	}
}

func (m *DCCPMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact prints an empty type list as "" (iptables prints nothing
// after --dccp-types, which does not parse back).
func (m *DCCPMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

func (m *DCCPMatch) save(b *strings.Builder, exact bool) {
	if m.Flags&dccpSrc != 0 {
		b.WriteString(invMark(m.InvFlags&dccpSrc != 0) + " --sport " + dccpRange(m.Src))
	}
	if m.Flags&dccpDst != 0 {
		b.WriteString(invMark(m.InvFlags&dccpDst != 0) + " --dport " + dccpRange(m.Dst))
	}
	if m.Flags&dccpTypes != 0 {
		b.WriteString(invMark(m.InvFlags&dccpTypes != 0) + " --dccp-types")
		if exact && m.Types == 0 {
			b.WriteString(` ""`)
		} else {
			m.types(b, false)
		}
	}
	if m.Flags&dccpOption != 0 {
		b.WriteString(invMark(m.InvFlags&dccpOption != 0) + " --dccp-option " + strconv.Itoa(int(m.Option)))
	}
}

func (m *DCCPMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" dccp")
	if m.Flags&dccpSrc != 0 {
		ListPorts(b, "spt", PortRange{Min: m.Src[0], Max: m.Src[1], Invert: m.InvFlags&dccpSrc != 0}, "dccp", numeric)
	}
	if m.Flags&dccpDst != 0 {
		ListPorts(b, "dpt", PortRange{Min: m.Dst[0], Max: m.Dst[1], Invert: m.InvFlags&dccpDst != 0}, "dccp", numeric)
	}
	if m.Flags&dccpTypes != 0 {
		b.WriteString(invMark(m.InvFlags&dccpTypes != 0))
		m.types(b, numeric)
	}
	if m.Flags&dccpOption != 0 {
		inv := ""
		if m.InvFlags&dccpOption != 0 {
			inv = "!"
		}
		b.WriteString(" option=" + inv + strconv.Itoa(int(m.Option)))
	}
}

// NftExprs: the xtables match (struct xt_dccp_info), as iptables-nft
// sends it. nftables reads DCCP ports and the type, but xt_dccp also
// walks the options, drops (hotdrop) truncated headers and skips
// non-first fragments; the kernel refuses it without -p dccp.
func (m *DCCPMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u16(m.Dst[0])
	x.u16(m.Dst[1])
	x.u16(m.Src[0])
	x.u16(m.Src[1])
	x.u16(m.Flags)
	x.u16(m.InvFlags)
	x.u16(m.Types)
	x.u8(m.Option)
	return []expr.Any{compatMatch("dccp", 0, x)}, nil
}
