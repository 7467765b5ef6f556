package compat

import (
	"strings"
	"testing"
)

// With -T, iptables-restore ignores every line after a section of
// another table up to the next "*table" line (measured, iptables-nft 1.8.9).
func TestRestoreTableOptionSkip(t *testing.T) {
	file := "*filter\n-A INPUT -j ACCEPT\n*raw\n-A PREROUTING -j ACCEPT\nCOMMIT\n*filter\nCOMMIT\nCOMMIT\n:INPUT ACCEPT\n*filter\n-A INPUT -j DROP\n"
	ts, err := ParseRestore(strings.NewReader(file), RestoreOptions{Table: "raw", Prog: "iptables-restore"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Name != "raw" || len(ts[0].Cmds) != 1 {
		t.Errorf("got %d sections", len(ts))
	}
	if _, err := ParseRestore(strings.NewReader("COMMIT\n*raw\nCOMMIT\n"), RestoreOptions{Table: "raw", Prog: "iptables-restore"}); err == nil {
		t.Errorf("a COMMIT before any section must fail")
	}
}
