package compat

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// RateestTarget is -j RATEEST (revision 0): the packets feed a named
// rate estimator (bytes and packets per second, averaged), which -m
// rateest reads. QoS setups' dumps carry it.
type RateestTarget struct {
	EstName  string // at most 15 bytes, as the kernel's name field keeps
	Interval int8   // log2 of the interval in units of 1s, from -2 (250ms) to 3 (8s)
	EwmaLog  uint8
	// the times as given, in microseconds, for the final check
	intervalUS, ewmaUS uint32
}

const (
	tgRateestOptName = iota
	tgRateestOptInterval
	tgRateestOptEwmalog
)

const (
	tgRateestNameSize = 16 // IFNAMSIZ
	tgRateestUnitsSec = 1000000
)

var rateestTargetSpec = ExtSpec{
	Name: "RATEEST",
	X6:   true,
	Options: []OptDef{
		{Name: "rateest-name", Arg: RequiredArg, ID: tgRateestOptName, Mandatory: true},
		{Name: "rateest-interval", Arg: RequiredArg, ID: tgRateestOptInterval},
		{Name: "rateest-ewmalog", Arg: RequiredArg, ID: tgRateestOptEwmalog},
	},
	NewTarget: func(Family) TargetExt { return &RateestTarget{} },
}

var _ = RegisterTarget(&rateestTargetSpec)

func (t *RateestTarget) Name() string { return "RATEEST" }

// cStrtod is C strtod(s, &end): the value of the longest prefix of s
// that it reads (after leading white space: a decimal or hexadecimal
// number with optional fraction and exponent, inf, infinity or nan) and
// the length of that prefix, 0 when there is none.
func cStrtod(s string) (float64, int) {
	i := 0
	for i < len(s) && strings.IndexByte(" \t\n\v\f\r", s[i]) >= 0 {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	v, n := cStrtodUnsigned(s[i:])
	if n == 0 {
		return 0, 0
	}
	if neg {
		v = -v
	}
	return v, i + n
}

func cStrtodUnsigned(s string) (float64, int) {
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "infinity"):
		return math.Inf(1), 8
	case strings.HasPrefix(lower, "inf"):
		return math.Inf(1), 3
	case strings.HasPrefix(lower, "nan"):
		n := 3
		if j := strings.IndexByte(s[3:], ')'); len(s) > 3 && s[3] == '(' && j > 0 {
			ok := true
			for _, c := range s[4 : 3+j] {
				if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
					ok = false
				}
			}
			if ok {
				n = 3 + j + 1
			}
		}
		return math.NaN(), n
	}
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		if v, n := cStrtodHex(s[2:]); n > 0 {
			return v, n + 2
		}
	}
	i, digits := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			i = j
		}
	}
	v, _ := strconv.ParseFloat(s[:i], 64)
	return v, i
}

// cStrtodHex reads the part of a hexadecimal float after "0x": digits,
// an optional fraction and an optional binary exponent "p[+-]N".
func cStrtodHex(s string) (float64, int) {
	i, digits := 0, 0
	v, scale := 0.0, 0
	for ; i < len(s) && hexDigit(s[i]) >= 0; i++ {
		v = v*16 + float64(hexDigit(s[i]))
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && hexDigit(s[i]) >= 0; i++ {
			v = v*16 + float64(hexDigit(s[i]))
			scale -= 4
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if i < len(s) && (s[i] == 'p' || s[i] == 'P') {
		j, neg, e := i+1, false, 0
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			neg = s[j] == '-'
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			for ; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
				if e < 100000 {
					e = e*10 + int(s[j]-'0')
				}
			}
			if neg {
				e = -e
			}
			scale += e
			i = j
		}
	}
	return math.Ldexp(v, scale), i
}

// cDoubleToUint is the C conversion of a double to unsigned int on
// x86_64: through a 64-bit integer, whose out-of-range value (also for
// infinities and NaN) is 1<<63, so 0 once cut to 32 bits.
func cDoubleToUint(v float64) uint32 {
	if math.IsNaN(v) || v >= 1<<63 || v <= -(1<<63) {
		return 0
	}
	return uint32(int64(v))
}

