package compat

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables/expr"
)

// HashlimitMatch is -m hashlimit, revision 3 (struct xt_hashlimit_mtinfo3):
// the fields are the kernel's hashlimit_cfg3.
type HashlimitMatch struct {
	ListName string
	// Avg is the interval between packets in 1/1000000 s, or in bytes
	// mode the cost of one byte (see hlBytesToCost).
	Avg   uint64
	Burst uint64
	// Mode holds the hlMode* bits.
	Mode             uint32
	Size, Max        uint32
	GCInterval       uint32
	Expire           uint32
	Interval         uint32
	SrcMask, DstMask uint8

	family Family
	// mult is the unit of the parsed rate in seconds (15 in bytes mode):
	// the default expiry.
	mult uint32
}

const (
	hlModeDstIP     = 0x01
	hlModeDstPort   = 0x02
	hlModeSrcIP     = 0x04
	hlModeSrcPort   = 0x08
	hlModeInvert    = 0x10
	hlModeBytes     = 0x20
	hlModeRateMatch = 0x40
	hlModeHash      = hlModeDstIP | hlModeDstPort | hlModeSrcIP | hlModeSrcPort

	hlScale        = 1000000
	hlBurstMax     = 1000000
	hlGCInterval   = 1000
	hlByteExpire   = 15
	hlByteExpireBS = 60
)

const (
	hlOptUpto = iota
	hlOptAbove
	hlOptMode
	hlOptBurst
	hlOptSrcMask
	hlOptDstMask
	hlOptSize
	hlOptMax
	hlOptGC
	hlOptExpire
	hlOptRateMatch
	hlOptInterval
	hlOptName
)

var hashlimitMatchSpec = ExtSpec{
	Name: "hashlimit",
	X6:   true,
	Options: []OptDef{
		{Name: "hashlimit-upto", Arg: RequiredArg, ID: hlOptUpto, Invert: true},
		{Name: "hashlimit-above", Arg: RequiredArg, ID: hlOptAbove, Invert: true},
		{Name: "hashlimit", Arg: RequiredArg, ID: hlOptUpto, Invert: true},
		{Name: "hashlimit-mode", Arg: RequiredArg, ID: hlOptMode},
		{Name: "hashlimit-burst", Arg: RequiredArg, ID: hlOptBurst},
		{Name: "hashlimit-srcmask", Arg: RequiredArg, ID: hlOptSrcMask},
		{Name: "hashlimit-dstmask", Arg: RequiredArg, ID: hlOptDstMask},
		{Name: "hashlimit-htable-size", Arg: RequiredArg, ID: hlOptSize},
		{Name: "hashlimit-htable-max", Arg: RequiredArg, ID: hlOptMax},
		{Name: "hashlimit-htable-gcinterval", Arg: RequiredArg, ID: hlOptGC},
		{Name: "hashlimit-htable-expire", Arg: RequiredArg, ID: hlOptExpire},
		{Name: "hashlimit-rate-match", Arg: NoArg, ID: hlOptRateMatch},
		{Name: "hashlimit-rate-interval", Arg: RequiredArg, ID: hlOptInterval},
		// Not Mandatory here: iptables reports a missing rate
		// before a missing name, so Final checks both.
		{Name: "hashlimit-name", Arg: RequiredArg, ID: hlOptName},
	},
	NewMatch: func(f Family) MatchExt {
		mask := uint8(32)
		if f == IPv6 {
			mask = 128
		}
		return &HashlimitMatch{Burst: 5, GCInterval: hlGCInterval, SrcMask: mask, DstMask: mask, family: f, mult: 1}
	},
}

var _ = RegisterMatch(&hashlimitMatchSpec)

func (m *HashlimitMatch) Name() string { return "hashlimit" }

// hlAtoll is C atoll: blanks, a sign, decimal digits, nothing else read.
func hlAtoll(s string) uint64 {
	v, _, ok, erange := cStrtoull(s, 10)
	if !ok {
		return 0
	}
	if erange {
		return 1<<63 - 1
	}
	return v
}

// hlBytesToCost and hlCostToBytes convert a byte rate to the kernel's
// per-byte cost and back (16-byte granularity).
func hlBytesToCost(bytes uint64) uint64 {
	r := uint32(bytes>>4) + 1
	if r == 0 {
		return 0
	}
	return uint64(0xffffffff / r)
}

