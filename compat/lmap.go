package compat

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
)

// xtLmap is xtables_lmap: the id and name pairs of an iproute2 table
// (/etc/iproute2/group, /etc/iproute2/rt_realms) in file order, ids
// 0-255 in decimal or 0x hex, read once when first needed.
type xtLmap struct {
	file  string
	once  sync.Once
	ids   []uint32
	names []string
}

func (l *xtLmap) load() {
	l.once.Do(func() {
		f, err := os.Open(l.file)
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimLeft(sc.Text(), " \t\v\f\r")
			if line == "" || line[0] == '#' {
				continue
			}
			base := 10
			if strings.HasPrefix(line, "0x") {
				base = 16
			}
			v, rest, ok, erange := cStrtoull(line, base)
			if !ok || erange || int64(int32(v)) < 0 || int32(v) > 255 {
				continue
			}
			if rest == "" || strings.IndexByte(" \t\v\f\r\n", rest[0]) < 0 {
				continue
			}
			fields := strings.Fields(rest)
			if len(fields) == 0 || fields[0][0] == '#' {
				continue
			}
			l.ids = append(l.ids, uint32(v))
			l.names = append(l.names, fields[0])
		}
	})
}

// name is the first name of id, or "".
func (l *xtLmap) name(id uint32) string {
	l.load()
	for i, v := range l.ids {
		if v == id {
			return l.names[i]
		}
	}
	return ""
}

// parseValMask is xtables_parse_val_mask with the names of l.
func (l *xtLmap) parseValMask(p *OptArg) (uint32, uint32, error) {
	l.load()
	haveMap := len(l.ids) > 0
	byName := func() (uint32, uint32, error) {
		for i, n := range l.names {
			if n == p.Arg {
				return l.ids[i], ^uint32(0), nil
			}
		}
		return 0, 0, Paramf("%s: could not map name %s to an integer value for option \"--%s\".\n", p.Ext, p.Arg, p.Def.Name)
	}
	badVal := Paramf("%s: bad integer value for option \"--%s\", or out of range.\n", p.Ext, p.Def.Name)
	v, rest, ok := xtStrtoul(p.Arg, 0, 0xffffffff)
	if !ok {
		if haveMap {
			return byName()
		}
		return 0, 0, badVal
	}
	if rest == "" {
		return uint32(v), ^uint32(0), nil
	}
	if rest[0] != '/' {
		if haveMap {
			return byName()
		}
		return 0, 0, Paramf("%s: trailing garbage after value for option \"--%s\".\n", p.Ext, p.Def.Name)
	}
	mask, rest, ok := xtStrtoul(rest[1:], 0, 0xffffffff)
	if !ok {
		return 0, 0, badVal
	}
	if rest != "" {
		return 0, 0, Paramf("%s: trailing garbage after value for option \"--%s\".\n", p.Ext, p.Def.Name)
	}
	return uint32(v), uint32(mask), nil
}

// valMask is xtables_print_val_mask: " 0xV/0xM", or with a full mask the
// name of v when names is set and it has one, else " 0xV".
func (l *xtLmap) valMask(v, mask uint32, names bool) string {
	if mask != ^uint32(0) {
		return fmt.Sprintf(" 0x%x/0x%x", v, mask)
	}
	if names {
		if n := l.name(v); n != "" {
			return " " + n
		}
	}
	return fmt.Sprintf(" 0x%x", v)
}
