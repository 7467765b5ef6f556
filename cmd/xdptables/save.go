package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/xdptables/xdptables/compat"
)

var restoreLongs = []compat.LongOpt{
	{Name: "counters", HasArg: compat.NoArg, Val: 'c'},
	{Name: "verbose", HasArg: compat.NoArg, Val: 'v'},
	{Name: "version", HasArg: compat.NoArg, Val: 'V'},
	{Name: "test", HasArg: compat.NoArg, Val: 't'},
	{Name: "help", HasArg: compat.NoArg, Val: 'h'},
	{Name: "noflush", HasArg: compat.NoArg, Val: 'n'},
	{Name: "table", HasArg: compat.RequiredArg, Val: 'T'},
	{Name: "modprobe", HasArg: compat.RequiredArg, Val: 'M'},
	{Name: "wait", HasArg: compat.OptionalArg, Val: 'w'},
	{Name: "wait-interval", HasArg: compat.OptionalArg, Val: 'W'},
	{Name: "ipv4", HasArg: compat.NoArg, Val: '4'},
	{Name: "ipv6", HasArg: compat.NoArg, Val: '6'},
}

// restoreArgs are the parsed options of iptables-restore.
type restoreArgs struct {
	counters, verbose, test, noflush bool
	table                            string
	file                             string
}

func restoreUsage(prog string) string {
	return fmt.Sprintf("Usage: %s [-c] [-v] [-V] [-t] [-h] [-n] [-T table] [-M command] [-4] [-6] [file]\n"+
		"\t   [ --counters ]\n\t   [ --verbose ]\n\t   [ --version]\n\t   [ --test ]\n\t   [ --help ]\n"+
		"\t   [ --noflush ]\n\t   [ --table=<TABLE> ]\n\t   [ --modprobe=<command> ]\n\t   [ --ipv4 ]\n\t   [ --ipv6 ]\n", prog)
}

// restoreMain is iptables-restore / ip6tables-restore.
func restoreMain(f compat.Family, prog string, args []string) int {
	// -w and -W take no attached argument but skip a following value
	opts, operands, msg := compat.ParseCLIValued(prog, "bcvVthnwWT:M:", restoreLongs, args, "wW")
	if msg != "" {
		fmt.Fprint(os.Stderr, msg)
		fmt.Fprintf(os.Stderr, "Try `%s -h' for more information.\n", prog)
		return 1
	}
	var a restoreArgs
	for _, o := range opts {
		switch o.Short {
		case 'c':
			a.counters = true
		case 'v':
			a.verbose = true
		case 'V':
			fmt.Printf("%s v%s (nf_tables)\n", prog, compat.Version)
			return 0
		case 't':
			a.test = true
		case 'h':
			fmt.Fprint(os.Stderr, restoreUsage(prog)) // (on stderr, as iptables-nft-restore does)
			return 0
		case 'n':
			a.noflush = true
		case 'T':
			a.table = o.Arg
		case 'b':
			fmt.Fprintf(os.Stderr, "-b/--binary option is not implemented\n")
		case '4', '6':
			// --ipv4/--ipv6 are in iptables-restore's option table
			// but not handled: its usage hint
			fmt.Fprintf(os.Stderr, "Try `%s -h' for more information.\n", prog)
			return 1
		}
	}
	var in io.Reader = os.Stdin
	if len(operands) > 1 {
		fmt.Fprintf(os.Stderr, "Unknown arguments found on commandline\n")
		return 1
	}
	if len(operands) > 0 {
		a.file = operands[0]
		fh, err := os.Open(a.file)
		if err != nil {
			fmt.Fprintf(os.Stderr, "Can't open %s: %s\n", a.file, errnoText(err))
			return 1
		}
		defer fh.Close()
		in = fh
	}
	input, err := restoreSource(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %s\n", prog, errnoText(err))
		return 1
	}
	ro := compat.RestoreOptions{
		Family: f, Prog: prog, Counters: a.counters, Table: a.table,
		Warn: warnStderr, Resolve: resolveHost, LookupSets: true,
	}
	if a.verbose {
		ro.Echo = func(s string) { fmt.Print(s) }
	}
	if a.test {
		r, err := input.Open()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %s\n", prog, errnoText(err))
			return 1
		}
		tables, err := compat.ParseRestore(r, ro)
		if err == nil && len(tables) > 0 && !kernelReadable() {
			// like iptables-restore --test, which reaches the kernel at COMMIT
			err = &compat.RestoreError{Line: tables[0].CommitLine, Err: compat.ErrNotPermitted}
		}
		if err != nil {
			fmt.Fprint(os.Stderr, compat.FormatRestore(err, prog))
			return compat.StatusOfRestore(err)
		}
		return 0
	}
	return applyRestore(f, prog, input, ro, a)
}

// saveLongs are iptables-save's long options (1.8.9 has no --binary,
// --ipv4 or --ipv6; -b is short only).
var saveLongs = []compat.LongOpt{
	{Name: "counters", HasArg: compat.NoArg, Val: 'c'},
	{Name: "dump", HasArg: compat.NoArg, Val: 'd'},
	{Name: "table", HasArg: compat.RequiredArg, Val: 't'},
	{Name: "modprobe", HasArg: compat.RequiredArg, Val: 'M'},
	{Name: "file", HasArg: compat.RequiredArg, Val: 'f'},
	{Name: "version", HasArg: compat.NoArg, Val: 'V'},
}

// saveMain is iptables-save / ip6tables-save.
func saveMain(f compat.Family, prog string, args []string) int {
	opts, operands, msg := compat.ParseCLI(prog, "bcdt:M:f:V", saveLongs, args)
	if msg != "" {
		fmt.Fprint(os.Stderr, msg)
		fmt.Fprintf(os.Stderr, "Look at manual page `%s.8' for more information.\n", prog)
		return 1
	}
	if len(operands) > 0 {
		fmt.Fprintf(os.Stderr, "Unknown arguments found on commandline\n")
		return 1
	}
	var table string
	counters := false
	out := io.Writer(os.Stdout)
	for _, o := range opts {
		switch o.Short {
		case 'V':
			fmt.Printf("%s v%s (nf_tables)\n", prog, compat.Version)
			return 0
		case 'b':
			fmt.Fprintf(os.Stderr, "-b/--binary option is not implemented\n")
		case 'c':
			counters = true
		case 't':
			table = o.Arg
		case 'f':
			fh, err := os.Create(o.Arg)
			if err != nil {
				fmt.Fprintf(os.Stderr, "Failed to open file, error: %s\n", errnoText(err))
				return 1
			}
			defer fh.Close()
			out = fh
		}
	}
	e, err := openEngine(f)
	if err != nil {
		fmt.Fprint(os.Stderr, compat.Format(err, prog, -1))
		return compat.StatusOf(err)
	}
	// (a save right after a command that deleted would wait in close(2)
	// for the kernel to free that: see kernel.Release)
	defer releaseConns(e.Conn)
	compat.PrintWarn = warnStderr // extensions' notices while they print rules
	if err := e.WriteSave(out, prog, table, counters, time.Now()); err != nil {
		var ce *compat.Error
		if !errors.As(err, &ce) {
			return 1 // writing the output failed
		}
		fmt.Fprint(os.Stderr, compat.Format(err, prog, -1))
		return compat.StatusOf(err)
	}
	for _, w := range e.Warnings(true) {
		fmt.Fprint(os.Stderr, w)
	}
	return 0
}
