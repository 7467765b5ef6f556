package compat

import (
	"fmt"
	"math"
	"strings"
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

func init() {
	RegisterMatch(&ExtSpec{
		Name:     "ah",
		Family:   IPv4,
		Options:  []OptDef{{Name: "ahspi", Arg: RequiredArg, ID: ahOptSPI, Invert: true}},
		X6:       true,
		NewMatch: func(Family) MatchExt { return &AHMatch{SPI: SPIRange{Max: math.MaxUint32}} },
	})
	RegisterMatch(&ExtSpec{
		Name:   "ah",
		Family: IPv6,
		Options: []OptDef{
			{Name: "ahspi", Arg: RequiredArg, ID: ahOptSPI, Invert: true},
			{Name: "ahlen", Arg: RequiredArg, ID: ahOptLen, Invert: true},
			{Name: "ahres", Arg: NoArg, ID: ahOptRes},
		},
		X6:       true,
		NewMatch: func(Family) MatchExt { return &AHMatch{SPI: SPIRange{Max: math.MaxUint32}, v6: true} },
	})
}

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

func (m *AHMatch) Save(b *strings.Builder, _ *Rule) {
	m.SPI.save(b, "ahspi")
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
