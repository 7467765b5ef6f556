package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// TOSMatch is -m tos (revision 1): the IPv4 TOS byte or the IPv6
// traffic class, masked.
type TOSMatch struct {
	Value, Mask uint8
	Invert      bool
}

// tosMatchSymbols are the names --tos accepts (with the 0x3f mask).
var tosMatchSymbols = []struct {
	name string
	v    uint8
}{{"Minimize-Delay", 0x10}, {"Maximize-Throughput", 0x08}, {"Maximize-Reliability", 0x04},
	{"Minimize-Cost", 0x02}, {"Normal-Service", 0x00}}

var tosMatchSpec = ExtSpec{
	Name:     "tos",
	Options:  []OptDef{{Name: "tos", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &TOSMatch{} },
}

var _ = RegisterMatch(&tosMatchSpec)

func (m *TOSMatch) Name() string { return "tos" }

// tosMatchParse is XTTYPE_TOSMASK: "value[/mask]" (mask defaults to
// 0xff) when it starts with a number up to 255, else a symbol name
// (case-insensitive) with the mask 0x3f.
func tosMatchParse(s string) (uint8, uint8, error) {
	if v, rest, ok := xtStrtoul(s, 0, 255); ok {
		mask := uint64(0xff)
		if rest != "" && rest[0] == '/' {
			var ok bool
			if mask, rest, ok = xtStrtoul(rest[1:], 0, 255); !ok {
				return 0, 0, Paramf("Illegal value: \"%s\"", s)
			}
		}
		if rest != "" {
			return 0, 0, Paramf("Illegal value: \"%s\"", s)
		}
		return uint8(v), uint8(mask), nil
	}
	for _, sym := range tosMatchSymbols {
		if strings.EqualFold(s, sym.name) {
			return sym.v, 0x3f, nil
		}
	}
	return 0, 0, Paramf("Symbolic name \"%s\" is unknown", s)
}

func (m *TOSMatch) Parse(p *OptArg) error {
	v, mask, err := tosMatchParse(p.Arg)
	if err != nil {
		return err
	}
	m.Value, m.Mask = v, mask
	if p.Invert {
		m.Invert = true
	}
	return nil
}

func (m *TOSMatch) Final(*Rule, OptSet) error { return nil }

func (m *TOSMatch) Save(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, "%s --tos 0x%02x/0x%02x", invMark(m.Invert), m.Value, m.Mask)
}

// List prints as libxt_tos does, with no space between "match" and
// the numeric value.
func (m *TOSMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" tos match")
	if m.Invert {
		b.WriteString("!")
	}
	if !numeric && m.Mask == 0x3f {
		for _, sym := range tosMatchSymbols {
			if sym.v == m.Value {
				b.WriteString(" " + sym.name)
				return
			}
		}
	}
	fmt.Fprintf(b, "0x%02x/0x%02x", m.Value, m.Mask)
}

// NftExprs: xt_tos compares (TOS & mask) == value, on the IPv4 TOS byte
// (nh+1) or the IPv6 traffic class (bits 4-11 of the first two bytes):
// a masked payload compare is the same test.
func (m *TOSMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Family == IPv6 {
		return []expr.Any{nhLoad(0, 2),
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 2, Mask: be16(uint16(m.Mask) << 4), Xor: []byte{0, 0}},
			cmpReg(m.Invert, be16(uint16(m.Value)<<4))}, nil
	}
	return []expr.Any{nhLoad(1, 1),
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{m.Mask}, Xor: []byte{0}},
		cmpReg(m.Invert, []byte{m.Value})}, nil
}
