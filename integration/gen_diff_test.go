package integration

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestGeneratedRulesDiff applies generated rules (rulegen.go) one by one
// with the reference iptables-nft in one namespace and with ours in
// another, for both families, and compares every command's output and
// exit status; then the listings of every table (save, save -c, -S,
// -S -v, -L -n -v -x --line-numbers), -C of every rule, -D by spec of a
// random half and the save after it; then the rules the reference took,
// as one iptables-restore file into fresh namespaces, and the save of
// that. XDPT_GEN_SEED (a comma list of seeds) and XDPT_GEN_N (rules per
// seed and family) choose other runs than the default.
func TestGeneratedRulesDiff(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") {
		t.Fatal("reference iptables-nft is not installed")
	}
	seeds := envSeeds(t, "XDPT_GEN_SEED", 1, 2, 3)
	n := envInt(t, "XDPT_GEN_N", 60)
	for _, seed := range seeds {
		for _, tool := range []string{"iptables", "ip6tables"} {
			t.Run(fmt.Sprintf("%s/seed=%d", tool, seed), func(t *testing.T) {
				genDiff(t, GenerateRules(tool, seed, n), seed)
			})
		}
	}
}

func genDiff(t *testing.T, c GenCase, seed uint64) {
	label := fmt.Sprintf("%s seed %d", c.Tool, seed)
	p := newScriptDiff(t)
	p.label, p.known = label, genKnown
	for _, l := range c.Setup {
		p.run(l, "")
	}
	// the rules as commands: mostly -A, some -I at a place that exists
	// (now and then one past it)
	r := rand.New(rand.NewPCG(seed, 1))
	count := map[string]int{}
	var took []GenRule
	for i, rule := range c.Rules {
		key := rule.Table + " " + rule.Chain
		op := "-A"
		if r.IntN(5) == 0 {
			op = "-I"
			rule.Pos = 1 + r.IntN(count[key]+1)
			if r.IntN(10) == 0 {
				rule.Pos = count[key] + 2
			}
		}
		a, b := p.run(CorpusLine{Line: i + 1, Tool: c.Tool, Args: rule.Args(op)}, "")
		if a.RC == 0 && b.RC != 0 && genKnown(a, b) {
			// documented: the rule stays out of the reference too
			if r := p.ref.Run("", append([]string{strings.Replace(c.Tool, "tables", "tables-nft", 1)}, rule.Args("-D")...)...); r.RC != 0 {
				t.Fatalf("reference %s -D: %s", c.Tool, r.Stderr)
			}
		} else if a.RC == 0 {
			count[key] += rule.Count()
			took = append(took, rule)
		}
		c.Rules[i] = rule
	}
	t.Logf("%s: the reference took %d of %d rules", label, len(took), len(c.Rules))
	p.listings(c.Tool, 0)
	for i, rule := range c.Rules {
		p.run(CorpusLine{Line: i + 1, Tool: c.Tool, Args: rule.Args("-C")}, "")
	}
	for i, rule := range took {
		if r.IntN(2) == 0 {
			p.run(CorpusLine{Line: 10000 + i, Tool: c.Tool, Args: rule.Args("-D")}, "")
		}
	}
	p.run(CorpusLine{Line: 20000, Tool: c.Tool + "-save"}, "")

	// the rules the reference took, as one restore file, in fresh namespaces
	q := newScriptDiff(t)
	q.label, q.known = label+" restore", genKnown
	for _, l := range c.Setup {
		if l.Tool == "ipset" {
			q.run(l, "")
		}
	}
	file := RestoreFile(took)
	if _, b := q.run(CorpusLine{Line: 30000, Tool: c.Tool + "-restore"}, file); genKnown(netns.Result{}, b) {
		return
	}
	q.listings(c.Tool, 30000)
	if t.Failed() {
		t.Logf("restore file:\n%s", file)
	}
}

// genKnownText are the messages of what xdptables documents it cannot do
// (docs/extensions.md): targets the kernel binds to a table of another
// name whose instance has no exact nftables form, raw chains whose CT
// --helper rules cannot be mirrored after conntrack, and -j SET on sets
// of net types.
var genKnownText = []string{"cannot run in the xdptables table", "has CT --helper rules, whose helpers are assigned after conntrack",
	"the nftables backend cannot update it from rules"}

// genKnown tells a difference where ours gives one of genKnownText.
func genKnown(a, b netns.Result) bool {
	for _, k := range genKnownText {
		if strings.Contains(b.Stderr, k) && !strings.Contains(a.Stderr, k) {
			return true
		}
	}
	return false
}

// listings compares the save (plain and -c) and, for every table, -S,
// -S -v and -L -n -v -x --line-numbers.
func (p *scriptDiff) listings(tool string, line int) {
	p.run(CorpusLine{Line: line, Tool: tool + "-save"}, "")
	p.run(CorpusLine{Line: line, Tool: tool + "-save", Args: []string{"-c"}}, "")
	for _, tb := range genTables {
		p.run(CorpusLine{Line: line, Tool: tool, Args: []string{"-t", tb.name, "-S"}}, "")
		p.run(CorpusLine{Line: line, Tool: tool, Args: []string{"-t", tb.name, "-S", "-v"}}, "")
		p.run(CorpusLine{Line: line, Tool: tool, Args: []string{"-t", tb.name, "-L", "-n", "-v", "-x", "--line-numbers"}}, "")
	}
}
