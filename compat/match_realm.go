package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// RealmMatch is -m realm (IPv4): the routing realm of the packet's route
// (the route's tclassid), masked.
type RealmMatch struct {
	ID, Mask uint32
	Invert   bool
}

var realmMatchSpec = ExtSpec{
	Name:     "realm",
	Family:   IPv4,
	Options:  []OptDef{{Name: "realm", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &RealmMatch{} },
}

var _ = RegisterMatch(&realmMatchSpec)

// realmNames are the realm names of /etc/iproute2/rt_realms.
var realmNames = &xtLmap{file: "/etc/iproute2/rt_realms"}

func (m *RealmMatch) Name() string { return "realm" }

func (m *RealmMatch) Parse(p *OptArg) error {
	v, mask, err := realmNames.parseValMask(p)
	if err != nil {
		return err
	}
	m.ID, m.Mask = v, mask
	if p.Invert {
		m.Invert = true
	}
	return nil
}

func (m *RealmMatch) Final(*Rule, OptSet) error { return nil }

// Save prints realm names, as libxt_realm's save does.
func (m *RealmMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(invMark(m.Invert) + " --realm" + realmNames.valMask(m.ID, m.Mask, true))
}

// SaveExact prints numbers: the name file may change before the text
// is read back.
func (m *RealmMatch) SaveExact(b *strings.Builder, _ *Rule) {
	b.WriteString(invMark(m.Invert) + " --realm" + realmNames.valMask(m.ID, m.Mask, false))
}

func (m *RealmMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(invMark(m.Invert) + " realm" + realmNames.valMask(m.ID, m.Mask, !numeric))
}

// NftExprs: xt_realm tests id == (dst->tclassid & mask); "meta rtclassid"
// is the same dst->tclassid, masked and compared with id itself (an id
// with bits outside the mask never matches, in both). xt_realm is allowed
// in INPUT, FORWARD, OUTPUT and POSTROUTING only (where the packet has a
// route); elsewhere, and in user chains, the rule keeps the xtables match
// (struct xt_realm_info), which the kernel refuses or accepts at the
// jump as it does iptables-nft's.
func (m *RealmMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if !ctx.InHooks(hookIn | hookFwd | hookOut | hookPost) {
		x := &xtBlob{}
		x.u32(m.ID)
		x.u32(m.Mask)
		inv := uint8(0)
		if m.Invert {
			inv = 1
		}
		x.u8(inv)
		return []expr.Any{compatMatch("realm", 0, x)}, nil
	}
	out := []expr.Any{metaLoad(expr.MetaKeyRTCLASSID)}
	if m.Mask != ^uint32(0) {
		out = append(out, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: host32(m.Mask), Xor: host32(0)})
	}
	return append(out, cmpReg(m.Invert, host32(m.ID))), nil
}
