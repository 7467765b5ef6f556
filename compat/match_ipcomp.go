package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// IPCompMatch is -m ipcomp: the CPI of an IPComp header (after -p
// ipcomp) as an SPI range, and --compres (struct xt_ipcomp's hdrres).
// Without --ipcompspi the range is 0:0, as libxt_ipcomp leaves it.
type IPCompMatch struct {
	SPI    SPIRange
	HdrRes bool
}

var ipcompMatchSpec = ExtSpec{
	Name: "ipcomp",
	Options: []OptDef{
		{Name: "ipcompspi", Arg: RequiredArg, ID: 0, Invert: true},
		{Name: "compres", Arg: NoArg, ID: 1},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &IPCompMatch{} },
}

var _ = RegisterMatch(&ipcompMatchSpec)

func (m *IPCompMatch) Name() string { return "ipcomp" }

func (m *IPCompMatch) Parse(p *OptArg) error {
	if p.Def.ID == 1 {
		m.HdrRes = true
		return nil
	}
	r, err := parseSPIRange(p)
	m.SPI = r
	return err
}

func (m *IPCompMatch) Final(*Rule, OptSet) error { return nil }

// save: iptables 1.8.9 leaves out the full range, inverted or not,
// though without the option the range is 0:0; the exact form (the
// rule's userdata) keeps it.
func (m *IPCompMatch) save(b *strings.Builder, exact bool) {
	if !m.SPI.full() || exact {
		fmt.Fprintf(b, "%s --ipcompspi %d", invMark(m.SPI.Invert), m.SPI.Min)
		if m.SPI.Min != m.SPI.Max {
			fmt.Fprintf(b, ":%d", m.SPI.Max)
		}
	}
	if m.HdrRes {
		b.WriteString(" --compres")
	}
}

func (m *IPCompMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact keeps a full range, which -S leaves out.
func (m *IPCompMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

// CompareKey: -S prints an inverted full range as nothing, like the
// uninverted one.
func (m *IPCompMatch) CompareKey() string {
	return fmt.Sprintf("ipcomp %d %d %v", m.SPI.Min, m.SPI.Max, m.SPI.Invert)
}

func (m *IPCompMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" comp ")
	m.SPI.list(b, "")
	if m.HdrRes {
		b.WriteString(" reserved")
	}
}

// NftExprs: the xtables match (revision 0, struct xt_ipcomp: spis[2],
// invflags, hdrres), as iptables-nft sends it. The kernel allows it only
// after -p ipcomp (EINVAL otherwise, as for iptables-nft); it skips
// non-first fragments and drops truncated headers, which one nftables
// rule does not do the same way.
func (m *IPCompMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := spiBlob(m.SPI)
	var res uint8
	if m.HdrRes {
		res = 1
	}
	x.u8(res)
	return []expr.Any{compatMatch("ipcomp", 0, x)}, nil
}
