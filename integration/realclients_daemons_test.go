package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// Real clients that nobody here wrote, run once against the reference
// (iptables-nft, ipset) and once against xdptables, each side in a network
// namespace of its own and a private mount namespace in which the tools
// the client finds first in PATH (/usr/local/sbin) are tracing wrappers
// around that side's tools:
//
//   - Docker's daemon (dockerd 20.10 with containerd and runc, Debian's
//     docker.io): start, user-defined networks, containers with published
//     ports, stop, a restart over the rules it left, removal;
//   - netfilter-persistent's plugins (netfilter-persistent,
//     iptables-persistent, ipset-persistent): start, save, flush;
//   - iptables-apply (shipped with iptables): good, bad, refused and
//     unanswered rule files, command mode.
//
// After every step both sides must agree on the client's exit status and
// output, on every iptables/ipset call the client made (arguments, exit
// status, output) and on iptables-save, ip6tables-save and ipset save as
// each side's own tools print them.
//
// The programs come from Debian's mirrors (apt-get download, dpkg -x)
// into dmCache, reused when present; no package is installed and
// no service is started on the host.

const dmCache = "/var/cache/xdptables-test/daemons"

var dmPackages = []string{
	"docker.io", "containerd", "runc", "tini",
	"netfilter-persistent", "iptables-persistent", "ipset-persistent",
}

// dmPackagesRoot returns the directory the packages are unpacked in,
// downloading them first when the cache does not hold them.
func dmPackagesRoot(t *testing.T) string {
	t.Helper()
	return debsRoot(t, dmCache, dmPackages)
}

var debsMu sync.Mutex

