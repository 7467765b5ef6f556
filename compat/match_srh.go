package compat

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables/expr"
)

// SRHMatch is ip6tables -m srh: fields of an IPv6 segment routing header
// (next header, length, segments left, last entry, tag; the previous,
// next and last segment addresses under masks). Fields are struct
// ip6t_srh1 (revision 1): one value per field, whichever of its
// eq/gt/lt tests name it (the last given wins), and the flags of the
// tests given with their inversions.
type SRHMatch struct {
	NextHdr, HdrLen, SegsLeft, LastEntry uint8
	Tag                                  uint16
	SID                                  [3]hostMask // psid, nsid, lsid
	Flags, InvFlags                      uint16
}

// Option indexes, in option order: option i sets flag bit 1<<i
// (IP6T_SRH_*).
const (
	srhNextHdr = iota
	srhLenEq
	srhLenGt
	srhLenLt
	srhSegsEq
	srhSegsGt
	srhSegsLt
	srhLastEq
	srhLastGt
	srhLastLt
	srhTag
	srhPSID
	srhNSID
	srhLSID
)

// srhOpts are the options, their ID being the flag bit's index.
var srhOpts = []struct {
	name, list string
}{
	{"srh-next-hdr", "next-hdr"}, {"srh-hdr-len-eq", "hdr-len-eq"}, {"srh-hdr-len-gt", "hdr-len-gt"},
	{"srh-hdr-len-lt", "hdr-len-lt"}, {"srh-segs-left-eq", "segs-left-eq"}, {"srh-segs-left-gt", "segs-left-gt"},
	{"srh-segs-left-lt", "segs-left-lt"}, {"srh-last-entry-eq", "last-entry-eq"}, {"srh-last-entry-gt", "last-entry-gt"},
	{"srh-last-entry-lt", "last-entry-lt"}, {"srh-tag", "tag"}, {"srh-psid", "psid"}, {"srh-nsid", "nsid"}, {"srh-lsid", "lsid"},
}

func init() {
	defs := make([]OptDef, 0, len(srhOpts))
	for i, o := range srhOpts {
		defs = append(defs, OptDef{Name: o.name, Arg: RequiredArg, ID: i, Invert: true})
	}
	RegisterMatch(&ExtSpec{
		Name:     "srh",
		Family:   IPv6,
		Options:  defs,
		X6:       true,
		NewMatch: func(Family) MatchExt { return &SRHMatch{} },
	})
}

func (m *SRHMatch) Name() string { return "srh" }

// field is the value the option with flag bit id sets (nil for the
// tag and the addresses).
func (m *SRHMatch) field(id int) *uint8 {
	switch {
	case id == srhNextHdr:
		return &m.NextHdr
	case id <= srhLenLt:
		return &m.HdrLen
	case id <= srhSegsLt:
		return &m.SegsLeft
	case id <= srhLastLt:
		return &m.LastEntry
	}
	return nil
}

func (m *SRHMatch) Parse(p *OptArg) error {
	id := p.Def.ID
	switch {
	case id == srhTag:
		v, err := x6Uint(p, 0, 0xffff)
		if err != nil {
			return err
		}
		m.Tag = uint16(v)
	case id >= srhPSID:
		hm, err := parseHostMask("srh", p.Def.Name, p.Arg, IPv6)
		if err != nil {
			return err
		}
		m.SID[id-srhPSID] = hm
	default:
		v, err := x6Uint(p, 0, 0xff)
		if err != nil {
			return err
		}
		*m.field(id) = uint8(v)
	}
	m.Flags |= 1 << id
	if p.Invert {
		m.InvFlags |= 1 << id
	}
	return nil
}

func (m *SRHMatch) Final(*Rule, OptSet) error { return nil }

// value is the text of the value the test with flag bit id compares.
func (m *SRHMatch) value(id int) string {
	switch {
	case id == srhTag:
		return fmt.Sprint(m.Tag)
	case id >= srhPSID:
		h := m.SID[id-srhPSID]
		return fmt.Sprintf("%s/%d", h.Addr, h.Bits)
	}
	return fmt.Sprint(*m.field(id))
}

func (m *SRHMatch) Save(b *strings.Builder, _ *Rule) {
	for id, o := range srhOpts {
		if m.Flags&(1<<id) != 0 {
			fmt.Fprintf(b, "%s --%s %s", invMark(m.InvFlags&(1<<id) != 0), o.name, m.value(id))
		}
	}
}

// List: "NAME:[!]V" for the numbers, "NAME [!] ADDR/LEN" for the
// addresses (an empty inversion leaves two spaces), as libip6t_srh.
func (m *SRHMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" srh")
	for id, o := range srhOpts {
		if m.Flags&(1<<id) == 0 {
			continue
		}
		inv := ""
		if m.InvFlags&(1<<id) != 0 {
			inv = "!"
		}
		if id >= srhPSID {
			fmt.Fprintf(b, " %s %s %s", o.list, inv, m.value(id))
		} else {
			fmt.Fprintf(b, " %s:%s%s", o.list, inv, m.value(id))
		}
	}
}

// NftExprs: the xtables match, revision 1 (struct ip6t_srh1), as
// ip6tables-nft sends it. nftables reads SRH fields (rt4) at the first
// routing header only and tests one field per expression; ip6t_srh
// finds the SRH among the extension headers, checks its routing type
// and compares the masked segment addresses.
func (m *SRHMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u8(m.NextHdr)
	x.u8(m.HdrLen)
	x.u8(m.SegsLeft)
	x.u8(m.LastEntry)
	x.u16(m.Tag)
	x.align(4)
	for _, h := range m.SID {
		a := h.Addr
		if !a.IsValid() {
			a = netip.IPv6Unspecified()
		}
		x.raw(a.AsSlice(), 16)
	}
	for _, h := range m.SID {
		var mask [16]byte
		if h.Addr.IsValid() {
			for i := 0; i < h.Bits; i++ {
				mask[i/8] |= 0x80 >> (i % 8)
			}
		}
		x.raw(mask[:], 16)
	}
	x.u16(m.Flags)
	x.u16(m.InvFlags)
	return []expr.Any{compatMatch("srh", 1, x)}, nil
}
