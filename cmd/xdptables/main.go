// Command xdptables is a multi-call binary: called as iptables,
// ip6tables, iptables-save, iptables-restore, ip6tables-save,
// ip6tables-restore or ipset (also with Debian's "-nft" infix) it acts as
// that tool; called as xdptables it offers its own subcommands.
//
// A command lives for milliseconds, a restore for seconds: the runtime's
// watch for a changed CPU limit (a goroutine and a channel made at every
// start, about 1% of one) is of no use to it.
//
//go:debug updatemaxprocs=0
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/xdptables/xdptables/kernel"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "0.1.0-dev"

// personalities maps the names we answer to onto their entry points.
// Each gets the program name it was invoked under (for messages that
// name it, as iptables-restore's do) and the arguments.
var personalities = map[string]func(prog string, args []string) int{
	"iptables":          func(_ string, a []string) int { return iptablesMain(v4, a) },
	"ip6tables":         func(_ string, a []string) int { return iptablesMain(v6, a) },
	"iptables-save":     func(p string, a []string) int { return saveMain(v4, p, a) },
	"ip6tables-save":    func(p string, a []string) int { return saveMain(v6, p, a) },
	"iptables-restore":  func(p string, a []string) int { return restoreMain(v4, p, a) },
	"ip6tables-restore": func(p string, a []string) int { return restoreMain(v6, p, a) },
	"ipset":             ipsetMain,
}

// personality maps an argv[0] base name to a canonical tool name:
// "iptables-nft-restore" → "iptables-restore", "iptables-nft" → "iptables".
func personality(name string) string {
	name = filepath.Base(name)
	name = strings.Replace(name, "-nft", "", 1)
	if _, ok := personalities[name]; ok {
		return name
	}
	return ""
}

func main() {
	if kernel.IsReleaseKeeper(os.Args) {
		// started by kernel.Conn.Release of a command that just ended
		kernel.KeepReleased()
		return
	}
	code := run(os.Args)
	releaseConns() // (the parsers' socket of a command that ended before its own)
	for _, f := range atExit {
		f()
	}
	os.Exit(code)
}

// atExit runs before the command exits (the profile hooks of a build
// with -tags pprof).
var atExit []func()

// multiName is Debian's multi-call binary of iptables-nft, which runs the
// tool its first argument names (the links in /usr/sbin point at it).
const multiName = "xtables-nft-multi"

// multiSubcommands are the tools xtables-nft-multi runs that xdptables
// has, in the order its error lists them: the names of the personalities
// with and without -nft, and main4/save4/restore4 (…6) for them.
var multiSubcommands = []struct{ name, personality string }{
	{"iptables", "iptables"}, {"iptables-nft", "iptables"}, {"main4", "iptables"},
	{"save4", "iptables-save"}, {"restore4", "iptables-restore"},
	{"iptables-save", "iptables-save"}, {"iptables-restore", "iptables-restore"},
	{"iptables-nft-save", "iptables-save"}, {"iptables-nft-restore", "iptables-restore"},
	{"ip6tables", "ip6tables"}, {"ip6tables-nft", "ip6tables"}, {"main6", "ip6tables"},
	{"save6", "ip6tables-save"}, {"restore6", "ip6tables-restore"},
	{"ip6tables-save", "ip6tables-save"}, {"ip6tables-restore", "ip6tables-restore"},
	{"ip6tables-nft-save", "ip6tables-save"}, {"ip6tables-nft-restore", "ip6tables-restore"},
}

// multiMain is xtables-nft-multi: `xtables-nft-multi iptables -L` runs
// iptables, under the name given (restore4's messages say "restore4").
func multiMain(args []string) int {
	if len(args) > 0 {
		name := filepath.Base(args[0])
		for _, sc := range multiSubcommands {
			if sc.name == name {
				return personalities[sc.personality](name, args[1:])
			}
		}
	}
	var b strings.Builder
	b.WriteString("ERROR: No valid subcommand given.\nValid subcommands:\n")
	for _, sc := range multiSubcommands {
		b.WriteString(" * " + sc.name + "\n")
	}
	errorf("%s", b.String())
	return 1
}

func run(argv []string) int {
	if filepath.Base(argv[0]) == multiName {
		return multiMain(argv[1:])
	}
	if p := personality(argv[0]); p != "" {
		return personalities[p](progName(argv[0]), argv[1:])
	}
	return xdptablesMain(argv[1:])
}

func errorf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format, a...)
}
