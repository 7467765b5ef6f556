package compat

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// TproxyTarget is -j TPROXY (revision 1): it diverts the packet to a
// local socket on a port (and address) without changing it, optionally
// marking it.
type TproxyTarget struct {
	Family    Family
	Port      uint16
	Addr      netip.Addr
	MarkValue uint32
	MarkMask  uint32
}

const (
	tgTproxyOptPort = iota
	tgTproxyOptAddr
	tgTproxyOptMark
)

var tgTproxyOptions = []OptDef{
	{Name: "on-port", Arg: RequiredArg, ID: tgTproxyOptPort},
	{Name: "on-ip", Arg: RequiredArg, ID: tgTproxyOptAddr},
	{Name: "tproxy-mark", Arg: RequiredArg, ID: tgTproxyOptMark},
}

var tproxyTargetSpec = ExtSpec{
	Name:      "TPROXY",
	X6:        true,
	Options:   tgTproxyOptions,
	NewTarget: func(f Family) TargetExt { return &TproxyTarget{Family: f} },
}

var _ = RegisterTarget(&tproxyTargetSpec)

func (t *TproxyTarget) Name() string { return "TPROXY" }

func (t *TproxyTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgTproxyOptPort:
		v, ok := tgPortByName(p.Arg)
		if !ok {
			return Paramf("Port \"%s\" does not resolve to anything.\n", p.Arg)
		}
		t.Port = v
	case tgTproxyOptAddr:
		a, err := tgHost(p.Arg, t.Family)
		if err != nil {
			return err
		}
		t.Addr = a
	case tgTproxyOptMark:
		v, m, err := tgMarkMask(p)
		if err != nil {
			return err
		}
		t.MarkValue, t.MarkMask = v, m
	}
	return nil
}

func (t *TproxyTarget) Final(_ *Rule, seen OptSet) error {
	return x6Fcheck("TPROXY", tgTproxyOptions, seen, map[int]x6Rel{tgTproxyOptPort: {mand: true}})
}

func (t *TproxyTarget) addr() string {
	if !t.Addr.IsValid() {
		if t.Family == IPv6 {
			return "::"
		}
		return "0.0.0.0"
	}
	return t.Addr.String()
}

func (t *TproxyTarget) Save(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, " --on-port %d --on-ip %s --tproxy-mark 0x%x/0x%x", t.Port, t.addr(), t.MarkValue, t.MarkMask)
}

func (t *TproxyTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	fmt.Fprintf(b, " TPROXY redirect %s:%d mark 0x%x/0x%x", t.addr(), t.Port, t.MarkValue, t.MarkMask)
}

// NftExprs: xt TPROXY diverts the packet to a local socket (one on the
// connection, else a transparent listener on --on-ip/--on-port), sets the
// mark and accepts it; with no such socket it drops it. nft's tproxy
// ends the rule instead when it finds none, so the rule jumps to a chain
// bound to it (BoundJump) that holds "tproxy, mark, accept" and then
// "drop": one iptables rule, one kernel rule, the same verdicts. The
// bound rule repeats the protocol test, as nft's own tproxy statement
// needs it. As for xt TPROXY, the kernel refuses it outside the mangle
// table, outside PREROUTING (checked for built-in chains here, at the
// jump for user chains) and without -p tcp or -p udp.
func (t *TproxyTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	r := ctx.Rule
	_, builtin := builtinHook[ctx.Chain]
	if ctx.Table != "mangle" || (builtin && ctx.Chain != "PREROUTING") || r == nil || !r.ProtoSet || r.ProtoInv ||
		(r.Proto != unix.IPPROTO_TCP && r.Proto != unix.IPPROTO_UDP) {
		return tgRefused("TPROXY", 1, 26), nil
	}
	fam := byte(unix.NFPROTO_IPV4)
	if t.Family == IPv6 {
		fam = unix.NFPROTO_IPV6
	}
	divert := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{r.Proto}},
		tgImm(1, []byte{byte(t.Port >> 8), byte(t.Port)}),
	}
	tp := &expr.TProxy{Family: fam, TableFamily: fam, RegPort: 1}
	if t.Addr.IsValid() && !t.Addr.IsUnspecified() {
		divert = append(divert, tgImm(2, t.Addr.AsSlice()))
		tp.RegAddr = 2
	}
	divert = append(divert, tp)
	if t.MarkMask != 0 || t.MarkValue != 0 {
		divert = append(divert, tgXsetExprs(&expr.Meta{Key: expr.MetaKeyMARK, Register: 1}, t.MarkValue, t.MarkMask)...)
		divert = append(divert, tgMetaSet(expr.MetaKeyMARK))
	}
	divert = append(divert, &expr.Verdict{Kind: expr.VerdictAccept})
	return []expr.Any{&BoundJump{
		Verdict: &expr.Verdict{Kind: expr.VerdictJump},
		Rules:   [][]expr.Any{divert, {&expr.Verdict{Kind: expr.VerdictDrop}}},
	}}, nil
}
