package compat

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/nftables/expr"
)

// TimeMatch is -m time: the packet's arrival time (date range, time of
// day, weekdays, days of the month).
type TimeMatch struct {
	DateStart, DateStop uint32
	DayStart, DayStop   uint32 // seconds since midnight
	Monthdays           uint32 // bit n: day n
	Weekdays            uint8  // bit n: Mon=1 .. Sun=7
	Flags               uint8  // timeKernelTZ | timeContiguous
}

const (
	timeKernelTZ   = 1
	timeContiguous = 2

	timeAllMonthdays = 0xfffffffe
	timeAllWeekdays  = 0xfe
	timeMaxDaytime   = 24*60*60 - 1
	timeDateMax      = 1<<31 - 1 // INT_MAX: no end date
)

const (
	timeOptDateStart = iota
	timeOptDateStop
	timeOptTimeStart
	timeOptTimeStop
	timeOptContiguous
	timeOptMonthdays
	timeOptWeekdays
	timeOptLocalTZ
	timeOptUTC
	timeOptKernelTZ
)

var timeOpts = []OptDef{
	{Name: "datestart", Arg: RequiredArg, ID: timeOptDateStart},
	{Name: "datestop", Arg: RequiredArg, ID: timeOptDateStop},
	{Name: "timestart", Arg: RequiredArg, ID: timeOptTimeStart},
	{Name: "timestop", Arg: RequiredArg, ID: timeOptTimeStop},
	{Name: "contiguous", Arg: NoArg, ID: timeOptContiguous},
	{Name: "weekdays", Arg: RequiredArg, ID: timeOptWeekdays, Invert: true},
	{Name: "monthdays", Arg: RequiredArg, ID: timeOptMonthdays, Invert: true},
	{Name: "localtz", Arg: NoArg, ID: timeOptLocalTZ},
	{Name: "utc", Arg: NoArg, ID: timeOptUTC},
	{Name: "kerneltz", Arg: NoArg, ID: timeOptKernelTZ},
}

