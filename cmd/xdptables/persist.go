package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/pflag"
	"github.com/xdptables/xdptables/persist"
)

func persistUsage() {
	fmt.Fprint(os.Stderr, `Usage: xdptables persist restore [sets|rules|all] [--test] [FILE OPTIONS]
       xdptables persist save [--layout auto|debian|rhel] [FILE OPTIONS]
       xdptables persist files [FILE OPTIONS]

restore loads the saved ipsets and rules (as the boot units do): every
rules file is checked with --test first and nothing is loaded unless all
pass; each file is then loaded as one transaction. save writes the
current ruleset to the same files. files prints which files restore uses.

Files looked for (the first that exists per kind):
  /etc/iptables/ipsets    /etc/sysconfig/ipset
  /etc/iptables/rules.v4  /etc/sysconfig/iptables
  /etc/iptables/rules.v6  /etc/sysconfig/ip6tables

File options:
`)
}

// persistMain is `xdptables persist`: boot-time restore and save of the
// files netfilter-persistent / iptables-services use.
func persistMain(args []string) int {
	fs := pflag.NewFlagSet("persist", pflag.ContinueOnError)
	fs.SetInterspersed(true)
	var o persist.Options
	fs.StringVar(&o.Explicit[persist.RulesV4], "rules-v4", "", "IPv4 rules file (required to exist when given)")
	fs.StringVar(&o.Explicit[persist.RulesV6], "rules-v6", "", "IPv6 rules file (required to exist when given)")
	fs.StringVar(&o.Explicit[persist.Sets], "sets", "", "ipsets file (required to exist when given)")
	fs.StringVar(&o.Root, "root", "", "look for the default files under this directory")
	test := fs.Bool("test", false, "restore: only check the files")
	layout := fs.String("layout", "auto", "save: debian (/etc/iptables) or rhel (/etc/sysconfig)")
	fs.Usage = func() { persistUsage(); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 || len(rest) > 2 {
		fs.Usage()
		return 2
	}
	o.HaveIPSet = personality("ipset") != ""
	o.Log = os.Stderr
	if len(rest) == 2 {
		switch rest[1] {
		case "sets":
			o.Kinds = []persist.Kind{persist.Sets}
		case "rules":
			o.Kinds = []persist.Kind{persist.RulesV4, persist.RulesV6}
		case "all":
		default:
			fs.Usage()
			return 2
		}
	}
	r := selfRunner{}
	switch rest[0] {
	case "restore":
		if err := persist.Restore(o, r, *test); err != nil {
			errorf("xdptables persist: %v\n", err)
			return 1
		}
	case "save":
		l := persist.SaveLayout(o)
		switch *layout {
		case "debian":
			l = persist.Debian
		case "rhel":
			l = persist.RHEL
		case "auto":
		default:
			errorf("xdptables persist: unknown layout %q\n", *layout)
			return 2
		}
		if _, err := persist.Save(o, l, r); err != nil {
			errorf("xdptables persist: %v\n", err)
			return 1
		}
	case "files":
		files, err := persist.Find(o)
		if err != nil {
			errorf("xdptables persist: %v\n", err)
			return 1
		}
		for _, f := range files {
			fmt.Printf("%s\t%s\n", strings.ReplaceAll(f.Kind.String(), " ", "-"), f.Path)
		}
	default:
		fs.Usage()
		return 2
	}
	return 0
}

// selfRunner runs a personality as a child process of this binary, so
// that each restore is the same program, with the same messages and exit
// codes, as `iptables-restore FILE` run by hand.
type selfRunner struct{}

func (selfRunner) Run(tool string, args []string, in io.Reader, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, args...)
	cmd.Args[0] = tool
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, os.Stderr
	return cmd.Run()
}
