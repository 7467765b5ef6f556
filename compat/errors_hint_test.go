package compat

import "testing"

// iptables adds the dmesg hint to "Bad policy name." for a command line;
// iptables-restore names the line without it.
func TestBadPolicyHint(t *testing.T) {
	if got := Format(ErrBadPolicy, "iptables", -1); got != "iptables: Bad policy name. Run `dmesg' for more information.\n" {
		t.Errorf("command: %q", got)
	}
	if got := FormatRestore(&RestoreError{Line: 3, Err: ErrBadPolicy}, "iptables-restore"); got != "iptables-restore: line 3 failed: Bad policy name.\n" {
		t.Errorf("restore: %q", got)
	}
}
