package compat

import (
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// TCPMSSMatch is -m tcpmss: the MSS option of SYN packets in a range.
type TCPMSSMatch struct {
	Min, Max uint16
	Invert   bool
}

var tcpmssMatchSpec = ExtSpec{
	Name:     "tcpmss",
	Options:  []OptDef{{Name: "mss", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &TCPMSSMatch{} },
}

var _ = RegisterMatch(&tcpmssMatchSpec)

func (m *TCPMSSMatch) Name() string { return "tcpmss" }

func (m *TCPMSSMatch) Parse(p *OptArg) error {
	v, err := x6Range(p, 0, 0xffff, 2)
	if err != nil {
		return err
	}
	m.Min, m.Max = uint16(v[0]), uint16(v[0])
	if len(v) == 2 {
		m.Max = uint16(v[1])
		if m.Max < m.Min {
			return Paramf("tcpmss: invalid range given")
		}
	}
	if p.Invert {
		m.Invert = true
	}
	return nil
}

func (m *TCPMSSMatch) Final(*Rule, OptSet) error { return nil }

func (m *TCPMSSMatch) rangeString() string {
	if m.Min == m.Max {
		return strconv.Itoa(int(m.Min))
	}
	return strconv.Itoa(int(m.Min)) + ":" + strconv.Itoa(int(m.Max))
}

func (m *TCPMSSMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(invMark(m.Invert) + " --mss " + m.rangeString())
}

func (m *TCPMSSMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" tcpmss match ")
	if m.Invert {
		b.WriteByte('!')
	}
	b.WriteString(m.rangeString())
}

// NftExprs: the xtables match (struct xt_tcpmss_match_info): "! --mss"
// also matches segments without the option, which "tcp option maxseg"
// cannot express.
func (m *TCPMSSMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u16(m.Min)
	x.u16(m.Max)
	var inv uint8
	if m.Invert {
		inv = 1
	}
	x.u8(inv)
	return []expr.Any{compatMatch("tcpmss", 0, x)}, nil
}
