package compat

import (
	"fmt"
	"math"
	"strings"

	"github.com/google/nftables/expr"
)

// AHMatch is -m ah: the SPI of an AH header; ip6tables also matches its
// length and reserved field.
type AHMatch struct {
	SPI    SPIRange
	Len    uint32
	LenInv bool
	Res    bool
	v6     bool
}

const (
	ahOptSPI = iota
	ahOptLen
	ahOptRes
)

var ahMatchSpec4 = ExtSpec{
	Name:     "ah",
	Family:   IPv4,
	Options:  []OptDef{{Name: "ahspi", Arg: RequiredArg, ID: ahOptSPI, Invert: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &AHMatch{SPI: SPIRange{Max: math.MaxUint32}} },
}

var ahMatchSpec6 = ExtSpec{
	Name:   "ah",
	Family: IPv6,
	Options: []OptDef{
		{Name: "ahspi", Arg: RequiredArg, ID: ahOptSPI, Invert: true},
		{Name: "ahlen", Arg: RequiredArg, ID: ahOptLen, Invert: true},
		{Name: "ahres", Arg: NoArg, ID: ahOptRes},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &AHMatch{SPI: SPIRange{Max: math.MaxUint32}, v6: true} },
}

var (
	_ = RegisterMatch(&ahMatchSpec4)
	_ = RegisterMatch(&ahMatchSpec6)
)

func (m *AHMatch) Name() string { return "ah" }

func (m *AHMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case ahOptSPI:
		r, err := parseSPIRange(p)
		if err != nil {
			return err
		}
		m.SPI = r
	case ahOptLen:
		v, err := x6Uint(p, 0, math.MaxUint32)
		if err != nil {
			return err
		}
		m.Len = uint32(v)
		if p.Invert {
			m.LenInv = true
		}
	case ahOptRes:
		m.Res = true
	}
	return nil
}

func (m *AHMatch) Final(*Rule, OptSet) error { return nil }

func (m *AHMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact is Save keeping an inverted full SPI range (never matches).
func (m *AHMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

func (m *AHMatch) save(b *strings.Builder, exact bool) {
	m.SPI.save(b, "ahspi", exact)
	if m.Len != 0 || m.LenInv {
		fmt.Fprintf(b, "%s --ahlen %d", invMark(m.LenInv), m.Len)
	}
	if m.Res {
		b.WriteString(" --ahres")
	}
}

func (m *AHMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" ah ")
	m.SPI.list(b, "")
	if m.Len != 0 || m.LenInv {
		inv := ""
		if m.LenInv {
			inv = "!"
		}
		fmt.Fprintf(b, "length:%s%d", inv, m.Len)
	}
	if m.Res {
		b.WriteString(" reserved")
	}
}

// NftExprs: IPv4 tests the SPI at th+4 (after "-p ah", else the xtables
// match, which the kernel refuses as for iptables-nft). ip6tables' ah
// searches the extension header chain and tests its length: the xtables
// match (struct ip6t_ah).
func (m *AHMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if !m.v6 {
		if r := ctx.Rule; r == nil || !r.ProtoSet || r.ProtoInv || r.Proto != 51 {
			return []expr.Any{compatMatch("ah", 0, spiBlob(m.SPI))}, nil
		}
		return spiExprs(ctx.Rule, 4, m.SPI), nil
	}
	x := &xtBlob{}
	x.u32(m.SPI.Min)
	x.u32(m.SPI.Max)
	x.u32(m.Len)
	var res, inv uint8
	if m.Res {
		res = 1
	}
	if m.SPI.Invert {
		inv |= 1
	}
	if m.LenInv {
		inv |= 2
	}
	x.u8(res)
	x.u8(inv)
	return []expr.Any{compatMatch("ah", 0, x)}, nil
}
