// Command package builds the xdptables .deb and .rpm packages with nfpm,
// for amd64 and arm64, into dist/. It is run by `make package` from the
// repository root and is not part of the xdptables binary.
//
// The version comes from `git describe`. Whether the packages take over
// ipset (the deb diverts /usr/sbin/ipset, the rpm conflicts with and
// provides ipset) and apply the XDP attach config at boot
// (`xdptables xdp apply`, xdptables-xdp.service) is decided by
// asking the freshly built binary what it can do, so that the packages
// never install a name the binary does not answer to.
package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

// Priority of the xdptables alternatives: above iptables-nft (20 on
// Debian, 10 on Fedora/RHEL) and iptables-legacy (10).
const Priority = 50

// IPSetVersion is the ipset release whose language and output the ipset
// personality reproduces (what `ipset -v` prints); the rpm provides it.
const IPSetVersion = "7.17"

// Libexec holds the alternative targets: links named exactly like the
// personalities, so that the binary knows what to be even when a target
// is run by its full path.
const Libexec = "/usr/libexec/xdptables"

// rulesPersonalities are the names the packages register as alternatives.
var rulesPersonalities = []string{
	"iptables", "iptables-save", "iptables-restore",
	"ip6tables", "ip6tables-save", "ip6tables-restore",
}

// Options say what to build.
type Options struct {
	Root    string   // repository root
	Out     string   // output directory (dist)
	Arches  []string // GOARCH values
	Formats []string // nfpm packager names
	Version string   // git describe output; "" asks git
}

// Features are what the built binary can do.
type Features struct {
	IPSet bool // the ipset personality exists
	XDP   bool // `xdptables xdp apply` exists
}

func main() {
	var o Options
	var arches, formats string
	flag.StringVar(&o.Root, "root", ".", "repository root")
	flag.StringVar(&o.Out, "out", "dist", "output directory")
	flag.StringVar(&arches, "arch", "amd64,arm64", "GOARCH values, comma-separated")
	flag.StringVar(&formats, "formats", "deb,rpm", "package formats, comma-separated")
	flag.StringVar(&o.Version, "version", "", "version (default: git describe --tags --always --dirty)")
	flag.Parse()
	o.Arches = strings.Split(arches, ",")
	o.Formats = strings.Split(formats, ",")
	pkgs, err := Build(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "package: %v\n", err)
		os.Exit(1)
	}
	for _, p := range pkgs {
		fmt.Println(p)
	}
}

// Build compiles the binaries and writes one package per format and
// architecture; it returns their paths.
func Build(o Options) ([]string, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, err
	}
	describe := o.Version
	if describe == "" {
		describe, err = gitDescribe(root)
		if err != nil {
			return nil, err
		}
	}
	version := PackageVersion(describe)
	work := filepath.Join(out, "build")
	if err := os.RemoveAll(work); err != nil {
		return nil, err
	}
	bins := map[string]string{}
	// the host's build answers the feature questions, whether or not it
	// is packaged
	arches := append([]string{runtime.GOARCH}, o.Arches...)
	for _, arch := range arches {
		if bins[arch] != "" {
			continue
		}
		bin := filepath.Join(work, arch, "xdptables")
		if err := compile(root, arch, describe, bin); err != nil {
			return nil, err
		}
		bins[arch] = bin
	}
	feat, err := Probe(bins[runtime.GOARCH])
	if err != nil {
		return nil, err
	}
	if !feat.XDP {
		fmt.Fprintf(os.Stderr, "package: `xdptables xdp apply` not found in this build: xdptables-xdp.service left out (hook: Features.XDP)\n")
	}
	if !feat.IPSet {
		fmt.Fprintf(os.Stderr, "package: no ipset personality in this build: /usr/sbin/ipset left alone (hook: Features.IPSet)\n")
	}
	staged, err := stage(root, work, feat)
	if err != nil {
		return nil, err
	}
	var pkgs []string
	for _, format := range o.Formats {
		for _, arch := range o.Arches {
			p, err := write(root, format, arch, version, bins[arch], staged, feat, out)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", format, arch, err)
			}
			pkgs = append(pkgs, p)
		}
	}
	return pkgs, nil
}

func gitDescribe(root string) (string, error) {
	cmd := exec.Command("git", "describe", "--tags", "--always", "--dirty")
	cmd.Dir = root
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git describe: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

var describeRE = regexp.MustCompile(`^v?([0-9][0-9A-Za-z.]*)(?:-([0-9]+)-g([0-9a-f]+))?(-dirty)?$`)
var hashRE = regexp.MustCompile(`^([0-9a-f]{4,40})(-dirty)?$`)

// PackageVersion turns `git describe` output into a version that dpkg
// and rpm order correctly: v1.2.0 → 1.2.0, v1.2.0-3-gabc → 1.2.0+git3.abc,
// a bare hash (no tag yet) → 0.0.0~gitabc, and ".dirty" for a dirty tree.
func PackageVersion(describe string) string {
	dirty := ""
	if m := hashRE.FindStringSubmatch(describe); m != nil {
		if m[2] != "" {
			dirty = ".dirty"
		}
		return "0.0.0~git" + m[1] + dirty
	}
	m := describeRE.FindStringSubmatch(describe)
	if m == nil {
		return "0.0.0~" + regexp.MustCompile(`[^0-9A-Za-z.]+`).ReplaceAllString(describe, ".")
	}
	if m[4] != "" {
		dirty = ".dirty"
	}
	v := m[1]
	if m[2] != "" {
		v += "+git" + m[2] + "." + m[3]
		return v + dirty
	}
	if dirty != "" {
		v += "+dirty"
	}
	return v
}

func compile(root, arch, describe, bin string) error {
	cmd := exec.Command("go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+describe,
		"-o", bin, "./cmd/xdptables")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %v\n%s", arch, err, out)
	}
	return nil
}

