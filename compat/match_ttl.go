package compat

import (
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// TTLMatch is -m ttl (IPv4) and, registered for IPv6 as -m hl, the hop
// limit match: the field compared with a value.
type TTLMatch struct {
	Mode  uint8 // ttlEQ, ttlNE, ttlLT, ttlGT
	Value uint8
	hl    bool
}

const (
	ttlEQ = iota
	ttlNE
	ttlLT
	ttlGT
)

const (
	ttlOptLT = iota
	ttlOptGT
	ttlOptEQ
)

func ttlOpts(pfx string) []OptDef {
	return []OptDef{
		{Name: pfx + "-lt", Arg: RequiredArg, ID: ttlOptLT},
		{Name: pfx + "-gt", Arg: RequiredArg, ID: ttlOptGT},
		{Name: pfx + "-eq", Arg: RequiredArg, ID: ttlOptEQ, Invert: true},
		// the reference accepts "!" before the short alias too
		{Name: pfx, Arg: RequiredArg, ID: ttlOptEQ, Invert: true},
	}
}

var (
	ttlOptDefs = ttlOpts("ttl")
	hlOptDefs  = ttlOpts("hl")
)

var ttlMatchSpec4 = ExtSpec{
	Name: "ttl", Family: IPv4, Options: ttlOptDefs, X6: true,
	NewMatch: func(Family) MatchExt { return &TTLMatch{} },
}

var hlMatchSpec6 = ExtSpec{
	Name: "hl", Family: IPv6, Options: hlOptDefs, X6: true,
	NewMatch: func(Family) MatchExt { return &TTLMatch{hl: true} },
}

var (
	_ = RegisterMatch(&ttlMatchSpec4)
	_ = RegisterMatch(&hlMatchSpec6)
)

func (m *TTLMatch) Name() string {
	if m.hl {
		return "hl"
	}
	return "ttl"
}

func (m *TTLMatch) Parse(p *OptArg) error {
	v, err := x6Uint(p, 0, 255)
	if err != nil {
		return err
	}
	m.Value = uint8(v)
	switch p.Def.ID {
	case ttlOptEQ:
		m.Mode = ttlEQ
		if p.Invert {
			m.Mode = ttlNE
		}
	case ttlOptLT:
		m.Mode = ttlLT
	case ttlOptGT:
		m.Mode = ttlGT
	}
	return nil
}

func (m *TTLMatch) Final(_ *Rule, seen OptSet) error {
	defs := ttlOptDefs
	if m.hl {
		defs = hlOptDefs
	}
	if seen == 0 {
		if m.hl {
			return Paramf("HL match: You must specify one of `--hl-eq', `--hl-lt', `--hl-gt'")
		}
		return Paramf("TTL match: You must specify one of `--ttl-eq', `--ttl-lt', `--ttl-gt")
	}
	all := bit(ttlOptLT) | bit(ttlOptGT) | bit(ttlOptEQ)
	return x6Fcheck(m.Name(), defs, seen, map[int]x6Rel{
		ttlOptLT: {excl: all}, ttlOptGT: {excl: all}, ttlOptEQ: {excl: all},
	})
}

func (m *TTLMatch) Save(b *strings.Builder, _ *Rule) {
	pfx := m.Name()
	ops := [...]string{" --" + pfx + "-eq", " ! --" + pfx + "-eq", " --" + pfx + "-lt", " --" + pfx + "-gt"}
	b.WriteString(ops[m.Mode] + " " + strconv.Itoa(int(m.Value)))
}

func (m *TTLMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	ops := [...]string{"==", "!=", "<", ">"}
	if m.hl {
		b.WriteString(" HL match HL " + ops[m.Mode] + " " + strconv.Itoa(int(m.Value)))
		return
	}
	b.WriteString(" TTL match TTL " + ops[m.Mode] + " " + strconv.Itoa(int(m.Value)))
}

// NftExprs compares the IPv4 TTL (nh+8) or IPv6 hop limit (nh+7), one
// byte, so ordered compares are exact.
func (m *TTLMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	off := uint32(8)
	if m.hl {
		off = 7
	}
	op := [...]expr.CmpOp{expr.CmpOpEq, expr.CmpOpNeq, expr.CmpOpLt, expr.CmpOpGt}[m.Mode]
	return []expr.Any{nhLoad(off, 1), &expr.Cmp{Op: op, Register: 1, Data: []byte{m.Value}}}, nil
}