var timeWeekdays = []string{"", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

var timeMatchSpec = ExtSpec{
	Name:    "time",
	Options: timeOpts,
	X6:      true,
	NewMatch: func(Family) MatchExt {
		return &TimeMatch{Monthdays: timeAllMonthdays, Weekdays: timeAllWeekdays,
			DayStop: timeMaxDaytime, DateStop: timeDateMax}
	},
}

var _ = RegisterMatch(&timeMatchSpec)

func (m *TimeMatch) Name() string { return "time" }

// cStrtoul10 is strtoul(s, &end, base) as the time parser uses it: the
// value (wrapped for a leading '-') and the rest.
func cStrtoul10(s string, base int) (uint64, string) {
	v, rest, _, _ := cStrtoull(s, base)
	return v, rest
}

// timeParseDate is libxt_time's ISO 8601 date parser
// (YYYY[-MM[-DD[Thh[:mm[:ss]]]]], in UTC); out-of-range days roll over
// as mktime does.
func timeParseDate(s string) (uint32, error) {
	bad := Paramf("Invalid date \"%s\" specified. Should be YYYY[-MM[-DD[Thh[:mm[:ss]]]]]", s)
	month, day, hour, minute, second := uint64(1), uint64(1), uint64(0), uint64(0), uint64(0)
	year, e := cStrtoul10(s, 10)
	fields := []struct {
		v   *uint64
		sep byte
		max uint64
	}{{&month, '-', 12}, {&day, 'T', 31}, {&hour, ':', 23}, {&minute, ':', 59}, {&second, 0, 59}}
	if (e != "" && e[0] != '-') || year < 1970 || year > 2038 {
		return 0, bad
	}
	for _, f := range fields {
		if e == "" {
			break
		}
		*f.v, e = cStrtoul10(e[1:], 10)
		if (e != "" && (f.sep == 0 || e[0] != f.sep)) || *f.v > f.max {
			return 0, bad
		}
	}
	t := time.Date(int(year), time.Month(month), int(day), int(hour), int(minute), int(second), 0, time.UTC)
	if t.Unix() < 0 {
		return 0, Errorf(StatusOther, "mktime returned an error")
	}
	return uint32(t.Unix()), nil
}

// timeParseDaytime parses hh:mm[:ss]; the message quotes the part that
// failed, as libxt_time does.
func timeParseDaytime(s string) (uint32, error) {
	bad := func(part string) error {
		return Paramf("invalid time \"%s\" specified, should be hh:mm[:ss] format and within the boundaries", part)
	}
	hour, e := cStrtoul10(s, 10)
	if e == "" || e[0] != ':' || hour > 23 {
		return 0, bad(s)
	}
	s = e[1:]
	minute, e := cStrtoul10(s, 10)
	if (e != "" && e[0] != ':') || minute > 59 {
		return 0, bad(s)
	}
	var second uint64
	if e != "" {
		s = e[1:]
		second, e = cStrtoul10(s, 10)
		if e != "" || second > 59 {
			return 0, bad(s)
		}
	}
	return uint32(3600*hour + 60*minute + second), nil
}

// timeSegments splits a comma list as my_strseg does: each piece cut to
// n-1 bytes, a trailing comma ends the list.
func timeSegments(arg string, n int) []string {
	var out []string
	for arg != "" {
		seg, rest, more := strings.Cut(arg, ",")
		if len(seg) > n-1 {
			seg = seg[:n-1]
		}
		out = append(out, seg)
		if !more {
			break
		}
		arg = rest
	}
	return out
}

func timeParseMonthdays(arg string) (uint32, error) {
	var ret uint32
	for _, d := range timeSegments(arg, 3) {
		v, rest, _, _ := cStrtoull(d, 0)
		if rest != "" || v > 31 {
			return 0, Paramf("%s is not a valid day for --monthdays", d)
		}
		ret |= 1 << v
	}
	return ret, nil
}

func timeParseWeekdays(arg string) (uint8, error) {
	var ret uint32
	for _, d := range timeSegments(arg, 4) {
		v, rest, _, _ := cStrtoull(d, 0)
		if rest == "" {
			if v == 0 {
				return 0, Paramf("No, the week does NOT begin with Sunday.")
			}
			ret |= 1 << (v & 31) // the C shift of an unsigned int
			continue
		}
		valid := false
		for i := 1; i < len(timeWeekdays); i++ {
			if len(d) >= 2 && d[:2] == timeWeekdays[i][:2] {
				ret |= 1 << i
				valid = true
			}
		}
		if !valid {
			return 0, Paramf("%s is not a valid day specifier", d)
		}
	}
	return uint8(ret), nil
}

func (m *TimeMatch) Parse(p *OptArg) error {
	var err error
	switch p.Def.ID {
	case timeOptDateStart:
		m.DateStart, err = timeParseDate(p.Arg)
	case timeOptDateStop:
		m.DateStop, err = timeParseDate(p.Arg)
	case timeOptTimeStart:
		m.DayStart, err = timeParseDaytime(p.Arg)
	case timeOptTimeStop:
		m.DayStop, err = timeParseDaytime(p.Arg)
	case timeOptContiguous:
		m.Flags |= timeContiguous
	case timeOptLocalTZ:
		p.Warn("WARNING: --localtz is being replaced by --kerneltz, since \"local\" is ambiguous. Note the kernel timezone has caveats - see manpage for details.\n")
		m.Flags |= timeKernelTZ
	case timeOptKernelTZ:
		m.Flags |= timeKernelTZ
	case timeOptMonthdays:
		if m.Monthdays, err = timeParseMonthdays(p.Arg); err == nil && p.Invert {
			m.Monthdays ^= timeAllMonthdays
		}
	case timeOptWeekdays:
		if m.Weekdays, err = timeParseWeekdays(p.Arg); err == nil && p.Invert {
			m.Weekdays ^= timeAllWeekdays
		}
	}
	return err
}

func (m *TimeMatch) Final(_ *Rule, seen OptSet) error {
	if err := x6Fcheck("time", timeOpts, seen, map[int]x6Rel{
		timeOptLocalTZ:  {excl: bit(timeOptUTC)},
		timeOptUTC:      {excl: bit(timeOptLocalTZ) | bit(timeOptKernelTZ)},
		timeOptKernelTZ: {excl: bit(timeOptUTC)},
	}); err != nil {
		return err
	}
	if seen.Has(timeOptContiguous) && m.DayStart < m.DayStop {
		return Paramf("time: --contiguous only makes sense when stoptime is smaller than starttime")
	}
	return nil
}

func timeDaytime(v uint32) string {
	return fmt.Sprintf("%02d:%02d:%02d", v/3600, v/60%60, v%60)
}

func timeDate(v uint32, iso bool) string {
	t := time.Unix(int64(v), 0).UTC()
	if iso {
		return t.Format("2006-01-02T15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

func timeMonthdays(mask uint32, human bool) string {
	var b strings.Builder
	n := 0
	for i := 1; i <= 31; i++ {
		if mask&(1<<i) == 0 {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		fmt.Fprintf(&b, "%d", i)
		if human {
			b.WriteString(map[int]string{1: "st", 2: "nd", 3: "rd"}[i%10])
			if i%10 < 1 || i%10 > 3 {
				b.WriteString("th")
			}
		}
	}
	return b.String()
}

func timeWeekdayList(mask uint8) string {
	var days []string
	for i := 1; i <= 7; i++ {
		if mask&(1<<i) != 0 {
			days = append(days, timeWeekdays[i])
		}
	}
	return strings.Join(days, ",")
}

// timeBitList lists the set bits of mask below n as numbers, with bit 0
// as zero (or as 32 for weekdays, which refuse 0 but shift by 32 to
// bit 0).
func timeBitList(mask uint32, n int, zero string) string {
	var l []string
	for i := 0; i < n; i++ {
		if mask&(1<<i) == 0 {
			continue
		}
		if i == 0 {
			l = append(l, zero)
		} else {
			l = append(l, fmt.Sprint(i))
		}
	}
	return strings.Join(l, ",")
}

func (m *TimeMatch) save(b *strings.Builder, exact bool) {
	if m.DayStart != 0 || m.DayStop != timeMaxDaytime {
		b.WriteString(" --timestart " + timeDaytime(m.DayStart) + " --timestop " + timeDaytime(m.DayStop))
	}
	switch {
	case m.Monthdays == timeAllMonthdays:
	case !exact:
		b.WriteString(" --monthdays " + timeMonthdays(m.Monthdays, false))
	case m.Monthdays == 0:
		b.WriteString(" ! --monthdays " + timeBitList(timeAllMonthdays, 32, ""))
	default:
		b.WriteString(" --monthdays " + timeBitList(m.Monthdays, 32, "0"))
	}
	switch {
	case m.Weekdays == timeAllWeekdays:
	case !exact:
		b.WriteString(" --weekdays " + timeWeekdayList(m.Weekdays))
	case m.Weekdays == 0:
		b.WriteString(" ! --weekdays " + timeBitList(timeAllWeekdays, 8, ""))
	default:
		b.WriteString(" --weekdays " + timeBitList(uint32(m.Weekdays), 8, "32"))
	}
	// xtables skips a date of 0 or LONG_MAX: the INT_MAX default end
	// is printed
	if m.DateStart != 0 {
		b.WriteString(" --datestart " + timeDate(m.DateStart, true))
	}
	if m.DateStop != 0 || exact {
		b.WriteString(" --datestop " + timeDate(m.DateStop, true))
	}
	if m.Flags&timeKernelTZ != 0 {
		b.WriteString(" --kerneltz")
	}
	if m.Flags&timeContiguous != 0 {
		b.WriteString(" --contiguous")
	}
}

func (m *TimeMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact prints day lists -S cannot (none, or bit 0 from "0" or a
// weekday shifted past 31) and an end date of 0.
func (m *TimeMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

func (m *TimeMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" TIME")
	if m.DayStart != 0 || m.DayStop != timeMaxDaytime {
		b.WriteString(" from " + timeDaytime(m.DayStart) + " to " + timeDaytime(m.DayStop))
	}
	if m.Weekdays != timeAllWeekdays {
		b.WriteString(" on " + timeWeekdayList(m.Weekdays))
	}
	if m.Monthdays != timeAllMonthdays {
		b.WriteString(" on " + timeMonthdays(m.Monthdays, true))
	}
	if m.DateStart != 0 {
		b.WriteString(" starting from " + timeDate(m.DateStart, false))
	}
	if m.DateStop != timeDateMax {
		b.WriteString(" until date")
		if m.DateStop != 0 {
			b.WriteString(" " + timeDate(m.DateStop, false))
		}
	}
	if m.Flags&timeKernelTZ == 0 {
		b.WriteString(" UTC")
	}
	if m.Flags&timeContiguous != 0 {
		b.WriteString(" contiguous")
	}
}

// NftExprs: the xtables match (struct xt_time_info). nft's meta
// time/day/hour have no days of the month, no kernel time zone and no
// --contiguous.
func (m *TimeMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u32(m.DateStart)
	x.u32(m.DateStop)
	x.u32(m.DayStart)
	x.u32(m.DayStop)
	x.u32(m.Monthdays)
	x.u8(m.Weekdays)
	x.u8(m.Flags)
	return []expr.Any{compatMatch("time", 0, x)}, nil
}
