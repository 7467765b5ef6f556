package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// DSCPMatch is -m dscp: the DiffServ code point of the IP header.
type DSCPMatch struct {
	DSCP   uint8
	Invert bool
}

const (
	dscpOptValue = iota
	dscpOptClass
)

var dscpOpts = []OptDef{
	{Name: "dscp", Arg: RequiredArg, ID: dscpOptValue, Invert: true},
	{Name: "dscp-class", Arg: RequiredArg, ID: dscpOptClass, Invert: true},
}

// dscpClasses are the class names --dscp-class knows, in lookup order.
var dscpClasses = []struct {
	name string
	v    uint8
}{{"CS0", 0x00}, {"CS1", 0x08}, {"CS2", 0x10}, {"CS3", 0x18}, {"CS4", 0x20}, {"CS5", 0x28},
	{"CS6", 0x30}, {"CS7", 0x38}, {"BE", 0x00}, {"AF11", 0x0a}, {"AF12", 0x0c}, {"AF13", 0x0e},
	{"AF21", 0x12}, {"AF22", 0x14}, {"AF23", 0x16}, {"AF31", 0x1a}, {"AF32", 0x1c}, {"AF33", 0x1e},
	{"AF41", 0x22}, {"AF42", 0x24}, {"AF43", 0x26}, {"EF", 0x2e}}

var dscpMatchSpec = ExtSpec{
	Name:     "dscp",
	Options:  dscpOpts,
	X6:       true,
	NewMatch: func(Family) MatchExt { return &DSCPMatch{} },
}

var _ = RegisterMatch(&dscpMatchSpec)

func (m *DSCPMatch) Name() string { return "dscp" }

// dscpClass resolves a class name; like the reference, any word that
// starts with a class name (case-insensitively) is taken for it.
func dscpClass(s string) (uint8, error) {
	for _, c := range dscpClasses {
		if len(s) >= len(c.name) && strings.EqualFold(s[:len(c.name)], c.name) {
			return c.v, nil
		}
	}
	return 0, Paramf("Invalid DSCP value `%s'", s)
}

func (m *DSCPMatch) Parse(p *OptArg) error {
	if p.Def.ID == dscpOptValue {
		v, err := x6Uint(p, 0, 0x3f)
		if err != nil {
			return err
		}
		m.DSCP = uint8(v)
	} else {
		v, err := dscpClass(p.Arg)
		if err != nil {
			return err
		}
		m.DSCP = v
	}
	if p.Invert {
		m.Invert = true
	}
	return nil
}

func (m *DSCPMatch) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("DSCP match: Parameter --dscp is required")
	}
	return x6Fcheck("dscp", dscpOpts, seen, map[int]x6Rel{
		dscpOptValue: {excl: bit(dscpOptClass)},
		dscpOptClass: {excl: bit(dscpOptValue)},
	})
}

func (m *DSCPMatch) Save(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, "%s --dscp 0x%02x", invMark(m.Invert), m.DSCP)
}

func (m *DSCPMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	inv := ""
	if m.Invert {
		inv = "!"
	}
	fmt.Fprintf(b, " DSCP match %s0x%02x", inv, m.DSCP)
}

// NftExprs masks the DSCP bits of the IPv4 TOS byte (nh+1) or of the
// IPv6 traffic class (nh+0, 2 bytes, bits 0x0fc0).
func (m *DSCPMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Family == IPv6 {
		v := be16(uint16(m.DSCP) << 6)
		return []expr.Any{nhLoad(0, 2),
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 2, Mask: []byte{0x0f, 0xc0}, Xor: []byte{0, 0}},
			cmpReg(m.Invert, v)}, nil
	}
	return []expr.Any{nhLoad(1, 1),
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{0xfc}, Xor: []byte{0}},
		cmpReg(m.Invert, []byte{m.DSCP << 2})}, nil
}
