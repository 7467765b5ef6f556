package compat

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// LimitMatch is -m limit. Avg is the mean interval between packets in
// units of 1/10000 s (xt_rateinfo), which is what printing goes by.
type LimitMatch struct {
	Avg   uint32
	Burst uint32
}

const limitScale = 10000

var limitMatchSpec = ExtSpec{
	Name: "limit",
	X6:   true,
	Options: []OptDef{
		{Name: "limit", Arg: RequiredArg, ID: 0},
		{Name: "limit-burst", Arg: RequiredArg, ID: 1},
	},
	NewMatch: func(Family) MatchExt { return &LimitMatch{Avg: limitScale * 3600 / 3, Burst: 5} },
}

var _ = RegisterMatch(&limitMatchSpec)

func (m *LimitMatch) Name() string { return "limit" }

// limitUnits are the rate units: name and seconds.
var limitUnits = []struct {
	name string
	secs uint32
}{{"day", 86400}, {"hour", 3600}, {"min", 60}, {"sec", 1}}

// cAtoi is C atoi: leading blanks, a sign, then decimal digits.
func cAtoi(s string) int32 {
	v, _, ok, _ := cStrtoull(s, 10)
	if !ok {
		return 0
	}
	return int32(v)
}

func (m *LimitMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case 0:
		num, unit, hasUnit := strings.Cut(p.Arg, "/")
		mult := uint32(1)
		if hasUnit {
			found := false
			for _, u := range []struct {
				word string
				secs uint32
			}{{"second", 1}, {"minute", 60}, {"hour", 3600}, {"day", 86400}} {
				if unit != "" && len(unit) <= len(u.word) && strings.EqualFold(u.word[:len(unit)], unit) {
					mult, found = u.secs, true
					break
				}
			}
			if !found {
				return Paramf("bad rate \"%s\"'", p.Arg)
			}
		}
		r := uint32(cAtoi(num))
		if r == 0 {
			return Paramf("bad rate \"%s\"'", p.Arg)
		}
		m.Avg = limitScale * mult / r
		if m.Avg == 0 {
			return Paramf("Rate too fast \"%s\"", p.Arg)
		}
	case 1:
		v, ok := xtStrtoui(p.Arg, 0, 10000)
		if !ok {
			return Paramf("limit: bad value for option \"--limit-burst\", or out of range (0-10000).\n")
		}
		m.Burst = uint32(v)
	}
	return nil
}

func (m *LimitMatch) Final(*Rule, OptSet) error { return nil }

// limitRate expresses an interval (in 1/scale s) as a count per unit,
// choosing the largest unit whose count is still exact enough; unit is
// in seconds.
func limitRate(period, scale uint64) (count, unit uint64) {
	i := 1
	for ; i < len(limitUnits); i++ {
		mult := uint64(limitUnits[i].secs) * scale
		if period > mult || mult/period < mult%period {
			break
		}
	}
	unit = uint64(limitUnits[i-1].secs)
	return unit * scale / period, unit
}

// limitRateString prints an interval (in 1/scale s) as "N/unit".
func limitRateString(period, scale uint64) string {
	if period == 0 {
		return "inf"
	}
	count, unit := limitRate(period, scale)
	name := ""
	for _, u := range limitUnits {
		if uint64(u.secs) == unit {
			name = u.name
		}
	}
	return strconv.FormatUint(count, 10) + "/" + name
}

func (m *LimitMatch) burst() uint32 {
	if m.Burst == 0 {
		return 5
	}
	return m.Burst
}

func (m *LimitMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(" --limit " + limitRateString(uint64(m.Avg), limitScale))
	if m.burst() != 5 {
		fmt.Fprintf(b, " --limit-burst %d", m.burst())
	}
}

func (m *LimitMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	fmt.Fprintf(b, " limit: avg %s burst %d", limitRateString(uint64(m.Avg), limitScale), m.burst())
}

// NftExprs is the native limit expression with the rate as -S prints it
// (count per second, minute, hour or day) and the burst; a burst of 0
// is sent as 5, which the kernel substitutes anyway (and lists back).
func (m *LimitMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	count, unit := limitRate(uint64(m.Avg), limitScale)
	return []expr.Any{&expr.Limit{Type: expr.LimitTypePkts, Rate: count, Unit: expr.LimitTime(unit), Burst: m.burst()}}, nil
}
