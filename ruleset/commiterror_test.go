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
		{"INPUT", 10}, // 3: refused
		{"INPUT", 10}, // 4: refused, the same line
		{"foo", 8},    // 5: refused
		{"INPUT", 9},
	}
	for i, n := range notes {
		bl.note(i, n.chain, n.line)
	}
	refused := func(idx int, errno unix.Errno) *kernel.OpError {
		return &kernel.OpError{Index: idx, Op: kernel.Op{Kind: kernel.OpRuleAppend}, Errno: errno}
	}
	err := bl.restoreCommitError(&kernel.CommitError{Errors: []*kernel.OpError{
		refused(1, unix.EINVAL), refused(3, unix.EOPNOTSUPP), refused(4, unix.EINVAL), refused(5, unix.EINVAL),
	}}, sections)
	got := compat.FormatRestore(err, "iptables-restore")
	want := "iptables-restore v1.8.9 (nf_tables): \n" +
		"line 8: RULE_APPEND failed (Invalid argument): rule in chain foo\n" +
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
