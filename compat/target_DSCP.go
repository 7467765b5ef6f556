package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// DSCPTarget is -j DSCP: it rewrites the DSCP bits of the TOS/traffic
// class field.
type DSCPTarget struct {
	DSCP uint8
}

const (
	tgDscpOptSet = iota
	tgDscpOptClass
)

var tgDscpOptions = []OptDef{
	{Name: "set-dscp", Arg: RequiredArg, ID: tgDscpOptSet},
	{Name: "set-dscp-class", Arg: RequiredArg, ID: tgDscpOptClass},
}

var tgDscpRels = map[int]x6Rel{
	tgDscpOptSet:   {excl: bit(tgDscpOptClass)},
	tgDscpOptClass: {excl: bit(tgDscpOptSet)},
}

// tgDscpClasses are the DiffServ class names in xtables' lookup order.
var tgDscpClasses = []struct {
	name string
	dscp uint8
}{
	{"CS0", 0x00}, {"CS1", 0x08}, {"CS2", 0x10}, {"CS3", 0x18}, {"CS4", 0x20},
	{"CS5", 0x28}, {"CS6", 0x30}, {"CS7", 0x38}, {"BE", 0x00},
	{"AF11", 0x0a}, {"AF12", 0x0c}, {"AF13", 0x0e}, {"AF21", 0x12}, {"AF22", 0x14},
	{"AF23", 0x16}, {"AF31", 0x1a}, {"AF32", 0x1c}, {"AF33", 0x1e}, {"AF41", 0x22},
	{"AF42", 0x24}, {"AF43", 0x26}, {"EF", 0x2e},
}

var dscpTargetSpec = ExtSpec{
	Name:      "DSCP",
	X6:        true,
	Options:   tgDscpOptions,
	NewTarget: func(Family) TargetExt { return &DSCPTarget{} },
}

var _ = RegisterTarget(&dscpTargetSpec)

func (t *DSCPTarget) Name() string { return "DSCP" }

// tgDscpClassValue matches a class name against the start of s, ignoring
// case, as xtables does (so "ef-foo" is EF).
func tgDscpClassValue(s string) (uint8, error) {
	for _, c := range tgDscpClasses {
		if len(s) >= len(c.name) && strings.EqualFold(s[:len(c.name)], c.name) {
			return c.dscp, nil
		}
	}
	return 0, Paramf("Invalid DSCP value `%s'", s)
}

func (t *DSCPTarget) Parse(p *OptArg) error {
	if p.Def.ID == tgDscpOptClass {
		v, err := tgDscpClassValue(p.Arg)
		if err != nil {
			return err
		}
		t.DSCP = v
		return nil
	}
	v, err := tgUint(p, 0, 0x3f)
	if err != nil {
		return err
	}
	t.DSCP = uint8(v)
	return nil
}

func (t *DSCPTarget) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("DSCP target: Parameter --set-dscp is required")
	}
	return x6Fcheck("DSCP", tgDscpOptions, seen, tgDscpRels)
}

func (t *DSCPTarget) Save(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, " --set-dscp 0x%02x", t.DSCP)
}

func (t *DSCPTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	fmt.Fprintf(b, " DSCP set 0x%02x", t.DSCP)
}

// NftExprs rewrites the DSCP bits and keeps ECN, as `ip dscp set` /
// `ip6 dscp set` do (the IPv4 header checksum updated). DSCP is bound
// to the mangle table; elsewhere the kernel refuses the xtables target.
func (t *DSCPTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "mangle" {
		return tgRefused("DSCP", 0, 1), nil
	}
	if ctx.Family == IPv6 {
		return tgHeaderRewrite(0, []byte{0xf0, 0x3f}, []byte{t.DSCP >> 2, t.DSCP << 6}, false), nil
	}
	return tgHeaderRewrite(0, []byte{0xff, 0x03}, []byte{0, t.DSCP << 2}, true), nil
}
