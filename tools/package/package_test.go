package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestPackageVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.0":                 "1.2.0",
		"v1.2.0-dirty":           "1.2.0+dirty",
		"v1.2.0-3-gabc1234":      "1.2.0+git3.abc1234",
		"1.2.0-3-gabc1234-dirty": "1.2.0+git3.abc1234.dirty",
		"3a4a20b":                "0.0.0~git3a4a20b",
		"3a4a20b-dirty":          "0.0.0~git3a4a20b.dirty",
		"release/x":              "0.0.0~release.x",
	} {
		if got := PackageVersion(in); got != want {
			t.Errorf("PackageVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

var (
	buildOnce sync.Once
	built     struct {
		dir  string
		pkgs []string
		feat Features
		err  error
	}
)

// packages builds the host architecture's .deb and .rpm once per test
// binary, into a temporary directory.
func packages(t *testing.T) (deb, rpm string, feat Features, bin string) {
	t.Helper()
	buildOnce.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "xdptables-pkg-")
		if built.err != nil {
			return
		}
		built.pkgs, built.err = Build(Options{
			Root: "../..", Out: built.dir, Arches: []string{runtime.GOARCH},
			Formats: []string{"deb", "rpm"}, Version: "v1.2.3-4-gabcdef0",
		})
		if built.err == nil {
			built.feat, built.err = Probe(filepath.Join(built.dir, "build", runtime.GOARCH, "xdptables"))
		}
	})
	if built.err != nil {
		t.Fatalf("building packages: %v", built.err)
	}
	for _, p := range built.pkgs {
		switch filepath.Ext(p) {
		case ".deb":
			deb = p
		case ".rpm":
			rpm = p
		}
	}
	return deb, rpm, built.feat, filepath.Join(built.dir, "build", runtime.GOARCH, "xdptables")
}

func TestMain(m *testing.M) {
	rc := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(rc)
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestDebContents(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("SKIP-TOOL: dpkg-deb not installed")
	}
	deb, rpm, feat, _ := packages(t)
	if st, err := os.Stat(rpm); err != nil || st.Size() == 0 {
		t.Errorf("rpm not written: %v", err)
	}
	if !strings.HasSuffix(deb, "xdptables_1.2.3+git4.abcdef0-1_"+runtime.GOARCH+".deb") {
		t.Errorf("deb file name %s", deb)
	}
	list := run(t, "dpkg-deb", "-c", deb)
	want := []string{
		"./usr/sbin/xdptables",
		"./usr/libexec/xdptables/iptables -> ../../sbin/xdptables",
		"./usr/libexec/xdptables/ip6tables-restore -> ../../sbin/xdptables",
		"./usr/libexec/xdptables/iptables-save -> ../../sbin/xdptables",
		"./lib/systemd/system/xdptables-sets.service",
		"./lib/systemd/system/xdptables-rules.service",
		"./usr/share/man/man8/xdptables.8.gz",
		"./usr/share/man/man8/xdptables-iptables.8.gz",
		"./usr/share/man/man8/xdptables-iptables-restore.8.gz",
		"./usr/share/man/man8/xdptables-ipset.8.gz",
		"./usr/share/bash-completion/completions/xdptables",
		"./usr/share/zsh/vendor-completions/_xdptables",
		"./etc/bash_completion.d/xdptables",
	}
	if feat.IPSet {
		want = append(want, "./usr/sbin/ipset -> xdptables", "./usr/libexec/xdptables/ipset -> ../../sbin/xdptables")
	}
	if feat.XDP {
		want = append(want, "./lib/systemd/system/xdptables-xdp.service")
	}
	for _, w := range want {
		if !strings.Contains(list, w) {
			t.Errorf("deb lacks %s", w)
		}
	}
	// never the files of the iptables package
	for _, bad := range []string{"./usr/sbin/iptables\n", "./usr/sbin/iptables ", "iptables-nft", "/usr/share/man/man8/iptables"} {
		if strings.Contains(list, bad) {
			t.Errorf("deb ships %q, which belongs to the iptables package:\n%s", bad, list)
		}
	}
	info := run(t, "dpkg-deb", "-I", deb)
	for _, w := range []string{"Package: xdptables", "Version: 1.2.3+git4.abcdef0-1", "Depends: dpkg (>= 1.20.1)", "Recommends: nftables", "preinst", "postinst", "prerm", "postrm"} {
		if !strings.Contains(info, w) {
			t.Errorf("control lacks %q:\n%s", w, info)
		}
	}
	ctl := t.TempDir()
	run(t, "dpkg-deb", "-e", deb, ctl)
	post, _ := os.ReadFile(filepath.Join(ctl, "postinst"))
	if !strings.Contains(string(post), "PRIORITY=50") || !strings.Contains(string(post), "update-alternatives --install") {
		t.Errorf("postinst:\n%s", post)
	}
	for _, s := range []string{"preinst", "postinst", "prerm", "postrm"} {
		b, _ := os.ReadFile(filepath.Join(ctl, s))
		if strings.Contains(string(b), "@") {
			t.Errorf("%s has an unreplaced placeholder:\n%s", s, b)
		}
		run(t, "sh", "-n", filepath.Join(ctl, s))
	}
	if b, _ := os.ReadFile(filepath.Join(ctl, "conffiles")); strings.TrimSpace(string(b)) != "/etc/bash_completion.d/xdptables" {
		t.Errorf("conffiles: %q", b)
	}
}

