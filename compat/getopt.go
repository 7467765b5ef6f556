package compat

import (
	"fmt"
	"strings"
)

// Argument kinds of a long option, as in getopt_long(3).
const (
	NoArg       = 0
	RequiredArg = 1
	OptionalArg = 2
)

// LongOpt is one entry of a getopt_long option table.
type LongOpt struct {
	Name   string
	HasArg int
	// Val is the short option character for the base options; for
	// extension options the parser sets its own identity through Ext.
	Val int
	Ext *loadedExt
	ID  int // option id within its extension
}

// getopt emulates glibc getopt_long with an optstring starting with "-:"
// (non-options returned in order as code 1, missing arguments as ':').
// iptables relies on its exact behaviour: clusters of short options,
// attached optional arguments, unique-prefix long options.
type getopt struct {
	// base options come before the longs passed to next (iptables'
	// own options take precedence over every extension's).
	base      []LongOpt
	args      []string
	optind    int
	nextchar  string
	shortArgs *shortTable
}

// Results of getopt.next.
const (
	goEnd       = -1
	goNonOption = 1
	goMissing   = ':'
	goUnknown   = '?'
)

// shortTable is an optstring as a table: for each byte, the argument
// its short option takes (NoArg, RequiredArg, OptionalArg), -1 when it
// is none (a table, not a map: every option word of every rule line of a
// restore looks a letter up).
type shortTable [256]int8

type goResult struct {
	c      int      // option character, goNonOption, goMissing, goUnknown, goEnd, or 0 for a long option
	long   *LongOpt // the long option when one matched
	arg    string
	hasArg bool
	optopt byte // for goUnknown/goMissing on a short option
}

func (g *getopt) next(longs []LongOpt) goResult {
	if g.nextchar == "" {
		if g.optind >= len(g.args) {
			return goResult{c: goEnd}
		}
		a := g.args[g.optind]
		if a == "--" {
			g.optind++ // the words after it are operands
			return goResult{c: goEnd}
		}
		if len(a) < 2 || a[0] != '-' {
			g.optind++
			return goResult{c: goNonOption, arg: a, hasArg: true}
		}
		if strings.HasPrefix(a, "--") {
			g.optind++
			return g.long(a[2:], longs)
		}
		g.nextchar = a[1:]
		g.optind++
	}
	ch := g.nextchar[0]
	g.nextchar = g.nextchar[1:]
	has := int(g.shortArgs[ch])
	if has < 0 {
		return goResult{c: goUnknown, optopt: ch}
	}
	switch has {
	case NoArg:
		return goResult{c: int(ch)}
	case OptionalArg:
		if g.nextchar != "" {
			arg := g.nextchar
			g.nextchar = ""
			return goResult{c: int(ch), arg: arg, hasArg: true}
		}
		return goResult{c: int(ch)}
	default:
		if g.nextchar != "" {
			arg := g.nextchar
			g.nextchar = ""
			return goResult{c: int(ch), arg: arg, hasArg: true}
		}
		if g.optind >= len(g.args) {
			return goResult{c: goMissing, optopt: ch}
		}
		arg := g.args[g.optind]
		g.optind++
		return goResult{c: int(ch), arg: arg, hasArg: true}
	}
}

