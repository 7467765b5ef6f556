package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// RateestMatch is -m rateest: compares the rate of a named estimator
// (fed by -j RATEEST) with a given rate (absolute mode) or with the rate
// of a second estimator (relative mode, --rateest2), in bytes or packets
// per second, optionally as the distance below given rates (--rateest-delta).
// Fields are struct xt_rateest_match_info.
type RateestMatch struct {
	Name1, Name2 string
	Flags        uint16
	Mode         uint16
	BPS1, PPS1   uint32 // bytes per second, packets per second
	BPS2, PPS2   uint32
	given        OptSet // options given, for the "twice" checks
}

// option IDs (libxt_rateest's; --rateest, --rateest-bps and --rateest-pps
// are aliases of --rateest1, --rateest-bps2 and --rateest-pps2)
const (
	rateestOpt1 = iota
	rateestOpt2
	rateestOptBPS1
	rateestOptPPS1
	rateestOptBPS2
	rateestOptPPS2
	rateestOptDelta
	rateestOptLT
	rateestOptGT
	rateestOptEQ
)

// XT_RATEEST_MATCH_* flags and modes.
const (
	rateestInvert = 1 << 0
	rateestAbs    = 1 << 1
	rateestRel    = 1 << 2
	rateestDelta  = 1 << 3
	rateestBPS    = 1 << 4
	rateestPPS    = 1 << 5

	rateestModeEQ = 1
	rateestModeLT = 2
	rateestModeGT = 3
)

var rateestMatchSpec = ExtSpec{
	Name: "rateest",
	Options: []OptDef{
		{Name: "rateest1", Arg: RequiredArg, ID: rateestOpt1},
		{Name: "rateest", Arg: RequiredArg, ID: rateestOpt1},
		{Name: "rateest2", Arg: RequiredArg, ID: rateestOpt2},
		{Name: "rateest-bps1", Arg: NoArg, ID: rateestOptBPS1},
		{Name: "rateest-pps1", Arg: NoArg, ID: rateestOptPPS1},
		{Name: "rateest-bps2", Arg: NoArg, ID: rateestOptBPS2},
		{Name: "rateest-pps2", Arg: NoArg, ID: rateestOptPPS2},
		{Name: "rateest-bps", Arg: NoArg, ID: rateestOptBPS2},
		{Name: "rateest-pps", Arg: NoArg, ID: rateestOptPPS2},
		{Name: "rateest-delta", Arg: NoArg, ID: rateestOptDelta},
		{Name: "rateest-lt", Arg: NoArg, ID: rateestOptLT},
		{Name: "rateest-gt", Arg: NoArg, ID: rateestOptGT},
		{Name: "rateest-eq", Arg: NoArg, ID: rateestOptEQ},
	},
	NewMatch: func(Family) MatchExt { return &RateestMatch{} },
}

var _ = RegisterMatch(&rateestMatchSpec)

func (m *RateestMatch) Name() string { return "rateest" }

// rateestSuffixes are the rate units libxt_rateest takes (iproute's),
// compared without regard to case, with their scale in bits per second.
var rateestSuffixes = []struct {
	name  string
	scale float64
}{
	{"bit", 1}, {"Kibit", 1024}, {"kbit", 1000}, {"mibit", 1024 * 1024}, {"mbit", 1e6},
	{"gibit", 1024 * 1024 * 1024}, {"gbit", 1e9}, {"tibit", 1024 * 1024 * 1024 * 1024}, {"tbit", 1e12},
	{"Bps", 8}, {"KiBps", 8 * 1024}, {"KBps", 8000}, {"MiBps", 8 * 1024 * 1024}, {"MBps", 8e6},
	{"GiBps", 8 * 1024 * 1024 * 1024}, {"GBps", 8e9}, {"TiBps", 8 * 1024 * 1024 * 1024 * 1024}, {"TBps", 8e12},
}

// rateestRate parses a rate into bytes per second: a number (taken as
// bits per second) and an optional unit, converted to unsigned int as C
// does on x86_64.
func rateestRate(s string) (uint32, bool) {
	v, n := cStrtod(s)
	if n == 0 {
		return 0, false
	}
	if n == len(s) {
		return cDoubleToUint(v / 8), true
	}
	for _, u := range rateestSuffixes {
		if strings.EqualFold(u.name, s[n:]) {
			return cDoubleToUint(v * u.scale / 8), true
		}
	}
	return 0, false
}

