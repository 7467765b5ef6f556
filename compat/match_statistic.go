package compat

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// StatisticMatch is -m statistic: random sampling or every n-th packet.
type StatisticMatch struct {
	Mode        uint8 // 0 random, 1 nth
	Invert      bool
	Probability uint32 // random: fraction of 2^31
	Every       uint32 // nth: n-1, as the kernel stores it
	Packet      uint32
	modeSet     bool
}

const (
	statOptMode = iota
	statOptProbability
	statOptEvery
	statOptPacket
)

var statisticOpts = []OptDef{
	{Name: "mode", Arg: RequiredArg, ID: statOptMode},
	{Name: "probability", Arg: RequiredArg, ID: statOptProbability, Invert: true},
	{Name: "every", Arg: RequiredArg, ID: statOptEvery, Invert: true},
	{Name: "packet", Arg: RequiredArg, ID: statOptPacket},
}

var statisticMatchSpec = ExtSpec{
	Name:     "statistic",
	Options:  statisticOpts,
	X6:       true,
	NewMatch: func(Family) MatchExt { return &StatisticMatch{} },
}

var _ = RegisterMatch(&statisticMatchSpec)

func (m *StatisticMatch) Name() string { return "statistic" }

func (m *StatisticMatch) Parse(p *OptArg) error {
	// the reference records the "!" before validating the option
	if p.Invert {
		m.Invert = true
	}
	switch p.Def.ID {
	case statOptMode:
		switch p.Arg {
		case "random":
			m.Mode = 0
		case "nth":
			m.Mode = 1
		default:
			return Paramf("Bad mode \"%s\"", p.Arg)
		}
		m.modeSet = true
	case statOptProbability:
		v, err := parseCDouble(p.Arg)
		if err != nil || v < 0 || v > 1 {
			return Paramf("%s: bad value for option \"--%s\", or out of range (%d-%d).\n", p.Ext, p.Def.Name, 0, 1)
		}
		m.Probability = uint32(math.Round(0x80000000 * v))
	case statOptEvery:
		v, err := x6Uint(p, 1, math.MaxUint32)
		if err != nil {
			return err
		}
		m.Every = uint32(v) - 1
	case statOptPacket:
		v, err := x6Uint(p, 0, math.MaxUint32)
		if err != nil {
			return err
		}
		m.Packet = uint32(v)
	}
	return nil
}

// parseCDouble accepts what strtod accepts for the whole string, as far
// as Go's parser agrees with it (decimal and hex floats, inf, nan).
func parseCDouble(s string) (float64, error) {
	t := trimCSpace(s)
	if strings.Contains(t, "_") {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseFloat(t, 64)
}

func (m *StatisticMatch) Final(_ *Rule, seen OptSet) error {
	if m.Mode == 0 && !seen.Has(statOptProbability) {
		return Paramf("--probability must be specified when using random mode")
	}
	if m.Mode == 1 && !seen.Has(statOptEvery) && !seen.Has(statOptPacket) {
		return Paramf("--every and --packet must be specified when using nth mode")
	}
	if m.Packet > m.Every {
		return Paramf("the --packet p must be 0 <= p <= n-1")
	}
	return x6Fcheck("statistic", statisticOpts, seen, map[int]x6Rel{
		statOptMode:        {mand: true},
		statOptProbability: {excl: bit(statOptEvery) | bit(statOptPacket)},
		statOptEvery:       {excl: bit(statOptProbability), also: bit(statOptPacket)},
		statOptPacket:      {excl: bit(statOptProbability), also: bit(statOptEvery)},
	})
}

func (m *StatisticMatch) write(b *strings.Builder, prefix string) {
	switch m.Mode {
	case 0:
		// (as %.11f prints it, without fmt: every kube-proxy service
		// has such rules)
		var num [32]byte
		b.WriteString(" " + prefix + "mode random" + invMark(m.Invert) + " " + prefix + "probability ")
		b.Write(strconv.AppendFloat(num[:0], float64(m.Probability)/0x80000000, 'f', 11, 64))
	case 1:
		fmt.Fprintf(b, " %smode nth%s %severy %d", prefix, invMark(m.Invert), prefix, uint64(m.Every)+1)
		if m.Packet != 0 || prefix != "" {
			fmt.Fprintf(b, " %spacket %d", prefix, m.Packet)
		}
	}
}

func (m *StatisticMatch) Save(b *strings.Builder, _ *Rule) { m.write(b, "--") }

func (m *StatisticMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" statistic")
	m.write(b, "")
}

// NftExprs: --mode nth is "numgen inc mod n" compared with --packet:
// both count from the rule's creation and match packet p, p+n, p+2n...
// (0-based). --mode random is "numgen random mod M" compared with k on
// the low byte when the probability is exactly k/M with M a power of two
// up to 256 (numgen then takes the top bits of one random u32, as
// uniform as xt_statistic's 31 bits); other probabilities keep the
// xtables match.
func (m *StatisticMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	switch m.Mode {
	case 1:
		return []expr.Any{
			&expr.Numgen{Register: 1, Type: unix.NFT_NG_INCREMENTAL, Modulus: m.Every + 1},
			cmpReg(m.Invert, host32(m.Packet)),
		}, nil
	case 0:
		k, mod := uint32(m.Probability), uint32(1<<31)
		for mod > 1 && k%2 == 0 {
			k, mod = k/2, mod/2
		}
		if k == 0 {
			mod = 1
		}
		if mod <= 256 {
			op := expr.CmpOpLt
			if m.Invert {
				op = expr.CmpOpGte
			}
			return []expr.Any{
				&expr.Numgen{Register: 1, Type: unix.NFT_NG_RANDOM, Modulus: mod},
				&expr.Cmp{Op: op, Register: 1, Data: []byte{byte(k)}},
			}, nil
		}
	}
	// struct xt_statistic_info; the master pointer is the kernel's
	x := &xtBlob{}
	x.u16(uint16(m.Mode))
	var flags uint16
	if m.Invert {
		flags = 1
	}
	x.u16(flags)
	if m.Mode == 0 {
		// iptables fills nth.count (= every - packet) from the union
		// even in random mode, where every is the probability
		x.u32(m.Probability)
		x.u32(0)
		x.u32(m.Probability)
	} else {
		x.u32(m.Every)
		x.u32(m.Packet)
		x.u32(m.Every - m.Packet)
	}
	x.u64(0)
	return []expr.Any{compatMatch("statistic", 0, x)}, nil
}
