package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// AddrtypeMatch is -m addrtype (revision 1): the routing type of the
// source and/or destination address.
type AddrtypeMatch struct {
	Src, Dst       uint16 // bit i = addrtypeNames[i]
	SrcInv, DstInv bool
	LimitIn        bool
	LimitOut       bool
}

const (
	addrtypeOptSrc = iota
	addrtypeOptDst
	addrtypeOptLimitIn
	addrtypeOptLimitOut
)

var addrtypeNames = []string{"UNSPEC", "UNICAST", "LOCAL", "BROADCAST", "ANYCAST", "MULTICAST",
	"BLACKHOLE", "UNREACHABLE", "PROHIBIT", "THROW", "NAT", "XRESOLVE"}

var addrtypeOpts = []OptDef{
	{Name: "src-type", Arg: RequiredArg, ID: addrtypeOptSrc, Invert: true},
	{Name: "dst-type", Arg: RequiredArg, ID: addrtypeOptDst, Invert: true},
	{Name: "limit-iface-in", Arg: NoArg, ID: addrtypeOptLimitIn},
	{Name: "limit-iface-out", Arg: NoArg, ID: addrtypeOptLimitOut},
}

var addrtypeMatchSpec = ExtSpec{
	Name:     "addrtype",
	Options:  addrtypeOpts,
	X6:       true,
	NewMatch: func(Family) MatchExt { return &AddrtypeMatch{} },
}

var _ = RegisterMatch(&addrtypeMatchSpec)

func (m *AddrtypeMatch) Name() string { return "addrtype" }

// addrtypeOne matches a name case-insensitively against the type names;
// like the reference, a prefix of a name is enough.
func addrtypeOne(s string) (uint16, bool) {
	for i, n := range addrtypeNames {
		if len(s) <= len(n) && strings.EqualFold(s, n[:len(s)]) {
			return 1 << uint(i), true
		}
	}
	return 0, false
}

func parseAddrtypes(arg string) (uint16, error) {
	var mask uint16
	for {
		comma := strings.IndexByte(arg, ',')
		if comma < 0 {
			break
		}
		v, ok := addrtypeOne(arg[:comma])
		if comma == 0 || !ok {
			return 0, Paramf("addrtype: bad type `%s'", arg)
		}
		mask |= v
		arg = arg[comma+1:]
	}
	v, ok := addrtypeOne(arg)
	if arg == "" || !ok {
		return 0, Paramf("addrtype: bad type \"%s\"", arg)
	}
	return mask | v, nil
}

func (m *AddrtypeMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case addrtypeOptSrc, addrtypeOptDst:
		v, err := parseAddrtypes(p.Arg)
		if err != nil {
			return err
		}
		if p.Def.ID == addrtypeOptSrc {
			m.Src |= v
			m.SrcInv = m.SrcInv || p.Invert
		} else {
			m.Dst |= v
			m.DstInv = m.DstInv || p.Invert
		}
	case addrtypeOptLimitIn:
		m.LimitIn = true
	case addrtypeOptLimitOut:
		m.LimitOut = true
	}
	return nil
}

func (m *AddrtypeMatch) Final(_ *Rule, seen OptSet) error {
	if !seen.Has(addrtypeOptSrc) && !seen.Has(addrtypeOptDst) {
		return Paramf("addrtype: you must specify --src-type or --dst-type")
	}
	return x6Fcheck("addrtype", addrtypeOpts, seen, map[int]x6Rel{
		addrtypeOptLimitIn:  {excl: bit(addrtypeOptLimitOut)},
		addrtypeOptLimitOut: {excl: bit(addrtypeOptLimitIn)},
	})
}

func addrtypeString(mask uint16) string {
	var parts []string
	for i, n := range addrtypeNames {
		if mask&(1<<uint(i)) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ",")
}

func (m *AddrtypeMatch) Save(b *strings.Builder, _ *Rule) {
	if m.Src != 0 {
		b.WriteString(invMark(m.SrcInv) + " --src-type " + addrtypeString(m.Src))
	}
	if m.Dst != 0 {
		b.WriteString(invMark(m.DstInv) + " --dst-type " + addrtypeString(m.Dst))
	}
	if m.LimitIn {
		b.WriteString(" --limit-iface-in")
	}
	if m.LimitOut {
		b.WriteString(" --limit-iface-out")
	}
}

