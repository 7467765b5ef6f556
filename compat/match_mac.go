package compat

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// MACMatch is -m mac: the Ethernet source address.
type MACMatch struct {
	Addr   [6]byte
	Invert bool
}

var macMatchSpec = ExtSpec{
	Name:     "mac",
	Options:  []OptDef{{Name: "mac-source", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &MACMatch{} },
}

var _ = RegisterMatch(&macMatchSpec)

func (m *MACMatch) Name() string { return "mac" }

// parseMAC parses six colon-separated parts the way the reference does
// with strtoul(part, 16): each part may be empty (0) and may use at most
// two characters.
func parseMAC(s string) ([6]byte, bool) {
	var a [6]byte
	parts := strings.Split(s, ":")
	if len(parts) != 6 {
		return a, false
	}
	for i, part := range parts {
		v, used := strtoul16(part)
		if used != len(part) || used > 2 {
			return a, false
		}
		a[i] = byte(v)
	}
	return a, true
}

// strtoul16 is strtoul(s, &end, 16): the value and how many bytes were
// consumed (0 when there are no digits).
func strtoul16(s string) (uint64, int) {
	v, neg, end, _ := cStrtoul(s, 16)
	if neg {
		v = -v
	}
	return v, end
}

func macString(a [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", a[0], a[1], a[2], a[3], a[4], a[5])
}

func (m *MACMatch) Parse(p *OptArg) error {
	a, ok := parseMAC(p.Arg)
	if !ok {
		return Paramf("Invalid MAC address specified.")
	}
	m.Addr = a
	m.Invert = m.Invert || p.Invert
	return nil
}

func (m *MACMatch) Final(*Rule, OptSet) error { return nil }

func (m *MACMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(invMark(m.Invert) + " --mac-source " + macString(m.Addr))
}

func (m *MACMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" MAC ")
	if m.Invert {
		b.WriteString("! ")
	}
	b.WriteString(macString(m.Addr))
}

// NftExprs: xt_mac matches only on Ethernet devices (ARPHRD_ETHER) with
// a link-layer header in front of the packet, whatever "!" says; "meta
// iiftype" guards the first, the link-layer payload load itself fails
// (the rule does not match) when no header is there. xt_mac is only
// allowed in PREROUTING, INPUT and FORWARD: in other chains, user chains
// included, the rule keeps the xtables match (struct xt_mac_info) so
// that the kernel refuses it (at once, or at a jump from a base chain)
// as it does iptables-nft's.
func (m *MACMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if !ctx.InHooks(hookPre | hookIn | hookFwd) {
		x := &xtBlob{}
		x.raw(m.Addr[:], 6)
		inv := uint32(0)
		if m.Invert {
			inv = 1
		}
		x.u32(inv)
		return []expr.Any{compatMatch("mac", 0, x)}, nil
	}
	return []expr.Any{
		metaLoad(expr.MetaKeyIIFTYPE),
		cmpReg(false, binary.NativeEndian.AppendUint16(nil, 1)), // ARPHRD_ETHER
		payloadLoad(expr.PayloadBaseLLHeader, 6, 6),
		cmpReg(m.Invert, m.Addr[:]),
	}, nil
}
