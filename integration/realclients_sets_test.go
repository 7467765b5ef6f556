package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestRealClients runs real programs that drive iptables and ipset, from
// their own Debian packages, once against the reference tools and once
// against xdptables, each side in its own network namespace and private
// mount namespace (testdata/realclients/enter.sh): fail2ban's server with
// its action.d files, sshguard's firewall backends and Shorewall's CLI and
// compiler. The programs' output and exit statuses and the resulting
// iptables-save, ip6tables-save and ipset save (printed by each side's own
// tools) must be the same, after normalising only what differs from run
// to run (times, paths, hash seeds, remaining timeouts, member order of
// hash sets) and the documented differences in knownRealClientDiffs.
//
// The packages are downloaded with apt-get and unpacked with dpkg -x into
// realToolsCache, reused by later runs; nothing is installed, no service
// starts, and the host's /etc, ruleset and sets are left alone.
func TestRealClients(t *testing.T) {
	netns.RequireRoot(t)
	for _, tool := range []string{"iptables-nft", "ipset", "unshare"} {
		if !netns.Have(tool) {
			t.Fatalf("%s is not installed (make deps installs the reference tools)", tool)
		}
	}
	tools := realTools(t)
	env := realEnv(t)
	// the clients spend much of their time starting interpreters and
	// waiting: the four run side by side
	t.Run("sshguard", func(t *testing.T) {
		t.Parallel()
		realClientDiff(t, env, tools, "sshguard", nil, "sshguard.sh",
			"-A sshguard -s 2001:db8:1::/64 -j DROP", "add sshguard4 198.51.100.0/24")
	})
	t.Run("fail2ban", func(t *testing.T) {
		t.Parallel()
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			t.Fatal("fail2ban needs /usr/bin/python3 (make deps installs python3)")
		}
		realClientDiff(t, env, tools, "fail2ban", nil, "fail2ban/scenario.sh",
			"-A f2b-ipt -s 203.0.113.10/32 -j REJECT --reject-with icmp-port-unreachable",
			"-A f2b-mlog -s 2001:db8::10/128 -j f2b-mlog-log", "add f2b-ipsetj6 2001:db8::10 timeout T",
			"recent /proc/net/xt_recent/f2b-recent6:", "Invariant check failed")
	})
	t.Run("shorewall", func(t *testing.T) {
		t.Parallel()
		if out, err := exec.Command("perl", "-MDigest::SHA", "-e", "1").CombinedOutput(); err != nil {
			t.Fatalf("Shorewall's compiler needs perl with Digest::SHA (make deps installs perl): %v %s", err, out)
		}
		realClientDiff(t, env, tools, "shorewall", shorewallEtc("shorewall"), "shorewall/scenario.sh",
			"Shorewall configuration compiled to", "-A net-fw -p tcp -m multiport --dports 80,443 -m comment --comment Web -j ACCEPT",
			"-A net_dnat -p tcp -m tcp --dport 8080 -j DNAT --to-destination 203.0.113.10", "add SW_DBL4 198.51.100.78", "Shorewall restored from", "restore-ipsets",
			"-A PREROUTING -i swnet -p udp -m udp --dport 123 -j CT --notrack", "-m connlimit --connlimit-upto 3",
			"-A accounting -i swnet -p tcp -m tcp --dport 80 -j web", "-m recent --update --seconds 60 --hitcount 4")
	})
	t.Run("shorewall6", func(t *testing.T) {
		t.Parallel()
		if out, err := exec.Command("perl", "-MDigest::SHA", "-e", "1").CombinedOutput(); err != nil {
			t.Fatalf("Shorewall's compiler needs perl with Digest::SHA (make deps installs perl): %v %s", err, out)
		}
		realClientDiff(t, env, tools, "shorewall6", shorewallEtc("shorewall6"), "shorewall6/scenario.sh",
			"Shorewall6 configuration compiled to", "-A net-fw -p tcp -m multiport --dports 80,443 -m comment --comment Web -j ACCEPT",
			"-A dynamic -s 2001:db8:5::/48 -j logdrop", "Shorewall6 restored from")
	})
}

// realToolsCache holds the unpacked packages between runs.
const realToolsCache = "/var/cache/xdptables-test/realclients"

// realPackages are the Debian packages of the clients.
var realPackages = []string{"fail2ban", "sshguard", "shorewall", "shorewall-core", "shorewall6"}

var (
	realOnce sync.Once
	realRoot string
	realErr  error
)

// realTools returns the root the client packages are unpacked in,
// downloading and unpacking them the first time. A failed download fails
// the test: the packages are part of what it checks.
func realTools(t *testing.T) string {
	t.Helper()
	realOnce.Do(func() { realRoot, realErr = fetchRealTools() })
	if realErr != nil {
		t.Fatalf("getting the real clients' packages (%s) into %s: %v", strings.Join(realPackages, " "), realToolsCache, realErr)
	}
	return realRoot
}

