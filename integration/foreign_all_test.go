package integration

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// foreignState is everything in ns that is not ours: every nftables
// table but the xdptables ones, listed one by one, and the legacy
// (x_tables) ruleset.
func foreignState(t *testing.T, ns *netns.NS) string {
	t.Helper()
	r := ns.Run("", "nft", "list", "tables")
	if r.RC != 0 {
		t.Fatalf("nft list tables: %+v", r)
	}
	var tables []string
	for _, l := range strings.Split(r.Stdout, "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "table" && f[2] != "xdptables" {
			tables = append(tables, f[1]+" "+f[2])
		}
	}
	sort.Strings(tables)
	var b strings.Builder
	for _, tb := range tables {
		f := strings.Fields(tb)
		r := ns.Run("", "nft", "-a", "-s", "list", "table", f[0], f[1])
		fmt.Fprintf(&b, "== %s rc %d\n%s%s", tb, r.RC, r.Stdout, r.Stderr)
	}
	if netns.Have("iptables-legacy-save") {
		r := ns.Run("", "iptables-legacy-save")
		b.WriteString("== legacy\n" + rulesOnly(r.Stdout) + "\n")
	}
	return b.String()
}

// TestForeignUntouchedByEveryCommand fills the tables of iptables-nft,
// iptables-legacy and nft, runs every kind of command of every
// personality, and checks those tables byte for byte.
func TestForeignUntouchedByEveryCommand(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	ns := netns.New(t, "fall")
	setup := [][]string{
		{"iptables-nft", "-A", "INPUT", "-s", "203.0.113.9", "-j", "DROP"},
		{"iptables-nft", "-N", "NFTCHAIN"},
		{"iptables-nft", "-t", "nat", "-A", "POSTROUTING", "-o", "eth9", "-j", "MASQUERADE"},
		{"ip6tables-nft", "-A", "FORWARD", "-s", "2001:db8::9", "-j", "ACCEPT"},
		{"nft", "add table inet other; add chain inet other c { type filter hook input priority 5; }; add rule inet other c tcp dport 22 counter accept; add set inet other s { type ipv4_addr; elements = { 198.51.100.1 } }"},
	}
	if netns.Have("iptables-legacy") {
		setup = append(setup, []string{"iptables-legacy", "-A", "OUTPUT", "-d", "198.51.100.7", "-j", "REJECT"})
	}
	for _, c := range setup {
		if r := ns.Run("", c...); r.RC != 0 {
			t.Fatalf("%v: %+v", c, r)
		}
	}
	before := foreignState(t, ns)
	p := func(name string) string { return filepath.Join(dir, name) }
	restoreIn := "*filter\n:INPUT ACCEPT [0:0]\n:R - [0:0]\n-A INPUT -j R\n-A R -s 198.51.100.3/32 -j DROP\nCOMMIT\n*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n"
	script := []struct {
		stdin string
		argv  []string
	}{
		{"", []string{p("iptables"), "-A", "INPUT", "-s", "198.51.100.1", "-j", "DROP"}},
		{"", []string{p("iptables"), "-I", "INPUT", "-p", "tcp", "--dport", "22", "-j", "ACCEPT"}},
		{"", []string{p("iptables"), "-R", "INPUT", "1", "-p", "tcp", "--dport", "23", "-j", "ACCEPT"}},
		{"", []string{p("iptables"), "-C", "INPUT", "-s", "198.51.100.1", "-j", "DROP"}},
		{"", []string{p("iptables"), "-N", "MINE"}},
		{"", []string{p("iptables"), "-A", "MINE", "-j", "RETURN"}},
		{"", []string{p("iptables"), "-E", "MINE", "MINE2"}},
		{"", []string{p("iptables"), "-L", "-n", "-v", "--line-numbers"}},
		{"", []string{p("iptables"), "-S"}},
		{"", []string{p("iptables"), "-Z"}},
		{"", []string{p("iptables"), "-P", "FORWARD", "DROP"}},
		{"", []string{p("iptables"), "-t", "nat", "-A", "POSTROUTING", "-j", "MASQUERADE"}},
		{"", []string{p("iptables"), "-t", "mangle", "-A", "PREROUTING", "-j", "MARK", "--set-mark", "1"}},
		{"", []string{p("iptables"), "-D", "INPUT", "-s", "198.51.100.1", "-j", "DROP"}},
		{"", []string{p("iptables"), "-F", "MINE2"}},
		{"", []string{p("iptables"), "-X", "MINE2"}},
		{"", []string{p("iptables"), "-F"}},
		{"", []string{p("iptables"), "-X"}},
		{"", []string{p("iptables"), "-t", "nat", "-F"}},
		{"", []string{p("ip6tables"), "-A", "INPUT", "-s", "2001:db8::1", "-j", "DROP"}},
		{"", []string{p("ip6tables"), "-S"}},
		{"", []string{p("ip6tables"), "-F"}},
		{restoreIn, []string{p("iptables-restore")}},
		{restoreIn, []string{p("iptables-restore"), "--noflush"}},
		{restoreIn, []string{p("iptables-restore"), "--test"}},
		{"", []string{p("iptables-save")}},
		{"", []string{p("iptables-save"), "-c"}},
		{"*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n", []string{p("ip6tables-restore")}},
		{"", []string{p("ip6tables-save")}},
		{"", []string{p("ipset"), "create", "blk", "hash:ip"}},
		{"", []string{p("ipset"), "add", "blk", "198.51.100.5"}},
		{"", []string{p("ipset"), "test", "blk", "198.51.100.5"}},
		{"", []string{p("iptables"), "-A", "INPUT", "-m", "set", "--match-set", "blk", "src", "-j", "DROP"}},
		{"", []string{p("ipset"), "list"}},
		{"", []string{p("ipset"), "save"}},
		{"", []string{p("iptables"), "-F", "INPUT"}},
		{"", []string{p("ipset"), "del", "blk", "198.51.100.5"}},
		{"", []string{p("ipset"), "flush"}},
		{"create blk2 hash:net\nadd blk2 198.51.100.0/24\n", []string{p("ipset"), "restore"}},
		{"", []string{p("ipset"), "rename", "blk2", "blk3"}},
		{"", []string{p("ipset"), "destroy"}},
		{"", []string{p("xdptables"), "xdp", "status"}},
		{"*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n", []string{p("iptables-restore")}},
	}
	for _, c := range script {
		r := ns.Run(c.stdin, c.argv...)
		if r.RC != 0 && !strings.Contains(r.Stderr, "Warning") {
			t.Logf("%v: rc %d %s", c.argv[1:], r.RC, r.Stderr)
		}
		if after := foreignState(t, ns); after != before {
			t.Fatalf("%s %v changed foreign tables:\n--- before\n%s\n--- after\n%s", filepath.Base(c.argv[0]), c.argv[1:], before, after)
		}
	}
}

