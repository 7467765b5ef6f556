package compat

import (
	"fmt"
	"math"
	"net/netip"
	"strings"

	"github.com/google/nftables/expr"
)

// RTMatch is ip6tables -m rt: the IPv6 routing header.
type RTMatch struct {
	Type           uint32
	SegsLeft       [2]uint32
	HdrLen         uint32
	Addrs          []netip.Addr
	Flags, InvFlag uint8 // rtFlag*
}

const (
	rtFlagType    = 0x01
	rtFlagSegs    = 0x02
	rtFlagLen     = 0x04
	rtFlagRes     = 0x08
	rtFlagAddrs   = 0x10
	rtFlagNStrict = 0x20
)

const (
	rtOptType = iota
	rtOptSegs
	rtOptLen
	rtOptRes
	rtOptAddrs
	rtOptNStrict
)

var rtMatchSpec = ExtSpec{
	Name:   "rt",
	Family: IPv6,
	Options: []OptDef{
		{Name: "rt-type", Arg: RequiredArg, ID: rtOptType, Invert: true},
		{Name: "rt-segsleft", Arg: RequiredArg, ID: rtOptSegs, Invert: true},
		{Name: "rt-len", Arg: RequiredArg, ID: rtOptLen, Invert: true},
		{Name: "rt-0-res", Arg: NoArg, ID: rtOptRes},
		{Name: "rt-0-addrs", Arg: RequiredArg, ID: rtOptAddrs},
		{Name: "rt-0-not-strict", Arg: NoArg, ID: rtOptNStrict},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &RTMatch{SegsLeft: [2]uint32{0, math.MaxUint32}} },
}

var _ = RegisterMatch(&rtMatchSpec)

func (m *RTMatch) Name() string { return "rt" }

func (m *RTMatch) Parse(p *OptArg) error {
	type0 := m.Flags&rtFlagType != 0 && m.Type == 0 && m.InvFlag&rtFlagType == 0
	switch p.Def.ID {
	case rtOptType, rtOptLen:
		v, err := x6Uint(p, 0, math.MaxUint32)
		if err != nil {
			return err
		}
		flag := uint8(rtFlagType)
		if p.Def.ID == rtOptType {
			m.Type = uint32(v)
		} else {
			m.HdrLen, flag = uint32(v), rtFlagLen
		}
		m.Flags |= flag
		if p.Invert {
			m.InvFlag |= flag
		}
	case rtOptSegs:
		v, err := parseU32Range(p)
		if err != nil {
			return err
		}
		m.SegsLeft = v
		m.Flags |= rtFlagSegs
		if p.Invert {
			m.InvFlag |= rtFlagSegs
		}
	case rtOptRes:
		if !type0 {
			return Paramf("`--rt-type 0' required before `--rt-0-res'")
		}
		m.Flags |= rtFlagRes
	case rtOptAddrs:
		if !type0 {
			return Paramf("`--rt-type 0' required before `--rt-0-addrs'")
		}
		parts := strings.Split(p.Arg, ",")
		m.Addrs = nil
		for i, s := range parts {
			if i == 16 {
				return Paramf("too many addresses specified")
			}
			a, err := netip.ParseAddr(s)
			if err != nil || !a.Is6() || a.Zone() != "" {
				return Paramf("bad address: %s", s)
			}
			m.Addrs = append(m.Addrs, a)
		}
		m.Flags |= rtFlagAddrs
	case rtOptNStrict:
		if m.Flags&rtFlagAddrs == 0 {
			return Paramf("`--rt-0-addr ...' required before `--rt-0-not-strict'")
		}
		m.Flags |= rtFlagNStrict
	}
	return nil
}

func (m *RTMatch) Final(*Rule, OptSet) error { return nil }

// segsShown says whether the segsleft range is printed: -L omits only
// the uninverted full range, -S (1.8.9) omits the full range always.
func (m *RTMatch) segsShown(list bool) bool {
	full := m.SegsLeft[0] == 0 && m.SegsLeft[1] == math.MaxUint32
	return !full || (list && m.InvFlag&rtFlagSegs != 0)
}