func hlCostToBytes(cost uint64) uint64 {
	r := uint64(0xffffffff)
	if cost != 0 {
		r = 0xffffffff / cost
	}
	return (r - 1) << 4
}

// hlFactor is the multiplier of a k or m suffix.
func hlFactor(c byte) uint64 {
	switch c {
	case 'm':
		return 1024 * 1024
	case 'k':
		return 1024
	}
	return 1
}

// parseBytes reads "N[k|m]b/s"; ok is false when s is not a byte rate.
func (m *HashlimitMatch) parseBytes(s string) (bool, error) {
	i := strings.Index(s, "b/s")
	if i <= 0 {
		return false, nil
	}
	r := hlAtoll(s)
	if r == 0 {
		return false, nil
	}
	cost := hlBytesToCost(r * hlFactor(s[i-1]))
	if cost == 0 {
		return false, Paramf("Rate too high \"%s\"\n", s)
	}
	m.mult = hlByteExpire
	m.Avg = cost
	return true, nil
}

// parseRate reads "N[/unit]", unit a prefix of second, minute, hour or
// day (any case).
func (m *HashlimitMatch) parseRate(s string) (bool, error) {
	m.mult = 1
	if _, unit, ok := strings.Cut(s, "/"); ok {
		if unit == "" {
			return false, nil
		}
		found := false
		for _, u := range []struct {
			word string
			secs uint32
		}{{"second", 1}, {"minute", 60}, {"hour", 3600}, {"day", 86400}} {
			if len(unit) <= len(u.word) && strings.EqualFold(u.word[:len(unit)], unit) {
				m.mult, found = u.secs, true
				break
			}
		}
		if !found {
			return false, nil
		}
	}
	r := hlAtoll(s)
	if r == 0 {
		return false, nil
	}
	avg := uint64(hlScale) * uint64(m.mult) / r
	if avg == 0 {
		return false, Paramf("Rate too fast \"%s\"", s)
	}
	m.Avg = avg
	return true, nil
}

// parseMaskLen is XTTYPE_PLENMASK: a prefix length up to the family's
// width, else a mask in address form (IPv4 as inet_aton reads it, so
// "33" is the mask 0.0.0.33); a non-contiguous mask gives 255, which the
// kernel refuses.
func parseMaskLen(opt, s string, f Family) (uint8, error) {
	full := 32
	if f == IPv6 {
		full = 128
	}
	if v, ok := xtStrtoui(s, 0, uint64(full)); ok {
		return uint8(v), nil
	}
	var mask netip.Addr
	var ok bool
	if f == IPv4 {
		mask, ok = inetAton(s)
	} else {
		a, err := netip.ParseAddr(s)
		mask, ok = a, err == nil && a.Is6() && a.Zone() == ""
	}
	if !ok {
		return 0, Paramf("hashlimit: bad value for option \"--%s\", neither a valid network mask nor valid CIDR (0-%d).\n", opt, full)
	}
	if bits := (Net{Mask: mask}).Bits(); bits >= 0 {
		return uint8(bits), nil
	}
	return 255, nil
}

