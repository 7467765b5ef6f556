package compat

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables/expr"
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

func init() {
	for _, f := range []Family{IPv4, IPv6} {
		f := f
		RegisterTarget(&ExtSpec{
			Name:      "TPROXY",
			Family:    f,
			X6:        true,
			Options:   tgTproxyOptions,
			NewTarget: func(Family) TargetExt { return &TproxyTarget{Family: f} },
		})
	}
}

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

// NftExprs: TPROXY drops the packet when no socket is found and
// accepts it (after setting the mark) when one is; nft tproxy ends the
// rule (the next rule runs) when none is found, so an exact form would
// need a second rule or chain, which would break iptables' one rule,
// one kernel rule numbering. The kernel binds the xtables target to a
// table named "mangle": not supported. Outside the mangle table the
// kernel refuses it, also the target we hand it there.
func (t *TproxyTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "mangle" {
		return tgRefused("TPROXY", 1, 26), nil
	}
	return nil, tgNotInTable("TPROXY", "mangle", "dropping packets without a socket in the same rule")
}
