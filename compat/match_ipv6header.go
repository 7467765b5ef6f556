package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// IPv6HeaderMatch is ip6tables -m ipv6header: which extension headers a
// packet carries.
type IPv6HeaderMatch struct {
	Flags  uint8 // ipv6hdrFlags bits
	Invert bool
	Soft   bool
}

// ipv6hdrFlags maps header protocol numbers to match bits, in print order.
var ipv6hdrFlags = []struct {
	proto uint8
	flag  uint8
}{{0, 0x80}, {60, 0x40}, {43, 0x20}, {44, 0x10}, {51, 0x08}, {50, 0x04}, {59, 0x02}, {255, 0x01}}

// ipv6hdrNames are the names the match knows besides /etc/protocols.
var ipv6hdrNames = []struct {
	name  string
	proto uint8
}{{"hop-by-hop", 0}, {"protocol", 255}, {"hop", 0}, {"dst", 60}, {"route", 43}, {"frag", 44},
	{"auth", 51}, {"esp", 50}, {"none", 59}, {"prot", 255}, {"0", 0}, {"60", 60}, {"43", 43},
	{"44", 44}, {"51", 51}, {"50", 50}, {"59", 59}, {"255", 255}}

const (
	ipv6hdrOptHeader = iota
	ipv6hdrOptSoft
)

var ipv6headerMatchSpec = ExtSpec{
	Name:   "ipv6header",
	Family: IPv6,
	Options: []OptDef{
		{Name: "header", Arg: RequiredArg, ID: ipv6hdrOptHeader, Invert: true, Mandatory: true},
		{Name: "soft", Arg: NoArg, ID: ipv6hdrOptSoft},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &IPv6HeaderMatch{} },
}

var _ = RegisterMatch(&ipv6headerMatchSpec)

func (m *IPv6HeaderMatch) Name() string { return "ipv6header" }

func ipv6hdrProto(s string) (uint8, error) {
	protoOnce.Do(loadProtocols)
	if n, ok := protoByName[s]; ok {
		return n, nil
	}
	for _, e := range ipv6hdrNames {
		if e.name == s {
			return e.proto, nil
		}
	}
	return 0, Paramf("unknown header `%s' specified", s)
}

func (m *IPv6HeaderMatch) Parse(p *OptArg) error {
	if p.Def.ID == ipv6hdrOptSoft {
		m.Soft = true
		return nil
	}
	var flags uint8
	for _, tok := range strings.Split(p.Arg, ",") {
		if tok == "" {
			continue
		}
		proto, err := ipv6hdrProto(tok)
		if err != nil {
			return err
		}
		found := false
		for _, f := range ipv6hdrFlags {
			if f.proto == proto {
				flags |= f.flag
				found = true
				break
			}
		}
		if !found {
			return Paramf("unknown header `%d' specified", proto)
		}
	}
	if flags == 0 {
		return Paramf("ip6t_ipv6header: cannot parse header names")
	}
	m.Flags = flags
	if p.Invert {
		m.Invert = true
	}
	return nil
}

func (m *IPv6HeaderMatch) Final(*Rule, OptSet) error { return nil }

func (m *IPv6HeaderMatch) names() string {
	var parts []string
	for _, f := range ipv6hdrFlags {
		if m.Flags&f.flag == 0 {
			continue
		}
		name := ""
		if f.proto != 0 {
			protoOnce.Do(loadProtocols)
			name = protoByNum[f.proto]
		}
		for _, e := range ipv6hdrNames {
			if name == "" && e.proto == f.proto {
				name = e.name
			}
		}
		parts = append(parts, name)
	}
	if len(parts) == 0 {
		return "NONE"
	}
	return strings.Join(parts, ",")
}

func (m *IPv6HeaderMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(invMark(m.Invert) + " --header " + m.names())
	if m.Soft {
		b.WriteString(" --soft")
	}
}

func (m *IPv6HeaderMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" ipv6header")
	if m.Flags != 0 || m.Invert {
		b.WriteString(" flags:")
		if m.Invert {
			b.WriteByte('!')
		}
		if numeric {
			fmt.Fprintf(b, "0x%02X", m.Flags)
		} else {
			b.WriteString(m.names())
		}
	}
	if m.Soft {
		b.WriteString(" soft")
	}
}

// NftExprs: the xtables match (struct ip6t_ipv6header_info): nftables
// has no test for the exact set of extension headers.
func (m *IPv6HeaderMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u8(m.Flags)
	var inv, soft uint8
	if m.Invert {
		inv = 0xff
	}
	if m.Soft {
		soft = 0xff
	}
	x.u8(inv)
	x.u8(soft)
	return []expr.Any{compatMatch("ipv6header", 0, x)}, nil
}
