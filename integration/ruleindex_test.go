package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/ruleset"
)

// The rule index (ruleset/index.go) lets -C and -D find a rule without
// dumping its chain. testdata/scripts/ruleindex.txt runs in TestScriptDiff
// against the reference; here the same script runs with xdptables alone
// and, after every line, the index of every table it claims to cover must
// agree with a full read of the chains.

// indexEngines opens an engine per family inside ns.
func indexEngines(t *testing.T, ns *netns.NS) map[compat.Family]*ruleset.Engine {
	t.Helper()
	out := map[compat.Family]*ruleset.Engine{}
	for _, f := range []compat.Family{compat.IPv4, compat.IPv6} {
		fd, err := os.Open("/run/netns/" + ns.Name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := kernel.Open(kernel.WithNetNS(int(fd.Fd())))
		fd.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		out[f] = &ruleset.Engine{Conn: c, Family: f}
	}
	return out
}

// checkIndex fails t when an index disagrees with the chains; it returns
// what CheckIndex found, per family.
func checkIndex(t *testing.T, es map[compat.Family]*ruleset.Engine, where string, exactHints bool) map[compat.Family]ruleset.IndexReport {
	t.Helper()
	out := map[compat.Family]ruleset.IndexReport{}
	for f, e := range es {
		rep, err := e.CheckIndex()
		if err != nil {
			t.Fatalf("%s: %v index: %v", where, f, err)
		}
		if exactHints && rep.Exact != rep.Hints {
			t.Errorf("%s: %v index: %d of %d handle hints are right", where, f, rep.Exact, rep.Hints)
		}
		out[f] = rep
	}
	return out
}

func TestRuleIndexScript(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	file := "../testdata/scripts/ruleindex.txt"
	if f := os.Getenv("XDPT_INDEX_SCRIPT"); f != "" {
		file = f // another script, in testdata/scripts
	}
	lines, err := ReadCorpus(file)
	if err != nil {
		t.Fatal(err)
	}
	ns := netns.New(t, "index")
	es := indexEngines(t, ns)
	// the chains of the filter table the script leaves indexed, at some
	// lines: a restore indexes large and empty chains, a new chain is
	// indexed, a renamed one is not, a chain read in full (-D N) becomes
	// indexed, -F of every chain indexes all
	wantIndexed := map[string][]string{
		"iptables -A INPUT -s 192.0.2.1 -j ACCEPT":                       {"INPUT"},
		"iptables-restore < restore/index-base.rules":                    {"BIG", "FORWARD", "OUTPUT"},
		"iptables -D BIG -s 10.0.0.3 -p tcp --dport 3 -j ACCEPT":         {"BIG", "FORWARD", "OUTPUT"},
		"iptables -A BIG -c 5 100 -s 1.2.3.4 -j ACCEPT":                  {"BIG", "FORWARD", "OUTPUT"},
		"iptables -N OTHER":                                              {"BIG", "FORWARD", "OTHER", "OUTPUT"},
		"iptables -E OTHER OTHER2":                                       {"BIG", "FORWARD", "OUTPUT"},
		"iptables -X OTHER2":                                             {"BIG", "FORWARD", "OUTPUT"},
		"iptables -F":                                                    {"BIG", "FORWARD", "INPUT", "OUTPUT", "SMALL"},
		"iptables-restore --noflush < restore/index-noflush-chain.rules": {"BIG", "FORWARD", "INPUT", "OUTPUT", "SMALL"},
	}
	for _, l := range lines {
		args := l.Args
		stdin := ""
		if n := len(args); n >= 2 && args[n-2] == "<" {
			data, err := os.ReadFile(filepath.Join("../testdata/scripts", args[n-1]))
			if err != nil {
				t.Fatal(err)
			}
			stdin, args = string(data), args[:n-2]
		}
		r := ns.Run(stdin, append([]string{filepath.Join(dir, l.Tool)}, args...)...)
		text := l.Tool + " " + strings.Join(l.Args, " ")
		where := fmt.Sprintf("%s:%d: %s (rc %d %s)", filepath.Base(file), l.Line, text, r.RC, strings.TrimSpace(r.Stderr))
		rep := checkIndex(t, es, where, true)[compat.IPv4]
		if !slices.Contains(rep.Valid, "filter") {
			t.Errorf("%s: filter index not valid (%v)", where, rep.Valid)
		}
		if want, ok := wantIndexed[text]; ok {
			var got []string
			for _, c := range rep.Indexed {
				if n, ok := strings.CutPrefix(c, "filter."); ok {
					got = append(got, n)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: indexed chains %v, want %v", where, got, want)
			}
		}
	}
}

// TestRuleIndexIpset: ipset commands, which change sets but no rule (or
// put the same rules back), keep the index valid.
func TestRuleIndexIpset(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	ns := netns.New(t, "indexset")
	es := indexEngines(t, ns)
	// (rules with -m set are left out: CheckIndex, in this process,
	// cannot translate them back)
	steps := [][]string{
		{"ipset", "create", "ix", "hash:ip"},
		{"iptables", "-N", "S"},
		{"iptables", "-A", "S", "-s", "198.51.100.3", "-j", "DROP"},
		{"ipset", "add", "ix", "198.51.100.1"},
		{"iptables", "-C", "S", "-s", "198.51.100.3", "-j", "DROP"},
		{"ipset", "create", "ix2", "hash:ip", "maxelem", "10"},
		{"ipset", "swap", "ix", "ix2"},
		{"iptables", "-A", "S", "-s", "198.51.100.4", "-j", "DROP"},
		{"ipset", "destroy", "ix2"},
		{"iptables", "-D", "S", "-s", "198.51.100.4", "-j", "DROP"},
		{"iptables", "-D", "S", "-s", "198.51.100.3", "-j", "DROP"},
	}
	for i, s := range steps {
		r := ns.Run("", append([]string{filepath.Join(dir, s[0])}, s[1:]...)...)
		where := strings.Join(s, " ")
		if r.RC != 0 {
			t.Fatalf("%s: rc %d: %s", where, r.RC, r.Stderr)
		}
		rep := checkIndex(t, es, where, true)[compat.IPv4]
		if !slices.Contains(rep.Valid, "filter") || (i > 0 && !slices.Contains(rep.Indexed, "filter.S")) {
			t.Errorf("%s: filter.S not indexed (%+v)", where, rep)
		}
	}
}

// TestRuleIndexConcurrent runs writers that add and delete rules of one
// chain at the same time (each command retried on a concurrent commit)
// and -C readers, then checks the index.
func TestRuleIndexConcurrent(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	ns := netns.New(t, "indexconc")
	es := indexEngines(t, ns)
	ipt := filepath.Join(dir, "iptables")
	var rules strings.Builder
	rules.WriteString("*filter\n:C - [0:0]\n")
	for i := range 500 {
		fmt.Fprintf(&rules, "-A C -s 198.18.%d.%d/32 -j ACCEPT\n", i/256, i%256)
	}
	rules.WriteString("COMMIT\n")
	if r := ns.Run(rules.String(), filepath.Join(dir, "iptables-restore")); r.RC != 0 {
		t.Fatalf("restore: %s", r.Stderr)
	}
	checkIndex(t, es, "after restore", true)
	const n = 60
	scripts := []string{
		// adds, then deletes by spec what it added
		`for i in $(seq 1 %[1]d); do %[2]s -A C -s 198.19.1.$i -j DROP; done; for i in $(seq 1 %[1]d); do %[2]s -D C -s 198.19.1.$i -j DROP || echo "D $i" >&2; done`,
		// deletes restored rules by spec and puts them back at the head
		`for i in $(seq 1 %[1]d); do %[2]s -D C -s 198.18.0.$i -j ACCEPT || echo "D $i" >&2; %[2]s -I C -s 198.18.0.$i -j ACCEPT; done`,
		// duplicates
		`for i in $(seq 1 %[1]d); do %[2]s -A C -j RETURN; done; for i in $(seq 1 %[1]d); do %[2]s -D C -j RETURN || echo "D $i" >&2; done`,
		// a reader: every restored rule is always there
		`for i in $(seq 100 $((100 + %[1]d))); do %[2]s -C C -s 198.18.0.$i -j ACCEPT || echo "C $i" >&2; done`,
	}
	var wg sync.WaitGroup
	res := make([]netns.Result, len(scripts))
	for i, s := range scripts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = ns.RunTimeout(600, "", "sh", "-c", fmt.Sprintf(s, n, ipt))
		}()
	}
	wg.Wait()
	for i, r := range res {
		if r.RC != 0 || r.Stderr != "" {
			t.Errorf("writer %d: rc %d: %s", i, r.RC, r.Stderr)
		}
	}
	rep := checkIndex(t, es, "after the writers", true)[compat.IPv4]
	if !slices.Contains(rep.Indexed, "filter.C") {
		t.Errorf("filter.C not indexed after the writers: %+v", rep)
	}
	if got := len(chainRuleLines(t, ns, ipt, "C")); got != 500 {
		t.Errorf("%d rules left, want 500", got)
	}
}