func (m *HashlimitMatch) Parse(p *OptArg) error {
	badValue := func(opt string) error {
		return Paramf("hashlimit: Bad value for \"--%s\" option: \"%s\"", opt, p.Arg)
	}
	switch p.Def.ID {
	case hlOptUpto, hlOptAbove:
		opt := "hashlimit-upto"
		above := p.Invert
		if p.Def.ID == hlOptAbove {
			opt, above = "hashlimit-above", !p.Invert
		}
		if above {
			m.Mode |= hlModeInvert
		}
		isBytes, err := m.parseBytes(p.Arg)
		if err != nil {
			return err
		}
		if isBytes {
			m.Mode |= hlModeBytes
			break
		}
		ok, err := m.parseRate(p.Arg)
		if err != nil {
			return err
		}
		if !ok {
			return badValue(opt)
		}
	case hlOptMode:
		for _, tok := range strings.FieldsFunc(p.Arg, func(r rune) bool { return r == ',' || r == '|' }) {
			bit := map[string]uint32{"dstip": hlModeDstIP, "srcip": hlModeSrcIP, "srcport": hlModeSrcPort, "dstport": hlModeDstPort}[tok]
			if bit == 0 {
				return badValue("hashlimit-mode")
			}
			m.Mode |= bit
		}
	case hlOptBurst:
		bad := Paramf("bad value for option \"--hashlimit-burst\", or out of range (1-%d).", hlBurstMax)
		v, rest, ok := xtStrtoul(p.Arg, 1, ^uint64(0))
		if !ok || (rest == "" && v > hlBurstMax) {
			return bad
		}
		if rest != "" {
			f := hlFactor(rest[0])
			if v > ^uint64(0)/f {
				return Paramf("bad value for option \"--hashlimit-burst\", or out of range (1-%d).", ^uint64(0))
			}
			v *= f
		}
		m.Burst = v
	case hlOptSrcMask, hlOptDstMask:
		opt, dst := "hashlimit-srcmask", &m.SrcMask
		if p.Def.ID == hlOptDstMask {
			opt, dst = "hashlimit-dstmask", &m.DstMask
		}
		v, err := parseMaskLen(opt, p.Arg, p.Family)
		if err != nil {
			return err
		}
		*dst = v
	case hlOptSize, hlOptMax, hlOptGC, hlOptExpire:
		name := map[int]string{hlOptSize: "size", hlOptMax: "max", hlOptGC: "gcinterval", hlOptExpire: "expire"}[p.Def.ID]
		v, ok := xtStrtoui(p.Arg, 0, 0xffffffff)
		if !ok {
			return Paramf("hashlimit: bad value for option \"--hashlimit-htable-%s\", or out of range (0-4294967295).\n", name)
		}
		*map[int]*uint32{hlOptSize: &m.Size, hlOptMax: &m.Max, hlOptGC: &m.GCInterval, hlOptExpire: &m.Expire}[p.Def.ID] = uint32(v)
	case hlOptRateMatch:
		m.Mode |= hlModeRateMatch
	case hlOptInterval:
		v := int32(cAtoi(p.Arg))
		if v <= 0 {
			return badValue("hashlimit-rate-interval")
		}
		m.Interval = uint32(v)
	case hlOptName:
		if p.Arg == "" {
			return Paramf("Argument must have a minimum length of 1 characters\n")
		}
		m.ListName = p.Arg
		if len(m.ListName) > 254 {
			m.ListName = m.ListName[:254]
		}
	}
	return nil
}

func (m *HashlimitMatch) Final(_ *Rule, seen OptSet) error {
	if !seen.Has(hlOptUpto) && !seen.Has(hlOptAbove) {
		return Paramf("You have to specify --hashlimit")
	}
	if !seen.Has(hlOptExpire) {
		m.Expire = m.mult * 1000
	}
	if m.Mode&hlModeRateMatch != 0 && !seen.Has(hlOptInterval) {
		m.Interval = 1
	}
	if m.Mode&(hlModeRateMatch|hlModeBytes) == hlModeRateMatch {
		// libxt_hashlimit measures a matched rate per second: the
		// unit sets the default expiry and interval
		m.Avg /= uint64(m.mult)
		if !seen.Has(hlOptInterval) {
			m.Interval = m.mult
		}
	}
	if m.Mode&hlModeBytes != 0 {
		var burst uint64
		if seen.Has(hlOptBurst) {
			unit := hlCostToBytes(m.Avg)
			if unit == 0 {
				// iptables divides by zero here (SIGFPE)
				return Paramf("hashlimit: a byte rate below 16b/s cannot have a burst")
			}
			if m.Burst < unit {
				return Paramf("burst cannot be smaller than %db", unit)
			}
			burst = (m.Burst + unit - 1) / unit
			if !seen.Has(hlOptExpire) {
				m.Expire = hlByteExpireBS * 1000
			}
		}
		m.Burst = burst
	} else if m.Burst > hlBurstMax {
		return Paramf("bad value for option \"--hashlimit-burst\", or out of range (1-%d).", hlBurstMax)
	}
	if err := exclusive("hashlimit", seen, []int{hlOptUpto, hlOptAbove}, []string{"hashlimit-upto", "hashlimit-above"},
		[][2]int{{0, 1}}); err != nil {
		return err
	}
	if !seen.Has(hlOptName) {
		return Paramf("hashlimit: option \"--hashlimit-name\" must be specified\n")
	}
	return nil
}

