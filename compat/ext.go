package compat

import (
	"sort"
	"strings"
	"sync"
)

// OptDef declares one long option of a match or target.
type OptDef struct {
	Name string
	Arg  int // NoArg, RequiredArg, OptionalArg
	ID   int
	// Invert allows a preceding "!" (checked by the framework for X6
	// extensions; other extensions check p.Invert themselves).
	Invert bool
	// Multi allows the option more than once (X6 extensions).
	Multi bool
	// Mandatory makes the X6 final check require the option.
	Mandatory bool
}

// OptArg is one occurrence of an extension option, handed to Parse.
type OptArg struct {
	Def    *OptDef
	Arg    string
	HasArg bool
	Invert bool
	Rule   *Rule
	Family Family
	Table  string
	// Ext is the name the extension was loaded under (for messages).
	Ext  string
	g    *getopt
	warn func(string)
	// lookupSets: see ParseOptions.LookupSets
	lookupSets bool
}

// needSet fails as libxt_set's get_set_byname does when the parse looks
// sets up: set does not exist, or holds addresses of the other family.
// It runs as the option is read, so it comes before any later option's
// error and before the chains are looked at (-C and -D too).
func (p *OptArg) needSet(set string) error {
	if !p.lookupSets || LookupIPSet == nil {
		return nil
	}
	info, ok := LookupIPSet(set)
	if !ok {
		// the message ends with a newline: xtables prints an empty line
		// before the Try line
		return Errorf(StatusParameter, "Set %s doesn't exist.\n", set)
	}
	return info.familyError(set, p.Family)
}

// Warn prints a notice on stderr at once, as an extension that warns
// while it reads an option does (before any later error).
func (p *OptArg) Warn(s string) {
	if p.warn != nil {
		p.warn(s)
	}
}

// NextArg consumes the following word when it is a value (not an
// option or "!"), as extensions with two-word options do.
func (p *OptArg) NextArg() (string, bool) {
	if p.g == nil || !p.g.hasArg() {
		return "", false
	}
	return p.g.take(), true
}

// Parser is the parsing side of an extension.
type Parser interface {
	// Parse handles one option occurrence.
	Parse(p *OptArg) error
	// Final runs after the whole command line was read; seen holds the
	// IDs of the options given.
	Final(r *Rule, seen OptSet) error
}

// OptSet is the set of option IDs given to one extension instance.
type OptSet uint64

// Has reports whether option id was given.
func (s OptSet) Has(id int) bool { return s&(1<<uint(id)) != 0 }

// MatchExt is a match that can be parsed.
type MatchExt interface {
	Match
	Parser
}

// TargetExt is a target that can be parsed.
type TargetExt interface {
	Target
	Parser
}

// ExtSpec describes a match or target extension.
type ExtSpec struct {
	Name string
	// Family restricts the extension to IPv4 or IPv6; 0 allows both.
	Family  Family
	Options []OptDef
	// X6 turns on the generic checks of xtables' x6 option parser
	// ("can only be used once", "cannot be inverted", mandatory options).
	X6 bool
	// NewMatch / NewTarget create a fresh instance (one is set).
	NewMatch  func(f Family) MatchExt
	NewTarget func(f Family) TargetExt
	// HelpTitle, when set, is the name the extension's -h section
	// gives it instead of Name; HelpMore, when set, adds to the section
	// what the options alone do not say (ExtHelp).
	HelpTitle string
	HelpMore  func() string
}

// The extensions register as the package is initialized, which every
// command does at its start, the ipset ones too. An extension whose spec
// is fixed keeps it in a package-level variable (static data: a literal
// given to RegisterMatch in an init function is allocated at every start)
// and registers its address in a package-level initializer,
// `var _ = RegisterMatch(&spec)`: those all run from the package's one
// init function, where ninety init functions spread over the package's
// code touched as many pages of it. The lookup maps are built at the
// first lookup.
var (
	matchList, targetList []*ExtSpec
	specsOnce             sync.Once
	matchSpecs            map[specID]*ExtSpec
	targetSpecs           map[specID]*ExtSpec
)

// RegisterMatch makes a match known under its name (and family); the
// last one registered under a name wins. It is for the package's
// initialization, and returns s for an initializer.
func RegisterMatch(s *ExtSpec) *ExtSpec {
	matchList = append(matchList, s)
	return s
}

// RegisterTarget makes a target known, as RegisterMatch a match.
func RegisterTarget(s *ExtSpec) *ExtSpec {
	targetList = append(targetList, s)
	return s
}