// debsRoot returns cache/root, where Debian packages pkgs are unpacked
// (fetchDebs), downloading and unpacking them first when the stamp file
// there does not name exactly pkgs. A failed download fails the test:
// the packages are part of what it checks.
func debsRoot(t *testing.T, cache string, pkgs []string) string {
	t.Helper()
	debsMu.Lock()
	defer debsMu.Unlock()
	root := filepath.Join(cache, "root")
	stamp := filepath.Join(root, ".xdptables-packages")
	want := strings.Join(pkgs, " ") + "\n"
	if b, err := os.ReadFile(stamp); err == nil && string(b) == want {
		return root
	}
	debs := filepath.Join(cache, "debs")
	_ = os.RemoveAll(debs)
	if err := os.MkdirAll(debs, 0o755); err != nil {
		t.Fatalf("real clients: cache %s: %v", cache, err)
	}
	tmp := root + ".new"
	_ = os.RemoveAll(tmp)
	if err := fetchDebs(debs, tmp, pkgs); err != nil {
		t.Fatalf("real clients: %v", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".xdptables-packages"), []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(root)
	if err := os.Rename(tmp, root); err != nil {
		t.Fatal(err)
	}
	return root
}

// dmSide is one side of a comparison: the reference or ours.
type dmSide struct {
	name  string
	ns    *netns.NS
	dir   string            // scratch directory (short: unix socket paths)
	wrap  string            // tracing wrappers, mounted on /usr/local/sbin
	trace string            // every call the wrappers saw
	tools map[string]string // tool name → what the wrapper runs
}

// the names clients run; the wrappers give each its own name as argv[0]
var dmTools = []string{
	"iptables", "ip6tables", "iptables-save", "ip6tables-save",
	"iptables-restore", "ip6tables-restore", "ipset",
}

// newDMSides makes the reference side and ours.
func newDMSides(t *testing.T, tag string) [2]*dmSide {
	t.Helper()
	netns.RequireRoot(t)
	if err := os.MkdirAll("/usr/local/sbin", 0o755); err != nil {
		t.Fatal(err) // where the wrappers are mounted
	}
	for _, tool := range []string{"iptables-nft", "ipset", "nsenter", "unshare", "flock", "bash"} {
		if !netns.Have(tool) {
			t.Fatalf("%s is not installed", tool)
		}
	}
	multi, err := exec.LookPath("xtables-nft-multi")
	if err != nil {
		t.Fatal("reference xtables-nft-multi is not installed")
	}
	ipset, _ := exec.LookPath("ipset")
	ours := LinkDir(t)
	var sides [2]*dmSide
	for i, name := range []string{"ref", "ours"} {
		dir, err := os.MkdirTemp("", "xdpt-rc-"+name+"-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		s := &dmSide{name: name, ns: netns.New(t, tag+"-"+name), dir: dir,
			wrap: filepath.Join(dir, "wrap"), trace: filepath.Join(dir, "trace"), tools: map[string]string{}}
		for _, tool := range dmTools {
			switch {
			case name == "ours":
				s.tools[tool] = filepath.Join(ours, tool)
			case tool == "ipset":
				s.tools[tool] = ipset
			default:
				// the nft variant whatever the alternatives say
				s.tools[tool] = multi
			}
		}
		s.writeWrappers(t)
		if r := s.ns.Run("", "ip", "link", "set", "lo", "up"); r.RC != 0 {
			t.Fatalf("lo up: %s", r.Stderr)
		}
		sides[i] = s
	}
	return sides
}

// writeWrappers writes a script per tool that runs the side's tool under
// the tool's own name and appends the call to the trace: the arguments
// and exit status on one line, then stdout ("  > ") and stderr ("  ! "),
// then an empty line.
func (s *dmSide) writeWrappers(t *testing.T) {
	if err := os.MkdirAll(s.wrap, 0o755); err != nil {
		t.Fatal(err)
	}
	for tool, real := range s.tools {
		script := fmt.Sprintf(`#!/bin/bash
t=$(mktemp -d)
(exec -a %[1]s %[2]s "$@") >"$t/o" 2>"$t/e"
rc=$?
{
	flock 9
	printf '%%s' %[1]s; printf ' %%s' "$@"; printf ' => %%d\n' $rc
	sed 's/^/  > /' "$t/o"; sed 's/^/  ! /' "$t/e"; echo
} 9>>%[3]s >&9
cat "$t/o"; cat "$t/e" >&2; rm -rf "$t"
exit $rc
`, tool, real, s.trace)
		if err := os.WriteFile(filepath.Join(s.wrap, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// mountSetup is the shell prologue of every command of a side: a private
// mount namespace where the wrappers come first in PATH and /etc is an
// overlay whose changes stay in the side's directory.
func (s *dmSide) mountSetup() string { return s.mountSetupEtc("etc") }

// mountSetupEtc is mountSetup with the overlay's directories named etc
// (two overlays mounted at once cannot share them).
func (s *dmSide) mountSetupEtc(etc string) string {
	return fmt.Sprintf(`set -e
mount --make-rprivate /
mount --bind %[1]s /usr/local/sbin
mkdir -p %[2]s/%[3]s-up %[2]s/%[3]s-work
mount -t overlay overlay -o lowerdir=/etc,upperdir=%[2]s/%[3]s-up,workdir=%[2]s/%[3]s-work /etc
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
set +e
`, s.wrap, s.dir, etc)
}

// dmStepLimit bounds a step of a real client, and dmDaemonWait a
// daemon's start or stop. They catch a client or daemon that hangs; they
// are no measure of speed: under load (CI shares two cores with other
// work) a step takes ten times and more its time on a quiet machine.
const (
	dmStepLimit  = 5 * time.Minute
	dmDaemonWait = 3 * time.Minute
)

// sh runs a shell script in the side's namespaces.
func (s *dmSide) sh(stdin, script string) netns.Result {
	return s.shFor(dmStepLimit, stdin, script)
}

// shFor is sh with another time limit.
//
// The script also runs in a PID namespace of its own, with its own
// /proc: both sides run at the same time, and clients that find
// processes by their command line (arno-iptables-firewall's `pgrep -f`
// and `pkill -f` for its job processor) must see their side's
// processes only, not the other side's pgrep of the same pattern, as
// on two machines. The namespace ends with the script (--kill-child:
// also when the limit kills unshare), so nothing of a step outlives it.
func (s *dmSide) shFor(limit time.Duration, stdin, script string) netns.Result {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", "--net=/run/netns/"+s.ns.Name,
		"unshare", "-m", "-p", "-f", "--kill-child", "--mount-proc", "sh", "-c", s.mountSetup()+script)
	// output pipes a leftover process might hold do not keep Run waiting
	cmd.WaitDelay = 10 * time.Second
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return dmResult(cmd.Run(), so.String(), se.String())
}

func dmResult(err error, so, se string) netns.Result {
	rc := 0
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			rc = ee.ExitCode()
		} else {
			rc = -1
			se += err.Error()
		}
	}
	return netns.Result{Stdout: so, Stderr: se, RC: rc}
}

// state is iptables-save, ip6tables-save and ipset save as the side's own
// tools print them, normalised.
func (s *dmSide) state(withSets bool) string {
	var b strings.Builder
	for _, tool := range []string{"iptables-save", "ip6tables-save"} {
		r := s.ns.Run("", "bash", "-c", `exec -a "$0" "$1"`, tool, s.tools[tool])
		fmt.Fprintf(&b, "%s => %d\n%s%s", tool, r.RC, dmDropSaveComments(r.Stdout), r.Stderr)
	}
	if withSets {
		r := s.ns.Run("", s.tools["ipset"], "save")
		fmt.Fprintf(&b, "ipset save => %d\n%s%s", r.RC, normIpsetOutput(r.Stdout), r.Stderr)
	}
	return b.String()
}

func dmDropSaveComments(s string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "# Generated by") && !strings.HasPrefix(l, "# Completed on") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// takeTrace returns the calls traced since the last take, normalised
// and sorted (clients run some of them concurrently).
func (s *dmSide) takeTrace() []string {
	data, _ := os.ReadFile(s.trace)
	_ = os.Truncate(s.trace, 0)
	var recs []string
	for _, rec := range strings.Split(string(data), "\n\n") {
		if rec = strings.TrimSpace(rec); rec != "" {
			recs = append(recs, dmNorm(s, rec))
		}
	}
	sort.Strings(recs)
	// a daemon that polls its chains (fwknopd lists them for expiries)
	// lists as often as its timer fires meanwhile, more on a slow
	// machine: the same listing with the same answer counts once
	return slices.CompactFunc(recs, func(a, b string) bool { return a == b && isListing(a) })
}

// isListing says whether a trace record is a listing call (-L, -S).
func isListing(rec string) bool {
	cmd, _, _ := strings.Cut(rec, "\n")
	for _, w := range strings.Fields(cmd) {
		if w == "-L" || w == "-S" || w == "--list" || w == "--list-rules" || strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && len(w) > 2 && strings.ContainsAny(w[1:], "LS") && !strings.ContainsAny(w[1:], "ADIRNXPEFZC") {
			return true
		}
	}
	return false
}

var (
	dmIDs       = regexp.MustCompile(`\b[0-9a-f]{64}\b|\b[0-9a-f]{12}\b`)
	dmTmp       = regexp.MustCompile(`/tmp/(ip6?tables-apply)-[A-Za-z0-9]+`)
	dmInitval   = regexp.MustCompile(`initval 0x[0-9a-f]+`)
	dmDNSPort   = regexp.MustCompile(`\b[0-9]{4,5}\b`)
	dmSaveStamp = regexp.MustCompile(`(?m)^(  > )?# (Generated by .*|Completed) on .*$`)
	dmTimeout   = regexp.MustCompile(`(?m)^((?:  > )?add .* timeout )[0-9]+`)
	dmClock     = regexp.MustCompile(`\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d\d:\d\d:\d\d\b`)
)

// dmNorm removes what differs by design: the side's directory, ids,
// temporary names, hash seeds, save time stamps, set members' remaining
// timeouts, the ports Docker's embedded DNS server picks, the clock
// in clients' messages, and hash set member order.
func dmNorm(s *dmSide, text string) string {
	text = strings.ReplaceAll(text, s.dir, "DIR")
	text = dmIDs.ReplaceAllString(text, "ID")
	text = dmTmp.ReplaceAllString(text, "/tmp/$1-X")
	text = dmInitval.ReplaceAllString(text, "initval X")
	text = dmSaveStamp.ReplaceAllString(text, "$1# $2 on TIME")
	text = dmTimeout.ReplaceAllString(text, "${1}T")
	text = dmClock.ReplaceAllString(text, "TIME")
	if strings.Contains(text, "127.0.0.11") {
		text = dmDNSPort.ReplaceAllString(text, "PORT")
	}
	if strings.HasPrefix(text, "ipset save") || strings.HasPrefix(text, "ipset list") {
		lines := strings.Split(text, "\n")
		sort.Strings(lines[1:])
		text = strings.Join(lines, "\n")
	}
	return text
}

// dmStep is what one side saw of one step.
type dmStep struct {
	name   string
	result netns.Result
	calls  []string
	state  string
}

// dmCompare reports every difference between the sides.
func dmCompare(t *testing.T, sides [2]*dmSide, ref, ours []dmStep) {
	t.Helper()
	if dir := os.Getenv("XDPT_REALCLIENTS_DUMP"); dir != "" {
		// the transcripts, for reading what the clients did
		for i, steps := range [][]dmStep{ref, ours} {
			var b strings.Builder
			for _, st := range steps {
				r := st.result
				fmt.Fprintf(&b, "#### %s => %d\n%s%s\n## calls\n%s\n## state\n%s\n", st.name, r.RC,
					dmNorm(sides[i], r.Stdout), dmNorm(sides[i], r.Stderr), strings.Join(st.calls, "\n\n"), st.state)
			}
			name := strings.ReplaceAll(t.Name(), "/", "_") + "." + sides[i].name
			if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	if len(ref) != len(ours) {
		t.Fatalf("reference ran %d steps, ours %d", len(ref), len(ours))
	}
	// a call a daemon makes just after its client returns lands in the
	// next step: calls that differ only in their step are no difference
	var allA, allB []string
	for i := range ref {
		allA, allB = append(allA, ref[i].calls...), append(allB, ours[i].calls...)
	}
	sort.Strings(allA)
	sort.Strings(allB)
	sameCalls := strings.Join(allA, "\n\n") == strings.Join(allB, "\n\n")
	for i := range ref {
		a, b := ref[i], ours[i]
		ra, rb := a.result, b.result
		for _, p := range []struct {
			what string
			x, y string
		}{
			{"exit status", fmt.Sprint(ra.RC), fmt.Sprint(rb.RC)},
			{"stdout", dmNorm(sides[0], ra.Stdout), dmNorm(sides[1], rb.Stdout)},
			{"stderr", dmNorm(sides[0], ra.Stderr), dmNorm(sides[1], rb.Stderr)},
			{"iptables/ipset calls", strings.Join(a.calls, "\n\n"), strings.Join(b.calls, "\n\n")},
			{"saved state", a.state, b.state},
		} {
			switch {
			case p.x == p.y:
			case p.what == "iptables/ipset calls" && sameCalls:
				t.Logf("step %q: calls came in another step (- reference, + ours):\n%s", a.name, lineDiff(p.x, p.y))
			default:
				t.Errorf("step %q: %s differs (- reference, + ours):\n%s", a.name, p.what, lineDiff(p.x, p.y))
			}
		}
	}
}

func dmTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "realclients", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRealNetfilterPersistent runs netfilter-persistent's plugins
// the way netfilter-persistent does (run-parts -v -a ACTION plugins.d;
// its own script hard-codes /usr/share/netfilter-persistent) with the
// package's /etc/default/netfilter-persistent (which tests a rule file
// with --test before loading it).
func TestRealNetfilterPersistent(t *testing.T) {
	netns.RequireRoot(t)
	root := dmPackagesRoot(t)
	sides := newDMSides(t, "nfp")
	plugins := filepath.Join(root, "usr/share/netfilter-persistent/plugins.d")
	files := map[string]string{}
	for _, f := range []string{"rules.v4", "rules.v6", "ipsets"} {
		files[f] = dmTestdata(t, f)
	}
	steps := []struct{ name, script string }{
		{"start without rule files", "run-parts -v -a start " + plugins},
		{"start", "run-parts -v -a start " + plugins},
		{"save after changes", "iptables -A web -p tcp --dport 8443 -j ACCEPT && ipset add xdpt-allow 198.18.5.0/24 && run-parts -v -a save " + plugins +
			" && cat /etc/iptables/rules.v4 /etc/iptables/rules.v6 && sort /etc/iptables/ipsets && stat -c '%a %n' /etc/iptables/*"},
		{"flush", "run-parts -v -a flush " + plugins},
		{"start from the saved files", "run-parts -v -a start " + plugins},
		{"start with IPTABLES_RESTORE_NOFLUSH", "echo IPTABLES_RESTORE_NOFLUSH=yes >> /etc/default/netfilter-persistent && run-parts -v -a start " + plugins},
		{"start with a bad rules.v4", `printf '*filter\n-A INPUT -j NOPE\nCOMMIT\n' > /etc/iptables/rules.v4 && run-parts -v -a start ` + plugins},
		{"stop", "run-parts -v -a stop " + plugins},
		{"flush again", "run-parts -v -a flush " + plugins},
	}
	var got [2][]dmStep
	var wg sync.WaitGroup
	for i, s := range sides {
		// the package's defaults, in the side's /etc
		up := filepath.Join(s.dir, "etc-up")
		def, err := os.ReadFile(filepath.Join(root, "etc/default/netfilter-persistent"))
		if err != nil {
			t.Fatal(err)
		}
		for dir, names := range map[string][]string{"default": {"netfilter-persistent"}, "iptables": nil} {
			if err := os.MkdirAll(filepath.Join(up, dir), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if err := os.WriteFile(filepath.Join(up, dir, n), def, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j, st := range steps {
				if j == 1 {
					for f, text := range files {
						if err := os.WriteFile(filepath.Join(up, "iptables", f), []byte(text), 0o644); err != nil {
							t.Error(err)
							return
						}
					}
				}
				r := s.sh("", st.script)
				got[i] = append(got[i], dmStep{name: st.name, result: r, calls: s.takeTrace(), state: s.state(true)})
			}
		}()
	}
	wg.Wait()
	dmCompare(t, sides, got[0], got[1])
}

// TestRealIptablesApply runs iptables-apply and ip6tables-apply
// (the reference's own script) with the confirmation on stdin.
func TestRealIptablesApply(t *testing.T) {
	netns.RequireRoot(t)
	apply, err := exec.LookPath("iptables-apply")
	if err != nil {
		t.Fatal("iptables-apply (package iptables) is not installed")
	}
	sides := newDMSides(t, "apply")
	td, _ := filepath.Abs(filepath.Join("..", "testdata", "realclients"))
	good, bad, good6 := filepath.Join(td, "apply-good.v4"), filepath.Join(td, "apply-bad.v4"), filepath.Join(td, "apply-good.v6")
	apply6 := filepath.Join(filepath.Dir(apply), "ip6tables-apply")
	steps := []struct{ name, stdin, script string }{
		{"a rule before", "", "iptables -A INPUT -s 198.51.100.9 -j DROP"},
		{"good file, confirmed", "y", apply + " -t 5 " + good},
		{"ip6tables-apply, confirmed, written", "y", apply6 + " -t 5 -w $D/saved.v6 " + good6 + "; rc=$?; cat $D/saved.v6; exit $rc"},
		{"bad file", "y", apply + " -t 5 " + bad},
		{"refused", "n", "iptables -F && iptables -X && iptables -t nat -F && " + apply + " -t 5 " + good},
		{"no answer", "", apply + " -t 1 " + good + " </dev/null"},
		{"command mode", "y", `printf '#!/bin/sh\niptables -N cmdchain && iptables -A cmdchain -j RETURN\n' > $D/cmd.sh && chmod +x $D/cmd.sh && ` + apply + " -t 5 -c $D/cmd.sh"},
		{"failing command", "y", `printf '#!/bin/sh\niptables -A nochain -j RETURN\n' > $D/bad.sh && chmod +x $D/bad.sh && ` + apply + " -t 5 -c $D/bad.sh"},
		{"missing rules file", "y", apply + " -t 5 $D/nonexistent"},
	}
	var got [2][]dmStep
	var wg sync.WaitGroup
	for i, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, st := range steps {
				r := s.sh(st.stdin, "D="+s.dir+"\n"+st.script)
				got[i] = append(got[i], dmStep{name: st.name, result: r, calls: s.takeTrace(), state: s.state(false)})
			}
		}()
	}
	wg.Wait()
	dmCompare(t, sides, got[0], got[1])
}

// dmBuildPause builds testdata/realclients/pause.go, statically, and
// returns it as a tar archive for docker import.
func dmBuildPause(t *testing.T) []byte {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pause")
	cmd := exec.Command("go", "build", "-o", bin, filepath.Join("..", "testdata", "realclients", "pause.go"))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building pause: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// dmDocker runs Docker's daemon on one side.
type dmDocker struct {
	*dmSide
	root    string // unpacked packages
	cgroup  string // --cgroup-parent
	daemon  *exec.Cmd
	waitErr chan error
	logs    []string // the daemon's log files
}

// dmDockerMounts is the extra mount setup dockerd needs: the host's cgroup
// hierarchies under a sysfs of the namespace, and private /run/docker and
// /run/containerd (containerd puts its shims' sockets there whatever its
// state directory).
const dmDockerMounts = `set -e
mkdir -p "$D/cg"
mount --rbind /sys/fs/cgroup "$D/cg"
mount -t sysfs sysfs /sys
mount --rbind "$D/cg" /sys/fs/cgroup
mount -t tmpfs tmpfs /run/docker
mount -t tmpfs tmpfs /run/containerd
set +e
`

// dmRunMountpoints makes the mount points dirs (by default those of
// dmDockerMounts) when the host has none, and removes them after the
// test.
func dmRunMountpoints(t *testing.T, dirs ...string) {
	if len(dirs) == 0 {
		dirs = []string{"/run/docker", "/run/containerd"}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			continue
		}
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(d) })
	}
}

func (s *dmDocker) start(n int, args ...string) error {
	log := filepath.Join(s.dir, fmt.Sprintf("dockerd-%d.log", n))
	s.logs = append(s.logs, log)
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	defer f.Close()
	argv := append([]string{"dockerd",
		"--data-root", s.dir + "/data", "--exec-root", s.dir + "/exec", "--pidfile", s.dir + "/dockerd.pid",
		"-H", "unix://" + s.dir + "/docker.sock", "--storage-driver", "vfs", "--cgroup-parent", s.cgroup}, args...)
	script := "D=" + s.dir + "\n" + s.mountSetupEtc("etc-dockerd") + dmDockerMounts +
		"export PATH=/usr/local/sbin:" + s.root + "/usr/sbin:" + s.root + "/usr/bin:/usr/sbin:/usr/bin:/sbin:/bin\n" +
		`exec "$@"`
	cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + s.ns.Name, "unshare", "-m", "sh", "-c", script, "sh"}, argv...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.daemon = cmd
	s.waitErr = make(chan error, 1)
	go func() { s.waitErr <- cmd.Wait() }()
	// a bound for a daemon that hangs, not for a slow one: on a loaded
	// machine its start takes many times its quiet second or two
	for deadline := time.Now().Add(dmDaemonWait); time.Now().Before(deadline); {
		select {
		case err := <-s.waitErr:
			s.daemon = nil
			data, _ := os.ReadFile(log)
			return fmt.Errorf("dockerd exited (%v):\n%s", err, dmTail(string(data), 20))
		case <-time.After(500 * time.Millisecond):
		}
		if r := s.docker("", "version"); r.RC == 0 {
			return nil
		}
	}
	s.stop()
	data, _ := os.ReadFile(log)
	return fmt.Errorf("dockerd did not answer within %v:\n%s", dmDaemonWait, dmTail(string(data), 20))
}

// stop ends the daemon (SIGTERM, then SIGKILL for its process group).
func (s *dmDocker) stop() {
	if s.daemon == nil {
		return
	}
	_ = s.daemon.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.waitErr:
	case <-time.After(dmDaemonWait):
		_ = syscall.Kill(-s.daemon.Process.Pid, syscall.SIGKILL)
		<-s.waitErr
	}
	s.daemon = nil
}