// rateestTime is libxt_RATEEST's time parser (tc's get_time): a
// number, in microseconds unless followed by s/sec/secs, ms/msec/msecs
// or us/usec/usecs.
func rateestTime(s string) (uint32, bool) {
	v, n := cStrtod(s)
	switch u := strings.ToLower(s[n:]); u {
	case "":
	case "s", "sec", "secs":
		v *= tgRateestUnitsSec
	case "ms", "msec", "msecs":
		v *= tgRateestUnitsSec / 1000
	case "us", "usec", "usecs":
	default:
		return 0, false
	}
	return cDoubleToUint(v), true
}

func (t *RateestTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgRateestOptName:
		t.EstName = tgTruncString(p.Arg, tgRateestNameSize)
	case tgRateestOptInterval:
		v, ok := rateestTime(p.Arg)
		if !ok {
			return Paramf("RATEEST: bad interval value \"%s\"", p.Arg)
		}
		t.intervalUS = v
	case tgRateestOptEwmalog:
		v, ok := rateestTime(p.Arg)
		if !ok {
			return Paramf("RATEEST: bad ewmalog value \"%s\"", p.Arg)
		}
		t.ewmaUS = v
	}
	return nil
}

// Final is RATEEST_final_check: the interval becomes the smallest power
// of two times 250ms that holds it (at most 8s), the averaging time the
// ewma_log whose time constant is the largest not above the one given.
func (t *RateestTarget) Final(*Rule, OptSet) error {
	i := 0
	for ; i <= 5; i++ {
		if uint64(t.intervalUS) <= uint64(1<<i)*(tgRateestUnitsSec/4) {
			break
		}
	}
	if i > 5 {
		return Paramf("RATEEST: interval value is too large")
	}
	t.Interval = int8(i - 2)
	e := 1
	for ; e < 32; e++ {
		w := 1.0 - 1.0/float64(uint32(1)<<e)
		if float64(t.intervalUS)/(-math.Log(w)) > float64(t.ewmaUS) {
			break
		}
	}
	e--
	if e == 0 || e >= 31 {
		return Paramf("RATEEST: ewmalog value is out of range")
	}
	t.EwmaLog = uint8(e)
	return nil
}

// rateestPrintTime is RATEEST_print_time.
func rateestPrintTime(b *strings.Builder, us uint32) {
	switch v := float64(us); {
	case v >= tgRateestUnitsSec:
		fmt.Fprintf(b, " %.1fs", v/tgRateestUnitsSec)
	case v >= tgRateestUnitsSec/1000:
		fmt.Fprintf(b, " %.1fms", v/(tgRateestUnitsSec/1000))
	default:
		fmt.Fprintf(b, " %dus", us)
	}
}

// print is __RATEEST_print: the times are those the kernel uses,
// computed in unsigned int as libxt_RATEEST does.
func (t *RateestTarget) print(b *strings.Builder, prefix, name string) {
	interval := uint32(tgRateestUnitsSec<<uint(int(t.Interval)+2)) / 4
	ewma := interval * (uint32(1) << t.EwmaLog)
	fmt.Fprintf(b, " %sname %s", prefix, name)
	fmt.Fprintf(b, " %sinterval", prefix)
	rateestPrintTime(b, interval)
	fmt.Fprintf(b, " %sewmalog", prefix)
	rateestPrintTime(b, ewma)
}

// Save prints the name as it is, unquoted, as iptables does.
func (t *RateestTarget) Save(b *strings.Builder, _ *Rule) { t.print(b, "--rateest-", t.EstName) }

// SaveExact quotes the name where the -S form would not parse back.
func (t *RateestTarget) SaveExact(b *strings.Builder, _ *Rule) {
	t.print(b, "--rateest-", SaveQuote(t.EstName))
}

func (t *RateestTarget) List(b *strings.Builder, _ *Rule, _ bool) { t.print(b, "", t.EstName) }

// NftExprs is the xtables target with struct xt_rateest_target_info
// (name[16], interval, ewma_log, then the kernel's estimator pointer,
// sent as zeros): nftables has no named rate estimator that -m rateest
// could read.
func (t *RateestTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	var b xtBlob
	b.raw([]byte(t.EstName), tgRateestNameSize)
	b.u8(uint8(t.Interval))
	b.u8(t.EwmaLog)
	b.u64(0) // struct xt_rateest *est
	return []expr.Any{tgXtTarget("RATEEST", 0, b.b)}, nil
}