func (m *RTMatch) addrList(b *strings.Builder) {
	for i, a := range m.Addrs {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(a.String())
	}
}

func (m *RTMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact is Save that keeps a given full segsleft range, which -S
// drops: inverted it never matches, and given at all it sets the flag
// (for the rule's userdata).
func (m *RTMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

// CompareKey: -S prints a given full segsleft range as nothing, like none,
// but the flag it sets makes another struct ip6t_rt, which iptables-nft's
// -C and -D tell apart.
func (m *RTMatch) CompareKey() string {
	return fmt.Sprintf("rt segsleft given %v", m.Flags&rtFlagSegs != 0)
}

func (m *RTMatch) save(b *strings.Builder, exact bool) {
	if m.Flags&rtFlagType != 0 {
		fmt.Fprintf(b, "%s --rt-type %d", invMark(m.InvFlag&rtFlagType != 0), m.Type)
	}
	if m.segsShown(exact) || exact && m.Flags&rtFlagSegs != 0 {
		fmt.Fprintf(b, "%s --rt-segsleft %d", invMark(m.InvFlag&rtFlagSegs != 0), m.SegsLeft[0])
		if m.SegsLeft[0] != m.SegsLeft[1] {
			fmt.Fprintf(b, ":%d", m.SegsLeft[1])
		}
	}
	if m.Flags&rtFlagLen != 0 {
		fmt.Fprintf(b, "%s --rt-len %d", invMark(m.InvFlag&rtFlagLen != 0), m.HdrLen)
	}
	if m.Flags&rtFlagRes != 0 {
		b.WriteString(" --rt-0-res")
	}
	if m.Flags&rtFlagAddrs != 0 {
		b.WriteString(" --rt-0-addrs")
	}
	m.addrList(b)
	if m.Flags&rtFlagNStrict != 0 {
		b.WriteString(" --rt-0-not-strict")
	}
}

func (m *RTMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" rt")
	if m.Flags&rtFlagType != 0 {
		inv := ""
		if m.InvFlag&rtFlagType != 0 {
			inv = "!"
		}
		fmt.Fprintf(b, " type:%s%d", inv, int32(m.Type))
	}
	if m.segsShown(true) {
		inv := ""
		if m.InvFlag&rtFlagSegs != 0 {
			inv = "!"
		}
		if m.SegsLeft[0] == m.SegsLeft[1] {
			fmt.Fprintf(b, " segsleft:%s%d", inv, m.SegsLeft[0])
		} else {
			fmt.Fprintf(b, " segslefts:%s%d:%d", inv, m.SegsLeft[0], m.SegsLeft[1])
		}
	}
	if m.Flags&rtFlagLen != 0 {
		inv := ""
		if m.InvFlag&rtFlagLen != 0 {
			inv = "!"
		}
		fmt.Fprintf(b, " length:%s%d", inv, m.HdrLen)
	}
	if m.Flags&rtFlagRes != 0 {
		b.WriteString(" reserved")
	}
	if m.Flags&rtFlagAddrs != 0 {
		b.WriteString(" 0-addrs")
	}
	m.addrList(b)
	if m.Flags&rtFlagNStrict != 0 {
		b.WriteString(" 0-not-strict")
	}
}

// NftExprs: the xtables match (struct ip6t_rt): its header-length
// arithmetic, type-0 address list and drop of malformed packets have no
// exact nftables form.
func (m *RTMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u32(m.Type)
	x.u32(m.SegsLeft[0])
	x.u32(m.SegsLeft[1])
	x.u32(m.HdrLen)
	// as libxt_rt: --rt-segsleft sets the flag, even for the full range
	x.u8(m.Flags)
	x.u8(m.InvFlag)
	x.align(4)
	for i := 0; i < 16; i++ {
		var a []byte
		if i < len(m.Addrs) {
			a = m.Addrs[i].AsSlice()
		}
		x.raw(a, 16)
	}
	x.u8(uint8(len(m.Addrs)))
	x.align(4)
	return []expr.Any{compatMatch("rt", 0, x)}, nil
}
