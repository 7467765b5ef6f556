package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/files"
)

// TestRPMContents checks the .rpm's file list, relations and scriptlets
// without installing it.
func TestRPMContents(t *testing.T) {
	if _, err := exec.LookPath("rpm"); err != nil {
		t.Skip("SKIP-TOOL: rpm not installed")
	}
	_, pkg, feat, bin := packages(t)
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	if feat.IPSet {
		// the version the rpm provides ipset at is the one the binary
		// answers with
		link := filepath.Join(t.TempDir(), "ipset")
		if err := os.Symlink(bin, link); err != nil {
			t.Fatal(err)
		}
		if v := run(t, link, "-v"); !strings.HasPrefix(v, "ipset v"+IPSetVersion+",") {
			t.Errorf("ipset -v = %q, the rpm provides ipset = %s", v, IPSetVersion)
		}
	}
	if !strings.HasSuffix(pkg, "xdptables-1.2.3+git4.abcdef0-1."+arch+".rpm") {
		t.Errorf("rpm file name %s", pkg)
	}
	// name → "mode" or "l -> target" (nfpm writes symlinks without
	// permission bits, which rpm neither installs nor verifies)
	files := map[string]string{}
	list := run(t, "rpm", "-qp", "--qf", "[%{FILEMODES:perms} %{FILENAMES} %{FILELINKTOS}\n]", pkg)
	for _, l := range strings.Split(strings.TrimSpace(list), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0][0] == 'l':
			files[f[1]] = "l -> " + f[2]
		case len(f) == 2:
			files[f[1]] = f[0]
		default:
			t.Errorf("rpm file line %q", l)
		}
	}
	want := map[string]string{
		"/usr/sbin/xdptables":                                 "-rwxr-xr-x",
		"/usr/libexec/xdptables/iptables":                     "l -> ../../sbin/xdptables",
		"/usr/libexec/xdptables/ip6tables-restore":            "l -> ../../sbin/xdptables",
		"/usr/libexec/xdptables/iptables-save":                "l -> ../../sbin/xdptables",
		"/usr/lib/systemd/system/xdptables-sets.service":      "-rw-r--r--",
		"/usr/lib/systemd/system/xdptables-rules.service":     "-rw-r--r--",
		"/usr/share/man/man8/xdptables.8.gz":                  "-rw-r--r--",
		"/usr/share/man/man8/xdptables-iptables.8.gz":         "-rw-r--r--",
		"/usr/share/man/man8/xdptables-iptables-restore.8.gz": "-rw-r--r--",
		"/usr/share/man/man8/xdptables-ipset.8.gz":            "-rw-r--r--",
		"/usr/share/bash-completion/completions/xdptables":    "-rw-r--r--",
		"/usr/share/zsh/site-functions/_xdptables":            "-rw-r--r--",
		"/etc/bash_completion.d/xdptables":                    "-rw-r--r--",
	}
	if feat.IPSet {
		want["/usr/sbin/ipset"] = "l -> xdptables"
	}
	if feat.XDP {
		want["/usr/lib/systemd/system/xdptables-xdp.service"] = "-rw-r--r--"
	}
	for name, w := range want {
		if files[name] != w {
			t.Errorf("rpm has %s as %q, want %q", name, files[name], w)
		}
	}
	// never the files of the iptables package
	for _, bad := range []string{" /usr/sbin/iptables", " /usr/sbin/ip6tables", "iptables-nft", "/usr/share/man/man8/iptables"} {
		if strings.Contains(" "+list, bad) {
			t.Errorf("rpm ships %q, which belongs to the iptables package:\n%s", bad, list)
		}
	}
	if c := run(t, "rpm", "-qpc", pkg); c != "/etc/bash_completion.d/xdptables\n" {
		t.Errorf("config files: %q", c)
	}
	if d := run(t, "rpm", "-qpd", pkg); !strings.Contains(d, "/usr/share/doc/xdptables/README.md") {
		t.Errorf("doc files: %q", d)
	}
	info := run(t, "rpm", "-qp", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\n", pkg)
	if info != "xdptables 1.2.3+git4.abcdef0-1\n" {
		t.Errorf("name and version: %q", info)
	}
	requires := run(t, "rpm", "-qpR", pkg)
	if !strings.Contains(requires, "/usr/sbin/update-alternatives\n") {
		t.Errorf("requires: %q", requires)
	}
	provides := run(t, "rpm", "-qp", "--provides", pkg)
	conflicts := run(t, "rpm", "-qp", "--conflicts", pkg)
	obsoletes := run(t, "rpm", "-qp", "--obsoletes", pkg)
	if feat.IPSet != strings.Contains(provides, "ipset = 7.17\n") || feat.IPSet != (conflicts == "ipset\n") {
		t.Errorf("ipset relations (package has ipset: %v): provides %q, conflicts %q", feat.IPSet, provides, conflicts)
	}
	if obsoletes != "" {
		t.Errorf("obsoletes %q: a dnf upgrade would swap packages behind the admin's back", obsoletes)
	}
	scripts := run(t, "rpm", "-qp", "--scripts", pkg)
	for _, w := range []string{"postinstall scriptlet (using /bin/sh)", "preuninstall scriptlet (using /bin/sh)", "postuninstall scriptlet (using /bin/sh)", "PRIORITY=50"} {
		if !strings.Contains(scripts, w) {
			t.Errorf("scriptlets lack %q:\n%s", w, scripts)
		}
	}
	if strings.Contains(scripts, "@") {
		t.Errorf("unreplaced placeholder:\n%s", scripts)
	}
}

