package ruleset

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/translate"
	"golang.org/x/sys/unix"
)

// refusedBuilder is a builder whose operation i adds a rule of chain
// chains[i] from restore line lines[i].
func refusedBuilder(lines []int, chains []string) *builder {
	bl := &builder{}
	for i := range lines {
		bl.note(i, chains[i], lines[i])
	}
	return bl
}

func refusals(idx ...int) *kernel.CommitError {
	ce := &kernel.CommitError{}
	for _, i := range idx {
		ce.Errors = append(ce.Errors, &kernel.OpError{Index: i, Op: kernel.Op{Kind: kernel.OpRuleAppend}, Errno: unix.EINVAL})
	}
	return ce
}

// iptables-nft-restore lists every refused operation of the batch, not only
// the first, each on its own line.
func TestCommitErrorListsEveryRefusal(t *testing.T) {
	bl := refusedBuilder([]int{2, 3, 4, 5}, []string{"INPUT", "INPUT", "OUTPUT", "FORWARD"})
	sections := []*compat.RestoreTable{{Name: "filter", Line: 1, CommitLine: 6}}
	err := bl.restoreCommitError(refusals(0, 2, 3), sections)
	got := compat.FormatRestore(err, "iptables-restore")
	want := "iptables-restore v1.8.9 (nf_tables): \n" +
		"line 2: RULE_APPEND failed (Invalid argument): rule in chain INPUT\n" +
		"line 4: RULE_APPEND failed (Invalid argument): rule in chain OUTPUT\n" +
		"line 5: RULE_APPEND failed (Invalid argument): rule in chain FORWARD\n"
	if got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
	if st := compat.StatusOfRestore(err); st != 4 {
		t.Errorf("status %d, want 4", st)
	}
}

// Only one section's refusals are listed: the reference stops at the
// COMMIT of the first refused batch, the first in the file. Operations
// without a line (the rule index) are left out. (When the kernel's
// validation of the table refused a rule, the rules after it in our batch
// fail too: TestCommitErrorValidationCascade.)
func TestCommitErrorOneSection(t *testing.T) {
	sections := []*compat.RestoreTable{{Name: "filter", Line: 1, CommitLine: 3}, {Name: "mangle", Line: 4, CommitLine: 7}}
	for _, c := range []struct {
		lines  []int
		chains []string
		want   string
	}{
		{[]int{2, 5, 0}, []string{"INPUT", "QOS", ""}, "\nline 2: RULE_APPEND failed (Invalid argument): rule in chain INPUT"},
		// mangle's rules went into the batch first; refused on their own,
		// the reference refuses filter's before it reads mangle
		{[]int{5, 6, 2, 0}, []string{"QOS", "OUTPUT", "INPUT", ""}, "\nline 2: RULE_APPEND failed (Invalid argument): rule in chain INPUT"},
	} {
		bl := refusedBuilder(c.lines, c.chains)
		idx := make([]int, len(c.lines))
		for i := range idx {
			idx[i] = i
		}
		got := compat.FormatRestore(bl.restoreCommitError(refusals(idx...), sections), "iptables-restore")
		if want := "iptables-restore v1.8.9 (nf_tables): " + c.want + "\n"; got != want {
			t.Errorf("got:\n%q\nwant:\n%q", got, want)
		}
	}
}

// The reference's message buffer holds 1024 bytes: a refusal that does not
// fit is cut short and each later one is written over it.
func TestCommitErrorBufferTruncation(t *testing.T) {
	var lines []int
	var chains []string
	var idx []int
	for i := 0; i < 60; i++ {
		lines = append(lines, i+2)
		chains = append(chains, "INPUT")
		idx = append(idx, i)
	}
	bl := refusedBuilder(lines, chains)
	sections := []*compat.RestoreTable{{Name: "filter", Line: 1, CommitLine: 62}}
	got := compat.FormatRestore(bl.restoreCommitError(refusals(idx...), sections), "iptables-restore")
	var b strings.Builder
	b.WriteString("iptables-restore v1.8.9 (nf_tables): ")
	for l := 2; l <= 16; l++ {
		fmt.Fprintf(&b, "\nline %d: RULE_APPEND failed (Invalid argument): rule in chain INPUT", l)
	}
	// 1012 bytes used: 11 of "\nline 17: ..." fit, and so of each later
	b.WriteString("\nline 61: R\n")
	if got != b.String() {
		t.Errorf("got:\n%q\nwant:\n%q", got, b.String())
	}
}