// Probe asks a binary runnable here which optional parts it has.
func Probe(bin string) (Features, error) {
	var f Features
	cmd := exec.Command(bin, "--help")
	var help bytes.Buffer
	cmd.Stdout, cmd.Stderr = &help, &help
	if err := cmd.Run(); err != nil {
		return f, fmt.Errorf("%s --help: %v\n%s", bin, err, help.String())
	}
	f.IPSet = regexp.MustCompile(`(?m)^\s+ipset\s*$`).Match(help.Bytes())
	// the boot unit runs `xdptables xdp apply`: it needs the command
	// listed and its usage naming apply
	if regexp.MustCompile(`(?m)^\s+xdp\s`).Match(help.Bytes()) {
		usage, _ := exec.Command(bin, "xdp").CombinedOutput()
		f.XDP = regexp.MustCompile(`(?m)^\s+apply\b`).Match(usage)
	}
	return f, nil
}

// staged are the generated files shared by all packages.
type staged struct {
	scripts map[string]string // "deb/postinst" → path
	man     []string          // gzipped pages
}

func stage(root, work string, feat Features) (staged, error) {
	s := staged{scripts: map[string]string{}}
	units := "xdptables-sets.service xdptables-rules.service"
	enableXDP := ":"
	if feat.XDP {
		units += " xdptables-xdp.service"
		enableXDP = "systemctl --root=\"${DPKG_ROOT:-/}\" enable xdptables-xdp.service >/dev/null 2>&1 || true"
	}
	takeIPSet := "0"
	if feat.IPSet {
		takeIPSet = "1"
	}
	repl := strings.NewReplacer(
		"@PRIORITY@", fmt.Sprint(Priority),
		"@TAKE_IPSET@", takeIPSet,
		"@UNITS@", units,
		"@ENABLE_XDP@", enableXDP,
	)
	for _, name := range []string{"deb/preinst", "deb/postinst", "deb/prerm", "deb/postrm", "rpm/post", "rpm/preun", "rpm/postun"} {
		b, err := os.ReadFile(filepath.Join(root, "packaging", name))
		if err != nil {
			return s, err
		}
		text := repl.Replace(string(b))
		if strings.Contains(text, "@") && regexp.MustCompile(`@[A-Z_]+@`).MatchString(text) {
			return s, fmt.Errorf("packaging/%s: unreplaced placeholder", name)
		}
		dst := filepath.Join(work, "scripts", name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return s, err
		}
		if err := os.WriteFile(dst, []byte(text), 0o755); err != nil {
			return s, err
		}
		s.scripts[name] = dst
	}
	pages, err := filepath.Glob(filepath.Join(root, "man", "*.8"))
	if err != nil {
		return s, err
	}
	if len(pages) == 0 {
		return s, errors.New("no man pages under man/")
	}
	for _, p := range pages {
		src, err := os.ReadFile(p)
		if err != nil {
			return s, err
		}
		dst := filepath.Join(work, "man", filepath.Base(p)+".gz")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return s, err
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.ModTime = time.Unix(0, 0) // reproducible
		zw.Write(src)
		if err := zw.Close(); err != nil {
			return s, err
		}
		if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
			return s, err
		}
		s.man = append(s.man, dst)
	}
	sort.Strings(s.man)
	return s, nil
}

