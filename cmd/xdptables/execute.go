package main

import (
	"fmt"
	"os"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/ruleset"
)

func openEngine(f compat.Family) (*ruleset.Engine, error) {
	conn, err := kernel.Open()
	if err != nil {
		return nil, compat.Errorf(compat.StatusResource, "Could not fetch rule set generation id: Permission denied (you must be root)")
	}
	return &ruleset.Engine{Conn: conn, Family: f}, nil
}

// execute runs a parsed command against the kernel.
func execute(f compat.Family, cmd *compat.Command) int {
	e, err := openEngine(f)
	if err == nil {
		// (no wait for the kernel to free what the command deleted:
		// see kernel.Release)
		defer releaseConns(e.Conn)
		var out string
		if cmd.Op == compat.OpList || cmd.Op == compat.OpListRules {
			// extensions' notices while they print rules (libxt_connlabel)
			compat.PrintWarn = warnStderr
		}
		out, err = e.Command(cmd)
		compat.PrintWarn = nil
		fmt.Print(out)
		if err == nil && (cmd.Op == compat.OpList || cmd.Op == compat.OpListRules) {
			for _, w := range e.Warnings(false) {
				fmt.Fprint(os.Stderr, w)
			}
		}
	}
	if err != nil {
		fmt.Fprint(os.Stderr, compat.Format(err, f.Prog(), -1))
		return compat.StatusOf(err)
	}
	return 0
}

// applyRestore commits a restore file as one transaction.
func applyRestore(f compat.Family, prog string, input ruleset.RestoreSource, ro compat.RestoreOptions, a restoreArgs) int {
	e, err := openEngine(f)
	if err == nil {
		defer releaseConns(e.Conn)
		err = e.RestoreInput(input, ruleset.RestoreOptions{Noflush: a.noflush, Counters: a.counters, Verbose: a.verbose, Print: printStdout}, ro)
	}
	if err != nil {
		fmt.Fprint(os.Stderr, compat.FormatRestore(err, prog))
		return compat.StatusOfRestore(err)
	}
	return 0
}

// kernelReadable reports whether this process may read the nftables
// ruleset (it is root or has CAP_NET_ADMIN).
func kernelReadable() bool {
	conn, err := lookupConn()
	if err != nil {
		return false
	}
	_, err = conn.GenID()
	return err == nil
}
