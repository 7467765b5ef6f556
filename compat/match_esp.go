package compat

import (
	"fmt"
	"math"
	"strings"

	"github.com/google/nftables/expr"
)

// SPIRange is the SPI range of -m esp and -m ah.
type SPIRange struct {
	Min, Max uint32
	Invert   bool
}

func parseSPIRange(p *OptArg) (SPIRange, error) {
	v, err := parseU32Range(p)
	return SPIRange{Min: v[0], Max: v[1], Invert: p.Invert}, err
}

// parseU32Range parses "A" or "A:B" (32-bit, xtables' range parser) as
// the pair [A, A] or [A, B]: the SPI, fragment id and segments-left
// options share it.
func parseU32Range(p *OptArg) ([2]uint32, error) {
	v, err := x6Range(p, 0, math.MaxUint32, 2)
	if err != nil {
		return [2]uint32{}, err
	}
	r := [2]uint32{uint32(v[0]), uint32(v[0])}
	if len(v) == 2 {
		r[1] = uint32(v[1])
	}
	return r, nil
}

func (r SPIRange) full() bool { return r.Min == 0 && r.Max == math.MaxUint32 }

// save prints " --OPT A[:B]"; iptables 1.8.9 omits the full range
// even when it is inverted, the exact form (for the rule's userdata)
// keeps it then.
func (r SPIRange) save(b *strings.Builder, opt string, exact bool) {
	if r.full() && (!exact || !r.Invert) {
		return
	}
	fmt.Fprintf(b, "%s --%s %d", invMark(r.Invert), opt, r.Min)
	if r.Min != r.Max {
		fmt.Fprintf(b, ":%d", r.Max)
	}
}

// list prints "spi:[!]A" or "spis:[!]A:B" after sep, unless the range
// is the uninverted full range.
func (r SPIRange) list(b *strings.Builder, sep string) {
	if r.full() && !r.Invert {
		return
	}
	inv := ""
	if r.Invert {
		inv = "!"
	}
	if r.Min == r.Max {
		fmt.Fprintf(b, "%sspi:%s%d", sep, inv, r.Min)
	} else {
		fmt.Fprintf(b, "%sspis:%s%d:%d", sep, inv, r.Min, r.Max)
	}
}

// ESPMatch is -m esp: the SPI of an ESP header.
type ESPMatch struct {
	SPI SPIRange
}

var espMatchSpec = ExtSpec{
	Name:     "esp",
	Options:  []OptDef{{Name: "espspi", Arg: RequiredArg, ID: 0, Invert: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &ESPMatch{SPI: SPIRange{Max: math.MaxUint32}} },
}

var _ = RegisterMatch(&espMatchSpec)

func (m *ESPMatch) Name() string { return "esp" }

func (m *ESPMatch) Parse(p *OptArg) error {
	r, err := parseSPIRange(p)
	m.SPI = r
	return err
}

func (m *ESPMatch) Final(*Rule, OptSet) error { return nil }

func (m *ESPMatch) Save(b *strings.Builder, _ *Rule) { m.SPI.save(b, "espspi", false) }

// SaveExact is Save keeping an inverted full range (never matches).
func (m *ESPMatch) SaveExact(b *strings.Builder, _ *Rule) { m.SPI.save(b, "espspi", true) }

func (m *ESPMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" esp")
	m.SPI.list(b, " ")
}

// spiExprs tests r against the 32-bit SPI at transport offset off of an
// IPv4 rule's packet, behind the first-fragment test (see
// firstFragmentExprs: xt_esp and xt_ah skip non-first fragments, whose
// data nft's transport payload would read as the SPI). A full
// uninverted range still loads, so that the rule, like xt_esp and
// xt_ah, does not match a packet too short for the SPI (which they
// drop, as they drop one too short for the whole header: 8 bytes for
// ESP, 12 for AH).
func spiExprs(r *Rule, off uint32, spi SPIRange) []expr.Any {
	out := append(firstFragmentExprs(r), thLoad(off, 4))
	if spi.full() && !spi.Invert {
		return out
	}
	return append(out, rangeReg(spi.Invert, be32(spi.Min), be32(spi.Max)))
}

// spiBlob is struct xt_esp / ipt_ah: spis[2], invflags.
func spiBlob(r SPIRange) *xtBlob {
	x := &xtBlob{}
	x.u32(r.Min)
	x.u32(r.Max)
	var inv uint8
	if r.Invert {
		inv = 1
	}
	x.u8(inv)
	return x
}

// NftExprs tests the SPI at th+0 of IPv4 packets. xt_esp is only
// accepted by the kernel after "-p esp"; without it the xtables match
// is sent so that the kernel refuses the rule as it does for
// iptables-nft. IPv6 rules keep xt_esp too: it skips non-first
// fragments, which nft cannot tell in one rule.
func (m *ESPMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if r := ctx.Rule; r == nil || !r.ProtoSet || r.ProtoInv || r.Proto != 50 || ctx.Family == IPv6 {
		return []expr.Any{compatMatch("esp", 0, spiBlob(m.SPI))}, nil
	}
	return spiExprs(ctx.Rule, 0, m.SPI), nil
}
