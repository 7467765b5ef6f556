package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// DevgroupMatch is -m devgroup: the device group of the input or output
// interface, masked.
type DevgroupMatch struct {
	Flags             uint32 // devgroupSrc | devgroupInvSrc | devgroupDst | devgroupInvDst
	SrcGroup, SrcMask uint32
	DstGroup, DstMask uint32
}

const (
	devgroupSrc    = 1
	devgroupInvSrc = 2
	devgroupDst    = 4
	devgroupInvDst = 8
)

var devgroupMatchSpec = ExtSpec{
	Name: "devgroup",
	Options: []OptDef{
		{Name: "src-group", Arg: RequiredArg, ID: 0, Invert: true},
		{Name: "dst-group", Arg: RequiredArg, ID: 1, Invert: true},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &DevgroupMatch{} },
}

var _ = RegisterMatch(&devgroupMatchSpec)

func (m *DevgroupMatch) Name() string { return "devgroup" }

// devgroupNames are the group names of /etc/iproute2/group.
var devgroupNames = &xtLmap{file: "/etc/iproute2/group"}

func (m *DevgroupMatch) Parse(p *OptArg) error {
	v, mask, err := devgroupNames.parseValMask(p)
	if err != nil {
		return err
	}
	if p.Def.ID == 0 {
		m.SrcGroup, m.SrcMask = v, mask
		m.Flags |= devgroupSrc
		if p.Invert {
			m.Flags |= devgroupInvSrc
		}
	} else {
		m.DstGroup, m.DstMask = v, mask
		m.Flags |= devgroupDst
		if p.Invert {
			m.Flags |= devgroupInvDst
		}
	}
	return nil
}

func (m *DevgroupMatch) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("devgroup match: You must specify either '--src-group' or '--dst-group'")
	}
	return nil
}

func (m *DevgroupMatch) show(b *strings.Builder, prefix string, numeric bool) {
	if m.Flags&devgroupSrc != 0 {
		b.WriteString(invMark(m.Flags&devgroupInvSrc != 0) + " " + prefix + "src-group" + devgroupNames.valMask(m.SrcGroup, m.SrcMask, !numeric))
	}
	if m.Flags&devgroupDst != 0 {
		b.WriteString(invMark(m.Flags&devgroupInvDst != 0) + " " + prefix + "dst-group" + devgroupNames.valMask(m.DstGroup, m.DstMask, !numeric))
	}
}

// Save prints group names, as libxt_devgroup's save does.
func (m *DevgroupMatch) Save(b *strings.Builder, _ *Rule) { m.show(b, "--", false) }

// SaveExact prints numbers: the name file may change before the text
// is read back.
func (m *DevgroupMatch) SaveExact(b *strings.Builder, _ *Rule) { m.show(b, "--", true) }

func (m *DevgroupMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	m.show(b, "", numeric)
}

// NftExprs: xt_devgroup tests (group ^ dev->group) & mask, for the
// input device (--src-group) and the output device (--dst-group):
// "meta iifgroup/oifgroup", masked, compared with group & mask is the
// same test. xt_devgroup allows --src-group only in PREROUTING, INPUT
// and FORWARD and --dst-group only in FORWARD, OUTPUT and POSTROUTING
// (where the device exists); elsewhere, and in user chains, the rule
// keeps the xtables match (struct xt_devgroup_info), which the kernel
// refuses or accepts at the jump as it does iptables-nft's.
func (m *DevgroupMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	hooks := uint8(hookPre | hookIn | hookFwd | hookOut | hookPost)
	if m.Flags&devgroupSrc != 0 {
		hooks &= hookPre | hookIn | hookFwd
	}
	if m.Flags&devgroupDst != 0 {
		hooks &= hookFwd | hookOut | hookPost
	}
	if !ctx.InHooks(hooks) {
		x := &xtBlob{}
		x.u32(m.Flags)
		x.u32(m.SrcGroup)
		x.u32(m.SrcMask)
		x.u32(m.DstGroup)
		x.u32(m.DstMask)
		return []expr.Any{compatMatch("devgroup", 0, x)}, nil
	}
	var out []expr.Any
	test := func(key expr.MetaKey, group, mask uint32, inv bool) {
		out = append(out, metaLoad(key))
		if mask != ^uint32(0) {
			out = append(out, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: host32(mask), Xor: host32(0)})
		}
		out = append(out, cmpReg(inv, host32(group&mask)))
	}
	if m.Flags&devgroupSrc != 0 {
		test(expr.MetaKeyIIFGROUP, m.SrcGroup, m.SrcMask, m.Flags&devgroupInvSrc != 0)
	}
	if m.Flags&devgroupDst != 0 {
		test(expr.MetaKeyOIFGROUP, m.DstGroup, m.DstMask, m.Flags&devgroupInvDst != 0)
	}
	return out, nil
}