// fakeHost is a dpkg root that looks like a Debian host with iptables-nft
// registered as the iptables and ip6tables alternatives at priority 20
// and ipset installed, with none of the real tools.
func fakeHost(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "var/lib/dpkg/alternatives", "usr/sbin", "etc/alternatives", "var/log"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, body string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("var/lib/dpkg/available", "", 0o644)
	// the package depends on dpkg; the real one is what runs the scripts
	write("var/lib/dpkg/status", "Package: dpkg\nStatus: install ok installed\nPriority: required\nSection: admin\n"+
		"Maintainer: test <test@example.org>\nArchitecture: all\nVersion: 1.21.22\nDescription: stand-in\n\n", 0o644)
	write("var/lib/dpkg/info/dpkg.list", "", 0o644)
	write("usr/sbin/xtables-nft-multi", "#!/bin/sh\necho stand-in iptables-nft\n", 0o755)
	write("usr/sbin/ipset", "#!/bin/sh\necho stand-in ipset\n", 0o755)
	for _, fam := range []string{"iptables", "ip6tables"} {
		for _, s := range []string{"", "-save", "-restore"} {
			if err := os.Symlink("xtables-nft-multi", filepath.Join(root, "usr/sbin", fam+"-nft"+s)); err != nil {
				t.Fatal(err)
			}
		}
		run(t, "update-alternatives", "--root", root, "--install", "/usr/sbin/"+fam, fam, "/usr/sbin/"+fam+"-nft", "20",
			"--slave", "/usr/sbin/"+fam+"-restore", fam+"-restore", "/usr/sbin/"+fam+"-nft-restore",
			"--slave", "/usr/sbin/"+fam+"-save", fam+"-save", "/usr/sbin/"+fam+"-nft-save")
	}
	return root
}

func query(t *testing.T, root, name string) string {
	t.Helper()
	out, _ := exec.Command("update-alternatives", "--root", root, "--query", name).CombinedOutput()
	return string(out)
}

func value(q string) string {
	for _, l := range strings.Split(q, "\n") {
		if v, ok := strings.CutPrefix(l, "Value: "); ok {
			return v
		}
	}
	return ""
}

