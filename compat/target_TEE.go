package compat

import (
	"net/netip"
	"strings"
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

func init() {
	for _, f := range []Family{IPv4, IPv6} {
		f := f
		RegisterTarget(&ExtSpec{
			Name:      "TEE",
			Family:    f,
			X6:        true,
			Options:   tgTeeOptions,
			NewTarget: func(Family) TargetExt { return &TeeTarget{Family: f} },
		})
	}
}

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
	return tgFcheck("TEE", tgTeeOptions, seen, map[int]tgRel{tgTeeOptGateway: {mand: true}})
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

func (t *TeeTarget) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(" --gateway " + t.gateway())
	if t.Oif != "" {
		b.WriteString(" --oif " + t.Oif)
	}
}

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