// hlRateString prints a packet interval as "N/unit" and returns the
// unit in milliseconds (the expiry printing leaves out).
func hlRateString(period uint64) (string, uint32) {
	if period == 0 {
		return "inf", 0
	}
	count, unit := limitRate(period, hlScale)
	name := ""
	for _, u := range limitUnits {
		if uint64(u.secs) == unit {
			name = u.name
		}
	}
	return fmt.Sprintf("%d/%s", count, name), uint32(unit * 1000)
}

var hlUnits = []struct {
	name   string
	thresh uint64
}{{"m", 1024 * 1024}, {"k", 1024}, {"", 1}}

// hlBytesString prints a byte rate ("5kb/s") and, when burst is not 0,
// the burst keyword and size; it returns the default expiry in ms.
func hlBytesString(b *strings.Builder, avg, burst uint64, burstKw string) uint32 {
	r := hlCostToBytes(avg)
	i := 0
	for ; i < len(hlUnits)-1; i++ {
		if r >= hlUnits[i].thresh && hlBytesToCost(r&^(hlUnits[i].thresh-1)) == avg {
			break
		}
	}
	fmt.Fprintf(b, " %d%sb/s", r/hlUnits[i].thresh, hlUnits[i].name)
	if burst == 0 {
		return hlByteExpire * 1000
	}
	r *= burst
	b.WriteString(burstKw)
	for i = 0; i < len(hlUnits)-1; i++ {
		if r >= hlUnits[i].thresh {
			break
		}
	}
	fmt.Fprintf(b, " %d%sb", r/hlUnits[i].thresh, hlUnits[i].name)
	return hlByteExpireBS * 1000
}

// hlModeString lists the hashed fields with sep between them.
func hlModeString(mode uint32, sep string) string {
	var parts []string
	for _, f := range []struct {
		bit  uint32
		name string
	}{{hlModeSrcIP, "srcip"}, {hlModeSrcPort, "srcport"}, {hlModeDstIP, "dstip"}, {hlModeDstPort, "dstport"}} {
		if mode&f.bit != 0 {
			parts = append(parts, f.name)
		}
	}
	return strings.Join(parts, sep)
}

func (m *HashlimitMatch) fullMask() uint8 {
	if m.family == IPv6 {
		return 128
	}
	return 32
}