// docker runs the docker client against the side's daemon.
func (s *dmDocker) docker(stdin string, args ...string) netns.Result {
	ctx, cancel := context.WithTimeout(context.Background(), dmStepLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.root, "usr/bin/docker"), args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+s.dir+"/docker.sock", "DOCKER_CONFIG="+s.dir+"/cli")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return dmResult(cmd.Run(), so.String(), se.String())
}

// removeCgroups removes the cgroups the daemon made under its parent.
func (s *dmDocker) removeCgroups() {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + s.cgroup)
	dirs = append(dirs, "/sys/fs/cgroup"+s.cgroup)
	for _, d := range dirs {
		var sub []string
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				sub = append(sub, p)
			}
			return nil
		})
		for i := len(sub) - 1; i >= 0; i-- {
			_ = os.Remove(sub[i])
		}
	}
}

func dmTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// dmLogLine picks the daemon's warnings and errors about the firewall.
var (
	dmLogLine  = regexp.MustCompile(`level=(warning|error) msg="(.*)"`)
	dmFirewall = regexp.MustCompile(`(?i)ip6?tables|chain|firewall|masquerade|dnat|nat rule|isolation`)
)

// logLines are the daemon's warnings and errors about the firewall,
// normalised and sorted.
func (s *dmDocker) logLines() []string {
	var out []string
	for _, f := range s.logs {
		data, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(data), "\n") {
			m := dmLogLine.FindStringSubmatch(l)
			if m == nil || !dmFirewall.MatchString(m[2]) {
				continue
			}
			out = append(out, m[1]+": "+dmNorm(s.dmSide, m[2]))
		}
	}
	sort.Strings(out)
	return out
}

