package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// StringMatch is -m string (revision 1): a byte pattern in the packet.
type StringMatch struct {
	Pattern  []byte
	Algo     string
	From, To uint16
	Invert   bool
	ICase    bool
}

const (
	stringOptFrom = iota
	stringOptTo
	stringOptAlgo
	stringOptString
	stringOptHex
	stringOptICase
)

var stringOpts = []OptDef{
	{Name: "from", Arg: RequiredArg, ID: stringOptFrom},
	{Name: "to", Arg: RequiredArg, ID: stringOptTo},
	{Name: "algo", Arg: RequiredArg, ID: stringOptAlgo},
	{Name: "string", Arg: RequiredArg, ID: stringOptString, Invert: true},
	{Name: "hex-string", Arg: RequiredArg, ID: stringOptHex, Invert: true},
	{Name: "icase", Arg: NoArg, ID: stringOptICase},
}

const stringMaxPattern = 128

var stringMatchSpec = ExtSpec{
	Name:     "string",
	Options:  stringOpts,
	X6:       true,
	NewMatch: func(Family) MatchExt { return &StringMatch{To: 0xffff} },
}

var _ = RegisterMatch(&stringMatchSpec)

func (m *StringMatch) Name() string { return "string" }

func isXDigit(c byte) bool { return hexDigit(c) >= 0 }

// parseHexString decodes --hex-string: plain characters, |hex bytes|
// blocks (spaces allowed inside) and \-escaped literals.
func parseHexString(s string) ([]byte, error) {
	if s == "" {
		return nil, Paramf("STRING must contain at least one char")
	}
	var out []byte
	hex, literal := false, false
	at := func(i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	for i := 0; i < len(s); {
		if len(out) >= stringMaxPattern {
			return nil, Paramf("STRING too long \"%s\"", s)
		}
		switch {
		case s[i] == '\\' && !hex:
			literal = true
		case s[i] == '\\':
			return nil, Paramf("Cannot include literals in hex data")
		case s[i] == '|':
			if hex {
				hex = false
			} else {
				hex = true
				for at(i+1) == ' ' {
					i++
				}
			}
			if i+1 >= len(s) {
				return out, nil
			}
			i++
		}
		switch {
		case literal:
			if i+1 >= len(s) {
				return nil, Paramf("Bad literal placement at end of string")
			}
			out = append(out, s[i+1])
			i += 2
			literal = false
		case hex:
			if i+1 >= len(s) {
				return nil, Paramf("Odd number of hex digits")
			}
			if i+2 >= len(s) {
				return nil, Paramf("Invalid hex block")
			}
			if !isXDigit(s[i]) {
				return nil, Paramf("Invalid hex char '%c'", s[i])
			}
			if !isXDigit(s[i+1]) {
				return nil, Paramf("Invalid hex char '%c'", s[i+1])
			}
			out = append(out, byte(hexDigit(s[i])*16+hexDigit(s[i+1])))
			if s[i+2] == ' ' {
				i += 3
			} else {
				i += 2
			}
		default:
			out = append(out, s[i])
			i++
		}
	}
	return out, nil
}

func (m *StringMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case stringOptFrom, stringOptTo:
		v, err := x6Uint(p, 0, 0xffff)
		if err != nil {
			return err
		}
		if p.Def.ID == stringOptFrom {
			m.From = uint16(v)
		} else {
			m.To = uint16(v)
		}
	case stringOptAlgo:
		m.Algo = p.Arg
		if len(m.Algo) > 15 {
			m.Algo = m.Algo[:15]
		}
	case stringOptString:
		if len(p.Arg) > stringMaxPattern {
			return Paramf("STRING too long \"%s\"", p.Arg)
		}
		m.Pattern = []byte(p.Arg)
		m.Invert = m.Invert || p.Invert
	case stringOptHex:
		pat, err := parseHexString(p.Arg)
		if err != nil {
			return err
		}
		m.Pattern = pat
		m.Invert = m.Invert || p.Invert
	case stringOptICase:
		m.ICase = true
	}
	return nil
}

func (m *StringMatch) Final(_ *Rule, seen OptSet) error {
	if !seen.Has(stringOptString) && !seen.Has(stringOptHex) {
		return Paramf("STRING match: You must specify `--string' or `--hex-string'")
	}
	return x6Fcheck("string", stringOpts, seen, map[int]x6Rel{
		stringOptAlgo:   {mand: true},
		stringOptString: {excl: bit(stringOptHex)},
		stringOptHex:    {excl: bit(stringOptString)},
	})
}

// patternText prints the pattern as the reference does: as a |hex|
// block when it holds unprintable bytes or ends in a backslash, else
// quoted with '"' and '\' escaped.
func (m *StringMatch) patternText() (string, bool) {
	p := m.Pattern
	hex := len(p) > 0 && p[len(p)-1] == '\\'
	for _, c := range p {
		if c < 0x20 || c > 0x7e {
			hex = true
		}
	}
	var b strings.Builder
	if hex {
		b.WriteString(" \"|")
		for _, c := range p {
			fmt.Fprintf(&b, "%02x", c)
		}
		b.WriteString("|\"")
		return b.String(), true
	}
	b.WriteString(" \"")
	for _, c := range p {
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String(), false
}

func (m *StringMatch) Save(b *strings.Builder, _ *Rule) {
	text, hex := m.patternText()
	if hex {
		b.WriteString(invMark(m.Invert) + " --hex-string" + text)
	} else {
		b.WriteString(invMark(m.Invert) + " --string" + text)
	}
	b.WriteString(" --algo " + m.Algo)
	if m.From != 0 {
		fmt.Fprintf(b, " --from %d", m.From)
	}
	if m.To != 0xffff {
		fmt.Fprintf(b, " --to %d", m.To)
	}
	if m.ICase {
		b.WriteString(" --icase")
	}
}

func (m *StringMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	text, _ := m.patternText()
	b.WriteString(" STRING match ")
	if m.Invert {
		b.WriteByte('!')
	}
	b.WriteString(text + " ALGO name " + m.Algo)
	if m.From != 0 {
		fmt.Fprintf(b, " FROM %d", m.From)
	}
	if m.To != 0xffff {
		fmt.Fprintf(b, " TO %d", m.To)
	}
	if m.ICase {
		b.WriteString(" ICASE")
	}
}

// NftExprs: the xtables match (struct xt_string_info, revision 1);
// nftables has no payload search.
func (m *StringMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u16(m.From)
	x.u16(m.To)
	x.raw([]byte(m.Algo), 16)
	x.raw(m.Pattern, stringMaxPattern)
	x.u8(uint8(len(m.Pattern)))
	var flags uint8
	if m.Invert {
		flags |= 1
	}
	if m.ICase {
		flags |= 2
	}
	x.u8(flags)
	x.u64(0) // the kernel's textsearch config pointer
	return []expr.Any{compatMatch("string", 1, x)}, nil
}
