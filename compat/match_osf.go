package compat

import (
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// OSFMatch is -m osf --genre NAME (IPv4): passive OS fingerprinting of TCP SYN
// packets against the fingerprints loaded into the kernel (nfnl_osf).
type OSFMatch struct {
	Genre         string
	Flags         uint32 // osfTTL | osfLog | osfInvert
	Log, TTLCheck uint32
}

// XT_OSF_TTL, XT_OSF_LOG, XT_OSF_INVERT (iptables 1.8.9 does not set
// XT_OSF_GENRE).
const (
	osfTTL    = 1 << 1
	osfLog    = 1 << 2
	osfInvert = 1 << 3
)

// osfGenreMax is MAXGENRELEN, the size of the genre field.
const osfGenreMax = 32

const (
	osfOptGenre = iota
	osfOptTTL
	osfOptLog
)

var osfMatchSpec = ExtSpec{
	Name:   "osf",
	Family: IPv4,
	Options: []OptDef{
		{Name: "genre", Arg: RequiredArg, ID: osfOptGenre, Invert: true, Mandatory: true},
		{Name: "ttl", Arg: RequiredArg, ID: osfOptTTL},
		{Name: "log", Arg: RequiredArg, ID: osfOptLog},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &OSFMatch{} },
}

var _ = RegisterMatch(&osfMatchSpec)

func (m *OSFMatch) Name() string { return "osf" }

func (m *OSFMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case osfOptGenre:
		m.Genre = p.Arg
		if len(m.Genre) >= osfGenreMax {
			m.Genre = m.Genre[:osfGenreMax-1] // XTTYPE_STRING's silent cut
		}
		if p.Invert {
			m.Flags |= osfInvert
		}
		return nil
	}
	v, err := x6Uint(p, 0, 2)
	if err != nil {
		return err
	}
	if p.Def.ID == osfOptTTL {
		m.TTLCheck, m.Flags = uint32(v), m.Flags|osfTTL
	} else {
		m.Log, m.Flags = uint32(v), m.Flags|osfLog
	}
	return nil
}

func (m *OSFMatch) Final(*Rule, OptSet) error { return nil }

func (m *OSFMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, m.Genre) }

// SaveExact quotes the genre, which iptables prints bare (an empty or
// spaced one would not parse back).
func (m *OSFMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, SaveQuote(m.Genre)) }

func (m *OSFMatch) save(b *strings.Builder, genre string) {
	b.WriteString(invMark(m.Flags&osfInvert != 0) + " --genre " + genre)
	if m.Flags&osfTTL != 0 {
		b.WriteString(" --ttl " + strconv.Itoa(int(m.TTLCheck)))
	}
	if m.Flags&osfLog != 0 {
		b.WriteString(" --log " + strconv.Itoa(int(m.Log)))
	}
}

func (m *OSFMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" OS fingerprint match " + listBang(m.Flags&osfInvert != 0) + m.Genre)
}

// NftExprs: the xtables match (struct xt_osf_info), as iptables-nft
// sends it. nft's osf expression compares the genre name alone; xt_osf
// also logs (--log) and checks the TTL its own way. The kernel wants
// -p tcp and allows PREROUTING, INPUT and FORWARD.
func (m *OSFMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.raw([]byte(m.Genre), osfGenreMax)
	x.u32(uint32(len(m.Genre)))
	x.u32(m.Flags)
	x.u32(m.Log)
	x.u32(m.TTLCheck)
	return []expr.Any{compatMatch("osf", 0, x)}, nil
}
