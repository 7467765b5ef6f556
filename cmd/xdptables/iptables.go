package main

import (
	"fmt"
	"os"

	"github.com/xdptables/xdptables/compat"
)

const (
	v4 = compat.IPv4
	v6 = compat.IPv6
)

func warnStderr(s string) { fmt.Fprint(os.Stderr, s) }

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
		fmt.Print(compat.Help(f))
		return 0
	default:
		fmt.Fprint(os.Stderr, compat.Format(err, prog, -1))
		return compat.StatusOf(err)
	}
	return execute(f, cmd)
}
