package main

import (
	"fmt"
	"os"

	"github.com/xdptables/xdptables/compat"
	"golang.org/x/sys/unix"
)

const (
	v4 = compat.IPv4
	v6 = compat.IPv6
)

// warnStderr prints a parser's notice on stderr. Our own notice about
// CHECKSUM, which iptables does not print, goes only to a terminal:
// Docker's daemon takes any output of iptables as a failure, and it adds
// a CHECKSUM rule for every SCTP port it publishes.
func warnStderr(s string) {
	if s == compat.ChecksumWarning && !stderrTerminal() {
		return
	}
	fmt.Fprint(os.Stderr, s)
}

// printStdout prints a restore's output (listings of its -L/-S lines).
func printStdout(s string) { fmt.Print(s) }

func stderrTerminal() bool {
	_, err := unix.IoctlGetTermios(int(os.Stderr.Fd()), unix.TCGETS)
	return err == nil
}

// iptablesMain is the iptables / ip6tables personality.
func iptablesMain(f compat.Family, args []string) int {
	prog := f.Prog()
	cmd, err := compat.Parse(f, args, compat.ParseOptions{Warn: warnStderr, Resolve: resolveHost, LookupSets: true})
	switch err {
	case nil:
	case compat.ErrVersion:
		fmt.Printf("%s v%s (nf_tables)\n", prog, compat.Version)
		return 0
	case compat.ErrHelp:
		fmt.Print(compat.Help(f) + compat.ExtHelp(cmd.HelpExts))
		return 0
	default:
		fmt.Fprint(os.Stderr, compat.Format(err, prog, -1))
		return compat.StatusOf(err)
	}
	return execute(f, cmd)
}
