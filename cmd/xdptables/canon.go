package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"github.com/xdptables/xdptables/compat"
)

// canonMain prints a restore file the way iptables-save prints the
// ruleset after loading it: canonical rule spelling, chain order, and
// (with -c) counters. It works on the file alone: only chain
// declarations and -A/-N lines, as iptables-save files hold, are taken.
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
	now := time.Now()
	for _, t := range tables {
		st, err := canonTable(t)
		if err != nil {
			fmt.Fprintln(os.Stderr, "xdptables canon:", err)
			return 1
		}
		if err := compat.WriteSave(os.Stdout, "iptables-save", st, *counters, now); err != nil {
			return 1
		}
	}
	return 0
}

func canonTable(t *compat.RestoreTable) (*compat.SaveTable, error) {
	st := &compat.SaveTable{Name: t.Name}
	byName := map[string]*compat.SaveChain{}
	get := func(name string) *compat.SaveChain {
		if c, ok := byName[name]; ok {
			return c
		}
		c := &compat.SaveChain{Name: name, Policy: "-"}
		if compat.IsBuiltin(t.Name, name) {
			c.Policy = compat.VerdictAccept
		}
		byName[name] = c
		st.Chains = append(st.Chains, c)
		return c
	}
	for _, d := range t.Chains {
		c := get(d.Name)
		if compat.IsBuiltin(t.Name, d.Name) && d.Policy != "-" {
			c.Policy = d.Policy
		}
		c.Counters = d.Counters
	}
	for _, rc := range t.Cmds {
		switch rc.Cmd.Op {
		case compat.OpAppend:
			c, ok := byName[rc.Cmd.Chain]
			if !ok {
				return nil, fmt.Errorf("line %d: chain %s was not declared", rc.Line, rc.Cmd.Chain)
			}
			c.Rules = append(c.Rules, rc.Cmd.Rules...)
		case compat.OpNewChain:
			get(rc.Cmd.Chain)
		default:
			return nil, fmt.Errorf("line %d: only chain declarations, -N and -A lines are supported here", rc.Line)
		}
	}
	compat.SortChains(t.Name, st.Chains)
	return st, nil
}
