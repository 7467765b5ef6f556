package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// U32Match is -m u32: tests on 32-bit words fetched from the packet at
// computed offsets ("0>>22&0x3C@8=0x12345678&&...").
type U32Match struct {
	Invert bool
	Tests  []U32Test
}

// U32Test is one "location=values" test of a u32 expression.
type U32Test struct {
	// Locations are the numbers of the location; Ops[i] joins
	// Locations[i] to the value so far (Ops[0] is unused).
	Locations []uint32
	Ops       []uint8
	Values    [][2]uint32 // ranges min:max
}

// u32 location operators, as the kernel numbers them (enum xt_u32_ops).
const (
	u32And = iota
	u32LeftShift
	u32RightShift
	u32At
)

// u32MaxSize is XT_U32_MAXSIZE: tests, locations and values are each
// arrays of u32MaxSize+1 in the kernel's struct.
const u32MaxSize = 10

var u32Opts = []OptDef{{Name: "u32", Arg: RequiredArg, ID: 0, Invert: true}}

var u32MatchSpec = ExtSpec{
	Name:     "u32",
	Options:  u32Opts,
	X6:       true,
	NewMatch: func(Family) MatchExt { return &U32Match{} },
}

var _ = RegisterMatch(&u32MatchSpec)

func (m *U32Match) Name() string { return "u32" }

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// u32Number reads an unsigned number as strtoul with base 0 does
// (leading space, an optional +, 0x hex, 0 octal, decimal) from s at i
// and returns it with the index after it; ok is false when no number is
// there or it does not fit in 32 bits.
func u32Number(s string, i int) (uint32, int, bool) {
	j := i
	for j < len(s) && isCSpace(s[j]) {
		j++
	}
	if j < len(s) && s[j] == '-' {
		return 0, i, false
	}
	if j < len(s) && s[j] == '+' {
		j++
	}
	base := uint64(10)
	if j+1 < len(s) && s[j] == '0' && (s[j+1] == 'x' || s[j+1] == 'X') && j+2 < len(s) && hexDigit(s[j+2]) >= 0 {
		base, j = 16, j+2
	} else if j < len(s) && s[j] == '0' {
		base = 8
	}
	start := j
	var v uint64
	over := false
	for j < len(s) {
		d := uint64(hexDigit(s[j]))
		if hexDigit(s[j]) < 0 || d >= base {
			break
		}
		v = v*base + d
		if v > 0xffffffff {
			over = true
		}
		j++
	}
	if j == start || over {
		return 0, i, false
	}
	return uint32(v), j, true
}

