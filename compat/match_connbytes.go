package compat

import (
	"fmt"
	"math"
	"strings"

	"github.com/google/nftables/expr"
)

// ConnbytesMatch is -m connbytes: the packets, bytes or average packet
// size a connection has seen so far.
type ConnbytesMatch struct {
	// From and To as the kernel holds them: From > To means "!"
	// (outside the range).
	From, To  uint64
	What, Dir uint8
}

const (
	connbytesOptCount = iota
	connbytesOptDir
	connbytesOptMode
)

var (
	connbytesModes = []string{"packets", "bytes", "avgpkt"}
	connbytesDirs  = []string{"original", "reply", "both"}
)

var connbytesMatchSpec = ExtSpec{
	Name: "connbytes",
	Options: []OptDef{
		{Name: "connbytes", Arg: RequiredArg, ID: connbytesOptCount, Invert: true, Mandatory: true},
		{Name: "connbytes-dir", Arg: RequiredArg, ID: connbytesOptDir, Mandatory: true},
		{Name: "connbytes-mode", Arg: RequiredArg, ID: connbytesOptMode, Mandatory: true},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &ConnbytesMatch{} },
}

var _ = RegisterMatch(&connbytesMatchSpec)

func (m *ConnbytesMatch) Name() string { return "connbytes" }

func (m *ConnbytesMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case connbytesOptCount:
		vals, err := x6Range(p, 0, math.MaxUint64, 2)
		if err != nil {
			return err
		}
		m.From, m.To = vals[0], math.MaxUint64
		if len(vals) == 2 {
			m.To = vals[1]
		}
		if m.To < m.From {
			return Paramf("%d should be less than %d", m.From, m.To)
		}
		if p.Invert {
			m.From, m.To = m.To, m.From
		}
	case connbytesOptDir:
		i := indexOf(connbytesDirs, p.Arg)
		if i < 0 {
			return Paramf("Unknown --connbytes-dir `%s'", p.Arg)
		}
		m.Dir = uint8(i)
	case connbytesOptMode:
		i := indexOf(connbytesModes, p.Arg)
		if i < 0 {
			return Paramf("Unknown --connbytes-mode `%s'", p.Arg)
		}
		m.What = uint8(i)
	}
	return nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func (m *ConnbytesMatch) Final(*Rule, OptSet) error { return nil }

func (m *ConnbytesMatch) count(b *strings.Builder, prefix string, exact bool) {
	from, to := m.From, m.To
	if from > to {
		b.WriteString(" !")
		from, to = to, from
	}
	fmt.Fprintf(b, " %sconnbytes %d", prefix, from)
	// 0 means no upper bound to the printer; exact text keeps ":0"
	if (to != 0 || exact) && to < math.MaxUint64 {
		fmt.Fprintf(b, ":%d", to)
	}
}

func (m *ConnbytesMatch) save(b *strings.Builder, exact bool) {
	m.count(b, "--", exact)
	b.WriteString(" --connbytes-mode " + connbytesName(connbytesModes, m.What))
	b.WriteString(" --connbytes-dir " + connbytesName(connbytesDirs, m.Dir))
}

func connbytesName(list []string, i uint8) string {
	if int(i) < len(list) {
		return list[i]
	}
	return "unknown"
}

func (m *ConnbytesMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact keeps a range that ends at 0 ("0:0"), which -S prints as a
// range without end.
func (m *ConnbytesMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

func (m *ConnbytesMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	m.count(b, "", false)
	b.WriteString(" connbytes mode " + connbytesName(connbytesModes, m.What))
	b.WriteString(" connbytes direction " + connbytesName(connbytesDirs, m.Dir))
}

// NftExprs: the xtables match (struct xt_connbytes_info). nft's "ct
// bytes/packets/avgpkt" compare one value; xt_connbytes tests a range
// (inverted when From > To) and computes the average over both
// directions its own way.
func (m *ConnbytesMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u64(m.From)
	x.u64(m.To)
	x.u8(m.What)
	x.u8(m.Dir)
	return []expr.Any{compatMatch("connbytes", 0, x)}, nil
}
