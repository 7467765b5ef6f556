package compat

import (
	"fmt"
	"math"
	"strings"

	"github.com/google/nftables/expr"
)

// IPv6OptsMatch is ip6tables -m hbh and -m dst: the hop-by-hop and the
// destination options headers (struct ip6t_opts), their length and the
// options they hold.
type IPv6OptsMatch struct {
	name   string // "hbh" or "dst"
	HdrLen uint32
	Flags  uint8 // ip6OptsLen, ip6OptsOpts
	InvLen bool
	Opts   []uint16 // type<<8 | length, length 0xff for "any"
}

const (
	ip6OptsLen  = 0x01
	ip6OptsOpts = 0x02
)

var (
	hbhMatchSpec = ExtSpec{
		Name:   "hbh",
		Family: IPv6,
		Options: []OptDef{
			{Name: "hbh-len", Arg: RequiredArg, ID: 0, Invert: true},
			{Name: "hbh-opts", Arg: RequiredArg, ID: 1},
		},
		X6:       true,
		NewMatch: func(Family) MatchExt { return &IPv6OptsMatch{name: "hbh"} },
	}
	dstMatchSpec = ExtSpec{
		Name:   "dst",
		Family: IPv6,
		Options: []OptDef{
			{Name: "dst-len", Arg: RequiredArg, ID: 0, Invert: true},
			{Name: "dst-opts", Arg: RequiredArg, ID: 1},
		},
		X6:       true,
		NewMatch: func(Family) MatchExt { return &IPv6OptsMatch{name: "dst"} },
	}
)

var (
	_ = RegisterMatch(&hbhMatchSpec)
	_ = RegisterMatch(&dstMatchSpec)
)

func (m *IPv6OptsMatch) Name() string { return m.name }

func (m *IPv6OptsMatch) Parse(p *OptArg) error {
	if p.Def.ID == 0 {
		v, err := x6Uint(p, 0, math.MaxUint32)
		if err != nil {
			return err
		}
		m.HdrLen, m.InvLen = uint32(v), p.Invert
		m.Flags |= ip6OptsLen
		return nil
	}
	opts, err := m.parseOpts(p.Arg)
	if err != nil {
		return err
	}
	m.Opts = opts
	m.Flags |= ip6OptsOpts
	return nil
}

// parseOpts reads TYPE[:LEN][,TYPE[:LEN]...], at most 16 options, each
// number as strtoul reads it and cut to a byte.
func (m *IPv6OptsMatch) parseOpts(s string) ([]uint16, error) {
	const max = 16
	items := strings.Split(s, ",")
	var out []uint16
	for i, item := range items {
		if i == max {
			return nil, Paramf("too many addresses specified")
		}
		typ, length, hasLen := strings.Cut(item, ":")
		if hasLen && i == max-1 {
			return nil, Paramf("too many ports specified")
		}
		t, err := m.optNumber(typ, "opt")
		if err != nil {
			return nil, err
		}
		o := uint16(t&0xff) << 8
		if !hasLen {
			o |= 0xff
		} else {
			if o == 0 {
				if m.name == "hbh" {
					return nil, Paramf("PAD0 has not got length")
				}
				return nil, Paramf("PAD0 hasn't got length")
			}
			l, err := m.optNumber(length, "length")
			if err != nil {
				return nil, err
			}
			o |= uint16(l & 0xff)
		}
		out = append(out, o)
	}
	return out, nil
}

func (m *IPv6OptsMatch) optNumber(s, what string) (uint64, error) {
	// strtoul takes a minus sign and negates
	body, neg := strings.CutPrefix(strings.TrimLeft(s, " \t\n\v\f\r"), "-")
	if neg {
		v, err := m.optNumber(body, what)
		if err != nil {
			return 0, Paramf("%s", strings.ReplaceAll(err.Error(), "`"+body+"'", "`"+s+"'"))
		}
		return -v, nil
	}
	v, rest, ok := strtoulPrefix(s)
	switch {
	case rest == s || strings.TrimLeft(s, " \t\n\v\f\r+") == rest:
		return 0, Paramf("%s: no valid digits in %s `%s'", m.name, what, s)
	case !ok:
		return 0, Paramf("%s `%s' specified too big: would overflow", what, s)
	case rest != "":
		return 0, Paramf("%s: error parsing %s `%s'", m.name, what, s)
	}
	return v, nil
}

func (m *IPv6OptsMatch) Final(*Rule, OptSet) error { return nil }

func (m *IPv6OptsMatch) optList(b *strings.Builder) {
	for i, o := range m.Opts {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		fmt.Fprintf(b, "%d", o>>8)
		if o&0xff != 0xff {
			fmt.Fprintf(b, ":%d", o&0xff)
		}
	}
}

func (m *IPv6OptsMatch) Save(b *strings.Builder, _ *Rule) {
	if m.Flags&ip6OptsLen != 0 {
		fmt.Fprintf(b, "%s --%s-len %d", invMark(m.InvLen), m.name, m.HdrLen)
	}
	if m.Flags&ip6OptsOpts != 0 {
		fmt.Fprintf(b, " --%s-opts", m.name)
	}
	m.optList(b)
}

func (m *IPv6OptsMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" " + m.name)
	if m.Flags&ip6OptsLen != 0 {
		inv := ""
		if m.InvLen {
			inv = "!"
		}
		fmt.Fprintf(b, " length:%s%d", inv, m.HdrLen)
	}
	if m.Flags&ip6OptsOpts != 0 {
		b.WriteString(" opts")
	}
	m.optList(b)
}

// NftExprs: the xtables match; nft's "hbh"/"dst" expressions test one
// field of the first such header, not xt's walk of the option list.
func (m *IPv6OptsMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u32(m.HdrLen)
	x.u8(m.Flags)
	var inv uint8
	if m.InvLen {
		inv = 1
	}
	x.u8(inv)
	for i := 0; i < 16; i++ {
		var o uint16
		if i < len(m.Opts) {
			o = m.Opts[i]
		}
		x.u16(o)
	}
	x.u8(uint8(len(m.Opts)))
	x.align(4)
	return []expr.Any{compatMatch(m.name, 0, x)}, nil
}
