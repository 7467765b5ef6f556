package translate

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
)

// knownLossy are rules whose exact text is not exact yet. NFQUEUE: a
// balance over 65536 queues wraps the kernel's 16-bit queue count to 0
// and prints as --queue-num 0, and targets have no ExactSaver (print.go
// uses Save for them).
var knownLossy = map[string]bool{
	"iptables -A INPUT -j NFQUEUE --queue-balance 0:65535": true,
}

// TestExactSpecCorpus: every rule of the match corpora that parses is
// stored as its exact text (userdata) and read back by re-parsing it;
// the re-parsed rule must translate to the same expressions and print
// the same -S text, or the rule would read back as foreign.
func TestExactSpecCorpus(t *testing.T) {
	n := 0
	files := []string{"matches_a.txt", "matches_b.txt", "matches_c.txt", "targets.txt", "targets_b.txt", "u32.txt", "sctp.txt"}
	eachCorpusRule(t, files, func(c corpusRule) {
		file, line, text, fam, table, r := c.file, c.line, c.text, c.fam, c.table, c.rule
		want, err := ExprsIn(table, c.chain, r)
		if err != nil {
			return
		}
		ud, err := UserData(r)
		if err != nil {
			return // too long for userdata: refused when added
		}
		n++
		back, err := FromKernel(fam, table, c.chain, want, ud)
		if err != nil && knownLossy[text] {
			t.Logf("%s:%d: %s: reads back as foreign (known)", file, line, text)
			return
		}
		if err != nil {
			t.Errorf("%s:%d: %s: reads back as foreign (stored %q)", file, line, text, compat.ExactSpec(r))
			return
		}
		if a, b := compat.SaveRule(c.chain, r, false), compat.SaveRule(c.chain, back, false); a != b {
			t.Errorf("%s:%d: -S %q reads back as %q", file, line, a, b)
		}
	})
	if n < 300 {
		t.Errorf("only %d corpus rules checked", n)
	}
}

// corpusRule is one -A line of a corpus file that parses into one rule.
type corpusRule struct {
	file, text   string
	line         int
	fam          compat.Family
	table, chain string
	rule         *compat.Rule
}

// eachCorpusRule calls fn for every -A line of the corpus files that
// parses into one rule.
func eachCorpusRule(t *testing.T, files []string, fn func(c corpusRule)) {
	t.Helper()
	for _, file := range files {
		f, err := os.Open("../testdata/corpus/" + file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			text := sc.Text()
			words := compat.RestoreWords(text)
			if len(words) < 2 || strings.HasPrefix(text, "#") {
				continue
			}
			fam := compat.IPv4
			switch words[0] {
			case "ip6tables":
				fam = compat.IPv6
			case "iptables":
			default:
				continue
			}
			table := "filter"
			args := words[1:]
			if len(args) > 2 && args[0] == "-t" {
				table, args = args[1], args[2:]
			}
			if len(args) < 2 || args[0] != "-A" {
				continue
			}
			cmd, err := compat.Parse(fam, args, compat.ParseOptions{Table: table})
			if err != nil || len(cmd.Rules) != 1 {
				continue
			}
			fn(corpusRule{file: file, text: text, line: line, fam: fam, table: table, chain: args[1], rule: cmd.Rules[0]})
		}
		f.Close()
	}
}

// TestExactIsCanonicalCorpus: where compat.ExactIsCanonical spares a
// rule's second print, its exact text is its -S text.
func TestExactIsCanonicalCorpus(t *testing.T) {
	n, same := 0, 0
	files := []string{"matches_a.txt", "matches_b.txt", "matches_c.txt", "targets.txt", "targets_b.txt", "u32.txt", "sctp.txt"}
	eachCorpusRule(t, files, func(c corpusRule) {
		n++
		var sb strings.Builder
		compat.WriteRuleSpec(&sb, c.rule, false)
		exact := compat.ExactSpec(c.rule)
		if compat.ExactIsCanonical(c.rule) {
			if exact != sb.String() {
				t.Errorf("%s:%d: %s: exact text %q is not the -S text %q", c.file, c.line, c.text, exact, sb.String())
			}
			same++
		}
	})
	if n < 300 || same < n/2 {
		t.Errorf("%d corpus rules, %d with the same exact and -S texts", n, same)
	}
}
