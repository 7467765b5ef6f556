package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// unitCommand returns the ExecStart command line of a packaged unit, with
// the binary under test for /usr/sbin/xdptables and extra arguments in
// place of $XDPTABLES_PERSIST_ARGS.
func unitCommand(t *testing.T, unit, bin string, extra ...string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../packaging/systemd", unit))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		cmd, ok := strings.CutPrefix(l, "ExecStart=")
		if !ok {
			continue
		}
		var argv []string
		for _, f := range strings.Fields(cmd) {
			switch f {
			case "/usr/sbin/xdptables":
				argv = append(argv, bin)
			case "$XDPTABLES_PERSIST_ARGS":
				argv = append(argv, extra...)
			default:
				argv = append(argv, f)
			}
		}
		return argv
	}
	t.Fatalf("%s has no ExecStart", unit)
	return nil
}

func TestUnitOrdering(t *testing.T) {
	read := func(u string) string {
		b, err := os.ReadFile(filepath.Join("../../packaging/systemd", u))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	sets, rules, xdp := read("xdptables-sets.service"), read("xdptables-rules.service"), read("xdptables-xdp.service")
	for name, u := range map[string]string{"sets": sets, "rules": rules, "xdp": xdp} {
		for _, w := range []string{"Before=network-pre.target", "Wants=network-pre.target", "DefaultDependencies=no", "Type=oneshot", "RemainAfterExit=yes"} {
			if !strings.Contains(u, w) {
				t.Errorf("%s unit lacks %s", name, w)
			}
		}
	}
	if !strings.Contains(rules, "After=xdptables-sets.service") || !strings.Contains(sets, "Before=network-pre.target xdptables-rules.service") {
		t.Errorf("sets are not ordered before rules")
	}
	if !strings.Contains(xdp, "After=xdptables-rules.service") || !strings.Contains(xdp, "ExecStart=/usr/sbin/xdptables xdp apply") {
		t.Errorf("xdp unit: %s", xdp)
	}
}

func sample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/boot", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// saved is an iptables-save dump without its dated comment lines.
func saved(r netns.Result) string {
	var out []string
	for _, l := range strings.SplitAfter(r.Stdout, "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// TestBootUnits runs the boot units' commands, built for packaging
// (CGO_ENABLED=0), in a fresh network namespace against sample files.
func TestBootUnits(t *testing.T) {
	netns.RequireRoot(t)
	_, _, feat, bin := packages(t)
	place := func(root string, files map[string]string) {
		for p, body := range files {
			full := filepath.Join(root, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(body), 0o640); err != nil {
				t.Fatal(err)
			}
		}
	}
	boot := func(ns *netns.NS, unit string, extra ...string) netns.Result {
		return ns.Run("", unitCommand(t, unit, bin, extra...)...)
	}
	v4, v6 := sample(t, "rules.v4"), sample(t, "rules.v6")

	t.Run("debian", func(t *testing.T) {
		ns := netns.New(t, "boot")
		root := t.TempDir()
		place(root, map[string]string{"etc/iptables/rules.v4": v4, "etc/iptables/rules.v6": v6})
		if r := boot(ns, "xdptables-sets.service", "--root", root); r.RC != 0 || !strings.Contains(r.Stderr, "nothing to restore") {
			t.Errorf("sets unit with no sets file: %+v", r)
		}
		if r := boot(ns, "xdptables-rules.service", "--root", root); r.RC != 0 {
			t.Fatalf("rules unit: %+v", r)
		}
		if got := saved(ns.Run("", bin, "iptables-save")); got != v4 {
			t.Errorf("iptables-save after boot:\n%s\nwant:\n%s", got, v4)
		}
		if got := saved(ns.Run("", bin, "ip6tables-save")); got != v6 {
			t.Errorf("ip6tables-save after boot:\n%s\nwant:\n%s", got, v6)
		}
		// the save command writes the same files back
		out := t.TempDir()
		if r := ns.Run("", bin, "persist", "save", "--root", out); r.RC != 0 {
			t.Fatalf("persist save: %+v", r)
		}
		for p, want := range map[string]string{"etc/iptables/rules.v4": v4, "etc/iptables/rules.v6": v6} {
			b, err := os.ReadFile(filepath.Join(out, p))
			if err != nil {
				t.Fatalf("persist save: %v", err)
			}
			if got := saved(netns.Result{Stdout: string(b)}); got != want {
				t.Errorf("saved %s:\n%s\nwant:\n%s", p, got, want)
			}
		}

		// a broken IPv6 file: nothing is loaded, not even a changed IPv4 file
		place(root, map[string]string{
			"etc/iptables/rules.v4": strings.Replace(v4, "COMMIT", "-A INPUT -p udp -m udp --dport 53 -j ACCEPT\nCOMMIT", 1),
			"etc/iptables/rules.v6": sample(t, "broken.v6"),
		})
		r := boot(ns, "xdptables-rules.service", "--root", root)
		if r.RC != 1 || !strings.Contains(r.Stderr, "Error occurred at line: 4") ||
			!strings.Contains(r.Stderr, "rules.v6 does not load") || !strings.Contains(r.Stderr, "the current ruleset is unchanged") {
			t.Errorf("rules unit with a broken file: %+v", r)
		}
		if got := saved(ns.Run("", bin, "iptables-save")); got != v4 {
			t.Errorf("IPv4 rules changed although the IPv6 file is broken:\n%s", got)
		}
		if got := saved(ns.Run("", bin, "ip6tables-save")); got != v6 {
			t.Errorf("IPv6 rules changed by a broken file:\n%s", got)
		}

		// a broken IPv4 file alone
		place(root, map[string]string{"etc/iptables/rules.v4": sample(t, "broken.v4"), "etc/iptables/rules.v6": v6})
		if r := boot(ns, "xdptables-rules.service", "--root", root); r.RC != 1 || !strings.Contains(r.Stderr, "invalid port/service `nonsense-port' specified") {
			t.Errorf("rules unit with a broken IPv4 file: %+v", r)
		}
		if got := saved(ns.Run("", bin, "iptables-save")); got != v4 {
			t.Errorf("IPv4 rules changed by a broken file:\n%s", got)
		}

		// a file named in /etc/default/xdptables that is missing
		r = boot(ns, "xdptables-rules.service", "--rules-v4", filepath.Join(root, "etc/iptables/nope.v4"))
		if r.RC != 1 || !strings.Contains(r.Stderr, "nope.v4: file missing; nothing restored") {
			t.Errorf("rules unit with a missing file: %+v", r)
		}
	})

	t.Run("rhel", func(t *testing.T) {
		ns := netns.New(t, "boot")
		root := t.TempDir()
		place(root, map[string]string{"etc/sysconfig/iptables": v4})
		if r := boot(ns, "xdptables-rules.service", "--root", root); r.RC != 0 {
			t.Fatalf("rules unit: %+v", r)
		}
		if got := saved(ns.Run("", bin, "iptables-save")); got != v4 {
			t.Errorf("iptables-save after boot:\n%s", got)
		}
	})

	t.Run("sets_then_rules", func(t *testing.T) {
		if !feat.IPSet {
			t.Skip("SKIP-FEATURE: this build has no ipset personality")
		}
		ns := netns.New(t, "boot")
		root := t.TempDir()
		setsV4 := sample(t, "sets.v4")
		place(root, map[string]string{"etc/iptables/ipsets": sample(t, "ipsets"), "etc/iptables/rules.v4": setsV4})
		if r := boot(ns, "xdptables-sets.service", "--root", root); r.RC != 0 {
			t.Fatalf("sets unit: %+v", r)
		}
		if r := boot(ns, "xdptables-rules.service", "--root", root); r.RC != 0 {
			t.Fatalf("rules unit (the set must exist by now): %+v", r)
		}
		r := ns.Run("", bin, "ipset", "save")
		for _, w := range []string{"create blocklist hash:net family inet hashsize 1024 maxelem 65536", "add blocklist 198.51.100.0/24\n", "add blocklist 203.0.113.7\n"} {
			if !strings.Contains(r.Stdout, w) {
				t.Errorf("ipset save lacks %q: %+v", w, r)
			}
		}
		if got := saved(ns.Run("", bin, "iptables-save")); got != setsV4 {
			t.Errorf("iptables-save after boot:\n%s\nwant:\n%s", got, setsV4)
		}
		// restarting the unit finds the sets in place
		if r := boot(ns, "xdptables-sets.service", "--root", root); r.RC != 0 {
			t.Errorf("sets unit, second run: %+v", r)
		}
		before := ns.Run("", bin, "ipset", "save").Stdout

		// a broken sets file: a new set and new members before the
		// broken line, none of which may be loaded
		place(root, map[string]string{"etc/iptables/ipsets": "create allowlist hash:ip family inet\n" +
			"add allowlist 198.51.100.9\nadd blocklist 203.0.113.8\nadd blocklist not-an-address\n"})
		r = boot(ns, "xdptables-sets.service", "--root", root)
		if r.RC != 1 || !strings.Contains(r.Stderr, "Error in line 4") ||
			!strings.Contains(r.Stderr, "restoring ipsets from "+filepath.Join(root, "etc/iptables/ipsets")) ||
			!strings.Contains(r.Stderr, "nothing restored; ipsets is unchanged") {
			t.Errorf("sets unit with a broken file: %+v", r)
		}
		if after := ns.Run("", bin, "ipset", "save").Stdout; after != before {
			t.Errorf("sets changed by a broken file:\n%s\nwant:\n%s", after, before)
		}
		// the rules unit after it still checks and loads its own files
		if r := boot(ns, "xdptables-rules.service", "--root", root); r.RC != 0 {
			t.Errorf("rules unit after a failed sets unit: %+v", r)
		}

		// a sets file named in /etc/default/xdptables that is missing
		r = boot(ns, "xdptables-sets.service", "--sets", filepath.Join(root, "etc/iptables/nope"))
		if r.RC != 1 || !strings.Contains(r.Stderr, "nope: file missing; nothing restored") {
			t.Errorf("sets unit with a missing file: %+v", r)
		}
		if after := ns.Run("", bin, "ipset", "save").Stdout; after != before {
			t.Errorf("sets changed by a missing file:\n%s", after)
		}
	})
}