// TestRealDockerd runs Docker's daemon (20.10, Debian's docker.io)
// with IPv6 and ip6tables: a first run creates networks (plain, internal,
// dual-stack without inter-container traffic), runs containers with
// published ports (without the userland proxy: hairpin NAT rules), connects
// and disconnects one, removes them and two networks and stops; a second
// run over the rules the first left (--icc=false, the userland proxy)
// runs a container and removes the last network. The containers run a tiny static program imported
// as an image: nothing comes from the internet.
func TestRealDockerd(t *testing.T) {
	netns.RequireRoot(t)
	root := dmPackagesRoot(t)
	pause := dmBuildPause(t)
	dmRunMountpoints(t)
	cs := newDMSides(t, "dockerd")
	var sides [2]*dmDocker
	for i, c := range cs {
		s := &dmDocker{dmSide: c, root: root, cgroup: fmt.Sprintf("/xdpt-rc-%s-%d", c.name, os.Getpid())}
		t.Cleanup(func() { s.stop(); s.removeCgroups() })
		sides[i] = s
	}
	common := []string{"--bip", "198.18.0.1/24", "--default-address-pool", "base=198.18.128.0/17,size=24",
		"--experimental", "--ipv6", "--ip6tables", "--fixed-cidr-v6", "2001:db8:1::/64"}
	type dstep struct {
		name   string
		start  []string // start the daemon with these options
		stop   bool
		docker []string
		stdin  []byte
		script string // a shell script in the side's namespaces
	}
	// netfilter-persistent saves a Docker host's rules, and loads them
	// at boot before the daemon starts again
	plugins := filepath.Join(root, "usr/share/netfilter-persistent/plugins.d")
	nfpSave := "mkdir -p /etc/iptables && run-parts -v -a save " + plugins + " && cat /etc/iptables/rules.v4 /etc/iptables/rules.v6"
	nfpStart := "run-parts -v -a start " + plugins
	steps := []dstep{
		{name: "start", start: append(append([]string{}, common...), "--userland-proxy=false")},
		{name: "network net1", docker: []string{"network", "create", "--subnet", "198.18.1.0/24", "-o", "com.docker.network.bridge.name=xdptbr1", "net1"}},
		{name: "internal network net2", docker: []string{"network", "create", "--internal", "--subnet", "198.18.2.0/24", "-o", "com.docker.network.bridge.name=xdptbr2", "net2"}},
		{name: "dual-stack network net3 without icc", docker: []string{"network", "create", "--ipv6", "--subnet", "198.18.3.0/24", "--subnet", "2001:db8:3::/64",
			"-o", "com.docker.network.bridge.enable_icc=false", "-o", "com.docker.network.bridge.name=xdptbr3", "net3"}},
		{name: "import", docker: []string{"import", "-", "xdpt/pause"}, stdin: pause},
		{name: "network net4 without masquerade, bound to one address", docker: []string{"network", "create", "--subnet", "198.18.4.0/24",
			"-o", "com.docker.network.bridge.enable_ip_masquerade=false", "-o", "com.docker.network.bridge.host_binding_ipv4=198.18.0.1",
			"-o", "com.docker.network.bridge.name=xdptbr4", "net4"}},
		{name: "container c1 publishing ports", docker: []string{"run", "-d", "--name", "c1", "-p", "8080:80", "-p", "198.18.0.1:5353:53/udp",
			"-p", "8082-8083:82-83", "-p", "198.18.0.1:8084:84/tcp", "xdpt/pause", "/pause"}},
		// the daemon adds -j CHECKSUM --checksum-fill for SCTP, and takes
		// back its rules when the port cannot be bound (no SCTP here)
		{name: "container c7 publishing an SCTP port", docker: []string{"run", "-d", "--name", "c7", "-p", "127.0.0.1:8085:85/sctp", "xdpt/pause", "/pause"}},
		{name: "remove c7", docker: []string{"rm", "-f", "c7"}},
		{name: "container c4 on net4", docker: []string{"run", "-d", "--name", "c4", "--network", "net4", "-p", "8086:86", "xdpt/pause", "/pause"}},
		{name: "container c2 on net3", docker: []string{"run", "-d", "--name", "c2", "--network", "net3", "-p", "9090:90", "xdpt/pause", "/pause"}},
		{name: "connect c2 to net1", docker: []string{"network", "connect", "net1", "c2"}},
		{name: "disconnect c2 from net1", docker: []string{"network", "disconnect", "net1", "c2"}},
		{name: "netfilter-persistent save", script: nfpSave},
		{name: "remove c1", docker: []string{"rm", "-f", "c1"}},
		{name: "remove c2", docker: []string{"rm", "-f", "c2"}},
		// the daemon restores its networks in the order of their random
		// ids: one network only survives the restart
		{name: "remove c4", docker: []string{"rm", "-f", "c4"}},
		{name: "remove net1, net2 and net4", docker: []string{"network", "rm", "net1", "net2", "net4"}},
		{name: "an administrator's rules in DOCKER-USER", script: "iptables -I DOCKER-USER -s 198.51.100.0/24 -j DROP && ip6tables -I DOCKER-USER -s 2001:db8:ff::/48 -j DROP"},
		{name: "stop", stop: true},
		{name: "restart with --icc=false and the userland proxy", start: append(append([]string{}, common...), "--icc=false")},
		{name: "container c3 publishing a port", docker: []string{"run", "-d", "--name", "c3", "-p", "8081:81", "xdpt/pause", "/pause"}},
		{name: "container c5 exposing a port", docker: []string{"run", "-d", "--name", "c5", "--expose", "80", "--expose", "53/udp", "xdpt/pause", "/pause"}},
		{name: "container c6 linked to c5", docker: []string{"run", "-d", "--name", "c6", "--link", "c5:web", "xdpt/pause", "/pause"}},
		{name: "remove c6", docker: []string{"rm", "-f", "c6"}},
		{name: "remove c3 and c5", docker: []string{"rm", "-f", "c3", "c5"}},
		{name: "remove net3", docker: []string{"network", "rm", "net3"}},
		{name: "stop again", stop: true},
		{name: "netfilter-persistent start: the saved rules of the running containers", script: nfpStart},
	}
	var got [2][]dmStep
	var failed [2]error
	var wg sync.WaitGroup
	for i, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			starts := 0
			for _, st := range steps {
				var r netns.Result
				switch {
				case st.start != nil:
					starts++
					if err := s.start(starts, st.start...); err != nil {
						failed[i] = fmt.Errorf("%s: %w", st.name, err)
						return
					}
				case st.stop:
					s.stop()
				case st.script != "":
					r = s.sh("", st.script)
				default:
					r = s.docker(string(st.stdin), st.docker...)
				}
				got[i] = append(got[i], dmStep{name: st.name, result: r, calls: s.takeTrace(), state: s.state(false)})
			}
		}()
	}
	wg.Wait()
	if failed[0] != nil {
		t.Fatalf("Docker's daemon does not run here with the reference tools: %v", failed[0])
	}
	if failed[1] != nil {
		t.Fatalf("Docker's daemon with xdptables: %v", failed[1])
	}
	dmCompare(t, cs, got[0], got[1])
	if a, b := strings.Join(sides[0].logLines(), "\n"), strings.Join(sides[1].logLines(), "\n"); a != b {
		t.Errorf("the daemon's warnings and errors about the firewall differ (- reference, + ours):\n%s", lineDiff(a, b))
	}
}