// Contents lists what a package of the given format installs.
func Contents(root, format, bin string, st staged, feat Features) files.Contents {
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: mode}}
	}
	link := func(target, dst string) *files.Content {
		return &files.Content{Source: target, Destination: dst, Type: files.TypeSymlink}
	}
	unitDir, zshDir := "/lib/systemd/system", "/usr/share/zsh/vendor-completions"
	if format == "rpm" {
		unitDir, zshDir = "/usr/lib/systemd/system", "/usr/share/zsh/site-functions"
	}
	c := files.Contents{file(bin, "/usr/sbin/xdptables", 0o755)}
	names := append([]string(nil), rulesPersonalities...)
	if feat.IPSet {
		names = append(names, "ipset")
		// the deb's preinst diverts Debian's ipset to ipset.distrib; the
		// rpm conflicts with the distribution's ipset package instead
		c = append(c, link("xdptables", "/usr/sbin/ipset"))
	}
	if format == "rpm" {
		// rpm removes only the directories a package owns (dpkg any
		// that end up empty)
		for _, d := range []string{Libexec, "/usr/share/doc/xdptables"} {
			c = append(c, &files.Content{Destination: d, Type: files.TypeDir, FileInfo: &files.ContentFileInfo{Mode: 0o755}})
		}
	}
	for _, n := range names {
		c = append(c, link("../../sbin/xdptables", Libexec+"/"+n))
	}
	units := []string{"xdptables-sets.service", "xdptables-rules.service"}
	if feat.XDP {
		units = append(units, "xdptables-xdp.service")
	}
	for _, u := range units {
		c = append(c, file(filepath.Join(root, "packaging/systemd", u), unitDir+"/"+u, 0o644))
	}
	for _, m := range st.man {
		c = append(c, file(m, "/usr/share/man/man8/"+filepath.Base(m), 0o644))
	}
	c = append(c,
		file(filepath.Join(root, "completions/bash/xdptables"), "/usr/share/bash-completion/completions/xdptables", 0o644),
		file(filepath.Join(root, "completions/zsh/_xdptables"), zshDir+"/_xdptables", 0o644),
	)
	// iptables and ip6tables complete through xdptables' function, which
	// bash-completion would only load on demand for "xdptables": this
	// file registers it for every personality when a shell starts.
	loader := file(filepath.Join(root, "completions/bash/xdptables-personalities"), "/etc/bash_completion.d/xdptables", 0o644)
	loader.Type = files.TypeConfig
	c = append(c, loader)
	readme := file(filepath.Join(root, "README.md"), "/usr/share/doc/xdptables/README.md", 0o644)
	if format == "rpm" {
		readme.Type = files.TypeRPMDoc
	}
	c = append(c, readme)
	return c
}

func write(root, format, arch, version, bin string, st staged, feat Features, out string) (string, error) {
	info := &nfpm.Info{
		Name:          "xdptables",
		Arch:          arch,
		Platform:      "linux",
		Version:       version,
		VersionSchema: "none",
		Release:       "1",
		Section:       "net",
		Priority:      "optional",
		Maintainer:    "xdptables maintainers <xdptables@users.noreply.github.com>",
		Vendor:        "xdptables",
		Homepage:      "https://github.com/xdptables/xdptables",
		Description: "iptables, ip6tables and ipset on native nftables, with an XDP fast path\n" +
			"xdptables is a drop-in replacement for iptables, ip6tables, their -save and\n" +
			"-restore companions and ipset. It accepts their syntax and file formats and\n" +
			"loads the rules into the kernel as native nftables in a table of its own;\n" +
			"the raw table's leading DROP/ACCEPT rules also run as an XDP program.\n" +
			"The package registers xdptables as the iptables and ip6tables alternative\n" +
			"and restores saved rules at boot.",
		MTime: time.Unix(0, 0).UTC(),
	}
	info.Contents = Contents(root, format, bin, st, feat)
	switch format {
	case "deb":
		info.Depends = []string{"dpkg (>= 1.20.1)"} // update-alternatives and dpkg-divert honouring DPKG_ROOT
		info.Recommends = []string{"nftables"}
		info.Suggests = []string{"iptables"}
		info.Scripts = nfpm.Scripts{
			PreInstall:  st.scripts["deb/preinst"],
			PostInstall: st.scripts["deb/postinst"],
			PreRemove:   st.scripts["deb/prerm"],
			PostRemove:  st.scripts["deb/postrm"],
		}
		info.Deb.Compression = "xz"
	case "rpm":
		// Fedora's chkconfig/alternatives and openSUSE's update-alternatives
		// packages both own this path; the scriptlets need it
		info.Depends = []string{"/usr/sbin/update-alternatives"}
		info.Recommends = []string{"nftables"}
		if feat.IPSet {
			// rpm cannot divert a file of another package: the package
			// owns /usr/sbin/ipset, stands in for ipset in dependencies
			// and refuses to sit next to it (`dnf swap ipset xdptables`).
			// No Obsoletes: that would swap ipset out on any dnf upgrade.
			info.Provides = []string{"ipset = " + IPSetVersion}
			info.Conflicts = []string{"ipset"}
		}
		info.Scripts = nfpm.Scripts{
			PostInstall: st.scripts["rpm/post"],
			PreRemove:   st.scripts["rpm/preun"],
			PostRemove:  st.scripts["rpm/postun"],
		}
		info.RPM.Summary = "iptables, ip6tables and ipset on native nftables, with an XDP fast path"
		info.RPM.Group = "System Environment/Base"
		info.RPM.Compression = "xz"
	default:
		return "", fmt.Errorf("unknown format %q", format)
	}
	info = nfpm.WithDefaults(info)
	pkgr, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(out, pkgr.ConventionalFileName(info))
	f, err := os.Create(dst)
	if err != nil {
		return "", err
	}
	if err := pkgr.Package(info, f); err != nil {
		f.Close()
		os.Remove(dst)
		return "", err
	}
	return dst, f.Close()
}
