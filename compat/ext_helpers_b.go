package compat

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Helpers shared by the matches of match_*.go that follow xtables' x6
// option parser (libxtables/xtoptions.c): its integer and range parsers,
// its final checks, and the user/group name lookups of libc.

// x6Rel holds the relations xtables' final check enforces for one option:
// options it excludes and options it requires; mand makes it mandatory.
type x6Rel struct {
	mand bool
	excl OptSet
	also OptSet
}

func bit(id int) OptSet { return 1 << uint(id) }

// x6Fcheck runs xtables_options_fcheck: in option-table order, a missing
// mandatory option, then per other option id "also requires" and
// "cannot be used together with".
func x6Fcheck(ext string, defs []OptDef, seen OptSet, rels map[int]x6Rel) error {
	name := func(id int) string {
		for i := range defs {
			if defs[i].ID == id {
				return defs[i].Name
			}
		}
		return ""
	}
	for i := range defs {
		d := &defs[i]
		if name(d.ID) != d.Name {
			continue // an alias entry; xtables has one entry per id
		}
		r := rels[d.ID]
		if r.mand && !seen.Has(d.ID) {
			return Paramf("%s: option \"--%s\" must be specified\n", ext, d.Name)
		}
		if !seen.Has(d.ID) {
			continue
		}
		for id := 0; id < 32; id++ {
			if id == d.ID || name(id) == "" {
				continue
			}
			if r.also.Has(id) && !seen.Has(id) {
				return Paramf("%s: option \"--%s\" also requires \"--%s\".\n", ext, d.Name, name(id))
			}
			if r.excl.Has(id) && seen.Has(id) {
				return Paramf("%s: option \"--%s\" cannot be used together with \"--%s\".\n", ext, d.Name, name(id))
			}
		}
	}
	return nil
}

// strtoulPrefix is strtoumax(s, &end, 0) as xtables_strtoul uses it: it
// returns the value, the unparsed rest, and false when no digits were
// read, a minus sign leads, or the value overflows.
func strtoulPrefix(s string) (uint64, string, bool) {
	v, neg, end, ok := cStrtoul(s, 0)
	if neg || end == 0 {
		return 0, s, false
	}
	return v, s[end:], ok
}

// cStrtoul is C's strtoul(s, &end, base) for base 0 or 16: blanks as
// isspace, a sign, a 0x prefix (and for base 0 a leading 0 for octal),
// then digits. It returns the unsigned value of the digits, whether a
// minus sign came before them, how many bytes were consumed (0 when no
// digits were read) and false when the value overflowed.
func cStrtoul(s string, base uint64) (v uint64, neg bool, end int, ok bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if (base == 0 || base == 16) && i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && hexDigit(s[i+2]) >= 0 {
		base, i = 16, i+2
	} else if base == 0 && i < len(s) && s[i] == '0' {
		base = 8
	} else if base == 0 {
		base = 10
	}
	start := i
	ok = true
	for i < len(s) {
		d := hexDigit(s[i])
		if d < 0 || uint64(d) >= base {
			break
		}
		if v > (^uint64(0)-uint64(d))/base {
			ok = false
		}
		v = v*base + uint64(d)
		i++
	}
	if i == start {
		return 0, false, 0, true
	}
	return v, neg, i, ok
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// x6Uint parses an XTTYPE_UINT* option value: the whole string, base 0,
// within [min, max].
func x6Uint(p *OptArg, min, max uint64) (uint64, error) {
	v, rest, ok := strtoulPrefix(p.Arg)
	if !ok || rest != "" || v < min || v > max {
		return 0, Paramf("%s: bad value for option \"--%s\", or out of range (%d-%d).\n", p.Ext, p.Def.Name, min, max)
	}
	return v, nil
}

// x6Range parses an XTTYPE_UINT*RC option value ("a", "a:b", ":b",
// "a:"): at most maxn parts; an empty first part is min, an empty second
// part max. iptables 1.8.9 does not require the parts to ascend.
func x6Range(p *OptArg, min, max uint64, maxn int) ([]uint64, error) {
	var vals []uint64
	lmin := min
	arg := p.Arg
	for {
		if len(vals) == maxn {
			return nil, Paramf("%s: Too many components for option \"--%s\" (max: %d)\n", p.Ext, p.Def.Name, maxn)
		}
		var v uint64
		rest := arg
		if arg == "" || arg[0] == ':' {
			v = lmin
			if len(vals) == 1 {
				v = max
			}
		} else {
			var ok bool
			v, rest, ok = strtoulPrefix(arg)
			if !ok || v < lmin || v > max {
				return nil, Paramf("%s: bad value for option \"--%s\" near \"%s\", or out of range (%d-%d).\n", p.Ext, p.Def.Name, arg, lmin, max)
			}
			if rest != "" && rest[0] != ':' {
				return nil, Paramf("%s: Argument to \"--%s\" has unexpected characters near \"%s\".\n", p.Ext, p.Def.Name, rest)
			}
		}
		vals = append(vals, v)
		if rest == "" {
			return vals, nil
		}
		arg = rest[1:]
	}
}

// badValue is xtables_param_act(XTF_BAD_VALUE, ...).
func badValue(ext, opt, val string) error {
	return Paramf("%s: Bad value for \"%s\" option: \"%s\"", ext, opt, val)
}

// invMark returns " !" when inv is set, for -S output.
func invMark(inv bool) string {
	if inv {
		return " !"
	}
	return ""
}

// idDB is a name<->id table read from a colon-separated file such as
// /etc/passwd or /etc/group (name in field 0, id in field 2).
type idDB struct {
	once   sync.Once
	path   string
	byName map[string]uint32
	byID   map[uint32]string
}

func (d *idDB) load() {
	d.once.Do(func() {
		d.byName, d.byID = map[string]uint32{}, map[uint32]string{}
		f, err := os.Open(d.path)
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Split(sc.Text(), ":")
			if len(fields) < 3 || fields[0] == "" {
				continue
			}
			id, err := strconv.ParseUint(fields[2], 10, 32)
			if err != nil {
				continue
			}
			if _, ok := d.byName[fields[0]]; !ok {
				d.byName[fields[0]] = uint32(id)
			}
			if _, ok := d.byID[uint32(id)]; !ok {
				d.byID[uint32(id)] = fields[0]
			}
		}
	})
}

func (d *idDB) lookup(name string) (uint32, bool) {
	d.load()
	v, ok := d.byName[name]
	return v, ok
}

func (d *idDB) name(id uint32) string {
	d.load()
	return d.byID[id]
}

var (
	passwdDB = &idDB{path: "/etc/passwd"}
	groupDB  = &idDB{path: "/etc/group"}
)
