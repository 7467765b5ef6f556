package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/pflag"
)

type subcommand struct {
	summary string
	run     func(args []string) int
}

func subcommands() map[string]subcommand {
	return map[string]subcommand{
		"links": {"links DIR: create symlinks named after every personality in DIR", linksMain},
		"canon": {"canon FILE: print an iptables-save file in canonical form", canonMain},
		"xdp":   {"xdp attach|detach|apply|sync|status: the XDP fast path of raw PREROUTING", xdpMain},

		"persist": {"persist restore|save|files: boot-time restore and save of /etc/iptables/rules.v4 etc.", persistMain},

		"translate": {"translate iptables|ip6tables|iptables-restore|ip6tables-restore|ipset restore ...: print the nftables script", translateMain},
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "Usage: xdptables [--version] [--help] COMMAND [ARGS...]\n\n")
	fmt.Fprintf(os.Stderr, "Personalities (also reachable through a symlink of that name):\n")
	var names []string
	for n := range personalities {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %s\n", n)
	}
	fmt.Fprintf(os.Stderr, "\nCommands:\n")
	subs := subcommands()
	names = names[:0]
	for n := range subs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, subs[n].summary)
	}
}

func xdptablesMain(args []string) int {
	fs := pflag.NewFlagSet("xdptables", pflag.ContinueOnError)
	fs.SetInterspersed(false)
	showVersion := fs.BoolP("version", "V", false, "print the xdptables version")
	help := fs.BoolP("help", "h", false, "show this help")
	fs.Usage = usage
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Printf("xdptables %s\n", version)
		return 0
	}
	rest := fs.Args()
	if *help || len(rest) == 0 {
		usage()
		if *help {
			return 0
		}
		return 2
	}
	if p := personality(rest[0]); p != "" && rest[0] == p {
		return personalities[p](rest[0], rest[1:])
	}
	sub, ok := subcommands()[rest[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "xdptables: unknown command %q\n", rest[0])
		usage()
		return 2
	}
	return sub.run(rest[1:])
}

func linksMain(args []string) int {
	fs := pflag.NewFlagSet("links", pflag.ContinueOnError)
	force := fs.BoolP("force", "f", false, "replace existing files")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: xdptables links [--force] DIR\n\nCreates DIR/iptables, DIR/ip6tables, ... as symlinks to this binary.\n")
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
	self, err := os.Executable()
	if err != nil {
		errorf("xdptables: %v\n", err)
		return 1
	}
	dir := fs.Arg(0)
	var names []string
	for n := range personalities {
		names = append(names, n)
	}
	sort.Strings(names)
	names = append(names, multiName)
	for _, n := range names {
		for i, alias := range []string{n, nftName(n)} {
			if i == 1 && alias == n {
				continue // ipset and the multi-call name have no -nft name
			}
			dst := filepath.Join(dir, alias)
			if *force {
				_ = os.Remove(dst)
			}
			if err := os.Symlink(self, dst); err != nil {
				errorf("xdptables: %v\n", err)
				return 1
			}
		}
	}
	return 0
}

// nftName is Debian's name for a personality: iptables-nft-restore.
func nftName(n string) string {
	switch n {
	case "ipset", multiName:
		return n
	case "iptables", "ip6tables":
		return n + "-nft"
	}
	base, suffix, _ := cut(n, "-")
	return base + "-nft-" + suffix
}

func cut(s, sep string) (string, string, bool) {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}