func (m *HashlimitMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact is Save in a form that parses back to the same match:
// iptables prints the name unquoted, and a byte rate (and burst) rounded
// to a unit, which for the slowest rates ("1gb/s" reads as 1 byte a
// second) prints "0b/s", and need not give the same burst back.
func (m *HashlimitMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

func (m *HashlimitMatch) save(b *strings.Builder, exact bool) {
	if m.Mode&hlModeInvert != 0 {
		b.WriteString(" --hashlimit-above")
	} else {
		b.WriteString(" --hashlimit-upto")
	}
	var quantum uint32
	switch {
	case m.Mode&hlModeBytes != 0 && exact:
		var tmp strings.Builder
		quantum = hlBytesString(&tmp, m.Avg, m.Burst, " --hashlimit-burst")
		unit := hlCostToBytes(m.Avg)
		fmt.Fprintf(b, " %db/s", max(unit, 1))
		if m.Burst != 0 {
			fmt.Fprintf(b, " --hashlimit-burst %db", unit*m.Burst)
		}
	case m.Mode&hlModeBytes != 0:
		quantum = hlBytesString(b, m.Avg, m.Burst, " --hashlimit-burst")
	default:
		var s string
		s, quantum = hlRateString(m.Avg)
		fmt.Fprintf(b, " %s --hashlimit-burst %d", s, m.Burst)
	}
	if m.Mode&hlModeHash != 0 {
		b.WriteString(" --hashlimit-mode " + hlModeString(m.Mode, ","))
	}
	name := m.ListName
	if exact {
		name = SaveQuote(name)
	}
	b.WriteString(" --hashlimit-name " + name)
	if m.Size != 0 {
		fmt.Fprintf(b, " --hashlimit-htable-size %d", m.Size)
	}
	if m.Max != 0 {
		fmt.Fprintf(b, " --hashlimit-htable-max %d", m.Max)
	}
	if m.GCInterval != hlGCInterval {
		fmt.Fprintf(b, " --hashlimit-htable-gcinterval %d", m.GCInterval)
	}
	if m.Expire != quantum {
		fmt.Fprintf(b, " --hashlimit-htable-expire %d", m.Expire)
	}
	if m.SrcMask != m.fullMask() {
		fmt.Fprintf(b, " --hashlimit-srcmask %d", m.SrcMask)
	}
	if m.DstMask != m.fullMask() {
		fmt.Fprintf(b, " --hashlimit-dstmask %d", m.DstMask)
	}
	if m.Mode&hlModeRateMatch != 0 {
		b.WriteString(" --hashlimit-rate-match")
		if m.Interval != 1 {
			fmt.Fprintf(b, " --hashlimit-rate-interval %d", m.Interval)
		}
	} else if exact && m.Interval != 0 {
		// not printed by iptables, but in the blob (and -L's rate)
		fmt.Fprintf(b, " --hashlimit-rate-interval %d", m.Interval)
	}
}

func (m *HashlimitMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	if m.Mode&hlModeInvert != 0 {
		b.WriteString(" limit: above")
	} else {
		b.WriteString(" limit: up to")
	}
	var quantum uint32
	if m.Mode&hlModeBytes != 0 {
		quantum = hlBytesString(b, m.Avg, m.Burst, " burst")
	} else {
		period := m.Avg
		if m.Interval != 0 {
			period *= uint64(m.Interval)
		}
		var s string
		s, quantum = hlRateString(period)
		fmt.Fprintf(b, " %s burst %d", s, m.Burst)
	}
	if m.Mode&hlModeHash != 0 {
		b.WriteString(" mode " + hlModeString(m.Mode, "-"))
	}
	if m.Size != 0 {
		fmt.Fprintf(b, " htable-size %d", m.Size)
	}
	if m.Max != 0 {
		fmt.Fprintf(b, " htable-max %d", m.Max)
	}
	if m.GCInterval != hlGCInterval {
		fmt.Fprintf(b, " htable-gcinterval %d", m.GCInterval)
	}
	if m.Expire != quantum {
		fmt.Fprintf(b, " htable-expire %d", m.Expire)
	}
	if m.SrcMask != m.fullMask() {
		fmt.Fprintf(b, " srcmask %d", m.SrcMask)
	}
	if m.DstMask != m.fullMask() {
		fmt.Fprintf(b, " dstmask %d", m.DstMask)
	}
	if m.Mode&hlModeRateMatch != 0 {
		b.WriteString(" rate-match")
		if m.Interval != 1 {
			fmt.Fprintf(b, " rate-interval %d", m.Interval)
		}
	}
}

// hlMaxSize is the kernel's HASHLIMIT_MAX_SIZE: its check of the match
// cuts a larger --hashlimit-htable-size or -max down to it in the blob it
// keeps (and lists).
const hlMaxSize = 1048576

func (m *HashlimitMatch) Kept() Match {
	if m.Size <= hlMaxSize && m.Max <= hlMaxSize {
		return nil
	}
	k := *m
	k.Size, k.Max = min(m.Size, hlMaxSize), min(m.Max, hlMaxSize)
	return &k
}

// NftExprs uses the xt hashlimit match, revision 3: nftables has no
// per-flow rate limiter that keeps buckets per source/destination
// address and port with the masks, expiry and rate-match semantics of
// xt hashlimit. The blob is struct xt_hashlimit_mtinfo3: name[255], then
// hashlimit_cfg3 at offset 256 (avg, burst as u64; mode, size, max,
// gc_interval, expire, interval as u32; srcmask, dstmask), then the
// kernel's own pointer (zero). The rate interval only matters with
// --hashlimit-rate-match, but iptables sends it without too, and -L
// shows the rate times the interval.
func (m *HashlimitMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	b := make([]byte, 312)
	copy(b[:254], m.ListName)
	ne := binary.NativeEndian
	ne.PutUint64(b[256:], m.Avg)
	ne.PutUint64(b[264:], m.Burst)
	ne.PutUint32(b[272:], m.Mode)
	ne.PutUint32(b[276:], m.Size)
	ne.PutUint32(b[280:], m.Max)
	ne.PutUint32(b[284:], m.GCInterval)
	ne.PutUint32(b[288:], m.Expire)
	ne.PutUint32(b[292:], m.Interval)
	b[296], b[297] = m.SrcMask, m.DstMask
	return []expr.Any{xtMatch("hashlimit", 3, b)}, nil
}
