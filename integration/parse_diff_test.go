package integration

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
)

var update = flag.Bool("update", false, "rewrite golden files from the reference tools")

// TestParseDiff feeds every corpus line to the reference iptables-nft in
// a fresh namespace and to our parser and printer: the -S text of added
// rules, error messages and exit codes must be identical. With -update
// it rewrites the golden files that compat's unit tests replay.
func TestParseDiff(t *testing.T) {
	files, _ := filepath.Glob("../testdata/corpus/*.txt")
	if len(files) == 0 {
		t.Fatal("no corpus files")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			netns.RequireRoot(t)
			if !netns.Have("iptables-nft") {
				t.Fatal("reference iptables-nft is not installed (make test installs it)")
			}
			lines, err := ReadCorpus(file)
			if err != nil {
				t.Fatal(err)
			}
			ns := netns.New(t, "pd")
			var goldens []Golden
			for _, l := range lines {
				g, ok := runReference(t, ns, l)
				if !ok {
					continue
				}
				goldens = append(goldens, g)
				if msg := CheckGolden(g); msg != "" {
					t.Errorf("%s:%d: %s %s\n%s", filepath.Base(file), l.Line, l.Tool, strings.Join(l.Args, " "), msg)
				}
			}
			gpath := strings.TrimSuffix(file, ".txt") + ".golden.jsonl"
			if *update {
				if err := WriteGolden(gpath, goldens); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func runReference(t *testing.T, ns *netns.NS, l CorpusLine) (Golden, bool) {
	switch l.Tool {
	case "ipset":
		r := ns.Run("", append([]string{"ipset"}, l.Args...)...)
		if r.RC != 0 {
			t.Fatalf("line %d: ipset %v: rc %d %s", l.Line, l.Args, r.RC, r.Stderr)
		}
		return Golden{}, false
	case "iptables", "ip6tables":
	default:
		t.Fatalf("line %d: unknown tool %q", l.Line, l.Tool)
	}
	ref := l.Tool + "-nft"
	fam := compat.IPv4
	if l.Tool == "ip6tables" {
		fam = compat.IPv6
	}
	// what the chain held before, to find the added rules
	cmd, perr := compat.Parse(fam, l.Args, compat.ParseOptions{})
	var before []string
	if perr == nil && (cmd.Op == compat.OpAppend || cmd.Op == compat.OpInsert) {
		before = ruleLines(ns.Run("", ref, "-t", cmd.Table, "-S", cmd.Chain).Stdout)
	}
	r := ns.Run("", append([]string{ref}, l.Args...)...)
	g := Golden{Line: l.Line, Tool: l.Tool, Args: l.Args, RC: r.RC, Stderr: r.Stderr}
	if r.RC == 0 && perr == nil && (cmd.Op == compat.OpAppend || cmd.Op == compat.OpInsert) {
		after := ruleLines(ns.Run("", ref, "-t", cmd.Table, "-S", cmd.Chain).Stdout)
		g.Rules = addedRules(before, after, cmd)
	}
	return g, true
}

func ruleLines(out string) []string {
	var rules []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "-A ") {
			rules = append(rules, l)
		}
	}
	return rules
}

// addedRules picks the rules a command added from the chain listing.
func addedRules(before, after []string, cmd *compat.Command) []string {
	n := len(after) - len(before)
	if n <= 0 {
		return nil
	}
	if cmd.Op == compat.OpAppend {
		return after[len(after)-n:]
	}
	start := cmd.RuleNum - 1
	if start+n > len(after) {
		return after[len(after)-n:]
	}
	return after[start : start+n]
}

// CheckGolden compares our parser and printer with one reference result
// and returns a description of the difference, or "".
func CheckGolden(g Golden) string {
	fam := compat.IPv4
	if g.Tool == "ip6tables" {
		fam = compat.IPv6
	}
	var warn strings.Builder
	cmd, err := compat.Parse(fam, g.Args, compat.ParseOptions{Warn: func(s string) { warn.WriteString(s) }})
	if err != nil {
		got := warn.String() + compat.Format(err, fam.Prog(), -1)
		if err == compat.ErrVersion || err == compat.ErrHelp {
			return ""
		}
		if g.RC == 0 {
			return "reference accepted it, we fail with:\n" + got
		}
		if got != g.Stderr || compat.StatusOf(err) != g.RC {
			return "error differs:\nref (rc " + itoa(g.RC) + "):\n" + g.Stderr + "ours (rc " + itoa(compat.StatusOf(err)) + "):\n" + got
		}
		return ""
	}
	if g.RC != 0 {
		if kernelLevelError(g) {
			return ""
		}
		return "reference failed (rc " + itoa(g.RC) + "):\n" + g.Stderr + "we accepted it"
	}
	if g.Rules == nil {
		return ""
	}
	var ours []string
	for _, r := range cmd.Rules {
		ours = append(ours, compat.SaveRule(cmd.Chain, r, false))
	}
	if strings.Join(ours, "\n") != strings.Join(g.Rules, "\n") {
		return "print differs:\nref:  " + strings.Join(g.Rules, "\n      ") + "\nours: " + strings.Join(ours, "\n      ")
	}
	return ""
}

// kernelLevelError says whether a reference failure depends on kernel
// state (missing chain, kernel refusal) rather than on parsing.
func kernelLevelError(g Golden) bool {
	return g.RC == 1 || g.RC == 4 || strings.Contains(g.Stderr, "does not exist") ||
		strings.Contains(g.Stderr, "doesn't exist")
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }

func fmtInt(i int) string {
	if i < 0 {
		return "-" + fmtInt(-i)
	}
	if i < 10 {
		return string(rune('0' + i))
	}
	return fmtInt(i/10) + string(rune('0'+i%10))
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}
