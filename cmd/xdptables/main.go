// Command xdptables is a multi-call binary: called as iptables,
// ip6tables, iptables-save, iptables-restore, ip6tables-save,
// ip6tables-restore or ipset (also with Debian's "-nft" infix) it acts as
// that tool; called as xdptables it offers its own subcommands.
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
	os.Exit(code)
}

func run(argv []string) int {
	if p := personality(argv[0]); p != "" {
		return personalities[p](progName(argv[0]), argv[1:])
	}
	return xdptablesMain(argv[1:])
}

func errorf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format, a...)
}