func fetchRealTools() (string, error) {
	root := filepath.Join(realToolsCache, "root")
	done := filepath.Join(realToolsCache, "complete")
	if want := strings.Join(realPackages, "\n") + "\n"; readFile(done) == want {
		if _, err := os.Stat(filepath.Join(root, "usr")); err == nil {
			return root, nil
		}
	}
	if err := os.MkdirAll(realToolsCache, 0o755); err != nil {
		return "", err
	}
	dl, err := os.MkdirTemp(realToolsCache, "download-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dl)
	staging := filepath.Join(dl, "root")
	if err := fetchDebs(dl, staging, realPackages); err != nil {
		return "", err
	}
	os.RemoveAll(root)
	if err := os.Rename(staging, root); err != nil {
		return "", err
	}
	return root, os.WriteFile(done, []byte(strings.Join(realPackages, "\n")+"\n"), 0o644)
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// realClientEnv is what enter.sh needs besides the side.
type realClientEnv struct {
	bin, xtMulti, ipset, data string
}

func realEnv(t *testing.T) realClientEnv {
	t.Helper()
	var e realClientEnv
	e.bin = filepath.Join(LinkDir(t), "xdptables")
	// every iptables name of the reference is a link to xtables-nft-multi
	p, err := exec.LookPath("iptables-nft")
	if err == nil {
		e.xtMulti, err = filepath.EvalSymlinks(p)
	}
	if err != nil {
		t.Fatalf("finding the reference iptables-nft: %v", err)
	}
	if p, err = exec.LookPath("ipset"); err == nil {
		e.ipset, err = filepath.EvalSymlinks(p)
	}
	if err != nil {
		t.Fatalf("finding the reference ipset: %v", err)
	}
	e.data, err = filepath.Abs("../testdata/realclients")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// realClientDiff runs script (under testdata/realclients) on both sides,
// in parallel, and compares the normalised outputs. prepare, when not
// nil, fills the side's work directory first (and asks for the overlays).
// The reference's output must hold each of want, so that a client that
// fails the same way on both sides does not pass unnoticed.
func realClientDiff(t *testing.T, e realClientEnv, tools, name string, prepare func(t *testing.T, tools, w string), script string, want ...string) {
	out := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, side := range []string{"ref", "ours"} {
		ns := netns.New(t, "rc-"+side)
		w := t.TempDir()
		overlay := ""
		if prepare != nil {
			prepare(t, tools, w)
			overlay = "1"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := ns.RunTimeout(120, "", "env",
				"TOOLS="+tools, "W="+w, "DATA="+e.data, "OVERLAY="+overlay,
				"XDPT_BIN="+e.bin, "XT_MULTI="+e.xtMulti, "IPSET_BIN="+e.ipset,
				"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
				"unshare", "-m", "--propagation", "private",
				"sh", filepath.Join(e.data, "enter.sh"), side, filepath.Join(e.data, script))
			text := r.Stdout + r.Stderr + fmt.Sprintf("exit %d\n", r.RC)
			mu.Lock()
			text = strings.ReplaceAll(text, w, "$W")
			if name == "shorewall6" {
				// IPv6 on the veths sends neighbour discovery and MLD
				// of its own: the policies' counters move with it
				text = rcPolicyCnt.ReplaceAllString(text, ":$1 $2 [P:B]")
			}
			out[side] = normalizeRealClient(text)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for side, s := range out {
		if strings.Contains(s, "rc=99") || strings.HasSuffix(s, "exit 99\n") {
			t.Fatalf("%s: setting up the mount namespace failed:\n%s", side, s)
		}
	}
	for _, w := range want {
		if !strings.Contains(out["ref"], w) {
			t.Errorf("%s: the reference run lacks %q: the client did not get as far as it should:\n%s", name, w, out["ref"])
		}
	}
	if dir := os.Getenv("XDPT_REALCLIENTS_OUT"); dir != "" {
		// keep the normalised outputs (to look at what the clients did)
		for side, text := range out {
			os.WriteFile(filepath.Join(dir, name+"-"+side+".txt"), []byte(text), 0o644)
		}
	}
	if d := realLineDiff(out["ref"], out["ours"]); d != "" {
		dir, _ := os.MkdirTemp("", "xdpt-realclients-"+name+"-")
		os.WriteFile(filepath.Join(dir, "ref.txt"), []byte(out["ref"]), 0o644)
		os.WriteFile(filepath.Join(dir, "ours.txt"), []byte(out["ours"]), 0o644)
		t.Errorf("%s: reference (-) and xdptables (+) differ (full outputs in %s):\n%s", name, dir, d)
	}
}

// knownRealClientDiffs are the capabilities Shorewall finds on the
// reference and not on xdptables, for reasons docs/extensions.md gives:
// -j NETMAP in a user-defined chain (the hook decides between source
// and destination mapping).
var knownRealClientDiffs = regexp.MustCompile(`^(   NETMAP Target \(NETMAP_TARGET\)): (Not available|Available)$`)

var (
	rcInitval   = regexp.MustCompile(`initval 0x[0-9a-f]+`)
	rcMem       = regexp.MustCompile(`Size in memory: \d+`)
	rcTimeout   = regexp.MustCompile(` timeout [1-9]\d*`)
	rcDate      = regexp.MustCompile(`(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d\d:\d\d:\d\d [A-Z]+ \d{4}`)
	rcSha       = regexp.MustCompile(`sha-(lh|rh)-[0-9a-f]+`)
	rcPolicyCnt = regexp.MustCompile(`(?m)^:([A-Z]+) (ACCEPT|DROP) \[\d+:\d+\]$`)
)

// normalizeRealClient removes what differs from run to run: hash seeds,
// sizes, remaining element timeouts, times, the names Shorewall derives
// from its compile time, and the order of members of hash sets (ipset
// save lists them in hash order); and the known differences.
func normalizeRealClient(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l = rcInitval.ReplaceAllString(l, "initval X")
		l = rcMem.ReplaceAllString(l, "Size in memory: N")
		if !strings.HasPrefix(l, "create ") && !strings.HasPrefix(l, "Header: ") {
			// an element's remaining time (not a set's default)
			l = rcTimeout.ReplaceAllString(l, " timeout T")
		}
		l = rcDate.ReplaceAllString(l, "DATE")
		l = rcSha.ReplaceAllString(l, "sha-$1-X")
		if m := knownRealClientDiffs.FindStringSubmatch(l); m != nil {
			l = m[1] + ": (known difference)"
		}
		lines[i] = l
	}
	// sort each run of "add " lines
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && strings.HasPrefix(lines[j], "add ") {
			j++
		}
		if j > i {
			sort.Strings(lines[i:j])
			i = j
		} else {
			i++
		}
	}
	return strings.Join(lines, "\n")
}

// realLineDiff is a short ordered line diff of a and b (empty when equal).
func realLineDiff(a, b string) string {
	if a == b {
		return ""
	}
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	// longest common subsequence, by dynamic programming from the end
	n, m := len(x), len(y)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var b2 strings.Builder
	shown := 0
	last := -10 // line of x last shown, for context markers
	for i, j := 0, 0; (i < n || j < m) && shown < 80; {
		switch {
		case i < n && j < m && x[i] == y[j]:
			i, j = i+1, j+1
			continue
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			if i != last {
				fmt.Fprintf(&b2, "@@ line %d\n", i+1)
			}
			fmt.Fprintf(&b2, "-%s\n", x[i])
			i++
		default:
			if i != last {
				fmt.Fprintf(&b2, "@@ line %d\n", i+1)
			}
			fmt.Fprintf(&b2, "+%s\n", y[j])
			j++
		}
		last = i
		shown++
	}
	return b2.String()
}

// shorewallEtc lays out the side's /etc/PRODUCT (shorewall or
// shorewall6): the files of testdata/realclients/PRODUCT/etc/PRODUCT and
// PRODUCT.conf from the package's two-interface example, with startup
// enabled, logs kept out of the host's /var/log, the dynamic blacklist
// (Shorewall: in an ipset with timeouts), and SAVE_IPSETS (shorewall save keeps the sets
// with ipset save, restore loads them with ipset restore). "noupdate":
// without it Shorewall refreshes a blacklisted address's timeout on each
// packet with -j SET --add-set SW_DBL4 src --exist --timeout N, and
// xdptables cannot update a net type's set from the packet path
// (docs/extensions.md, SET): the restore fails there.
func shorewallEtc(product string) func(t *testing.T, tools, w string) {
	return func(t *testing.T, tools, w string) { shorewallEtcOf(t, product, tools, w) }
}

func shorewallEtcOf(t *testing.T, product, tools, w string) {
	t.Helper()
	dst := filepath.Join(w, "etc", product)
	// the package's postinst makes /var/lib/PRODUCT (enter.sh lays
	// $W/varlib over /var/lib)
	for _, d := range []string{dst, filepath.Join(w, "varlib", product)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join("../testdata/realclients", product, "etc", product)
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf, err := os.ReadFile(filepath.Join(tools, "usr/share/doc", product, "examples/two-interfaces", product+".conf"))
	if err != nil {
		t.Fatalf("Shorewall's example configuration: %v", err)
	}
	// Shorewall keeps its dynamic blacklist in an ipset; Shorewall6 in
	// the chain "dynamic" (the default), which drop, reject and allow
	// edit with ip6tables
	dbl := `"ipset-only,timeout=3600,noupdate:SW_DBL4"`
	if product == "shorewall6" {
		dbl = "Yes"
	}
	set := map[string]string{
		"STARTUP_ENABLED":   "Yes",
		"STARTUP_LOG":       "",
		"LOGFILE":           "/dev/null",
		"IP_FORWARDING":     "On",
		"DYNAMIC_BLACKLIST": dbl,
		"SAVE_IPSETS":       "Yes",
	}
	var out []string
	for _, l := range strings.Split(string(conf), "\n") {
		if k, _, ok := strings.Cut(l, "="); ok {
			if v, ok := set[k]; ok {
				l = k + "=" + v
				delete(set, k)
			}
		}
		out = append(out, l)
	}
	if len(set) > 0 {
		t.Fatalf("Shorewall's example %s.conf lacks %v", product, set)
	}
	if err := os.WriteFile(filepath.Join(dst, product+".conf"), []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}
