package compat

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// NPTTarget is ip6tables' -j DNPT / -j SNPT (mangle table): stateless
// IPv6-to-IPv6 network prefix translation (RFC 6296), which rewrites
// the destination (DNPT) or source (SNPT) prefix and adjusts one 16-bit
// word of the address so that the transport checksum stays valid.
type NPTTarget struct {
	Dest           bool // DNPT
	Src, Dst       netip.Addr
	SrcLen, DstLen uint8
}

const (
	nptOptSrc = iota
	nptOptDst
)

var (
	nptOptions = []OptDef{
		{Name: "src-pfx", Arg: RequiredArg, ID: nptOptSrc, Mandatory: true},
		{Name: "dst-pfx", Arg: RequiredArg, ID: nptOptDst, Mandatory: true},
	}
	dnptTargetSpec = ExtSpec{Name: "DNPT", Family: IPv6, X6: true, Options: nptOptions,
		NewTarget: func(Family) TargetExt { return &NPTTarget{Dest: true} }}
	snptTargetSpec = ExtSpec{Name: "SNPT", Family: IPv6, X6: true, Options: nptOptions,
		NewTarget: func(Family) TargetExt { return &NPTTarget{} }}
)

var (
	_ = RegisterTarget(&dnptTargetSpec)
	_ = RegisterTarget(&snptTargetSpec)
)

func (t *NPTTarget) Name() string {
	if t.Dest {
		return "DNPT"
	}
	return "SNPT"
}

// Parse reads "ADDR[/LEN]" (XTTYPE_HOSTMASK): the address as given (not
// masked; the kernel refuses host bits), the length 128 when absent.
func (t *NPTTarget) Parse(p *OptArg) error {
	host, mask, hasMask := strings.Cut(p.Arg, "/")
	a, err := lookupHost(host, IPv6)
	if err != nil {
		return err
	}
	bits := 128
	if hasMask {
		if bits, err = tgNetmapMask(p, mask, IPv6); err != nil {
			return err
		}
	}
	if p.Def.ID == nptOptSrc {
		t.Src, t.SrcLen = a, uint8(bits)
	} else {
		t.Dst, t.DstLen = a, uint8(bits)
	}
	return nil
}

func (t *NPTTarget) Final(*Rule, OptSet) error { return nil }

func (t *NPTTarget) show(b *strings.Builder, prefix string) {
	b.WriteString(prefix + "src-pfx " + t.Src.String() + "/" + strconv.Itoa(int(t.SrcLen)))
	b.WriteString(" " + strings.TrimPrefix(prefix, " ") + "dst-pfx " + t.Dst.String() + "/" + strconv.Itoa(int(t.DstLen)))
}

func (t *NPTTarget) Save(b *strings.Builder, _ *Rule) { t.show(b, " --") }

func (t *NPTTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" " + t.Name())
	t.show(b, " ")
}

// nptPrefixOK is ip6t_NPT's check of a prefix: at most 64 bits, no bit
// set after them.
func nptPrefixOK(a netip.Addr, bits uint8) bool {
	return bits <= 64 && netip.PrefixFrom(a, int(bits)).Masked().Addr() == a
}

// NftExprs: the xtables targets are bound to the mangle table (DNPT to
// PREROUTING and OUTPUT, SNPT to INPUT and POSTROUTING), so the kernel
// will not run them in ours (iptables-nft's run, through nft_compat in
// its table named mangle), and nftables has no exact equivalent: the
// checksum-neutral adjustment adds a constant to one 16-bit word of the
// address in one's complement (a word chosen by the packet when the prefix
// is longer than 48 bits), which nftables could only look up in a
// 65536-entry map per rule, and an address with no word to adjust is
// answered with an ICMPv6 parameter problem, which nftables cannot send.
// Where the kernel refuses them anyway (another table, another built-in
// chain, a prefix it does not take) the rule carries the xtables target
// (struct ip6t_npt_tginfo), so that the refusal is the kernel's own, as
// for iptables-nft.
func (t *NPTTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	hooks := uint8(hookIn | hookPost)
	if t.Dest {
		hooks = hookPre | hookOut
	}
	_, builtin := builtinHook[ctx.Chain]
	if ctx.Table != "mangle" || (builtin && !ctx.InHooks(hooks)) || !nptPrefixOK(t.Src, t.SrcLen) || !nptPrefixOK(t.Dst, t.DstLen) {
		return tgRefused(t.Name(), 0, 40), nil
	}
	return nil, tgNotInTable(t.Name(), "mangle", "RFC 6296 prefix translation (a one's complement word adjustment and an ICMPv6 parameter problem for an address it cannot translate)")
}