func (g *getopt) long(spec string, longs []LongOpt) goResult {
	name, val, hasVal := strings.Cut(spec, "=")
	var found *LongOpt
	ambiguous, exact := false, false
	// the first option of that very name wins: most words are one, found
	// by comparing names alone; abbreviations take the scan below
	for _, list := range [2][]LongOpt{g.base, longs} {
		for i := range list {
			if list[i].Name == name {
				found, exact = &list[i], true
				break
			}
		}
		if exact {
			break
		}
	}
	for _, list := range [2][]LongOpt{g.base, longs} {
		if exact {
			break
		}
		for i := range list {
			if lo := &list[i]; strings.HasPrefix(lo.Name, name) {
				if found == nil {
					found = lo
				} else if found.HasArg != lo.HasArg || found.Val != lo.Val || found.Ext != lo.Ext || found.ID != lo.ID {
					ambiguous = true
				}
			}
		}
	}
	if found == nil || ambiguous {
		return goResult{c: goUnknown}
	}
	switch found.HasArg {
	case NoArg:
		if hasVal {
			return goResult{c: goUnknown}
		}
		return goResult{long: found}
	case OptionalArg:
		return goResult{long: found, arg: val, hasArg: hasVal}
	default:
		if hasVal {
			return goResult{long: found, arg: val, hasArg: true}
		}
		if g.optind >= len(g.args) {
			return goResult{c: goMissing}
		}
		arg := g.args[g.optind]
		g.optind++
		return goResult{long: found, arg: arg, hasArg: true}
	}
}

// hasArg mirrors iptables' xs_has_arg: the next word exists and looks
// like a value rather than an option or a negation.
func (g *getopt) hasArg() bool {
	return g.nextchar == "" && g.optind < len(g.args) &&
		!strings.HasPrefix(g.args[g.optind], "-") && !strings.HasPrefix(g.args[g.optind], "!")
}

func (g *getopt) take() string {
	s := g.args[g.optind]
	g.optind++
	return s
}

// CLIOption is a parsed option of a tool's own command line (the
// -save/-restore programs), as glibc getopt_long returns it.
type CLIOption struct {
	Short byte   // short option letter (long options map to one)
	Arg   string // argument, when given
	Has   bool
}

// ParseCLI parses args with a glibc-style optstring and long options
// (Val = short letter), returning options, operands, or the message
// glibc prints for a bad option ("PROG: unrecognized option '--x'").
func ParseCLI(prog, optstring string, longs []LongOpt, args []string) ([]CLIOption, []string, string) {
	return ParseCLIValued(prog, optstring, longs, args, "")
}

// ParseCLIValued is ParseCLI where the options whose letters are in
// valued, given without an argument, take the next word as theirs when
// it looks like a value (iptables' xs_has_arg): iptables-restore's -w
// and -W, which its optstring declares without arguments, skip it so.
func ParseCLIValued(prog, optstring string, longs []LongOpt, args []string, valued string) ([]CLIOption, []string, string) {
	g := getopt{args: args, shortArgs: shortOpts(optstring)}
	var opts []CLIOption
	var operands []string
	for {
		r := g.next(longs)
		switch {
		case r.c == goEnd:
			operands = append(operands, g.args[min(g.optind, len(g.args)):]...)
			return opts, operands, ""
		case r.long != nil:
			o := CLIOption{Short: byte(r.long.Val), Arg: r.arg, Has: r.hasArg}
			if !o.Has && strings.IndexByte(valued, o.Short) >= 0 && g.hasArg() {
				o.Arg, o.Has = g.take(), true
			}
			opts = append(opts, o)
		case r.c == goNonOption:
			operands = append(operands, r.arg)
		case r.c == goUnknown && r.optopt != 0:
			return nil, nil, fmt.Sprintf("%s: invalid option -- '%c'\n", prog, r.optopt)
		case r.c == goUnknown:
			return nil, nil, fmt.Sprintf("%s: unrecognized option '%s'\n", prog, g.args[g.optind-1])
		case r.c == goMissing && r.optopt != 0:
			return nil, nil, fmt.Sprintf("%s: option requires an argument -- '%c'\n", prog, r.optopt)
		case r.c == goMissing:
			return nil, nil, fmt.Sprintf("%s: option '%s' requires an argument\n", prog, g.args[g.optind-1])
		default:
			o := CLIOption{Short: byte(r.c), Arg: r.arg, Has: r.hasArg}
			if !o.Has && strings.IndexByte(valued, o.Short) >= 0 && g.hasArg() {
				o.Arg, o.Has = g.take(), true
			}
			opts = append(opts, o)
		}
	}
}