// rateestOptName is the option name the messages give for id.
var rateestOptName = map[int]string{
	rateestOpt1: "rateest1", rateestOpt2: "rateest2",
	rateestOptBPS1: "rateest-bps1", rateestOptPPS1: "rateest-pps1",
	rateestOptBPS2: "rateest-bps2", rateestOptPPS2: "rateest-pps2",
	rateestOptDelta: "rateest-delta",
}

func (m *RateestMatch) Parse(p *OptArg) error {
	id := p.Def.ID
	if p.Invert {
		switch id {
		case rateestOpt1, rateestOpt2:
			return Paramf("rateest: rateest can't be inverted")
		case rateestOptBPS1, rateestOptBPS2:
			return Paramf("rateest: rateest-bps can't be inverted")
		case rateestOptPPS1, rateestOptPPS2:
			return Paramf("rateest: rateest-pps can't be inverted")
		case rateestOptDelta:
			return Paramf("rateest: rateest-delta can't be inverted")
		}
	}
	if m.given.Has(id) {
		if id >= rateestOptLT {
			return Paramf("rateest: can't specify lt/gt/eq twice")
		}
		return Paramf("rateest: can't specify --%s twice", rateestOptName[id])
	}
	m.given |= bit(id)
	switch id {
	case rateestOpt1:
		m.Name1 = tgTruncString(p.Arg, tgRateestNameSize)
	case rateestOpt2:
		m.Name2 = tgTruncString(p.Arg, tgRateestNameSize)
		m.Flags |= rateestRel
	case rateestOptBPS1, rateestOptBPS2:
		m.Flags |= rateestBPS
		// the rate is optional (relative mode compares without one)
		arg, ok := p.NextArg()
		if !ok {
			return nil
		}
		v, ok := rateestRate(arg)
		if !ok {
			return Paramf("rateest: could not parse rate `%s'", arg)
		}
		if id == rateestOptBPS1 {
			m.BPS1 = v
		} else {
			m.BPS2 = v
		}
	case rateestOptPPS1, rateestOptPPS2:
		m.Flags |= rateestPPS
		arg, ok := p.NextArg()
		if !ok {
			return nil
		}
		v, ok := xtStrtoui(arg, 0, 0xffffffff)
		if !ok {
			return Paramf("rateest: could not parse pps `%s'", arg)
		}
		if id == rateestOptPPS1 {
			m.PPS1 = uint32(v)
		} else {
			m.PPS2 = uint32(v)
		}
	case rateestOptDelta:
		m.Flags |= rateestDelta
	case rateestOptLT, rateestOptGT, rateestOptEQ:
		m.Mode = map[int]uint16{rateestOptLT: rateestModeLT, rateestOptGT: rateestModeGT, rateestOptEQ: rateestModeEQ}[id]
		// the inversion stays once given, whichever mode comes last
		if p.Invert {
			m.Flags |= rateestInvert
		}
	}
	return nil
}

// Final: without a second estimator the comparison is absolute. Missing
// pieces (no rate kind, no mode, no estimator) are the kernel's to
// refuse, as for iptables-nft.
func (m *RateestMatch) Final(*Rule, OptSet) error {
	if m.Flags&rateestRel == 0 {
		m.Flags |= rateestAbs
	}
	return nil
}

// rateestRateString is how libxt_rateest prints a rate: with -n the
// bytes per second, else bits per second in Mbit, Kbit or bit.
func rateestRateString(rate uint32, numeric bool) string {
	bits := float64(rate) * 8
	switch {
	case numeric:
		return fmt.Sprintf(" %d", rate)
	case bits >= 1000*1000000:
		return fmt.Sprintf(" %.0fMbit", bits/1000000)
	case bits >= 1000*1000:
		return fmt.Sprintf(" %.0fKbit", bits/1000)
	}
	return fmt.Sprintf(" %.0fbit", bits)
}

func (m *RateestMatch) mode(b *strings.Builder, prefix string) {
	if m.Flags&rateestInvert != 0 {
		b.WriteString(" !")
	}
	switch m.Mode {
	case rateestModeEQ:
		b.WriteString(" " + prefix + "eq")
	case rateestModeLT:
		b.WriteString(" " + prefix + "lt")
	case rateestModeGT:
		b.WriteString(" " + prefix + "gt")
	}
}

