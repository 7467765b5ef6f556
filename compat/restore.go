package compat

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// RestoreOptions tune ParseRestore.
type RestoreOptions struct {
	Family Family
	// Prog is the program name as invoked ("iptables-restore").
	Prog string
	// Counters applies [p:b] values (--counters).
	Counters bool
	// Table restricts the restore to one table section (-T).
	Table   string
	Warn    func(string)
	Resolve func(host string, f Family) ([]string, error)
	// LookupSets: see ParseOptions.LookupSets
	LookupSets bool
	// Echo, when set (--verbose), receives every comment line as read,
	// with its newline, as iptables-restore -v copies them to stdout.
	Echo func(string)
}

// ChainDecl is a ":CHAIN POLICY [p:b]" line. Policy is "-" for a user
// chain.
type ChainDecl struct {
	Name     string
	Policy   string
	Counters Counters
	Line     int
}

// RestoreCmd is one command line of a table section.
type RestoreCmd struct {
	Line int
	Cmd  *Command
}

// RestoreTable is one "*table ... COMMIT" section.
type RestoreTable struct {
	Name       string
	Line       int
	CommitLine int
	Chains     []ChainDecl
	Cmds       []RestoreCmd
}

// RestoreError is an error at a line of a restore file.
type RestoreError struct {
	Line int
	Err  error
}

