package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/setengine"
)

// ipsetMain is the ipset personality.
func ipsetMain(_ string, args []string) int {
	cmd, perr := ipset.ParseArgs(args)
	if perr != nil {
		if cmd != nil && (cmd.Op == ipset.OpList || cmd.Op == ipset.OpSave) && cmd.Opts.File != "" {
			// ipset opens list's and save's file before it checks their
			// arguments
			f, ferr := createOutput(cmd.Opts.File)
			if ferr != nil {
				perr = ferr
			} else {
				f.Close()
			}
		}
		// ipset takes -q wherever it is, even after what it fails on.
		if perr.Loud || !slices.ContainsFunc(args, func(a string) bool { return a == "-q" || a == "-quiet" || a == "--quiet" }) {
			fmt.Fprint(os.Stderr, ipset.Format(perr))
		}
		return perr.Status
	}
	if cmd.Op == ipset.OpInteractive {
		return ipsetInteractive(cmd.Opts, os.Stdin, os.Stdout, os.Stderr)
	}
	return runIpset(cmd, os.Stdin, os.Stdout, os.Stderr)
}

// ipsetInteractive is "ipset -": commands from in, one per line, each
// run on its own after a prompt, until "quit" or the end of the input.
// Global options given on a line stay set for the lines after it, as in
// a restore; errors are printed and the next line is read; the status
// is 0. (ipset's prompts: one before each line, two after a blank or
// comment line.)
func ipsetInteractive(opts ipset.Options, in io.Reader, stdout, stderr io.Writer) int {
	prompt := func() { fmt.Fprint(stdout, "ipset> ") }
	prompt()
	br := bufio.NewReader(in)
	for {
		line, ok := ipset.ReadLine(br)
		if !ok {
			break
		}
		t := strings.TrimLeft(line, " \t\r")
		if strings.TrimSpace(t) == "" || t[0] == '#' {
			prompt()
			prompt()
			continue
		}
		words := ipset.SplitLine(t)
		if len(words) > ipset.MaxLineWords {
			fmt.Fprint(stderr, ipset.Format(ipset.LineTooLong()))
			prompt()
			continue
		}
		if words[0] == "quit" {
			return 0
		}
		cmd, perr := ipset.ParseArgs(words)
		switch {
		case perr != nil && strings.HasPrefix(perr.Msg, "No command specified"):
			fmt.Fprintln(stdout, "No command specified")
		case perr != nil:
			fmt.Fprint(stderr, ipset.Format(perr))
		case cmd.Op == ipset.OpRestore:
			fmt.Fprintln(stdout, "Restore command is not supported in interactive mode")
		case cmd.Op == ipset.OpQuit:
			return 0
		case cmd.Op == ipset.OpInteractive:
		default:
			opts.Merge(cmd.Opts)
			cmd.Opts = opts
			runIpsetIn(cmd, nil, stdout, stderr, true)
		}
		prompt()
	}
	return 0
}

// runIpset runs one command (stdin: a restore's input).
func runIpset(cmd *ipset.Command, stdin io.Reader, stdout, stderr io.Writer) int {
	return runIpsetIn(cmd, stdin, stdout, stderr, false)
}