// TestFlushRulesetRepair: someone runs `nft flush ruleset`; our commands
// see the empty state (nothing half-there), and restoring the last save
// brings everything back.
func TestFlushRulesetRepair(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	ns := netns.New(t, "flush")
	in := "*filter\n:INPUT DROP [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:WEB - [0:0]\n" +
		"-A INPUT -i lo -j ACCEPT\n-A INPUT -p tcp -m tcp --dport 80 -j WEB\n-A WEB -s 198.51.100.0/24 -j ACCEPT\nCOMMIT\n"
	if r := ns.Run(in, filepath.Join(dir, "iptables-restore")); r.RC != 0 {
		t.Fatalf("restore: %+v", r)
	}
	saved := ns.Run("", filepath.Join(dir, "iptables-save"))
	if r := ns.Run("", "nft", "flush", "ruleset"); r.RC != 0 {
		t.Fatalf("nft flush ruleset: %+v", r)
	}
	r := ns.Run("", filepath.Join(dir, "iptables"), "-S")
	if r.RC != 0 || strings.Contains(r.Stdout, "WEB") || strings.Contains(r.Stdout, "-P INPUT DROP") {
		t.Errorf("-S after nft flush ruleset: %+v", r)
	}
	if s := ns.Run("", filepath.Join(dir, "xdptables"), "xdp", "status"); s.RC != 0 {
		t.Logf("xdp status after the flush: %+v", s)
	} else {
		t.Logf("xdp status after the flush: %s", strings.TrimSpace(s.Stdout))
	}
	if r := ns.Run(saved.Stdout, filepath.Join(dir, "iptables-restore")); r.RC != 0 {
		t.Fatalf("repairing restore: %+v", r)
	}
	again := ns.Run("", filepath.Join(dir, "iptables-save"))
	if rulesOnly(again.Stdout) != rulesOnly(saved.Stdout) {
		t.Errorf("after the repair:\n%s\nwant:\n%s", again.Stdout, saved.Stdout)
	}
}