// TestDebInstall installs the .deb into a throwaway dpkg root with the
// real dpkg, its maintainer scripts run outside a chroot with DPKG_ROOT
// (so update-alternatives, dpkg-divert and systemctl act on the root):
// install twice, remove, purge, and check the host's state at each step.
func TestDebInstall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP-ROOT: installing a package into a temporary dpkg root needs root")
	}
	for _, tool := range []string{"dpkg", "update-alternatives", "dpkg-divert", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIP-TOOL: %s not installed", tool)
		}
	}
	deb, _, feat, _ := packages(t)
	root := fakeHost(t)
	dpkg := func(args ...string) string {
		return run(t, "dpkg", append([]string{"--root=" + root, "--force-script-chrootless", "--log=/dev/null"}, args...)...)
	}
	at := func(p string) string { return filepath.Join(root, p) }
	chrooted := func(args ...string) string { return run(t, "chroot", append([]string{root}, args...)...) }

	installed := func(step string) {
		t.Helper()
		for _, fam := range []string{"iptables", "ip6tables"} {
			q := query(t, root, fam)
			if value(q) != "/usr/libexec/xdptables/"+fam {
				t.Errorf("%s: %s alternative:\n%s", step, fam, q)
			}
			if !strings.Contains(q, "Alternative: /usr/sbin/"+fam+"-nft\nPriority: 20") ||
				!strings.Contains(q, "Alternative: /usr/libexec/xdptables/"+fam+"\nPriority: 50") {
				t.Errorf("%s: %s alternatives:\n%s", step, fam, q)
			}
			for _, s := range []string{"-save", "-restore"} {
				if l, _ := os.Readlink(at("etc/alternatives/" + fam + s)); l != "/usr/libexec/xdptables/"+fam+s {
					t.Errorf("%s: %s%s slave -> %q", step, fam, s, l)
				}
			}
		}
		// through /usr/sbin/iptables → /etc/alternatives → libexec → our binary
		if v := chrooted("/usr/sbin/iptables", "-V"); v != "iptables v1.8.9 (nf_tables)\n" {
			t.Errorf("%s: iptables -V = %q", step, v)
		}
		if v := chrooted("/usr/libexec/xdptables/ip6tables-save", "-V"); !strings.HasPrefix(v, "ip6tables-save v1.8.9") {
			t.Errorf("%s: ip6tables-save -V = %q", step, v)
		}
		if v := chrooted("/usr/sbin/xdptables", "--version"); v != "xdptables v1.2.3-4-gabcdef0\n" {
			t.Errorf("%s: xdptables --version = %q", step, v)
		}
		for _, u := range []string{"xdptables-sets.service", "xdptables-rules.service"} {
			if _, err := os.Lstat(at("etc/systemd/system/multi-user.target.wants/" + u)); err != nil {
				t.Errorf("%s: %s not enabled: %v", step, u, err)
			}
		}
		if feat.IPSet {
			if l, _ := os.Readlink(at("usr/sbin/ipset")); l != "xdptables" {
				t.Errorf("%s: /usr/sbin/ipset -> %q", step, l)
			}
			if b, _ := os.ReadFile(at("usr/sbin/ipset.distrib")); !strings.Contains(string(b), "stand-in ipset") {
				t.Errorf("%s: Debian's ipset not diverted: %q", step, b)
			}
			if d := run(t, "dpkg-divert", "--root", root, "--list"); !strings.Contains(d, "diversion of /usr/sbin/ipset to /usr/sbin/ipset.distrib by xdptables") {
				t.Errorf("%s: diversions: %q", step, d)
			}
		}
	}
	removed := func(step string) {
		t.Helper()
		for _, fam := range []string{"iptables", "ip6tables"} {
			q := query(t, root, fam)
			if value(q) != "/usr/sbin/"+fam+"-nft" || strings.Contains(q, "xdptables") {
				t.Errorf("%s: %s alternative not handed back:\n%s", step, fam, q)
			}
			if l, _ := os.Readlink(at("etc/alternatives/" + fam + "-save")); l != "/usr/sbin/"+fam+"-nft-save" {
				t.Errorf("%s: %s-save -> %q", step, fam, l)
			}
		}
		if b, err := os.ReadFile(at("usr/sbin/ipset")); err != nil || !strings.Contains(string(b), "stand-in ipset") {
			t.Errorf("%s: Debian's ipset not back: %q %v", step, b, err)
		}
		if _, err := os.Lstat(at("usr/sbin/ipset.distrib")); err == nil {
			t.Errorf("%s: ipset.distrib left behind", step)
		}
		if d := run(t, "dpkg-divert", "--root", root, "--list"); strings.Contains(d, "xdptables") {
			t.Errorf("%s: diversion left: %q", step, d)
		}
		for _, p := range []string{"usr/sbin/xdptables", "usr/libexec/xdptables", "lib/systemd/system/xdptables-rules.service",
			"etc/systemd/system/multi-user.target.wants/xdptables-rules.service"} {
			if _, err := os.Lstat(at(p)); err == nil {
				t.Errorf("%s: %s left behind", step, p)
			}
		}
	}

	dpkg("-i", deb)
	installed("install")
	dpkg("-i", deb) // reinstall: prerm upgrade, preinst upgrade, postinst configure again
	installed("reinstall")
	if s := run(t, "dpkg-query", "--admindir="+at("var/lib/dpkg"), "-W", "-f=${Status}", "xdptables"); s != "install ok installed" {
		t.Errorf("status after reinstall: %q", s)
	}
	dpkg("-r", "xdptables")
	removed("remove")
	if _, err := os.Stat(at("etc/bash_completion.d/xdptables")); err != nil {
		t.Errorf("remove took the conffile: %v", err)
	}
	dpkg("-P", "xdptables")
	removed("purge")
	if _, err := os.Stat(at("etc/bash_completion.d/xdptables")); err == nil {
		t.Errorf("purge left the conffile")
	}
	// and once more from scratch after a purge
	dpkg("-i", deb)
	installed("install after purge")
	dpkg("-P", "xdptables")
	removed("purge again")
}