// runIpsetIn is runIpset; interactive: a line of interactive mode,
// where ipset prints errors even with -q (warnings not).
func runIpsetIn(cmd *ipset.Command, stdin io.Reader, stdout, stderr io.Writer, interactive bool) int {
	quiet := cmd.Opts.Quiet && !interactive
	fail := func(err error) int {
		if e, ok := err.(*ipset.Error); ok && e.Quiet && !interactive {
			quiet = true
		}
		if !quiet {
			fmt.Fprint(stderr, ipset.Format(err))
		}
		return ipset.StatusOf(err)
	}
	cmds := []*ipset.Command{cmd}
	restoreText := ""
	switch cmd.Op {
	case ipset.OpVersion:
		fmt.Fprintf(stdout, "ipset v%s, protocol version: 7\n", ipset.Version)
		return 0
	case ipset.OpQuit:
		return 0
	case ipset.OpHelp:
		if cmd.Opts.Quiet {
			fmt.Fprint(stdout, ipset.QuietHelp())
			return 0
		}
		if len(cmd.Args) == 0 {
			fmt.Fprint(stdout, ipset.Help())
			return 0
		}
		text, herr := ipset.TypeHelp(cmd.Args[0])
		if herr != nil {
			// ipset reports the error before it prints the help.
			rc := fail(herr)
			fmt.Fprint(stdout, text)
			return rc
		}
		fmt.Fprint(stdout, text)
		return 0
	case ipset.OpRestore:
		in := stdin
		size := 0
		if cmd.Opts.File != "" { // ("-" is a file name here, as for ipset)
			f, err := os.Open(cmd.Opts.File)
			if err != nil {
				return ipset.StatusNoInput
			}
			defer f.Close()
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				size = int(fi.Size())
			}
			in = f
		}
		var text strings.Builder
		text.Grow(size + 512)
		// ipset reads lines until it can read no more: a read error
		// (a directory given as the file) ends the input.
		_, _ = io.Copy(&text, in)
		restoreText = text.String()
	}
	conn, err := kernel.Open()
	if err != nil {
		// ipset fails at its first command: a restore at its first line,
		// with its refusal of the line if it refuses it as it reads it
		kerr := &ipset.Error{Msg: "Kernel error received: Operation not permitted", Status: ipset.StatusError}
		if cmd.Op == ipset.OpRestore {
			if first := ipset.RestoreCommands(restoreText); len(first) > 0 {
				if first[0].Err != nil {
					return fail(first[0].Err)
				}
				kerr.Line = first[0].Line
			}
		}
		return fail(kerr)
	}
	// (the command ends without waiting for the kernel to free what it
	// deleted: see kernel.Conn.Release)
	defer conn.Release()
	e := &setengine.Engine{Conn: conn}
	out := stdout
	if (cmd.Op == ipset.OpList || cmd.Op == ipset.OpSave) && cmd.Opts.File != "" {
		f, ferr := createOutput(cmd.Opts.File)
		if ferr != nil {
			return fail(ferr)
		}
		defer f.Close()
		out = f
	}
	if cmd.Op == ipset.OpList || cmd.Op == ipset.OpSave {
		// Streamed: the listing is printed as the kernel gives it.
		w := bufio.NewWriterSize(out, 64<<10)
		if err, ok := e.List(cmd, w); ok {
			w.Flush()
			if err != nil {
				return fail(err)
			}
			return 0
		}
	}
	var res setengine.Result
	handled := false
	listAt := -1 // the list or save in a restore read from a file (index in cmds)
	if cmd.Op == ipset.OpRestore {
		// New sets filled by the file: without the in-memory model.
		res, err, handled = e.Restore(restoreText, cmd.Opts.Exist)
		if !handled {
			// The general path builds the sets in memory once, briefly:
			// trade memory for less garbage collection.
			debug.SetGCPercent(400)
			cmds = ipset.RestoreCommands(restoreText)
			for _, c := range cmds {
				// The command line's options hold for every line (ipset
				// -q restore: test's "is in set" is no warning and does
				// not end the restore; -t, -s, -o for its listings),
				// its -f is the restore's input.
				o := cmd.Opts
				o.File = ""
				o.Merge(c.Opts)
				c.Opts = o
			}
			if cmd.Opts.File != "" {
				// ipset writes the listing of a restore read from a
				// file into that file, and reads no further
				for i, c := range cmds {
					if c.Op == ipset.OpList || c.Op == ipset.OpSave {
						cmds, listAt = cmds[:i+1], i
						break
					}
				}
			}
		}
	}
	if !handled {
		res, err = e.Run(cmds)
	}
	if listAt >= 0 && listingRead(cmds, listAt, err) {
		// (the listing's line was read: the file is rewritten)
		f, ferr := createOutput(cmd.Opts.File)
		if ferr != nil {
			return fail(ferr)
		}
		defer f.Close()
		out = f
	}
	fmt.Fprint(out, res.Stdout)
	if !cmd.Opts.Quiet {
		fmt.Fprint(stderr, res.Stderr) // (warnings)
	}
	if err != nil {
		// a restore that cannot reach the kernel fails at its first line
		if e, ok := err.(*ipset.Error); ok && cmd.Op == ipset.OpRestore && e.Line == 0 && e.Status != ipset.StatusUsage && len(cmds) > 0 && cmds[0].Line > 0 {
			e.Line = cmds[0].Line
		}
		if e, ok := err.(*ipset.Error); ok && (cmd.Op == ipset.OpTest || cmd.Op == ipset.OpRestore) && e.NotInSet {
			// "X is NOT in set Y." has no prefix. ipset makes it only
			// when not quiet: in interactive mode, where errors print
			// even with -q, the error without a message comes out as
			// its "Internal protocol error".
			switch {
			case interactive && cmd.Opts.Quiet:
				fmt.Fprint(stderr, ipset.Format(&ipset.Error{Msg: "Internal protocol error", Status: ipset.StatusError}))
			case !quiet && !e.Quiet:
				fmt.Fprintln(stderr, e.Msg)
			}
			return e.Status
		}
		return fail(err)
	}
	return 0
}

// listingRead reports whether ipset read restore line cmds[i], a list
// or save, before it stopped with err: err is nil or that line's, or
// the kernel's refusal of the run of adds (dels) to one set right
// before it, which ipset sends once it has read the next line.
func listingRead(cmds []*ipset.Command, i int, err error) bool {
	ie, ok := err.(*ipset.Error)
	if err == nil || ok && ie.Line >= cmds[i].Line {
		return true
	}
	if !ok || ipset.FromUserspace(ie) || ie.Msg == ipset.MsgNoSet {
		return false // (the set of an add is looked up as the line is read)
	}
	j := i - 1
	if j < 0 || cmds[j].Op != ipset.OpAdd && cmds[j].Op != ipset.OpDel {
		return false
	}
	for j > 0 && cmds[j-1].Op == cmds[j].Op && cmds[j-1].Args[0] == cmds[j].Args[0] {
		j--
	}
	return ie.Line >= cmds[j].Line
}

// createOutput creates list's or save's -f file.
func createOutput(name string) (*os.File, *ipset.Error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, &ipset.Error{Msg: "Cannot open " + name + " for writing: " + strerror(err), Status: ipset.StatusError}
	}
	return f, nil
}

// strerror is the C library's text for the error behind err
// ("No such file or directory").
func strerror(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	m := err.Error()
	if m == "" {
		return m
	}
	return strings.ToUpper(m[:1]) + m[1:]
}
