package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// section returns the text of a man page section (.SH NAME up to the
// next .SH).
func section(page, name string) string {
	i := strings.Index(page, "\n.SH "+name+"\n")
	if i < 0 {
		return ""
	}
	rest := page[i+len(name)+6:]
	if j := strings.Index(rest, "\n.SH "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// plain strips roff escapes and font macros from man source, enough to
// search it for words.
func plain(src string) string {
	src = strings.NewReplacer(`\-`, "-", `\fR`, "", `\fP`, "", `\fB`, "", `\fI`, "", `\&`, "").Replace(src)
	src = regexp.MustCompile(`(?m)^\.(B|I|BR|RB|BI|IB|IR|RI|TP|PP|RS|RE|SS|br|TQ)\b ?`).ReplaceAllString(src, "")
	return strings.ReplaceAll(src, `"`, "")
}

// TestManPages: the pages are well-formed roff, document every command
// and personality the program has, and refer only to pages that exist.
func TestManPages(t *testing.T) {
	_, _, _, bin := packages(t)
	pages, err := filepath.Glob("../../man/*.8")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no man pages: %v", err)
	}
	have := map[string]bool{}
	text := map[string]string{}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".8")
		have[name] = true
		text[name] = string(b)
	}
	_, err = exec.LookPath("groff")
	groff := err == nil
	if !groff {
		t.Log("groff not installed: the pages are not rendered")
	}
	for name, src := range text {
		if !strings.HasPrefix(src, ".TH "+strings.ReplaceAll(strings.ToUpper(name), "-", `\-`)+" 8 ") {
			t.Errorf("%s: no .TH %s 8 header", name, strings.ToUpper(name))
		}
		for _, s := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"} {
			if section(src, s) == "" {
				t.Errorf("%s: no %s section", name, s)
			}
		}
		if n := strings.TrimSpace(section(src, "NAME")); !strings.HasPrefix(n, strings.ReplaceAll(name, "-", `\-`)+` \- `) {
			t.Errorf("%s: NAME line %q", name, n)
		}
		// references to our own pages resolve
		for _, m := range regexp.MustCompile(`xdptables(?:\\-[a-z0-9]+(?:\\-[a-z0-9]+)*)? ?\(8\)`).FindAllString(plain(src), -1) {
			ref := strings.TrimSpace(strings.TrimSuffix(strings.ReplaceAll(m, `\-`, "-"), "(8)"))
			if !have[ref] {
				t.Errorf("%s refers to %s(8), which is not in man/", name, ref)
			}
		}
		if groff {
			cmd := exec.Command("groff", "-man", "-ww", "-z", filepath.Join("../../man", name+".8"))
			if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
				t.Errorf("%s: groff -ww: %v\n%s", name, err, out)
			}
		}
	}

	main := text["xdptables"]
	personalities, commands := helpNames(t, bin)
	synopsis, cmds, desc := plain(section(main, "SYNOPSIS")), plain(section(main, "COMMANDS")), plain(section(main, "DESCRIPTION"))
	for _, c := range commands {
		if !regexp.MustCompile(`(?m)^xdptables ` + c + `\b`).MatchString(synopsis) {
			t.Errorf("xdptables(8) SYNOPSIS lacks xdptables %s", c)
		}
		if !regexp.MustCompile(`(?m)^` + c + `\b`).MatchString(cmds) {
			t.Errorf("xdptables(8) COMMANDS lacks %s", c)
		}
	}
	for _, p := range personalities {
		if !regexp.MustCompile(`(^|[\s,(])` + regexp.QuoteMeta(p) + `($|[\s,)])`).MatchString(desc) {
			t.Errorf("xdptables(8) DESCRIPTION does not name %s", p)
		}
	}
	// every subcommand of `xdptables xdp` and `xdptables persist`
	for c, usage := range map[string]string{"xdp": run0(bin, "xdp"), "persist": run0(bin, "persist")} {
		words := regexp.MustCompile(`(?m)^(?:  |Usage: xdptables `+c+` |       xdptables `+c+` )([a-z]+)\b`).FindAllStringSubmatch(usage, -1)
		if len(words) == 0 {
			t.Errorf("no subcommands in %s usage:\n%s", c, usage)
		}
		for _, w := range words {
			if w[1] == "COMMAND" {
				continue
			}
			if !regexp.MustCompile(`(?m)^` + c + ` ` + w[1] + `\b`).MatchString(cmds) {
				t.Errorf("xdptables(8) COMMANDS lacks %s %s", c, w[1])
			}
		}
	}
	// what differs from iptables, per the issue: layout, XDP, atomic restore
	for _, s := range []string{"KERNEL LAYOUT", "XDP FAST PATH", "BOOT", "FILES"} {
		if section(main, s) == "" {
			t.Errorf("xdptables(8) has no %s section", s)
		}
	}
	if !strings.Contains(plain(text["xdptables-iptables-restore"]), "The whole file is one transaction") {
		t.Errorf("xdptables-iptables-restore(8) does not say that a restore is one transaction")
	}
	// the package's ipset takeover, as each package does it
	ipsetPage := plain(text["xdptables-ipset"])
	for _, w := range []string{"dpkg-divert", "/usr/sbin/ipset.distrib", "conflicts with the distribution's ipset package"} {
		if !strings.Contains(strings.Join(strings.Fields(ipsetPage), " "), w) {
			t.Errorf("xdptables-ipset(8) does not say %q", w)
		}
	}
}

// run0 returns what a command prints, whatever its exit status.
func run0(name string, args ...string) string {
	out, _ := exec.Command(name, args...).CombinedOutput()
	return string(out)
}
