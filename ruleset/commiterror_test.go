package ruleset

import (
	"errors"
	"testing"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
	"golang.org/x/sys/unix"
)

// TestRestoreCommitError: a refused restore batch is reported as
// iptables-nft-restore reports the first table section the kernel refuses
// (it commits section by section and stops there): every refused line of
// that section, in file order, once each; refusals of later sections are
// left out.
func TestRestoreCommitError(t *testing.T) {
	var bl builder
	sections := []*compat.RestoreTable{
		{Name: "raw", Line: 1, CommitLine: 4},
		{Name: "filter", Line: 5, CommitLine: 12},
		{Name: "mangle", Line: 13, CommitLine: 16},
	}
	// operation: chain, line (the filter section goes through a View and
	// lands in the batch after the mangle section)
	notes := []struct {
		chain string
		line  int
	}{
		{"PREROUTING", 3},
		{"FORWARD", 14}, // 1: refused
		{"FORWARD", 15},
		{"INPUT", 10},  // 3: refused
		{"hidden", 10}, // 4: refused, what goes with line 10's rule
		{"INPUT", 10},  // 5: refused, line 10's second rule (-s A,B)
		{"foo", 8},     // 6: refused
		{"INPUT", 9},
	}
	for i, n := range notes {
		bl.note(i, n.chain, n.line)
	}
	refused := func(idx int, errno unix.Errno) *kernel.OpError {
		return &kernel.OpError{Index: idx, Op: kernel.Op{Kind: kernel.OpRuleAppend}, Errno: errno}
	}
	err := bl.restoreCommitError(&kernel.CommitError{Errors: []*kernel.OpError{
		refused(1, unix.EINVAL), refused(3, unix.EOPNOTSUPP), refused(4, unix.EINVAL), refused(5, unix.EINVAL), refused(6, unix.EINVAL),
	}}, sections)
	got := compat.FormatRestore(err, "iptables-restore")
	want := "iptables-restore v1.8.9 (nf_tables): \n" +
		"line 8: RULE_APPEND failed (Invalid argument): rule in chain foo\n" +
		"line 10: RULE_APPEND failed (Invalid argument): rule in chain INPUT\n" +
		"line 10: RULE_APPEND failed (Invalid argument): rule in chain INPUT\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if rc := compat.StatusOfRestore(err); rc != 4 {
		t.Errorf("exit status %d, want 4", rc)
	}
	var re *compat.RestoreError
	if !errors.As(err, &re) || re.Line != 8 {
		t.Errorf("error %#v: want a RestoreError at line 8", err)
	}

	// one refusal: as a single command's, with its line
	err = bl.restoreCommitError(&kernel.CommitError{Errors: []*kernel.OpError{refused(1, unix.ENOENT)}}, sections)
	want = "iptables-restore v1.8.9 (nf_tables): \nline 14: RULE_APPEND failed (No such file or directory): rule in chain FORWARD\n"
	if got := compat.FormatRestore(err, "iptables-restore"); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestRefusalsWithCommitErrors: rules refused before the batch is sent
// (compat.KernelRefusal: left out of the batch) are reported with the
// kernel's refusals of the rest of the batch, in file order, with the
// operation each would have been.
func TestRefusalsWithCommitErrors(t *testing.T) {
	var bl builder
	sections := []*compat.RestoreTable{{Name: "mangle", Line: 1, CommitLine: 7}, {Name: "filter", Line: 8, CommitLine: 11}}
	kr := &compat.KernelRefusal{Errno: unix.ENOENT}
	r4, r6 := &RuleState{Line: 4}, &RuleState{Line: 6, replace: true}
	if !bl.refuse(kr, r6, "INPUT", kernel.OpRuleAppend) || !bl.refuse(kr, r4, "INPUT", kernel.OpRuleAppend) {
		t.Fatal("a KernelRefusal not taken")
	}
	if bl.refuse(compat.Errorf(compat.StatusOther, "other"), r4, "INPUT", kernel.OpRuleAppend) || bl.refuse(nil, r4, "INPUT", kernel.OpRuleAppend) {
		t.Fatal("another error taken as the kernel's refusal")
	}
	bl.note(0, "INPUT", 5)
	bl.note(1, "INPUT", 10)
	ce := &kernel.CommitError{Errors: []*kernel.OpError{
		{Index: 0, Op: kernel.Op{Kind: kernel.OpRuleAppend}, Errno: unix.EINVAL},
		{Index: 1, Op: kernel.Op{Kind: kernel.OpRuleAppend}, Errno: unix.EINVAL},
	}}
	want := "iptables-restore v1.8.9 (nf_tables): \n" +
		"line 4: RULE_APPEND failed (No such file or directory): rule in chain INPUT\n" +
		"line 5: RULE_APPEND failed (Invalid argument): rule in chain INPUT\n" +
		"line 6: RULE_REPLACE failed (No such file or directory): rule in chain INPUT\n"
	if got := compat.FormatRestore(bl.refusals(ce, sections), "iptables-restore"); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	// the batch passes the kernel's check: the refused rules alone
	want = "iptables-restore v1.8.9 (nf_tables): \n" +
		"line 4: RULE_APPEND failed (No such file or directory): rule in chain INPUT\n" +
		"line 6: RULE_REPLACE failed (No such file or directory): rule in chain INPUT\n"
	if got := compat.FormatRestore(bl.refusals(nil, sections), "iptables-restore"); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	// a command
	var one builder
	one.refuse(kr, &RuleState{}, "INPUT", kernel.OpRuleInsert)
	err := one.refusals(nil, nil)
	if got, want := compat.Format(err, "iptables", -1), "iptables v1.8.9 (nf_tables):  RULE_INSERT failed (No such file or directory): rule in chain INPUT\n"; got != want {
		t.Errorf("command: got %q, want %q", got, want)
	}
	if compat.StatusOf(err) != 4 {
		t.Errorf("command: status %d, want 4", compat.StatusOf(err))
	}
}

// TestRefusalsBefore: only refusals before the given line count (those of
// the sections iptables-nft-restore would have committed before the line
// that fails).
func TestRefusalsBefore(t *testing.T) {
	var bl builder
	sections := []*compat.RestoreTable{{Name: "filter", Line: 1, CommitLine: 5}, {Name: "nat", Line: 6, CommitLine: 9}}
	bl.refuse(&compat.KernelRefusal{Errno: unix.ENOENT}, &RuleState{Line: 7}, "POSTROUTING", kernel.OpRuleAppend)
	bl.note(0, "INPUT", 3)
	bl.note(1, "POSTROUTING", 8)
	ce := &kernel.CommitError{Errors: []*kernel.OpError{
		{Index: 0, Op: kernel.Op{Kind: kernel.OpRuleAppend}, Errno: unix.EINVAL},
		{Index: 1, Op: kernel.Op{Kind: kernel.OpRuleAppend}, Errno: unix.EINVAL},
	}}
	want := "iptables-restore v1.8.9 (nf_tables): \nline 3: RULE_APPEND failed (Invalid argument): rule in chain INPUT\n"
	if got := compat.FormatRestore(refusalsIn(bl.refusalsBefore(ce, 6), sections), "iptables-restore"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := bl.refusalsBefore(ce, 3); len(got) != 0 {
		t.Errorf("nothing before line 3: %v", got)
	}
	if got := bl.refusalsBefore(nil, 8); len(got) != 1 || got[0].line != 7 {
		t.Errorf("the check passed: %v, want the refused rule of line 7", got)
	}
}
