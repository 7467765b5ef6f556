package compat

import (
	"strconv"
	"strings"
)

// SetMatch is -m set --match-set NAME DIRS (revision 4). Whether the set
// exists is checked when the rule is built against the kernel.
type SetMatch struct {
	SetName string
	// Dirs holds "src"/"dst" per dimension.
	Dirs          []string
	Invert        bool
	ReturnNomatch bool
	NoCounters    bool // ! --update-counters
	NoSubCounters bool // ! --update-subcounters
	Packets       setCounterTest
	Bytes         setCounterTest
}

// setCounterTest is --packets-eq/lt/gt or --bytes-eq/lt/gt.
type setCounterTest struct {
	Op     string // "", "eq", "lt", "gt"
	Value  uint64
	Invert bool
}

const (
	setOptMatchSet = iota
	setOptSet
	setOptReturnNomatch
	setOptUpdateCounters
	setOptUpdateSubcounters
	setOptPacketsEq
	setOptPacketsLt
	setOptPacketsGt
	setOptBytesEq
	setOptBytesLt
	setOptBytesGt
)

func init() {
	RegisterMatch(&ExtSpec{
		Name: "set",
		Options: []OptDef{
			{Name: "match-set", Arg: RequiredArg, ID: setOptMatchSet},
			{Name: "set", Arg: RequiredArg, ID: setOptSet},
			{Name: "return-nomatch", Arg: NoArg, ID: setOptReturnNomatch},
			{Name: "update-counters", Arg: NoArg, ID: setOptUpdateCounters},
			{Name: "update-subcounters", Arg: NoArg, ID: setOptUpdateSubcounters},
			{Name: "packets-eq", Arg: RequiredArg, ID: setOptPacketsEq},
			{Name: "packets-lt", Arg: RequiredArg, ID: setOptPacketsLt},
			{Name: "packets-gt", Arg: RequiredArg, ID: setOptPacketsGt},
			{Name: "bytes-eq", Arg: RequiredArg, ID: setOptBytesEq},
			{Name: "bytes-lt", Arg: RequiredArg, ID: setOptBytesLt},
			{Name: "bytes-gt", Arg: RequiredArg, ID: setOptBytesGt},
		},
		NewMatch: func(Family) MatchExt { return &SetMatch{} },
	})
}

func (m *SetMatch) Name() string { return "set" }

func (m *SetMatch) Parse(p *OptArg) error {
	switch id := p.Def.ID; id {
	case setOptMatchSet, setOptSet:
		if m.SetName != "" {
			return Paramf("--match-set can be specified only once")
		}
		m.Invert = p.Invert
		dirs, ok := p.NextArg()
		if !ok {
			return Paramf("--match-set requires two args.")
		}
		if len(p.Arg) > 31 {
			return Paramf("setname `%s' too long, max %d characters.", p.Arg, 31)
		}
		m.SetName = p.Arg
		m.Dirs = nil
		rest, more := dirs, true
		for more && len(m.Dirs) < 6 {
			var tok string
			tok, rest, more = strings.Cut(rest, ",")
			switch {
			case strings.HasPrefix(tok, "src"):
				m.Dirs = append(m.Dirs, "src")
			case strings.HasPrefix(tok, "dst"):
				m.Dirs = append(m.Dirs, "dst")
			default:
				return Paramf("You must spefify (the comma separated list of) 'src' or 'dst'.")
			}
		}
		if more {
			return Paramf("Can't be more src/dst options than %d.", 6)
		}
	case setOptReturnNomatch:
		if p.Invert {
			return Paramf("--return-nomatch flag cannot be inverted")
		}
		m.ReturnNomatch = true
	case setOptUpdateCounters:
		m.NoCounters = p.Invert
	case setOptUpdateSubcounters:
		m.NoSubCounters = p.Invert
	default:
		t, what := &m.Packets, "packets"
		if id >= setOptBytesEq {
			t, what = &m.Bytes, "bytes"
		}
		op := [...]string{"eq", "lt", "gt"}[(id-setOptPacketsEq)%3]
		if t.Op != "" {
			return Paramf("only one of the --%s-[eq|lt|gt] is allowed", what)
		}
		if p.Invert && op != "eq" {
			return Paramf("--%s-%s option cannot be inverted", what, op)
		}
		v, rest, ok, erange := cStrtoull(p.Arg, 0)
		if !ok || erange || rest != "" || strings.Contains(p.Arg, "-") {
			return Paramf("Cannot parse %s as a counter value", p.Arg)
		}
		*t = setCounterTest{Op: op, Value: v, Invert: p.Invert}
	}
	return nil
}

func (m *SetMatch) Final(*Rule, OptSet) error {
	if m.SetName == "" {
		return Paramf("You must specify `--match-set' with proper arguments")
	}
	return nil
}

func (m *SetMatch) write(b *strings.Builder, dashes string) {
	b.WriteString(bang(m.Invert) + " " + dashes + "match-set " + m.SetName + " " + strings.Join(m.Dirs, ","))
	if m.ReturnNomatch {
		b.WriteString(" " + dashes + "return-nomatch")
	}
	if m.NoCounters {
		b.WriteString(" ! " + dashes + "update-counters")
	}
	if m.NoSubCounters {
		b.WriteString(" ! " + dashes + "update-subcounters")
	}
	for _, c := range []struct {
		what string
		t    setCounterTest
	}{{"packets", m.Packets}, {"bytes", m.Bytes}} {
		if c.t.Op != "" {
			b.WriteString(bang(c.t.Invert) + " " + dashes + c.what + "-" + c.t.Op + " " + strconv.FormatUint(c.t.Value, 10))
		}
	}
}

func (m *SetMatch) Save(b *strings.Builder, _ *Rule) { m.write(b, "--") }

func (m *SetMatch) List(b *strings.Builder, _ *Rule, _ bool) { m.write(b, "") }
