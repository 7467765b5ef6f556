package compat

import (
	"fmt"
	"math"
	"net/netip"
	"strings"

	"github.com/google/nftables/expr"
)

// ConnlimitMatch is -m connlimit (revision 1): the number of tracked
// connections of the packet's source (or destination) address group.
type ConnlimitMatch struct {
	Family Family
	Limit  uint32
	// Upto is the kernel's invert flag: match while the count is at
	// most Limit (--connlimit-upto, or ! --connlimit-above).
	Upto  bool
	Daddr bool
	// Mask is the group mask as xtables stores it (16 bytes; all ones
	// until --connlimit-mask is given, which zeroes the unused words).
	Mask      [16]byte
	MaskGiven bool
}

const (
	connlimitOptUpto = iota
	connlimitOptAbove
	connlimitOptMask
	connlimitOptSaddr
	connlimitOptDaddr
)

var connlimitOpts = []OptDef{
	{Name: "connlimit-upto", Arg: RequiredArg, ID: connlimitOptUpto, Invert: true},
	{Name: "connlimit-above", Arg: RequiredArg, ID: connlimitOptAbove, Invert: true},
	{Name: "connlimit-mask", Arg: RequiredArg, ID: connlimitOptMask},
	{Name: "connlimit-saddr", Arg: NoArg, ID: connlimitOptSaddr},
	{Name: "connlimit-daddr", Arg: NoArg, ID: connlimitOptDaddr},
}

var connlimitMatchSpec = ExtSpec{
	Name:    "connlimit",
	Options: connlimitOpts,
	X6:      true,
	NewMatch: func(f Family) MatchExt {
		m := &ConnlimitMatch{Family: f}
		for i := range m.Mask {
			m.Mask[i] = 0xff
		}
		return m
	},
}

var _ = RegisterMatch(&connlimitMatchSpec)

func (m *ConnlimitMatch) Name() string { return "connlimit" }

// plenMask is xtables' XTTYPE_PLENMASK: a prefix length (0-32 or
// 0-128) or a numeric mask address, turned into a 16-byte mask whose
// words past the prefix are zero. A non-contiguous mask address leaves
// all ones, as xtables does with its out-of-range length.
func plenMask(p *OptArg, f Family) ([16]byte, int, error) {
	full := uint64(32)
	if f == IPv6 {
		full = 128
	}
	var mask [16]byte
	plen := -1
	if v, ok := xtStrtoui(p.Arg, 0, full); ok {
		plen = int(v)
	} else {
		var a netip.Addr
		ok := false
		if f == IPv4 {
			a, ok = inetAton(p.Arg)
		} else if x, err := netip.ParseAddr(p.Arg); err == nil && x.Is6() && x.Zone() == "" {
			a, ok = x, true
		}
		if !ok {
			return mask, 0, Paramf("%s: bad value for option \"--%s\", neither a valid network mask nor valid CIDR (0-%d).\n", p.Ext, p.Def.Name, full)
		}
		plen = (Net{Mask: a}).Bits()
		if plen < 0 {
			plen = 255
		}
	}
	for i := range mask {
		mask[i] = 0xff
	}
	switch {
	case plen == 0:
		mask = [16]byte{}
	case plen <= 128:
		w := (plen - 1) / 32 // the word the prefix ends in
		for i := w*4 + 4; i < 16; i++ {
			mask[i] = 0
		}
		bits := uint32(math.MaxUint32) << uint(32-(plen-w*32))
		mask[w*4], mask[w*4+1], mask[w*4+2], mask[w*4+3] = byte(bits>>24), byte(bits>>16), byte(bits>>8), byte(bits)
	}
	return mask, plen, nil
}

func (m *ConnlimitMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case connlimitOptUpto, connlimitOptAbove:
		v, err := x6Uint(p, 0, math.MaxUint32)
		if err != nil {
			return err
		}
		m.Limit = uint32(v)
		m.Upto = (p.Def.ID == connlimitOptUpto) != p.Invert
	case connlimitOptMask:
		mask, plen, err := plenMask(p, m.Family)
		if err != nil {
			return err
		}
		// a non-contiguous mask leaves the default (all ones)
		m.Mask, m.MaskGiven = mask, plen <= 128
	case connlimitOptSaddr:
		m.Daddr = false
	case connlimitOptDaddr:
		m.Daddr = true
	}
	return nil
}

func (m *ConnlimitMatch) Final(_ *Rule, seen OptSet) error {
	if err := x6Fcheck("connlimit", connlimitOpts, seen, map[int]x6Rel{
		connlimitOptUpto:  {excl: bit(connlimitOptAbove)},
		connlimitOptAbove: {excl: bit(connlimitOptUpto)},
		connlimitOptSaddr: {excl: bit(connlimitOptDaddr)},
		connlimitOptDaddr: {excl: bit(connlimitOptSaddr)},
	}); err != nil {
		return err
	}
	if !seen.Has(connlimitOptUpto) && !seen.Has(connlimitOptAbove) {
		return Paramf("You must specify \"--connlimit-above\" or \"--connlimit-upto\".")
	}
	return nil
}

// prefixLen counts the mask as libxt_connlimit does: the position of
// the lowest set bit of the family's part.
func (m *ConnlimitMatch) prefixLen() int {
	n := 4
	if m.Family == IPv6 {
		n = 16
	}
	bits := 0
	for i := 0; i < n; i += 4 {
		w := ^(uint32(m.Mask[i])<<24 | uint32(m.Mask[i+1])<<16 | uint32(m.Mask[i+2])<<8 | uint32(m.Mask[i+3]))
		for ; w != 0; w >>= 1 {
			bits++
		}
	}
	return n*8 - bits
}

func (m *ConnlimitMatch) save(b *strings.Builder, exact bool) {
	if m.Upto {
		fmt.Fprintf(b, " --connlimit-upto %d", m.Limit)
	} else {
		fmt.Fprintf(b, " --connlimit-above %d", m.Limit)
	}
	if !exact || m.MaskGiven {
		fmt.Fprintf(b, " --connlimit-mask %d", m.prefixLen())
	}
	if m.Daddr {
		b.WriteString(" --connlimit-daddr")
	} else {
		b.WriteString(" --connlimit-saddr")
	}
}

func (m *ConnlimitMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact leaves out a mask that was not given: the default mask has
// all 16 bytes set, while --connlimit-mask 32 zeroes the IPv6 words.
func (m *ConnlimitMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

// CompareKey holds the mask's 16 bytes: -S prints the default mask (all
// ones) and --connlimit-mask 32 alike, but the kernel's structs differ (the
// given mask zeroes the IPv6 words), so iptables-nft's -C and -D tell the
// two rules apart.
func (m *ConnlimitMatch) CompareKey() string {
	return fmt.Sprintf("connlimit mask %x", m.Mask)
}

func (m *ConnlimitMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	dir, op := "src", ">"
	if m.Daddr {
		dir = "dst"
	}
	if m.Upto {
		op = "<="
	}
	fmt.Fprintf(b, " #conn %s/%d %s %d", dir, m.prefixLen(), op, m.Limit)
}

// NftExprs: the xtables match (struct xt_connlimit_info, revision 1).
// nft's "ct count" only counts inside a dynamic set keyed by the
// address, with its own garbage collection of closed connections.
func (m *ConnlimitMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.raw(m.Mask[:], 16)
	x.u32(m.Limit)
	var flags uint32
	if m.Upto {
		flags |= 1
	}
	if m.Daddr {
		flags |= 2
	}
	x.u32(flags)
	x.u64(0) // the kernel's data pointer
	return []expr.Any{compatMatch("connlimit", 1, x)}, nil
}
