package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestRenamedBuiltinHidden: a built-in chain renamed with -E stays a base
// chain that no iptables command shows; as with iptables-nft, which
// flushes or replaces the whole nftables table, -F empties it and a
// restore that replaces the table removes it (the scripts compare what
// iptables shows; this checks the kernel).
func TestRenamedBuiltinHidden(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("nft") {
		t.Fatal("nft is not installed")
	}
	dir := LinkDir(t)
	ns := netns.New(t, "ren")
	ipt := filepath.Join(dir, "iptables")
	run := func(stdin string, args ...string) string {
		t.Helper()
		r := ns.Run(stdin, args...)
		if r.RC != 0 {
			t.Fatalf("%v: rc %d %s", args, r.RC, r.Stderr)
		}
		return r.Stdout
	}
	run("", ipt, "-A", "INPUT", "-s", "192.0.2.3", "-j", "DROP")
	run("", ipt, "-E", "INPUT", "x")
	if out := run("", "nft", "list", "chain", "ip", "xdptables", "filter.x"); !strings.Contains(out, "drop") {
		t.Fatalf("renamed chain lost its rule:\n%s", out)
	}
	run("", ipt, "-F")
	if out := run("", "nft", "list", "chain", "ip", "xdptables", "filter.x"); strings.Contains(out, "drop") || !strings.Contains(out, "hook input") {
		t.Fatalf("-F left the renamed chain's rule, or removed the chain:\n%s", out)
	}
	run("*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n", filepath.Join(dir, "iptables-restore"))
	if r := ns.Run("", "nft", "list", "chain", "ip", "xdptables", "filter.x"); r.RC == 0 {
		t.Fatalf("a restore of the table left the renamed chain:\n%s", r.Stdout)
	}
}