// The rpm install tests run the real rpm (Debian's) on a throwaway root
// whose scriptlets run, chrooted, with real tools copied from this host:
// /bin/sh, grep, systemctl and dpkg's update-alternatives, installed as
// /usr/sbin/update-alternatives the way openSUSE ships it (and Fedora's
// chkconfig names its compatible tool). Stand-in packages built here
// play the distribution: "testhost" provides those tools, "iptables-nft"
// registers its alternatives exactly as Fedora's iptables-nft %post does
// (ip6tables and the -save/-restore tools as slaves of one "iptables"
// group, priority 10) and "ipset" owns /usr/sbin/ipset as a plain file.

var (
	standinOnce sync.Once
	standins    struct {
		dir  string
		pkgs map[string]string
		err  error
	}
)

// standinPackages builds the stand-in rpms once per test binary.
func standinPackages(t *testing.T) map[string]string {
	t.Helper()
	standinOnce.Do(func() {
		standins.dir, standins.err = os.MkdirTemp("", "xdptables-standin-")
		if standins.err != nil {
			return
		}
		standins.pkgs, standins.err = buildStandins(standins.dir)
	})
	if standins.err != nil {
		t.Fatalf("building stand-in packages: %v", standins.err)
	}
	return standins.pkgs
}

func buildStandins(dir string) (map[string]string, error) {
	write := func(name, body string) (string, error) {
		p := filepath.Join(dir, name)
		return p, os.WriteFile(p, []byte(body), 0o755)
	}
	multi, err := write("xtables-nft-multi", "#!/bin/sh\necho \"stand-in ${0##*/}\"\n")
	if err != nil {
		return nil, err
	}
	ipset, err := write("ipset", "#!/bin/sh\necho stand-in ipset\n")
	if err != nil {
		return nil, err
	}
	post, err := write("iptables-nft.post", `#!/bin/sh
pfx=/usr/sbin/iptables
pfx6=/usr/sbin/ip6tables
update-alternatives --install \
	$pfx iptables $pfx-nft 10 \
	--slave $pfx6 ip6tables $pfx6-nft \
	--slave $pfx-restore iptables-restore $pfx-nft-restore \
	--slave $pfx-save iptables-save $pfx-nft-save \
	--slave $pfx6-restore ip6tables-restore $pfx6-nft-restore \
	--slave $pfx6-save ip6tables-save $pfx6-nft-save
`)
	if err != nil {
		return nil, err
	}
	postun, err := write("iptables-nft.postun", `#!/bin/sh
if [ $1 -eq 0 ]; then
	update-alternatives --remove iptables /usr/sbin/iptables-nft
fi
`)
	if err != nil {
		return nil, err
	}
	nft := files.Contents{{Source: multi, Destination: "/usr/sbin/xtables-nft-multi", FileInfo: &files.ContentFileInfo{Mode: 0o755}}}
	for _, fam := range []string{"iptables", "ip6tables"} {
		for _, s := range []string{"", "-save", "-restore"} {
			nft = append(nft, &files.Content{Source: "xtables-nft-multi", Destination: "/usr/sbin/" + fam + "-nft" + s, Type: files.TypeSymlink})
		}
	}
	infos := map[string]*nfpm.Info{
		"testhost": {Overridables: nfpm.Overridables{
			Provides: []string{"/bin/sh", "/usr/sbin/update-alternatives"},
		}},
		"iptables-nft": {Overridables: nfpm.Overridables{
			Contents: nft,
			Depends:  []string{"/usr/sbin/update-alternatives"},
			Scripts:  nfpm.Scripts{PostInstall: post, PostRemove: postun},
		}},
		"ipset": {Overridables: nfpm.Overridables{
			Contents: files.Contents{{Source: ipset, Destination: "/usr/sbin/ipset", FileInfo: &files.ContentFileInfo{Mode: 0o755}}},
		}},
	}
	pkgs := map[string]string{}
	for name, info := range infos {
		info.Name, info.Arch, info.Platform = name, runtime.GOARCH, "linux"
		info.Version, info.Release = "7.17", "1"
		if name == "iptables-nft" {
			info.Version = "1.8.9"
		}
		info.Description, info.Maintainer = "stand-in for a distribution package", "test <test@example.org>"
		info.MTime = time.Unix(0, 0).UTC()
		info.RPM.Compression = "gzip"
		info = nfpm.WithDefaults(info)
		if err := nfpm.PrepareForPackager(info, "rpm"); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		pkgr, err := nfpm.Get("rpm")
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, name+".rpm")
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		if err := pkgr.Package(info, f); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		pkgs[name] = p
	}
	return pkgs, nil
}

