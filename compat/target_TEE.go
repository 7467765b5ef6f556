package compat

import (
	"net/netip"
	"strings"

	"github.com/google/nftables/expr"
)

// TeeTarget is -j TEE: it sends a copy of the packet to a gateway,
// optionally through a given interface.
type TeeTarget struct {
	Family  Family
	Gateway netip.Addr
	Oif     string
}

const (
	tgTeeOptGateway = iota
	tgTeeOptOif
)

const tgTeeOifSize = 16

var tgTeeOptions = []OptDef{
	{Name: "gateway", Arg: RequiredArg, ID: tgTeeOptGateway},
	{Name: "oif", Arg: RequiredArg, ID: tgTeeOptOif},
}

var teeTargetSpec = ExtSpec{
	Name:      "TEE",
	X6:        true,
	Options:   tgTeeOptions,
	NewTarget: func(f Family) TargetExt { return &TeeTarget{Family: f} },
}

var _ = RegisterTarget(&teeTargetSpec)

func (t *TeeTarget) Name() string { return "TEE" }

func (t *TeeTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgTeeOptGateway:
		a, err := tgHost(p.Arg, t.Family)
		if err != nil {
			return err
		}
		t.Gateway = a
	case tgTeeOptOif:
		t.Oif = tgTruncString(p.Arg, tgTeeOifSize)
	}
	return nil
}

func (t *TeeTarget) Final(_ *Rule, seen OptSet) error {
	return x6Fcheck("TEE", tgTeeOptions, seen, map[int]x6Rel{tgTeeOptGateway: {mand: true}})
}

func (t *TeeTarget) gateway() string {
	if !t.Gateway.IsValid() {
		if t.Family == IPv6 {
			return "::"
		}
		return "0.0.0.0"
	}
	return t.Gateway.String()
}

func (t *TeeTarget) Save(b *strings.Builder, _ *Rule) { t.save(b, t.Oif) }

func (t *TeeTarget) save(b *strings.Builder, oif string) {
	b.WriteString(" --gateway " + t.gateway())
	if t.Oif != "" {
		b.WriteString(" --oif " + oif)
	}
}

// SaveExact quotes an --oif name with a space or a quote (-S prints it as
// is), so that the rule's kept text reads back as the same rule.
func (t *TeeTarget) SaveExact(b *strings.Builder, _ *Rule) { t.save(b, exactWord(t.Oif)) }

// ExactIsSave: the --oif name needs no quotes.
func (t *TeeTarget) ExactIsSave() bool { return !ifaceNeedsQuote(t.Oif) }

func (t *TeeTarget) List(b *strings.Builder, _ *Rule, numeric bool) {
	gw := t.gateway()
	if !numeric && t.Gateway.IsValid() {
		gw = hostName(t.Gateway)
	}
	b.WriteString(" TEE gw:" + gw)
	if t.Oif != "" {
		b.WriteString(" oif=" + t.Oif)
	}
}

// NftExprs: without --oif, `dup to GW` (nf_dup_ipv4/6 with no device,
// as TEE calls it). --oif names a device TEE follows by name, also
// before it exists, while nft dup takes an ifindex: that form stays the
// xtables target (no table restriction; the kernel zeroes the private
// pointer when it lists the target back).
func (t *TeeTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	if t.Oif == "" {
		return []expr.Any{tgImm(1, t.Gateway.AsSlice()), &expr.Dup{RegAddr: 1}}, nil
	}
	var b xtBlob
	gw := make([]byte, 16)
	putAddr16(gw, t.Gateway.AsSlice())
	b.raw(gw, 16)
	b.raw([]byte(t.Oif), tgTeeOifSize)
	b.u64(0)
	return []expr.Any{tgXtTarget("TEE", 1, b.b)}, nil
}
