package compat

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/google/nftables/expr"
)

// ConnlabelMatch is -m connlabel --label L [--set]: tests (or, with
// --set, sets and then tests) bit L of the connection's label bitmap.
type ConnlabelMatch struct {
	Bit     uint16
	Options uint16 // connlabelInvert | connlabelSet
}

// XT_CONNLABEL_OP_INVERT, XT_CONNLABEL_OP_SET.
const (
	connlabelInvert = 1
	connlabelSet    = 2
)

// connlabelFile is where libnetfilter_conntrack reads label names.
const connlabelFile = "/etc/xtables/connlabel.conf"

var connlabelMatchSpec = ExtSpec{
	Name: "connlabel",
	Options: []OptDef{
		{Name: "label", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true},
		{Name: "set", Arg: NoArg, ID: 1},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &ConnlabelMatch{} },
}

var _ = RegisterMatch(&connlabelMatchSpec)

func (m *ConnlabelMatch) Name() string { return "connlabel" }

// connlabelMap is the bit <-> name table of connlabelFile, read once.
var connlabelMap struct {
	once   sync.Once
	byName map[string]int
	byBit  map[int]string
	err    error // the open error, nil when read
}

func connlabelLoad() {
	m := &connlabelMap
	m.once.Do(func() {
		f, err := os.Open(connlabelFile)
		if err != nil {
			m.err = err
			return
		}
		defer f.Close()
		m.byName, m.byBit = map[string]int{}, map[int]string{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimLeft(sc.Text(), " \t")
			if line == "" || line[0] == '#' {
				continue
			}
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			bit, err := strconv.Atoi(f[0])
			if err != nil || bit < 0 {
				continue
			}
			if _, ok := m.byName[f[1]]; !ok {
				m.byName[f[1]] = bit
			}
			m.byBit[bit] = f[1]
		}
	})
}

// connlabelWarning is libxt_connlabel's notice when the label file
// cannot be opened.
func connlabelWarning() string {
	msg := connlabelMap.err.Error()
	var pe *os.PathError
	if errors.As(connlabelMap.err, &pe) {
		var errno syscall.Errno
		if errors.As(pe.Err, &errno) {
			msg = connlabelStrerror(errno)
		}
	}
	return "Warning: cannot open " + connlabelFile + ": " + msg + "\n"
}

// connlabelStrerror is strerror's text for the errors an open returns.
func connlabelStrerror(e syscall.Errno) string {
	switch e {
	case syscall.ENOENT:
		return "No such file or directory"
	case syscall.EACCES:
		return "Permission denied"
	}
	s := e.Error()
	return strings.ToUpper(s[:1]) + s[1:]
}

// Parse: a number (strtoul, base 0, taken as a C int and then cut to 16
// bits) or a name from the label file.
func (m *ConnlabelMatch) Parse(p *OptArg) error {
	if p.Def.ID == 1 {
		m.Options |= connlabelSet
		return nil
	}
	if p.Arg == "" {
		return Paramf("Argument must have a minimum length of 1 characters\n")
	}
	id := -1
	if v, rest, ok, _ := cStrtoull(p.Arg, 0); ok && rest == "" && p.Arg != "" && int32(v) >= 0 {
		id = int(int32(v))
	} else {
		connlabelLoad()
		if connlabelMap.err != nil {
			p.Warn(connlabelWarning())
		} else if b, ok := connlabelMap.byName[p.Arg]; ok {
			id = b
		}
	}
	if id < 0 {
		return Paramf("label '%s' not found or invalid value", p.Arg)
	}
	m.Bit = uint16(id)
	if p.Invert {
		m.Options |= connlabelInvert
	}
	return nil
}

func (m *ConnlabelMatch) Final(*Rule, OptSet) error { return nil }

// PrintWarn receives the notices extensions print on stderr while they
// print a rule (-S, -L, save): libxt_connlabel warns, at every rule it
// prints, that its label file cannot be opened. Nil drops them.
var PrintWarn func(string)

// name is the label's name from the file, or "".
func (m *ConnlabelMatch) name() string {
	connlabelLoad()
	if connlabelMap.err != nil && PrintWarn != nil {
		PrintWarn(connlabelWarning())
	}
	return connlabelMap.byBit[int(m.Bit)]
}

func (m *ConnlabelMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(invMark(m.Options&connlabelInvert != 0))
	if n := m.name(); n != "" {
		b.WriteString(" --label \"" + n + "\"")
	} else {
		b.WriteString(" --label \"" + strconv.Itoa(int(m.Bit)) + "\"")
	}
	if m.Options&connlabelSet != 0 {
		b.WriteString(" --set")
	}
}

// SaveExact prints the number: the label file may change before the
// text is read back.
func (m *ConnlabelMatch) SaveExact(b *strings.Builder, _ *Rule) {
	b.WriteString(invMark(m.Options&connlabelInvert != 0) + " --label " + strconv.Itoa(int(m.Bit)))
	if m.Options&connlabelSet != 0 {
		b.WriteString(" --set")
	}
}

func (m *ConnlabelMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" connlabel" + invMark(m.Options&connlabelInvert != 0))
	if n := m.name(); n != "" && !numeric {
		b.WriteString(" '" + n + "'")
	} else {
		b.WriteString(" " + strconv.Itoa(int(m.Bit)))
	}
	if m.Options&connlabelSet != 0 {
		b.WriteString(" set")
	}
}

// NftExprs: the xtables match (struct xt_connlabel_mtinfo), as
// iptables-nft sends it. nft's `ct label` test is not the same without
// a conntrack entry (xt_connlabel then matches when inverted), and
// `--set` both sets the bit and matches. The kernel refuses bits from
// 128 up (ERANGE).
func (m *ConnlabelMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u16(m.Bit)
	x.u16(m.Options)
	return []expr.Any{compatMatch("connlabel", 0, x)}, nil
}