func (m *RateestMatch) save(b *strings.Builder, quote func(string) string) {
	delta, abs := m.Flags&rateestDelta != 0, m.Flags&rateestAbs != 0
	if delta {
		b.WriteString(" --rateest-delta")
	}
	if m.Flags&rateestRel != 0 {
		b.WriteString(" --rateest1 " + quote(m.Name1))
	} else {
		b.WriteString(" --rateest " + quote(m.Name1))
	}
	second := ""
	if delta {
		second = "2"
	}
	if m.Flags&rateestBPS != 0 {
		if delta {
			b.WriteString(" --rateest-bps1" + rateestRateString(m.BPS1, false))
		}
		m.mode(b, "--rateest-")
		b.WriteString(" --rateest-bps" + second)
		if delta || abs {
			b.WriteString(rateestRateString(m.BPS2, false))
		}
	}
	if m.Flags&rateestPPS != 0 {
		if delta {
			fmt.Fprintf(b, " --rateest-pps1 %d", m.PPS1)
		}
		m.mode(b, "--rateest-")
		b.WriteString(" --rateest-pps" + second)
		if delta || abs {
			fmt.Fprintf(b, " %d", m.PPS2)
		}
	}
	if m.Flags&rateestRel != 0 {
		b.WriteString(" --rateest2 " + quote(m.Name2))
	}
}

// Save prints the names as they are, unquoted, as iptables does.
func (m *RateestMatch) Save(b *strings.Builder, _ *Rule) {
	m.save(b, func(s string) string { return s })
}

// SaveExact: -S rounds rates to Kbit or Mbit and leaves out the values
// the mode does not print; this form keeps every field (rates in Bps,
// which parse back to the same bytes per second).
func (m *RateestMatch) SaveExact(b *strings.Builder, _ *Rule) {
	if m.Flags&rateestDelta != 0 {
		b.WriteString(" --rateest-delta")
	}
	if m.given.Has(rateestOpt1) {
		b.WriteString(" --rateest1 " + SaveQuote(m.Name1))
	}
	if m.Flags&rateestBPS != 0 {
		fmt.Fprintf(b, " --rateest-bps1 %dBps --rateest-bps2 %dBps", m.BPS1, m.BPS2)
	}
	if m.Flags&rateestPPS != 0 {
		fmt.Fprintf(b, " --rateest-pps1 %d --rateest-pps2 %d", m.PPS1, m.PPS2)
	}
	m.mode(b, "--rateest-")
	if m.Flags&rateestRel != 0 {
		b.WriteString(" --rateest2 " + SaveQuote(m.Name2))
	}
}

// CompareKey: the rates -S rounds or leaves out.
func (m *RateestMatch) CompareKey() string {
	return fmt.Sprintf("rateest %d %d %d %d", m.BPS1, m.PPS1, m.BPS2, m.PPS2)
}

func (m *RateestMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	delta, abs := m.Flags&rateestDelta != 0, m.Flags&rateestAbs != 0
	b.WriteString(" rateest match " + m.Name1)
	if delta {
		b.WriteString(" delta")
	}
	if m.Flags&rateestBPS != 0 {
		b.WriteString(" bps")
		if delta {
			b.WriteString(rateestRateString(m.BPS1, numeric))
		}
		if abs {
			b.WriteString(rateestRateString(m.BPS2, numeric))
			m.mode(b, "")
		}
	}
	if m.Flags&rateestPPS != 0 {
		b.WriteString(" pps")
		if delta {
			fmt.Fprintf(b, " %d", m.PPS1)
		}
		if abs {
			m.mode(b, "")
			fmt.Fprintf(b, " %d", m.PPS2)
		}
	}
	if m.Flags&rateestRel != 0 {
		m.mode(b, "")
		b.WriteString(" " + m.Name2)
		if m.Flags&rateestBPS != 0 {
			b.WriteString(" bps")
			if delta {
				b.WriteString(rateestRateString(m.BPS2, numeric))
			}
		}
		if m.Flags&rateestPPS != 0 {
			b.WriteString(" pps")
			if delta {
				fmt.Fprintf(b, " %d", m.PPS2)
			}
		}
	}
}

// NftExprs: the xtables match (revision 0, struct xt_rateest_match_info:
// two names, flags, mode, four rates, then the kernel's two estimator
// pointers, sent as zeros), as iptables-nft sends it. The estimators are
// the kernel's xt_RATEEST ones, which nftables cannot read; the kernel
// refuses a name no RATEEST rule made (ENOENT) and incomplete
// combinations (EINVAL).
func (m *RateestMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.raw([]byte(m.Name1), tgRateestNameSize)
	x.raw([]byte(m.Name2), tgRateestNameSize)
	x.u16(m.Flags)
	x.u16(m.Mode)
	x.u32(m.BPS1)
	x.u32(m.PPS1)
	x.u32(m.BPS2)
	x.u32(m.PPS2)
	x.align(8)
	x.u64(0) // struct xt_rateest *est1
	x.u64(0) // est2
	return []expr.Any{compatMatch("rateest", 0, x)}, nil
}
