package ipset

import (
	"bufio"
	"strings"
)

// Op is an ipset command.
type Op string

// Commands.
const (
	OpCreate  Op = "create"
	OpAdd     Op = "add"
	OpDel     Op = "del"
	OpTest    Op = "test"
	OpList    Op = "list"
	OpSave    Op = "save"
	OpRestore Op = "restore"
	OpFlush   Op = "flush"
	OpDestroy Op = "destroy"
	OpSwap    Op = "swap"
	OpRename  Op = "rename"
	OpVersion Op = "version"
	OpHelp    Op = "help"
	// OpQuit ends interactive mode and a restore (elsewhere it does
	// nothing).
	OpQuit Op = "quit"
	// OpInteractive ("-") reads commands from stdin, one per line, each
	// run on its own, with a prompt.
	OpInteractive Op = "-"
)

var opAliases = map[string]Op{
	"create": OpCreate, "n": OpCreate, "-N": OpCreate, "--create": OpCreate,
	"add": OpAdd, "-A": OpAdd, "--add": OpAdd,
	"del": OpDel, "-D": OpDel, "--del": OpDel,
	"test": OpTest, "-T": OpTest, "--test": OpTest,
	"list": OpList, "-L": OpList, "--list": OpList,
	"save": OpSave, "-S": OpSave, "--save": OpSave,
	"restore": OpRestore, "-R": OpRestore, "--restore": OpRestore,
	"flush": OpFlush, "-F": OpFlush, "--flush": OpFlush,
	"destroy": OpDestroy, "x": OpDestroy, "-X": OpDestroy, "--destroy": OpDestroy,
	"swap": OpSwap, "w": OpSwap, "-W": OpSwap, "--swap": OpSwap,
	"rename": OpRename, "e": OpRename, "-E": OpRename, "--rename": OpRename,
	"version": OpVersion, "-v": OpVersion, "-V": OpVersion, "--version": OpVersion,
	"help": OpHelp, "-h": OpHelp, "--help": OpHelp, "-H": OpHelp,
	"quit": OpQuit, "-": OpInteractive,
}

// opOrder is ipset's table of commands, in the order it matches an
// abbreviation against them ("s" is save, "d" del, "r" restore).
var opOrder = []Op{OpCreate, OpAdd, OpDel, OpTest, OpDestroy, OpList, OpSave, OpRestore, OpFlush, OpRename, OpSwap, OpHelp, OpVersion, OpQuit}

// LookupOp is the command word a names: a name or alias of a command,
// or, as ipset takes it, the start of a command's name, with or without
// two leading dashes ("lis", "--cre", "v").
func LookupOp(a string) (Op, bool) {
	if op, ok := opAliases[a]; ok {
		return op, true
	}
	if len(a) > 2 && strings.HasPrefix(a, "--") {
		a = a[2:]
	}
	if a == "" || a[0] == '-' {
		return "", false
	}
	for _, op := range opOrder {
		if strings.HasPrefix(string(op), a) || strings.HasPrefix(opSecondName[op], a) {
			return op, true
		}
	}
	return "", false
}

// opSecondName is the second full name ipset gives a command: a
// command word can be the start of either ("ne" creates).
var opSecondName = map[Op]string{OpCreate: "new"}

// Output modes of list and save.
const (
	OutputPlain = "plain"
	OutputSave  = "save"
	OutputXML   = "xml"
)

// Options are the global options.
type Options struct {
	Exist   bool
	Output  string // "" = the command's default
	Terse   bool
	Names   bool
	Sorted  bool
	Quiet   bool
	Resolve bool
	File    string
}

// Merge sets in o what n sets: the global options of a later line of a
// restore or of interactive mode add to those before it.
func (o *Options) Merge(n Options) {
	o.Exist = o.Exist || n.Exist
	o.Terse = o.Terse || n.Terse
	o.Names = o.Names || n.Names
	o.Sorted = o.Sorted || n.Sorted
	o.Quiet = o.Quiet || n.Quiet
	o.Resolve = o.Resolve || n.Resolve
	if n.Output != "" {
		o.Output = n.Output
	}
	if n.File != "" {
		o.File = n.File
	}
}

// Command is one parsed ipset command.
type Command struct {
	Op   Op
	Opts Options
	// Args are the positional arguments after the command (set names,
	// type, element, options), still unparsed: elements and create options
	// need the set they belong to.
	Args []string
	Line int // restore line, 0 on the command line
	// AfterCommit: a COMMIT line came between this restore line and
	// the command before it (ipset sent the run of adds before it
	// there).
	AfterCommit bool
	// Err is ipset's refusal of a restore line as it reads it (an
	// unknown command, missing arguments, a bad global option): the
	// line runs as this error, after the lines before it.
	Err *Error
}