func (m *AddrtypeMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" ADDRTYPE match")
	if m.Src != 0 {
		b.WriteString(" src-type ")
		if m.SrcInv {
			b.WriteByte('!')
		}
		b.WriteString(addrtypeString(m.Src))
	}
	if m.Dst != 0 {
		b.WriteString(" dst-type ")
		if m.DstInv {
			b.WriteByte('!')
		}
		b.WriteString(addrtypeString(m.Dst))
	}
	if m.LimitIn {
		b.WriteString(" limit-in")
	}
	if m.LimitOut {
		b.WriteString(" limit-out")
	}
}

// addrtype flags of struct xt_addrtype_info_v1.
const (
	addrtypeInvSrc   = 0x1
	addrtypeInvDst   = 0x2
	addrtypeLimitIn  = 0x4
	addrtypeLimitOut = 0x8
)

// NftExprs: for IPv4, "fib saddr/daddr [. iif/oif] type" gives the same
// inet_dev_addr_type() result xt_addrtype tests, so a single type is a
// "cmp" and a contiguous run of types a "range" on the low byte (types
// are below 12). Other type sets and IPv6 (whose xt_addrtype logic is
// its own) keep the xtables match.
//
// fib with iif is allowed in PREROUTING, INPUT and FORWARD, with oif in
// FORWARD, OUTPUT and POSTROUTING, as xt_addrtype allows
// --limit-iface-in and --limit-iface-out (both: FORWARD only), and
// elsewhere the rule keeps the xtables match, which the kernel refuses
// as iptables-nft's. So does a user chain's rule with either: xt_addrtype
// checks the hooks once, when the rule is made (none, in a user chain),
// so that iptables-nft's rule takes any jump to its chain, where fib's
// hooks would refuse some.
func (m *AddrtypeMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	hooks := uint8(hookPre | hookIn | hookFwd | hookOut | hookPost)
	if m.LimitIn {
		hooks &= hookPre | hookIn | hookFwd
	}
	if m.LimitOut {
		hooks &= hookFwd | hookOut | hookPost
	}
	if ctx.Family == IPv4 && (!m.LimitIn && !m.LimitOut || ctx.InHooks(hooks)) {
		if out, ok := m.native(); ok {
			return out, nil
		}
	}
	var flags uint32
	if m.SrcInv {
		flags |= addrtypeInvSrc
	}
	if m.DstInv {
		flags |= addrtypeInvDst
	}
	if m.LimitIn {
		flags |= addrtypeLimitIn
	}
	if m.LimitOut {
		flags |= addrtypeLimitOut
	}
	x := &xtBlob{}
	x.u16(m.Src)
	x.u16(m.Dst)
	x.u32(flags)
	return []expr.Any{compatMatch("addrtype", 1, x)}, nil
}

func (m *AddrtypeMatch) native() ([]expr.Any, bool) {
	var out []expr.Any
	for _, side := range []struct {
		mask uint16
		inv  bool
		src  bool
	}{{m.Src, m.SrcInv, true}, {m.Dst, m.DstInv, false}} {
		if side.mask == 0 {
			continue
		}
		lo, hi, ok := bitRun(side.mask)
		if !ok {
			return nil, false
		}
		out = append(out, &expr.Fib{Register: 1, ResultADDRTYPE: true, FlagSADDR: side.src, FlagDADDR: !side.src,
			FlagIIF: m.LimitIn, FlagOIF: m.LimitOut && !m.LimitIn})
		if lo == hi {
			out = append(out, cmpReg(side.inv, host32(uint32(lo))))
		} else {
			out = append(out, rangeReg(side.inv, []byte{lo}, []byte{hi}))
		}
	}
	return out, true
}

// bitRun returns the lowest and highest set bit of mask when the set
// bits are contiguous.
func bitRun(mask uint16) (lo, hi uint8, ok bool) {
	for lo = 0; mask&(1<<lo) == 0; lo++ {
	}
	for hi = lo; hi < 15 && mask&(1<<(hi+1)) != 0; hi++ {
	}
	run := uint32(1)<<(hi+1) - uint32(1)<<lo
	return lo, hi, uint32(mask) == run
}