// specID keys the lookup maps: a spec registered for both families has
// family 0.
type specID struct {
	name   string
	family Family
}

func specMaps() {
	index := func(l []*ExtSpec) map[specID]*ExtSpec {
		m := make(map[specID]*ExtSpec, len(l))
		for _, s := range l {
			m[specID{s.Name, s.Family}] = s
		}
		return m
	}
	matchSpecs, targetSpecs = index(matchList), index(targetList)
}

func strconv8(v uint8) string { return string(rune('0'+v/10)) + string(rune('0'+v%10)) }

func lookupSpec(m map[specID]*ExtSpec, name string, f Family) *ExtSpec {
	if f != 0 {
		if s, ok := m[specID{name, f}]; ok {
			return s
		}
	}
	return m[specID{name, 0}]
}

// FindMatch returns the match extension called name for family f.
func FindMatch(name string, f Family) *ExtSpec {
	specsOnce.Do(specMaps)
	return lookupSpec(matchSpecs, name, f)
}

// FindTarget returns the target extension called name for family f.
func FindTarget(name string, f Family) *ExtSpec {
	specsOnce.Do(specMaps)
	return lookupSpec(targetSpecs, name, f)
}

// MatchNames lists the registered match names (for help and tests).
func MatchNames() []string {
	specsOnce.Do(specMaps)
	return specNames(matchSpecs)
}

// TargetNames lists the registered target names.
func TargetNames() []string {
	specsOnce.Do(specMaps)
	return specNames(targetSpecs)
}

func specNames(m map[specID]*ExtSpec) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range m {
		if !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s.Name)
		}
	}
	sort.Strings(out)
	return out
}

// loadedExt is an extension instance on the command line being parsed.
type loadedExt struct {
	spec   *ExtSpec
	name   string // as loaded (-m NAME)
	match  MatchExt
	target TargetExt
	seen   OptSet
}

func (l *loadedExt) parser() Parser {
	if l.match != nil {
		return l.match
	}
	return l.target
}

func (l *loadedExt) parse(p *OptArg) error {
	// xtables looks option entries up by id: the first entry with the
	// id decides the checks and names the option in messages, whichever
	// alias was typed.
	d := p.Def
	for i := range l.spec.Options {
		if l.spec.Options[i].ID == d.ID {
			d = &l.spec.Options[i]
			break
		}
	}
	if l.spec.X6 {
		if !d.Multi && l.seen.Has(d.ID) {
			return Paramf("%s: option \"--%s\" can only be used once.\n", l.name, d.Name)
		}
		if p.Invert && !d.Invert {
			return Paramf("%s: option \"--%s\" cannot be inverted.\n", l.name, d.Name)
		}
	}
	l.seen |= 1 << uint(d.ID)
	if err := l.parser().Parse(p); err != nil {
		return err
	}
	if x, ok := l.parser().(impliedSeer); ok {
		l.seen |= x.impliedSeen()
	}
	return nil
}

// impliedSeer is implemented by X6 extensions whose option also counts
// other options as given (libxt_HMARK's --hmark-tuple sets the flags
// of the masks it fills, so a later mask option "can only be used
// once").
type impliedSeer interface {
	impliedSeen() OptSet
}

func (l *loadedExt) final(r *Rule) error {
	if l.spec.X6 {
		for i := range l.spec.Options {
			d := &l.spec.Options[i]
			if d.Mandatory && !l.seen.Has(d.ID) {
				return Paramf("%s: option \"--%s\" must be specified\n", l.name, d.Name)
			}
		}
	}
	return l.parser().Final(r, l.seen)
}

// SaveQuote quotes s the way xtables_save_string does: words made only of
// letters, digits, '-' and '_' stay bare; anything else is put in double
// quotes with '"', '\\' and '\” escaped by a backslash.
func SaveQuote(s string) string {
	if saveBare(s) {
		return s
	}
	var b strings.Builder
	writeSaveQuote(&b, s)
	return b.String()
}

func saveBare(s string) bool {
	bare := s != ""
	for i := 0; i < len(s) && bare; i++ {
		c := s[i]
		bare = c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	}
	return bare
}

// writeSaveQuote writes SaveQuote(s) to b.
func writeSaveQuote(b *strings.Builder, s string) {
	if saveBare(s) {
		b.WriteString(s)
		return
	}
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' || s[i] == '\'' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
}