// A command (no sections) reports the first refusal, as iptables-nft does.
func TestCommitErrorCommandFirstOnly(t *testing.T) {
	bl := refusedBuilder([]int{0, 0}, []string{"INPUT", "INPUT"})
	got := compat.Format(bl.commitError(refusals(0, 1)), "iptables", -1)
	want := "iptables v1.8.9 (nf_tables):  RULE_APPEND failed (Invalid argument): rule in chain INPUT\n"
	if got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
}

// cascadeBuilder is a builder whose batch adds, in order, a rule of each
// (nft chain, line).
func cascadeBuilder(t *testing.T, ops []struct {
	chain string
	line  int
}) *builder {
	t.Helper()
	bl := &builder{b: kernel.NewBatch()}
	for _, o := range ops {
		idx := bl.b.AppendRule(kernel.IPv4, o.chain, kernel.RuleSpec{Exprs: []expr.Any{&expr.Counter{}}})
		_, chain, _ := translate.SplitChainName(o.chain)
		bl.note(idx, chain, o.line)
	}
	return bl
}

// A rule the kernel's validation of the table refuses (a MAC match in a
// chain OUTPUT reaches) makes it refuse every rule added after it. Our
// batch holds a section's rules chain by chain; the reference adds them
// in file order, so it refuses that rule and every rule of the section
// after it, including those we added before it.
func TestCommitErrorValidationCascade(t *testing.T) {
	sections := []*compat.RestoreTable{{Name: "mangle", Line: 1, CommitLine: 9}, {Name: "filter", Line: 10, CommitLine: 12}}
	type op = struct {
		chain string
		line  int
	}
	// file: 4 -A OUTPUT -j QOS, 5 -A QOS -m mac, 6 -A QOS, 7 -A QOS,
	// 8 -A OUTPUT ...; 11 a filter rule. Batch: OUTPUT's rules first.
	bl := cascadeBuilder(t, []op{{"mangle.OUTPUT", 4}, {"mangle.OUTPUT", 8}, {"mangle.QOS", 5}, {"mangle.QOS", 6}, {"mangle.QOS", 7}, {"filter.INPUT", 11}})
	got := compat.FormatRestore(bl.restoreCommitError(refusals(2, 3, 4, 5), sections), "iptables-restore")
	want := "iptables-restore v1.8.9 (nf_tables): " +
		"\nline 5: RULE_APPEND failed (Invalid argument): rule in chain QOS" +
		"\nline 6: RULE_APPEND failed (Invalid argument): rule in chain QOS" +
		"\nline 7: RULE_APPEND failed (Invalid argument): rule in chain QOS" +
		"\nline 8: RULE_APPEND failed (Invalid argument): rule in chain OUTPUT\n"
	if got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
	// a rule refused by its own checks (MASQUERADE in filter): the rules
	// after it go in, only the refused ones are listed
	bl = cascadeBuilder(t, []op{{"mangle.OUTPUT", 4}, {"mangle.QOS", 5}, {"mangle.QOS", 6}, {"mangle.OUTPUT", 8}})
	got = compat.FormatRestore(bl.restoreCommitError(refusals(1, 3), sections), "iptables-restore")
	want = "iptables-restore v1.8.9 (nf_tables): " +
		"\nline 5: RULE_APPEND failed (Invalid argument): rule in chain QOS" +
		"\nline 8: RULE_APPEND failed (Invalid argument): rule in chain OUTPUT\n"
	if got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
}

// SNAT in nat OUTPUT: our native nat target is refused by the table's
// validation, which then refuses every later rule; the reference's
// xtables SNAT is refused when added to the built-in chain, alone, and
// the section's later rules go in.
func TestCommitErrorBuiltinChainNoCascade(t *testing.T) {
	sections := []*compat.RestoreTable{{Name: "nat", Line: 1, CommitLine: 9}}
	type op = struct {
		chain string
		line  int
	}
	// file: 6 -A OUTPUT -j SNAT, 7 -A OUTPUT -p udp -j ACCEPT,
	// 8 -A POSTROUTING -j MASQUERADE
	bl := cascadeBuilder(t, []op{{"nat.OUTPUT", 6}, {"nat.OUTPUT", 7}, {"nat.POSTROUTING", 8}})
	got := compat.FormatRestore(bl.restoreCommitError(refusals(0, 1, 2), sections), "iptables-restore")
	want := "iptables-restore v1.8.9 (nf_tables): " +
		"\nline 6: RULE_APPEND failed (Invalid argument): rule in chain OUTPUT\n"
	if got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
}