// ParseArgs parses a command line (without argv[0]). As ipset does, it
// takes the global options first, wherever they are, then the command
// and its arguments. On an error in the arguments the command is
// returned with the error (list and save open their -f file before
// they check them).
func ParseArgs(args []string) (*Command, *Error) {
	c := &Command{}
	var words []string
	for i := 0; i < len(args); i++ {
		handled, err := c.globalOption(args, &i)
		if err != nil {
			return nil, err
		}
		if !handled {
			words = append(words, args[i])
		}
	}
	if len(words) == 0 {
		return nil, usagef("No command specified.")
	}
	op, ok := LookupOp(words[0])
	if !ok {
		return nil, usagef("No command specified: unknown argument %s", words[0])
	}
	c.Op, c.Args = op, words[1:]
	return c, c.checkArgs()
}

// globalOption consumes a global option at args[*i].
func (c *Command) globalOption(args []string, i *int) (bool, *Error) {
	a := args[*i]
	if strings.HasPrefix(a, "--") && len(a) > 2 {
		a = a[1:]
	}
	switch a {
	case "-exist", "-!":
		c.Opts.Exist = true
	case "-t", "-terse":
		c.Opts.Terse = true
	case "-n", "-name":
		c.Opts.Names = true
	case "-s", "-sorted":
		c.Opts.Sorted = true
	case "-q", "-quiet":
		c.Opts.Quiet = true
	case "-r", "-resolve":
		c.Opts.Resolve = true
	case "-o", "-output", "-f", "-file":
		// (a file name may not look like an option; "-" is one)
		file := a == "-f" || a == "-file"
		if *i+1 >= len(args) || file && len(args[*i+1]) > 1 && args[*i+1][0] == '-' {
			err := usagef("Missing mandatory argument to option %s", a[:2])
			err.Loud = !file // (as an unknown output mode)
			return false, err
		}
		*i++
		v := args[*i]
		if a == "-f" || a == "-file" {
			if c.Opts.File != "" {
				return false, usagef("-file option cannot be used when full io is activated")
			}
			c.Opts.File = v
			break
		}
		switch v {
		case OutputPlain, OutputSave, OutputXML:
			c.Opts.Output = v
		default:
			err := syntaxf("unknown output mode '%s'", v)
			err.Loud = true
			return false, err
		}
	default:
		return false, nil
	}
	return true, nil
}

var (
	argsNeeded = map[Op]int{OpCreate: 2, OpAdd: 2, OpDel: 2, OpTest: 2, OpSwap: 2, OpRename: 2}
	argsMax    = map[Op]int{OpList: 1, OpSave: 1, OpFlush: 1, OpDestroy: 1, OpSwap: 2, OpRename: 2, OpRestore: 0}
)

// checkArgs checks the number of positional arguments.
func (c *Command) checkArgs() *Error {
	n := len(c.Args)
	need := argsNeeded[c.Op]
	if n < need {
		if n == 1 {
			return usagef("Missing second mandatory argument to command %s", c.Op)
		}
		return usagef("Missing mandatory argument to command %s", c.Op)
	}
	// The names the command takes are read before a word too many.
	names := c.Args[:min(n, 2)]
	m, hasMax := argsMax[c.Op]
	if hasMax {
		names = c.Args[:min(n, m)]
	}
	for _, a := range names {
		if c.Op != OpHelp && (c.Op != OpAdd && c.Op != OpDel && c.Op != OpTest || a == c.Args[0]) {
			if err := checkSetName(a); err != nil {
				return err
			}
		}
	}
	if hasMax && n > m {
		// (an unknown option is "Unknown argument: `X'")
		return usagef("Unknown argument %s", c.Args[m])
	}
	return nil
}

// checkSetName refuses a set name ipset's parser refuses.
func checkSetName(name string) *Error {
	if len(name) > 31 {
		return syntaxf("setname '%s' is longer than 31 characters", name)
	}
	return nil
}

// SplitLine splits a restore line into arguments, honouring double quotes
// (comments with blanks); the quotes are taken out of the word. As ipset
// does, an unterminated quoted word is dropped, and so is a word that
// is empty without its quotes ("comment """ has no argument).
func SplitLine(line string) []string {
	var out []string
	var cur strings.Builder
	in, have := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '"':
			in = !in
		case !in && (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'):
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(ch)
			have = true
		}
	}
	if have && !in {
		out = append(out, cur.String())
	}
	return out
}

// MaxLineBytes and MaxLineWords are the limits of ipset's line reader
// (restore and interactive mode): it reads at most 1023 bytes at a time,
// so the rest of a longer line is read as the next line, and refuses a
// line of more than 30 words.
const (
	MaxLineBytes = 1023
	MaxLineWords = 30
)

// NextLine splits the first line off text as ipset's reader does: up to
// a newline (not included) or MaxLineBytes bytes, whichever comes first.
func NextLine(text string) (line, rest string) {
	if j := strings.IndexByte(text, '\n'); j >= 0 && j < MaxLineBytes {
		return text[:j], text[j+1:]
	}
	if len(text) > MaxLineBytes {
		return text[:MaxLineBytes], text[MaxLineBytes:]
	}
	return text, ""
}