func (e *RestoreError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// FormatRestore renders a restore error as iptables-restore prints it.
func FormatRestore(err error, prog string) string {
	re, ok := err.(*RestoreError)
	if !ok {
		return Format(err, prog, -1)
	}
	e, ok := re.Err.(*Error)
	if ok && e.Kind == KindPlain {
		return fmt.Sprintf("%s: line %d failed: %s\n", prog, re.Line, e.Msg)
	}
	line := -1
	if StatusOf(re.Err) == StatusParameter {
		line = re.Line
	}
	return Format(re.Err, prog, line)
}

// StatusOfRestore returns the exit status for a restore error.
func StatusOfRestore(err error) int {
	if re, ok := err.(*RestoreError); ok {
		return StatusOf(re.Err)
	}
	return StatusOf(err)
}

var restoreTables = map[string]bool{"filter": true, "nat": true, "mangle": true, "raw": true, "security": true}

// RestoreHandler receives a restore file as ParseRestoreFunc reads it.
// An error a handler returns stops the parse and is returned as is.
type RestoreHandler interface {
	// Table starts a "*table" section.
	Table(t *RestoreTable) error
	// Chain is a ":CHAIN POLICY [p:b]" line of the current section.
	Chain(t *RestoreTable, d ChainDecl) error
	// Command is a rule or command line of the current section.
	Command(t *RestoreTable, c RestoreCmd) error
	// Commit ends the section (t.CommitLine is set).
	Commit(t *RestoreTable) error
}

// ParseRestore reads an iptables-save/iptables-restore file. It stops at
// the first error, which names the line as iptables-restore does.
func ParseRestore(r io.Reader, o RestoreOptions) ([]*RestoreTable, error) {
	var c collector
	if err := ParseRestoreFunc(r, o, &c); err != nil {
		return nil, err
	}
	return c.tables, nil
}

// collector keeps a whole file in memory.
type collector struct{ tables []*RestoreTable }

func (c *collector) Table(*RestoreTable) error { return nil }
func (c *collector) Chain(t *RestoreTable, d ChainDecl) error {
	t.Chains = append(t.Chains, d)
	return nil
}
func (c *collector) Command(t *RestoreTable, rc RestoreCmd) error {
	t.Cmds = append(t.Cmds, rc)
	return nil
}
func (c *collector) Commit(t *RestoreTable) error {
	c.tables = append(c.tables, t)
	return nil
}

// ParseRestoreFunc reads a restore file line by line and hands every
// section, chain declaration and command to h as soon as it is parsed,
// so that a large file need not be held as rules in memory.
func ParseRestoreFunc(r io.Reader, o RestoreOptions, h RestoreHandler) error {
	var (
		cur *RestoreTable
		// skip: past a section -T excludes; iptables-restore then
		// ignores every line up to the next "*table" line (a COMMIT
		// too, and the end of the file may come)
		skip bool
		n    int
		// words is the room of each rule line's words: nothing keeps
		// the list past the line's Parse (only the words themselves)
		words []string
	)
	fail := func(err error) error { return &RestoreError{Line: n, Err: err} }
	br := bufio.NewReaderSize(r, 64*1024)
	for {
		raw, rerr := br.ReadString('\n')
		if raw == "" && rerr != nil {
			if rerr != io.EOF {
				return rerr
			}
			break
		}
		n++
		line := strings.TrimSuffix(raw, "\n")
		switch {
		case line == "":
			continue
		case line[0] == '#':
			if o.Echo != nil {
				o.Echo(raw)
			}
			continue
		case cur != nil && line == "COMMIT":
			cur.CommitLine = n
			if err := h.Commit(cur); err != nil {
				return err
			}
			cur = nil
			continue
		case line[0] == '*' && cur == nil:
			skip = false
			name := firstField(line[1:])
			if name == "" {
				return fail(Paramf("%s: line %d table name invalid", o.Prog, n))
			}
			if !restoreTables[name] {
				return fail(Paramf("%s: line %d table name '%s' invalid", o.Prog, n, name))
			}
			if o.Table != "" && o.Table != name {
				skip = true
				continue
			}
			cur = &RestoreTable{Name: name, Line: n}
			if err := h.Table(cur); err != nil {
				return err
			}
			continue
		case skip:
			continue
		case line[0] == ':' && cur != nil:
			d, err := parseChainDecl(cur.Name, line[1:], n, o)
			if err != nil {
				return fail(err)
			}
			if err := h.Chain(cur, d); err != nil {
				return err
			}
			continue
		case cur == nil:
			return fail(Rawf(StatusOther, "%s: line %d failed\n", o.Prog, n))
		}
		// with its newline: a quote left open takes it into the last
		// word, as iptables-restore's tokenizer does
		cmd, err := parseRestoreRule(raw, n, cur.Name, o, &words)
		if err == ErrSkipLine {
			continue
		}
		if err != nil {
			return fail(err)
		}
		if err := h.Command(cur, RestoreCmd{Line: n, Cmd: cmd}); err != nil {
			return err
		}
	}
	if cur != nil {
		return &RestoreError{Line: n + 1, Err: Rawf(StatusOther, "%s: COMMIT expected at line %d\n", o.Prog, n+1)}
	}
	return nil
}

func firstField(s string) string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func parseChainDecl(table, s string, n int, o RestoreOptions) (ChainDecl, error) {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(f) == 0 {
		return ChainDecl{}, Paramf("%s: line %d chain name invalid", o.Prog, n)
	}
	d := ChainDecl{Name: f[0], Line: n}
	if len(d.Name) >= 29 {
		return d, Paramf("chain name `%s' too long (must be under %d chars)", d.Name, 29)
	}
	// any name but a built-in chain's is checked, whatever the policy
	if !IsBuiltin(table, d.Name) {
		if err := checkDeclaredChainName(d.Name); err != nil {
			return d, err
		}
	}
	if len(f) < 2 {
		return d, Paramf("%s: line %d policy invalid", o.Prog, n)
	}
	d.Policy = f[1]
	// like iptables-restore, only a built-in chain's counters are read
	// (":x - -" and ":x ACCEPT" are fine with -c, ":INPUT -" is not)
	if o.Counters && IsBuiltin(table, d.Name) {
		if len(f) < 3 {
			return d, Paramf("invalid policy counters for chain '%s'", d.Name)
		}
		c, ok := parseBracketCounters(f[2])
		if !ok {
			return d, Paramf("invalid policy counters for chain '%s'", d.Name)
		}
		d.Counters = c
	}
	return d, nil
}

// parseBracketCounters parses "[p:b]" as iptables-restore's
// sscanf("[%llu:%llu]") does: a number may carry a sign (a negative one
// wraps) and nothing after the second one is looked at.
func parseBracketCounters(s string) (Counters, bool) {
	if !strings.HasPrefix(s, "[") {
		return Counters{}, false
	}
	p, rest, ok := scanfIntRest(s[1:], false)
	if !ok || !strings.HasPrefix(rest, ":") {
		return Counters{}, false
	}
	b, _, ok := scanfIntRest(rest[1:], false)
	if !ok {
		return Counters{}, false
	}
	return Counters{Packets: uint64(p), Bytes: uint64(b)}, true
}

// parseRestoreRule parses a rule line; *room is where its words may go
// (see restoreWordsIn), kept for the next line.
func parseRestoreRule(line string, n int, table string, o RestoreOptions, room *[]string) (*Command, error) {
	start := line
	var pcnt, bcnt string
	if line[0] == '[' {
		end := strings.IndexByte(line, ']')
		if end < 0 {
			return nil, Paramf("Bad line %d: need ]", n)
		}
		inner := line[1:end]
		var ok bool
		pcnt, bcnt, ok = strings.Cut(strings.TrimLeft(inner, ":"), ":")
		if !ok || bcnt == "" {
			return nil, Paramf("Bad line %d: need ]", n)
		}
		start = line[end+1:]
	}
	words := restoreWordsIn((*room)[:0], start)
	defer func() { *room = words; clear(words) }()
	args := words
	extra := 0
	if o.Counters && pcnt != "" {
		extra = 3
		args = append([]string{"--set-counters", pcnt, bcnt}, words...)
	}
	if err := checkRestoreArgs(words, extra); err != nil {
		return nil, err
	}
	return Parse(o.Family, args, ParseOptions{Restore: true, Prog: o.Prog, Table: table, Warn: o.Warn, Resolve: o.Resolve, LookupSets: o.LookupSets})
}

// iptables-restore builds each line into an argument vector of at most
// restoreMaxArgs entries (the program name, "-t TABLE", "-c P B" when
// counters are applied, then the words of the line) and each word in a
// buffer of restoreMaxParam bytes; a longer line or word is a parameter
// problem before any option is looked at.
const (
	restoreMaxArgs  = 254
	restoreMaxParam = 1024
)

// checkRestoreArgs refuses a line as iptables-restore does when its words
// do not fit: extra is the number of arguments restore adds in front of
// them besides the program name and "-t TABLE" (3 for applied counters).
// The words are checked in order, each for its length first, so the first
// problem on the line is the one reported.
func checkRestoreArgs(words []string, extra int) error {
	for i, w := range words {
		if len(w) >= restoreMaxParam {
			return Paramf("Parameter too long!")
		}
		if 3+extra+i+1 > restoreMaxArgs {
			return Paramf("Parser cannot handle more arguments")
		}
	}
	return nil
}

// RestoreWords splits a rule line as iptables-restore does: blanks
// separate words, double quotes group them (a closing quote ends the
// word), a backslash inside quotes takes the next character literally.
// Single quotes are ordinary characters.
func RestoreWords(s string) []string {
	return restoreWordsIn(nil, s)
}

// restoreWordsIn is RestoreWords with the words appended to words[:0]
// (its room reused where it can be).
func restoreWordsIn(words []string, s string) []string {
	if words == nil {
		words = make([]string, 0, 16)
	}
	words = words[:0]
	if strings.IndexByte(s, '"') < 0 {
		// no quotes: the words are substrings of s
		start := -1
		for i := 0; i < len(s); i++ {
			if c := s[i]; c == ' ' || c == '\t' || c == '\n' {
				if start >= 0 {
					words = append(words, s[start:i])
					start = -1
				}
			} else if start < 0 {
				start = i
			}
		}
		if start >= 0 {
			words = append(words, s[start:])
		}
		return words
	}
	if strings.IndexByte(s, '\\') < 0 {
		if words, ok := quotedWords(words, s); ok {
			return words
		}
	}
	return restoreWordsBuilt(s)
}

// quotedWords is RestoreWords for a line without backslashes whose
// quotes open only at the start of a word (the rule texts xdptables
// prints): the words are substrings of s. ok is false for other lines.
func quotedWords(words []string, s string) (_ []string, ok bool) {
	words = words[:0]
	start := -1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n':
			if start >= 0 {
				words = append(words, s[start:i])
				start = -1
			}
		case '"':
			if start >= 0 {
				return nil, false // a quote inside a word joins the parts
			}
			end := strings.IndexByte(s[i+1:], '"')
			if end < 0 {
				return append(words, s[i+1:]), true // unterminated: the rest
			}
			words = append(words, s[i+1:i+1+end])
			i += end + 1
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		words = append(words, s[start:])
	}
	return words, true
}

// restoreWordsBuilt is RestoreWords building each word.
func restoreWordsBuilt(s string) []string {
	var words []string
	var cur strings.Builder
	inWord, quoted, escaped := false, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quoted {
			switch {
			case escaped:
				cur.WriteByte(c)
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				quoted = false
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			default:
				cur.WriteByte(c)
			}
			continue
		}
		switch c {
		case '"':
			quoted, inWord = true, true
		case ' ', '\t', '\n':
			if inWord && cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
			inWord = false
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if cur.Len() > 0 || quoted {
		words = append(words, cur.String())
	}
	return words
}
