package compat

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"

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

func init() {
	RegisterMatch(&ExtSpec{
		Name: "devgroup",
		Options: []OptDef{
			{Name: "src-group", Arg: RequiredArg, ID: 0, Invert: true},
			{Name: "dst-group", Arg: RequiredArg, ID: 1, Invert: true},
		},
		X6:       true,
		NewMatch: func(Family) MatchExt { return &DevgroupMatch{} },
	})
}

func (m *DevgroupMatch) Name() string { return "devgroup" }

// devgroupNames is xtables_lmap of /etc/iproute2/group: id and name
// pairs in file order (ids 0-255, decimal or 0x hex).
var devgroupNames struct {
	once  sync.Once
	ids   []uint32
	names []string
}

func loadDevgroups() {
	f, err := os.Open("/etc/iproute2/group")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t\v\f\r")
		if line == "" || line[0] == '#' {
			continue
		}
		base := 10
		if strings.HasPrefix(line, "0x") {
			base = 16
		}
		v, rest, ok, erange := cStrtoull(line, base)
		if !ok || erange || int64(int32(v)) < 0 || int32(v) > 255 {
			continue
		}
		if rest == "" || strings.IndexByte(" \t\v\f\r\n", rest[0]) < 0 {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 || fields[0][0] == '#' {
			continue
		}
		devgroupNames.ids = append(devgroupNames.ids, uint32(v))
		devgroupNames.names = append(devgroupNames.names, fields[0])
	}
}

func devgroupName(id uint32) string {
	devgroupNames.once.Do(loadDevgroups)
	for i, v := range devgroupNames.ids {
		if v == id {
			return devgroupNames.names[i]
		}
	}
	return ""
}

// devgroupParse is xtables_parse_val_mask with the group names.
func devgroupParse(p *OptArg) (uint32, uint32, error) {
	devgroupNames.once.Do(loadDevgroups)
	haveMap := len(devgroupNames.ids) > 0
	byName := func() (uint32, uint32, error) {
		for i, n := range devgroupNames.names {
			if n == p.Arg {
				return devgroupNames.ids[i], ^uint32(0), nil
			}
		}
		return 0, 0, Paramf("%s: could not map name %s to an integer value for option \"--%s\".\n", p.Ext, p.Arg, p.Def.Name)
	}
	badVal := Paramf("%s: bad integer value for option \"--%s\", or out of range.\n", p.Ext, p.Def.Name)
	v, rest, ok := xtStrtoul(p.Arg, 0, 0xffffffff)
	if !ok {
		if haveMap {
			return byName()
		}
		return 0, 0, badVal
	}
	if rest == "" {
		return uint32(v), ^uint32(0), nil
	}
	if rest[0] != '/' {
		if haveMap {
			return byName()
		}
		return 0, 0, Paramf("%s: trailing garbage after value for option \"--%s\".\n", p.Ext, p.Def.Name)
	}
	mask, rest, ok := xtStrtoul(rest[1:], 0, 0xffffffff)
	if !ok {
		return 0, 0, badVal
	}
	if rest != "" {
		return 0, 0, Paramf("%s: trailing garbage after value for option \"--%s\".\n", p.Ext, p.Def.Name)
	}
	return uint32(v), uint32(mask), nil
}

func (m *DevgroupMatch) Parse(p *OptArg) error {
	v, mask, err := devgroupParse(p)
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

func devgroupValMask(v, mask uint32, names bool) string {
	if mask != ^uint32(0) {
		return fmt.Sprintf(" 0x%x/0x%x", v, mask)
	}
	if names {
		if n := devgroupName(v); n != "" {
			return " " + n
		}
	}
	return fmt.Sprintf(" 0x%x", v)
}

func (m *DevgroupMatch) show(b *strings.Builder, prefix string, numeric bool) {
	if m.Flags&devgroupSrc != 0 {
		b.WriteString(invMark(m.Flags&devgroupInvSrc != 0) + " " + prefix + "src-group" + devgroupValMask(m.SrcGroup, m.SrcMask, !numeric))
	}
	if m.Flags&devgroupDst != 0 {
		b.WriteString(invMark(m.Flags&devgroupInvDst != 0) + " " + prefix + "dst-group" + devgroupValMask(m.DstGroup, m.DstMask, !numeric))
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
