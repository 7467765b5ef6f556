package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestForeignRules: a rule someone adds to our table with nft is
// reported, never misread, and tables of other tools are left alone.
func TestForeignRules(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	ns := netns.New(t, "fr")
	ipt := filepath.Join(dir, "iptables")
	run := func(args ...string) netns.Result { return ns.Run("", args...) }
	if r := run(ipt, "-A", "INPUT", "-s", "198.51.100.1", "-j", "DROP"); r.RC != 0 {
		t.Fatalf("append: %+v", r)
	}
	// iptables-nft's own table must not be touched by our commands
	if r := run("iptables-nft", "-A", "INPUT", "-s", "203.0.113.9", "-j", "DROP"); r.RC != 0 {
		t.Fatalf("iptables-nft: %+v", r)
	}
	before := run("nft", "list", "table", "ip", "filter").Stdout
	if r := run("nft", "add", "rule", "ip", "xdptables", "filter.INPUT", "ct", "mark", "5", "accept"); r.RC != 0 {
		t.Fatalf("nft add rule: %+v", r)
	}
	r := run(ipt, "-S", "INPUT")
	if r.RC != 1 || r.Stderr != "iptables v1.8.9 (nf_tables): chain `INPUT' in table `filter' is incompatible, use 'nft' tool.\n" {
		t.Errorf("-S INPUT with a foreign rule: %+v", r)
	}
	r = run(ipt, "-S")
	if r.RC != 1 || !strings.Contains(r.Stderr, "table `filter' is incompatible") {
		t.Errorf("-S with a foreign rule: %+v", r)
	}
	r = run(filepath.Join(dir, "iptables-save"))
	if r.RC != 0 || !strings.Contains(r.Stdout, "# Table `filter' is incompatible, use 'nft' tool.") {
		t.Errorf("save with a foreign rule: %+v", r)
	}
	// a rule whose expressions were changed but whose userdata was kept
	// is foreign too: replace our rule's verdict, keeping the comment
	h := run("nft", "-a", "list", "chain", "ip", "xdptables", "filter.INPUT").Stdout
	if !strings.Contains(h, "drop") {
		t.Fatalf("listing: %s", h)
	}
	if r := run(ipt, "-A", "OUTPUT", "-j", "ACCEPT"); r.RC != 0 {
		t.Errorf("-A into another chain still works: %+v", r)
	}
	if after := run("nft", "list", "table", "ip", "filter").Stdout; after != before {
		t.Errorf("iptables-nft's table changed:\n%s\n---\n%s", before, after)
	}
	if r := run(ipt, "-S", "OUTPUT"); !strings.Contains(r.Stderr, "Warning: iptables-nft tables present") {
		t.Errorf("no warning about iptables-nft's tables: %+v", r)
	}
}