// copyIn copies a host file into root at dst, creating directories and
// following symlinks.
func copyIn(root, src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(dst)), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(filepath.Join(root, dst), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// sharedLibs lists the shared objects a host binary loads, by ldd.
func sharedLibs(t *testing.T, bin string) []string {
	t.Helper()
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not a dynamic executable") {
			return nil
		}
		t.Fatalf("ldd %s: %v\n%s", bin, err, out)
	}
	var libs []string
	for _, l := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(l) {
			if strings.HasPrefix(f, "/") {
				libs = append(libs, f)
			}
		}
	}
	return libs
}

// rpmRoot is a throwaway root for rpm.
type rpmRoot struct {
	t    *testing.T
	dir  string
	unit bool // systemctl is there: units are enabled and disabled
}

// newRPMRoot makes a merged-/usr root with the real tools the scriptlets
// call and the "testhost" package installed. alternativesToo also puts
// the tool in as /usr/sbin/alternatives, the name Fedora's scriptlets use.
func newRPMRoot(t *testing.T, alternativesToo bool) *rpmRoot {
	t.Helper()
	r := &rpmRoot{t: t, dir: t.TempDir()}
	for _, d := range []string{"usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "etc/alternatives", "var/lib/dpkg/alternatives", "var/lib/rpm", "var/log", "var/tmp", "tmp", "dev"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "sbin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(r.dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	// scriptlets write to /dev/null
	run(t, "mknod", "-m", "666", filepath.Join(r.dir, "dev/null"), "c", "1", "3")
	tools := [][2]string{{"sh", "/usr/bin/sh"}, {"grep", "/usr/bin/grep"}, {"update-alternatives", "/usr/sbin/update-alternatives"}}
	if alternativesToo {
		tools = append(tools, [2]string{"update-alternatives", "/usr/sbin/alternatives"})
	}
	if _, err := exec.LookPath("systemctl"); err == nil {
		tools = append(tools, [2]string{"systemctl", "/usr/bin/systemctl"})
		r.unit = true
	}
	for _, tool := range tools {
		src, err := exec.LookPath(tool[0])
		if err != nil {
			t.Fatalf("%s: %v", tool[0], err)
		}
		dst := tool[1]
		if err := copyIn(r.dir, src, dst, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, lib := range sharedLibs(t, src) {
			if err := copyIn(r.dir, lib, lib, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.rpm("-i", standinPackages(t)["testhost"])
	return r
}

// try runs rpm on the root and returns its output without Debian's
// warning about using rpm directly.
func (r *rpmRoot) try(args ...string) (string, error) {
	cmd := exec.Command("rpm", append([]string{"--root", r.dir, "--dbpath", "/var/lib/rpm"}, args...)...)
	out, err := cmd.CombinedOutput()
	var keep []string
	for _, l := range strings.SplitAfter(string(out), "\n") {
		if !strings.Contains(l, "use Alien instead") && !strings.Contains(l, "assuming you know what you are doing") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, ""), err
}

func (r *rpmRoot) rpm(args ...string) string {
	r.t.Helper()
	out, err := r.try(args...)
	if err != nil {
		r.t.Fatalf("rpm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	// a failing scriptlet only warns
	if strings.Contains(out, "scriptlet failed") || strings.Contains(out, "error:") {
		r.t.Errorf("rpm %s:\n%s", strings.Join(args, " "), out)
	}
	return out
}

func (r *rpmRoot) at(p string) string { return filepath.Join(r.dir, p) }

// chroot runs a command inside the root.
func (r *rpmRoot) chroot(args ...string) string {
	r.t.Helper()
	return run(r.t, "chroot", append([]string{r.dir}, args...)...)
}

// alt is update-alternatives' machine-readable view of one group.
func (r *rpmRoot) alt(name string) string {
	out, _ := exec.Command("chroot", r.dir, "/usr/sbin/update-alternatives", "--query", name).CombinedOutput()
	return string(out)
}

// resolveIn follows the symlinks of path the way a process chrooted into
// root would, and returns the final path inside root.
func resolveIn(root, path string) (string, error) {
	p := filepath.Clean("/" + path)
	for hops := 0; hops < 40; hops++ {
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur, moved := "/", false
		for i, part := range parts {
			next := filepath.Join(cur, part)
			fi, err := os.Lstat(filepath.Join(root, next))
			if err != nil {
				return "", err
			}
			if fi.Mode()&os.ModeSymlink == 0 {
				cur = next
				continue
			}
			target, err := os.Readlink(filepath.Join(root, next))
			if err != nil {
				return "", err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			p, moved = filepath.Join(append([]string{target}, parts[i+1:]...)...), true
			break
		}
		if !moved {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// links checks where each /usr/sbin name finally leads, through
// /etc/alternatives: to want, or nowhere when want is "".
func (r *rpmRoot) links(step string, want map[string]string) {
	r.t.Helper()
	for name, w := range want {
		got, err := resolveIn(r.dir, "/usr/sbin/"+name)
		if w == "" {
			if _, lerr := os.Lstat(r.at("usr/sbin/" + name)); lerr == nil {
				r.t.Errorf("%s: /usr/sbin/%s left behind", step, name)
			}
			continue
		}
		if err != nil || got != "/"+w {
			r.t.Errorf("%s: /usr/sbin/%s leads to %q (%v), want %s", step, name, got, err, w)
		}
	}
}

func (r *rpmRoot) unitsEnabled(step string, want bool, units ...string) {
	r.t.Helper()
	if !r.unit {
		return
	}
	for _, u := range units {
		_, err := os.Lstat(r.at("etc/systemd/system/multi-user.target.wants/" + u))
		if (err == nil) != want {
			r.t.Errorf("%s: %s enabled: %v, want %v", step, u, err == nil, want)
		}
	}
}

// ours is every name the package points at its own binary.
func ours(ipset bool) map[string]string {
	m := map[string]string{}
	for _, n := range rulesPersonalities {
		m[n] = "usr/sbin/xdptables"
	}
	if ipset {
		m["ipset"] = "usr/sbin/xdptables"
	}
	return m
}

func rpmPrereqs(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP-ROOT: rpm runs scriptlets chrooted into the temporary root, which needs root")
	}
	for _, tool := range []string{"rpm", "chroot", "ldd", "mknod", "update-alternatives"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIP-TOOL: %s not installed", tool)
		}
	}
}

// TestRPMInstallFedora installs the .rpm on a Fedora-shaped host where
// iptables-nft owns the "iptables" group (ip6tables a slave of it):
// install, reinstall, upgrade in place, erase, and again.
func TestRPMInstallFedora(t *testing.T) {
	rpmPrereqs(t)
	_, pkg, feat, _ := packages(t)
	standin := standinPackages(t)
	r := newRPMRoot(t, true)
	r.rpm("-i", standin["iptables-nft"])
	units := []string{"xdptables-sets.service", "xdptables-rules.service"}
	if feat.XDP {
		units = append(units, "xdptables-xdp.service")
	}
	nftLinks := map[string]string{}
	for _, n := range rulesPersonalities {
		nftLinks[n] = "usr/sbin/xtables-nft-multi"
	}
	if v := r.chroot("/usr/sbin/ip6tables-save", "-V"); v != "stand-in ip6tables-save\n" {
		t.Fatalf("the stand-in iptables-nft is not in place: %q", v)
	}

	installed := func(step string) {
		t.Helper()
		q := r.alt("iptables")
		if value(q) != "/usr/libexec/xdptables/iptables" ||
			!strings.Contains(q, "Alternative: /usr/sbin/iptables-nft\nPriority: 10\n") ||
			!strings.Contains(q, "Alternative: /usr/libexec/xdptables/iptables\nPriority: 50\n") ||
			!strings.Contains(q, "Slaves:\n ip6tables /usr/libexec/xdptables/ip6tables\n") {
			t.Errorf("%s: iptables group:\n%s", step, q)
		}
		if q := r.alt("ip6tables"); value(q) != "" {
			t.Errorf("%s: a second group for ip6tables, which Fedora's iptables-nft could no longer slave:\n%s", step, q)
		}
		r.links(step, ours(feat.IPSet))
		if v := r.chroot("/usr/sbin/iptables", "-V"); v != "iptables v1.8.9 (nf_tables)\n" {
			t.Errorf("%s: iptables -V = %q", step, v)
		}
		if v := r.chroot("/usr/sbin/ip6tables-restore", "-V"); !strings.HasPrefix(v, "ip6tables-restore v1.8.9") {
			t.Errorf("%s: ip6tables-restore -V = %q", step, v)
		}
		if v := r.chroot("/usr/sbin/xdptables", "--version"); v != "xdptables v1.2.3-4-gabcdef0\n" {
			t.Errorf("%s: xdptables --version = %q", step, v)
		}
		if feat.IPSet {
			if v := r.chroot("/usr/sbin/ipset", "-v"); !strings.HasPrefix(v, "ipset v7.17") {
				t.Errorf("%s: ipset -v = %q", step, v)
			}
			if o := r.rpm("-qf", "/usr/sbin/ipset"); !strings.HasPrefix(o, "xdptables-") {
				t.Errorf("%s: /usr/sbin/ipset owned by %q", step, o)
			}
		}
		// every file as packaged (symlinks, modes, digests)
		if v, err := r.try("-V", "xdptables"); err != nil || v != "" {
			t.Errorf("%s: rpm -V: %v\n%s", step, err, v)
		}
		r.unitsEnabled(step, true, units...)
	}
	removed := func(step string) {
		t.Helper()
		q := r.alt("iptables")
		if value(q) != "/usr/sbin/iptables-nft" || strings.Contains(q, "xdptables") {
			t.Errorf("%s: iptables group not handed back:\n%s", step, q)
		}
		r.links(step, nftLinks)
		if v := r.chroot("/usr/sbin/iptables", "-V"); v != "stand-in iptables\n" {
			t.Errorf("%s: iptables -V = %q", step, v)
		}
		if _, err := r.try("-q", "xdptables"); err == nil {
			t.Errorf("%s: xdptables still installed", step)
		}
		for _, p := range []string{"usr/sbin/xdptables", "usr/sbin/ipset", "usr/libexec/xdptables", "usr/share/doc/xdptables", "usr/lib/systemd/system/xdptables-rules.service", "etc/bash_completion.d/xdptables"} {
			if _, err := os.Lstat(r.at(p)); err == nil {
				t.Errorf("%s: %s left behind", step, p)
			}
		}
		r.unitsEnabled(step, false, units...)
	}

	r.rpm("-i", pkg)
	installed("install")
	// systemd's own check of the installed units (keys, dependencies,
	// the ExecStart binary in the root)
	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		cmd := exec.Command("systemd-analyze", append([]string{"verify", "--root=" + r.dir, "--man=no"}, units...)...)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	} else {
		t.Log("systemd-analyze not installed: the units are not verified")
	}
	// what dnf reinstall does: %post 2, then the old copy's %preun and
	// %postun 1. (rpm -i --replacepkgs, which installs a second copy
	// next to the first, is refused: each copy's Conflicts: ipset meets
	// the other's Provides: ipset.)
	r.rpm("--reinstall", pkg)
	installed("reinstall")
	r.rpm("-U", "--replacepkgs", pkg)
	installed("upgrade in place")
	if n := r.rpm("-q", "xdptables"); n != "xdptables-1.2.3+git4.abcdef0-1."+map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]+"\n" {
		t.Errorf("installed: %q", n)
	}
	// an admin's choice survives an upgrade: units stay disabled
	if r.unit {
		r.chroot("/usr/bin/systemctl", "disable", "xdptables-rules.service")
		r.rpm("-U", "--replacepkgs", pkg)
		r.unitsEnabled("upgrade after disable", false, "xdptables-rules.service")
		r.chroot("/usr/bin/systemctl", "enable", "xdptables-rules.service")
	}
	r.rpm("-e", "xdptables")
	removed("erase")
	r.rpm("-i", pkg)
	installed("install after erase")
	r.rpm("-e", "xdptables")
	removed("erase again")
	// and iptables-nft's own erase still works afterwards
	r.rpm("-e", "iptables-nft")
	for _, n := range rulesPersonalities {
		if _, err := os.Lstat(r.at("usr/sbin/" + n)); err == nil {
			t.Errorf("/usr/sbin/%s left after erasing everything", n)
		}
	}
}

// TestRPMInstallBare installs the .rpm on a host without iptables and
// with update-alternatives only (openSUSE's tool): iptables and
// ip6tables become two groups, as on Debian, and erase leaves nothing.
// A later iptables-nft of Fedora's shape then still installs, and the
// xdptables package installed on top of it takes the lead.
func TestRPMInstallBare(t *testing.T) {
	rpmPrereqs(t)
	_, pkg, feat, _ := packages(t)
	r := newRPMRoot(t, false)
	r.rpm("-i", pkg)
	for _, fam := range []string{"iptables", "ip6tables"} {
		q := r.alt(fam)
		if value(q) != "/usr/libexec/xdptables/"+fam || !strings.Contains(q, "Priority: 50\n") {
			t.Errorf("%s group:\n%s", fam, q)
		}
	}
	r.links("install", ours(feat.IPSet))
	if v := r.chroot("/usr/sbin/ip6tables", "-V"); v != "ip6tables v1.8.9 (nf_tables)\n" {
		t.Errorf("ip6tables -V = %q", v)
	}
	r.rpm("--reinstall", pkg)
	r.links("reinstall", ours(feat.IPSet))
	r.rpm("-e", "xdptables")
	gone := map[string]string{}
	for n := range ours(true) {
		gone[n] = ""
	}
	r.links("erase", gone)
	for _, d := range []string{"etc/alternatives", "var/lib/dpkg/alternatives"} {
		if ents, _ := os.ReadDir(r.at(d)); len(ents) != 0 {
			t.Errorf("erase left %s: %v", d, ents)
		}
	}
}

// TestRPMInstallIPSetConflict: the rpm world has no dpkg-divert, so the
// package owns /usr/sbin/ipset itself, provides ipset and conflicts with
// the distribution's ipset package: rpm refuses to install it next to
// ipset (dnf swap ipset xdptables replaces one with the other), and after
// an erase the distribution's ipset installs again cleanly.
func TestRPMInstallIPSetConflict(t *testing.T) {
	rpmPrereqs(t)
	_, pkg, feat, _ := packages(t)
	if !feat.IPSet {
		t.Skip("SKIP-FEATURE: no ipset personality in this build")
	}
	standin := standinPackages(t)
	r := newRPMRoot(t, true)
	r.rpm("-i", standin["ipset"])
	out, err := r.try("-i", pkg)
	if err == nil || !strings.Contains(out, "ipset conflicts with xdptables-") {
		t.Fatalf("installing next to ipset: %v\n%s", err, out)
	}
	if v := r.chroot("/usr/sbin/ipset"); v != "stand-in ipset\n" {
		t.Errorf("the refused install touched ipset: %q", v)
	}
	if out, err := r.try("-i", standin["iptables-nft"]); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// what `dnf swap ipset xdptables` does
	r.rpm("-e", "ipset")
	r.rpm("-i", pkg)
	if v := r.chroot("/usr/sbin/ipset", "-v"); !strings.HasPrefix(v, "ipset v7.17") {
		t.Errorf("ipset -v after the swap = %q", v)
	}
	if out, err := r.try("-i", standin["ipset"]); err == nil || !strings.Contains(out, "conflicts with") {
		t.Errorf("ipset installed next to xdptables: %v\n%s", err, out)
	}
	r.rpm("-e", "xdptables")
	r.rpm("-i", standin["ipset"])
	if v := r.chroot("/usr/sbin/ipset"); v != "stand-in ipset\n" {
		t.Errorf("ipset after erase and reinstall: %q", v)
	}
}

// TestRPMInstallBeforeIPTables: on a Fedora-shaped host (chkconfig's
// alternatives) without iptables yet, the package creates the one
// "iptables" group Fedora uses, so that iptables-nft installed later
// still registers (its %post would fail on a separate ip6tables group),
// and xdptables stays in the lead until it is erased.
func TestRPMInstallBeforeIPTables(t *testing.T) {
	rpmPrereqs(t)
	_, pkg, feat, _ := packages(t)
	standin := standinPackages(t)
	r := newRPMRoot(t, true)
	r.rpm("-i", pkg)
	if q := r.alt("ip6tables"); value(q) != "" {
		t.Errorf("a separate ip6tables group:\n%s", q)
	}
	r.links("install", ours(feat.IPSet))
	r.rpm("-i", standin["iptables-nft"])
	q := r.alt("iptables")
	if value(q) != "/usr/libexec/xdptables/iptables" || !strings.Contains(q, "Alternative: /usr/sbin/iptables-nft\nPriority: 10\n") {
		t.Errorf("after iptables-nft:\n%s", q)
	}
	r.links("iptables-nft installed after", ours(feat.IPSet))
	r.rpm("-e", "xdptables")
	nft := map[string]string{}
	for _, n := range rulesPersonalities {
		nft[n] = "usr/sbin/xtables-nft-multi"
	}
	r.links("erase", nft)
}