// ReadLine reads the next line from r as NextLine splits one (ok false
// at the end of the input).
func ReadLine(r *bufio.Reader) (line string, ok bool) {
	var b []byte
	for len(b) < MaxLineBytes {
		c, err := r.ReadByte()
		if err != nil {
			return string(b), len(b) > 0
		}
		if c == '\n' {
			return string(b), true
		}
		b = append(b, c)
	}
	return string(b), true
}

// LineTooLong is ipset's refusal of a line of more than MaxLineWords
// words.
func LineTooLong() *Error { return usagef("Line is too long to parse.") }

// ParseRestore parses a restore file into commands. Usage-class errors
// stop the parse (no line number, as ipset prints them); syntax errors
// inside a command are found when it runs.
func ParseRestore(text string) ([]*Command, *Error) {
	cmds := RestoreCommands(text)
	if n := len(cmds); n > 0 && cmds[n-1].Err != nil {
		return nil, cmds[n-1].Err
	}
	return cmds, nil
}

// RestoreCommands is the commands of a restore file up to the first
// line ipset refuses as it reads it, that line included as a Command
// whose Err is the refusal: ipset runs the lines before it first, so
// their errors come before its.
func RestoreCommands(text string) []*Command {
	var cmds []*Command
	EachRestoreCommand(text, func(c *Command) *Error {
		n := *c
		n.Args = append([]string(nil), c.Args...)
		cmds = append(cmds, &n)
		return nil
	})
	return cmds
}

// EachRestoreCommand parses a restore file as ParseRestore does and calls
// fn with each command in order, without keeping them: the command and
// its Args are reused for the next line (the arguments are substrings of
// text). The first error, ParseRestore's or fn's, stops the walk; a
// line ipset refuses as it reads it is given to fn as a Command with
// Err (and no Op) before the walk stops with that error.
func EachRestoreCommand(text string, fn func(*Command) *Error) *Error {
	var c Command
	var args []string
	refuse := func(line int, err *Error) *Error {
		c = Command{Line: line, Err: err}
		if ferr := fn(&c); ferr != nil {
			return ferr
		}
		return err
	}
	// Global options on a line (-exist, -t, -o save, -q, …) stay set for
	// the lines after it: ipset keeps them in its session.
	var sticky Command
	committed := false // a COMMIT line since the command before
	var prev struct {  // the command before, for the -exist of a run
		op    Op
		set   string
		exist bool
	}
	for i := 0; len(text) > 0; i++ {
		var l string
		l, text = NextLine(text)
		t := l
		for len(t) > 0 && (t[0] == ' ' || t[0] == '\t') {
			t = t[1:] // strings.TrimLeft(l, " \t"), without its per-call cutset
		}
		if t == "" || t[0] == '#' {
			continue
		}
		if strings.TrimSpace(t) == "COMMIT" {
			// ipset sends the run of adds (dels) it holds
			prev.op, committed = "", true
			continue
		}
		if strings.IndexByte(t, '"') >= 0 {
			args = SplitLine(t)
		} else {
			args = splitPlain(t, args[:0])
		}
		if len(args) > MaxLineWords {
			return refuse(i+1, LineTooLong())
		}
		if len(args) == 0 {
			continue // only blanks ("\r", …): ipset skips the line
		}
		// Global options may come before the command, as on the
		// command line (-exist, -!).
		kept := args[:0] // in place: an option's argument is read before its slot is written
		for j := 0; j < len(args); j++ {
			handled, err := sticky.globalOption(args, &j)
			if err != nil {
				return refuse(i+1, err)
			}
			if !handled {
				kept = append(kept, args[j])
			}
		}
		if args = kept; len(args) == 0 {
			continue
		}
		op, ok := LookupOp(args[0])
		if !ok {
			return refuse(i+1, usagef("No command specified: unknown argument %s", args[0]))
		}
		c = Command{Op: op, Opts: sticky.Opts, Args: args[1:], Line: i + 1, AfterCommit: committed}
		committed = false
		// ipset sends a run of adds (or dels) to one set as one message,
		// whose flags are the first command's: a later command's own
		// -exist counts for nothing
		if (op == OpAdd || op == OpDel) && op == prev.op && len(c.Args) > 0 && c.Args[0] == prev.set {
			c.Opts.Exist = prev.exist
		}
		prev.op, prev.exist = op, c.Opts.Exist
		if len(c.Args) > 0 {
			prev.set = c.Args[0]
		}
		if op == OpQuit {
			return nil // the lines after it are not read
		}
		if op == OpRestore || op == OpVersion || op == OpHelp || op == OpInteractive {
			return refuse(i+1, usagef("Command `%s' is invalid in restore mode.", op))
		}
		if err := c.checkArgs(); err != nil {
			if err.Status != StatusUsage {
				err.Line = i + 1
			}
			return refuse(i+1, err)
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
	return nil
}

// splitPlain is SplitLine for a line without double quotes: the
// arguments are substrings of line, appended to out.
func splitPlain(line string, out []string) []string {
	start := -1
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ', '\t', '\r', '\n':
			if start >= 0 {
				out = append(out, line[start:i])
				start = -1
			}
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		out = append(out, line[start:])
	}
	return out
}