func (m *U32Match) Parse(p *OptArg) error {
	m.Invert = p.Invert
	m.Tests = nil
	s := p.Arg
	i := 0
	state := 0
	var ct U32Test
	number := func() (uint32, error) {
		v, j, ok := u32Number(s, i)
		if !ok {
			return 0, Paramf("u32: at char %d: not a number or out of range", i)
		}
		i = j
		return v, nil
	}
	for {
		for i < len(s) && isCSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			if state == 0 {
				return Paramf("u32: abrupt end of input after location specifier")
			}
			if len(ct.Values) == 0 {
				return Paramf("u32: test ended with no value specified")
			}
			m.Tests = append(m.Tests, ct)
			if len(m.Tests) > u32MaxSize {
				return Paramf("u32: at char %d: too many \"&&\"s", i)
			}
			return nil
		}
		if state == 0 {
			if s[i] == '=' {
				if len(ct.Locations) == 0 {
					return Paramf("u32: at char %d: location spec missing", i)
				}
				i++
				state = 1
				continue
			}
			op := uint8(u32And)
			if len(ct.Locations) != 0 {
				switch s[i] {
				case '&':
				case '<', '>':
					c := s[i]
					i++
					if i >= len(s) || s[i] != c {
						return Paramf("u32: at char %d: a second '%c' was expected", i, c)
					}
					op = u32LeftShift
					if c == '>' {
						op = u32RightShift
					}
				case '@':
					op = u32At
				default:
					return Paramf("u32: at char %d: operator expected", i)
				}
				i++
			}
			v, err := number()
			if err != nil {
				return err
			}
			ct.Locations = append(ct.Locations, v)
			ct.Ops = append(ct.Ops, op)
			if len(ct.Locations) > u32MaxSize {
				return Paramf("u32: at char %d: too many operators", i)
			}
			continue
		}
		if s[i] == '&' {
			i++
			if i >= len(s) || s[i] != '&' {
				return Paramf("u32: at char %d: a second '&' was expected", i)
			}
			if len(ct.Values) == 0 {
				return Paramf("u32: at char %d: value spec missing", i)
			}
			m.Tests = append(m.Tests, ct)
			if len(m.Tests) > u32MaxSize {
				return Paramf("u32: at char %d: too many \"&&\"s", i)
			}
			ct = U32Test{}
			i++
			state = 0
			continue
		}
		if len(ct.Values) > 0 {
			if s[i] != ',' {
				return Paramf("u32: at char %d: expected \",\" or \"&&\"", i)
			}
			i++
		}
		lo, err := number()
		if err != nil {
			return err
		}
		for i < len(s) && isCSpace(s[i]) {
			i++
		}
		hi := lo
		if i < len(s) && s[i] == ':' {
			i++
			if hi, err = number(); err != nil {
				return err
			}
		}
		ct.Values = append(ct.Values, [2]uint32{lo, hi})
		if len(ct.Values) > u32MaxSize {
			return Paramf("u32: at char %d: too many \",\"s", i)
		}
	}
}

func (m *U32Match) Final(_ *Rule, seen OptSet) error {
	return x6Fcheck("u32", u32Opts, seen, map[int]x6Rel{0: {mand: true}})
}

// text is the expression as iptables prints it: numbers in hex, quoted.
func (m *U32Match) text(b *strings.Builder) {
	b.WriteString(" \"")
	for t, ct := range m.Tests {
		if t > 0 {
			b.WriteString("&&")
		}
		for i, n := range ct.Locations {
			if i > 0 {
				b.WriteString([]string{"&", "<<", ">>", "@"}[ct.Ops[i]])
			}
			fmt.Fprintf(b, "0x%x", n)
		}
		b.WriteByte('=')
		for i, v := range ct.Values {
			if i > 0 {
				b.WriteByte(',')
			}
			if v[0] == v[1] {
				fmt.Fprintf(b, "0x%x", v[0])
			} else {
				fmt.Fprintf(b, "0x%x:0x%x", v[0], v[1])
			}
		}
	}
	b.WriteByte('"')
}

func (m *U32Match) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(invMark(m.Invert) + " --u32")
	m.text(b)
}

func (m *U32Match) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" u32" + invMark(m.Invert))
	m.text(b)
}

// NftExprs: the xtables match (struct xt_u32): nftables cannot follow
// the "@" (offset read from the packet) steps, and the kernel's u32
// walks them with its own bounds checks.
func (m *U32Match) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	for t := 0; t <= u32MaxSize; t++ {
		var ct U32Test
		if t < len(m.Tests) {
			ct = m.Tests[t]
		}
		for i := 0; i <= u32MaxSize; i++ {
			var n uint32
			var op uint8
			if i < len(ct.Locations) {
				n, op = ct.Locations[i], ct.Ops[i]
			}
			x.u32(n)
			x.u8(op)
		}
		for i := 0; i <= u32MaxSize; i++ {
			var v [2]uint32
			if i < len(ct.Values) {
				v = ct.Values[i]
			}
			x.u32(v[0])
			x.u32(v[1])
		}
		x.u8(uint8(len(ct.Locations)))
		x.u8(uint8(len(ct.Values)))
	}
	x.align(4)
	x.u8(uint8(len(m.Tests)))
	inv := uint8(0)
	if m.Invert {
		inv = 1
	}
	x.u8(inv)
	return []expr.Any{compatMatch("u32", 0, x)}, nil
}
