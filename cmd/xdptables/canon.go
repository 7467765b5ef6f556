package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ruleset"
)

// canonMain prints a restore file the way iptables-save prints the
// ruleset after restoring it into empty tables: canonical rule
// spelling, chain order, and (with -c) counters. It works on the file
// alone, with iptables' semantics for every command the file holds.
func canonMain(args []string) int {
	fs := pflag.NewFlagSet("canon", pflag.ContinueOnError)
	six := fs.BoolP("ipv6", "6", false, "the file is an ip6tables-save file")
	counters := fs.BoolP("counters", "c", false, "keep [packets:bytes] counters")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: xdptables canon [-6] [-c] FILE\n\nPrints FILE in the canonical form iptables-save would print after restoring it.\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	f, prog := compat.IPv4, "iptables-restore"
	if *six {
		f, prog = compat.IPv6, "ip6tables-restore"
	}
	fh, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "Can't open %s: %s\n", fs.Arg(0), errnoText(err))
		return 1
	}
	defer fh.Close()
	tables, err := compat.ParseRestore(fh, compat.RestoreOptions{Family: f, Prog: prog, Counters: *counters, Warn: warnStderr, Resolve: resolveHost})
	if err != nil {
		fmt.Fprint(os.Stderr, compat.FormatRestore(err, prog))
		return compat.StatusOfRestore(err)
	}
	// each section applied to an empty table, as a restore would (a
	// table given twice: the second section replaces the first)
	views := map[string]*ruleset.View{}
	for _, t := range tables {
		v := ruleset.NewView(f, t.Name)
		if err := v.ApplySection(t, ruleset.RestoreOptions{Counters: *counters}); err != nil {
			fmt.Fprint(os.Stderr, compat.FormatRestore(err, prog))
			return compat.StatusOfRestore(err)
		}
		views[t.Name] = v
	}
	now := time.Now()
	for _, name := range compat.Tables {
		if v := views[name]; v != nil {
			if err := compat.WriteSave(os.Stdout, "iptables-save", v.Save(), *counters, now); err != nil {
				return 1
			}
		}
	}
	return 0
}
