package integration

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/xdptables/xdptables/integration/netns"
)

// Reliability under concurrency, starvation and crashes (issue 7).

// mixedScript returns worker w's shell script: n commands mixing -A, -I,
// -D, -N/-X, --noflush restores and ipset add/del on the shared chain
// SHARED and set "shared". Every worker owns its rule texts, chains and
// elements, so the end state does not depend on the interleaving. Each
// failing command prints a FAIL line.
func mixedScript(dir string, w, n int) string {
	ipt := filepath.Join(dir, "iptables")
	rst := filepath.Join(dir, "iptables-restore")
	ips := filepath.Join(dir, "ipset")
	rng := rand.New(rand.NewSource(int64(w)))
	var b strings.Builder
	var live []string // own rule texts now in SHARED
	chains := map[int]int{}
	next := 0
	for i := 0; i < n; i++ {
		src := fmt.Sprintf("198.18.%d.%d", w, i%250)
		var cmd string
		switch k := rng.Intn(8); {
		case k == 0 && len(live) > 0:
			j := rng.Intn(len(live))
			cmd = fmt.Sprintf("%s -D SHARED %s", ipt, live[j])
			live = slices.Delete(live, j, j+1)
		case k == 1:
			spec := fmt.Sprintf("-s %s -p udp --dport %d -j DROP", src, 1000+i)
			cmd = fmt.Sprintf("%s -I SHARED 1 %s", ipt, spec)
			live = append(live, spec)
		case k == 2:
			c := fmt.Sprintf("W%dC%d", w, next)
			chains[next] = 0
			next++
			cmd = fmt.Sprintf("%s -N %s", ipt, c)
		case k == 3 && len(chains) > 0:
			// delete one of the own chains: flush it first
			var ks []int
			for c := range chains {
				ks = append(ks, c)
			}
			sort.Ints(ks)
			c := ks[rng.Intn(len(ks))]
			delete(chains, c)
			cmd = fmt.Sprintf("%s -F W%dC%d && %s -X W%dC%d", ipt, w, c, ipt, w, c)
		case k == 4:
			spec := fmt.Sprintf("-s %s -p tcp --dport %d -j RETURN", src, 1000+i)
			var extra string
			if len(chains) > 0 {
				for c := range chains {
					extra = fmt.Sprintf("'-A W%dC%d -d %s -j ACCEPT' ", w, c, src)
					chains[c]++
					break
				}
			}
			cmd = fmt.Sprintf("printf '%%s\\n' '*filter' '-A SHARED %s' %s'COMMIT' | %s --noflush", spec, extra, rst)
			live = append(live, spec)
		case k == 5:
			cmd = fmt.Sprintf("%s add shared 198.19.%d.%d -exist", ips, w, i%250)
		case k == 6:
			cmd = fmt.Sprintf("%s del shared 198.19.%d.%d -exist", ips, w, rng.Intn(250))
		default:
			spec := fmt.Sprintf("-s %s -p tcp --dport %d -j ACCEPT", src, 1000+i)
			cmd = fmt.Sprintf("%s -A SHARED %s", ipt, spec)
			live = append(live, spec)
		}
		fmt.Fprintf(&b, "{ %s; } || echo 'FAIL %d: %s' >&2\n", cmd, i, strings.ReplaceAll(cmd, "'", ""))
	}
	return b.String()
}

// endState is the filter table's rules and chains and the set's members,
// sorted: what must not depend on the order the workers ran in.
func endState(t *testing.T, ns *netns.NS, dir string) string {
	t.Helper()
	r := ns.RunTimeout(300, "", filepath.Join(dir, "iptables-save"), "-t", "filter")
	if r.RC != 0 {
		t.Fatalf("save: %+v", r)
	}
	var lines []string
	for _, l := range strings.Split(r.Stdout, "\n") {
		if strings.HasPrefix(l, "-A ") || strings.HasPrefix(l, ":") {
			lines = append(lines, l)
		}
	}
	r = ns.RunTimeout(300, "", filepath.Join(dir, "ipset"), "save", "shared")
	if r.RC != 0 {
		t.Fatalf("ipset save: %+v", r)
	}
	for _, l := range strings.Split(r.Stdout, "\n") {
		if strings.HasPrefix(l, "add ") {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func setupShared(t *testing.T, ns *netns.NS, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{filepath.Join(dir, "iptables"), "-N", "SHARED"},
		{filepath.Join(dir, "iptables"), "-A", "INPUT", "-j", "SHARED"},
		{filepath.Join(dir, "ipset"), "create", "shared", "hash:ip"},
	} {
		if r := ns.Run("", args...); r.RC != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
	}
}

// TestConcurrentMixed: 4 processes × 1000 mixed commands at once end in
// the state the same commands reach run one worker after the other, and
// no command fails.
func TestConcurrentMixed(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	const workers, n = 4, 1000
	scripts := make([]string, workers)
	for w := range scripts {
		scripts[w] = mixedScript(dir, w+1, n)
	}
	serial := netns.New(t, "mixs")
	setupShared(t, serial, dir)
	for w, s := range scripts {
		if r := serial.RunTimeout(900, s, "sh"); r.RC != 0 || r.Stderr != "" {
			t.Fatalf("serial worker %d: rc %d\n%s", w, r.RC, r.Stderr)
		}
	}
	want := endState(t, serial, dir)

	ns := netns.New(t, "mixp")
	setupShared(t, ns, dir)
	var wg sync.WaitGroup
	res := make([]netns.Result, workers)
	start := time.Now()
	for w, s := range scripts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[w] = ns.RunTimeout(900, s, "sh")
		}()
	}
	wg.Wait()
	t.Logf("%d workers × %d commands in %v", workers, n, time.Since(start))
	for w, r := range res {
		if r.RC != 0 || r.Stderr != "" {
			t.Errorf("worker %d: rc %d\nstderr: %s", w, r.RC, r.Stderr)
		}
	}
	if got := endState(t, ns, dir); got != want {
		t.Errorf("end state differs from the serial run:\n%s", lineDiff(want, got))
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	w, g := map[string]int{}, map[string]int{}
	for _, l := range strings.Split(want, "\n") {
		w[l]++
	}
	for _, l := range strings.Split(got, "\n") {
		g[l]++
	}
	var out []string
	for l, c := range w {
		if g[l] < c {
			out = append(out, "- "+l)
		}
	}
	for l, c := range g {
		if w[l] < c {
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	if len(out) > 40 {
		out = append(out[:40], fmt.Sprintf("... %d more", len(out)-40))
	}
	return strings.Join(out, "\n")
}

// hammerNS commits in a loop in ns (a table of its own, added and
// deleted) until stop is called, so that every generation id anybody
// reads is stale almost at once.
func hammerNS(t *testing.T, ns *netns.NS) (stop func() int64) {
	t.Helper()
	f, err := os.Open("/run/netns/" + ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var done atomic.Bool
	var n atomic.Int64
	var wg sync.WaitGroup
	// two writers, so that one being descheduled leaves no gap
	for h := 0; h < 2; h++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := nftables.New(nftables.AsLasting(), nftables.WithNetNSFd(int(f.Fd())))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.CloseLasting()
			tab := &nftables.Table{Family: nftables.TableFamilyINet, Name: fmt.Sprintf("hammer%d", h)}
			for i := 0; !done.Load(); i++ {
				if i%2 == 0 {
					c.AddTable(tab)
				} else {
					c.DelTable(tab)
				}
				if c.Flush() == nil {
					n.Add(1)
				}
			}
		}()
	}
	var once sync.Once
	stop = func() int64 {
		once.Do(func() { done.Store(true); wg.Wait() })
		return n.Load()
	}
	t.Cleanup(func() { stop() })
	return stop
}

// TestStarvation: while another process commits without pause, a restore
// can never commit on the generation it read. It gives up after a bounded
// number of retries with a clear message, changes nothing, and works once
// the other writer stops.
func TestStarvation(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	ns := netns.New(t, "starve")
	var in strings.Builder
	in.WriteString("*filter\n:INPUT ACCEPT [0:0]\n")
	// The bigger the restore, the longer each attempt and the surer it is
	// to be overtaken; on a loaded 2-core machine 2000 rules sometimes
	// find a gap, 20000 (XDPT_STARVE_RULES=20000) always starve but take
	// minutes (1000 attempts).
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("XDPT_STARVE_RULES")); err == nil && v > 0 {
		n = v
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "-A INPUT -s 198.18.%d.%d/32 -j DROP\n", i/256, i%256)
	}
	in.WriteString("COMMIT\n")
	stop := hammerNS(t, ns)
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	r := ns.RunTimeout(900, in.String(), filepath.Join(dir, "iptables-restore"))
	took := time.Since(start)
	commits := stop()
	t.Logf("starved restore: rc %d after %v (%d concurrent commits): %q", r.RC, took, commits, r.Stderr)
	if r.RC == 0 {
		// the scheduler left a gap between the other writers' commits:
		// starvation not reproduced, but the restore must be whole
		t.Logf("starvation not reproduced: the restore committed")
		if got := len(chainRuleLines(t, ns, filepath.Join(dir, "iptables"), "INPUT")); got != n {
			t.Fatalf("%d rules after the restore, want %d", got, n)
		}
		return
	}
	if r.RC != 4 || !(strings.Contains(r.Stderr, "giving up") || strings.Contains(r.Stderr, "kept being interrupted")) {
		t.Errorf("unclear starvation error: rc %d %q", r.RC, r.Stderr)
	}
	if s := ns.Run("", filepath.Join(dir, "iptables-save")); strings.Contains(s.Stdout, "-A INPUT") {
		t.Errorf("the starved restore left rules behind:\n%s", s.Stdout)
	}
	if r := ns.RunTimeout(300, in.String(), filepath.Join(dir, "iptables-restore")); r.RC != 0 {
		t.Fatalf("restore once the writer stopped: %+v", r)
	}
	if got := len(chainRuleLines(t, ns, filepath.Join(dir, "iptables"), "INPUT")); got != n {
		t.Errorf("%d rules after the restore, want %d", got, n)
	}
}

// rulesOnly keeps the lines of a save that describe state, not the
// comments with dates.
func rulesOnly(save string) string {
	var out []string
	for _, l := range strings.Split(save, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCrashDuringRestore kills iptables-restore with SIGKILL at points
// spread over a 100k-rule restore: the kernel holds the old ruleset or
// the new one, never a mix, and the next command works.
func TestCrashDuringRestore(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	const n = 100000
	var oldIn, newIn strings.Builder
	oldIn.WriteString("*filter\n:INPUT ACCEPT [0:0]\n:OLD - [0:0]\n-A INPUT -j OLD\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&oldIn, "-A OLD -s 203.0.113.%d/32 -j DROP\n", i%250)
	}
	oldIn.WriteString("COMMIT\n")
	newIn.WriteString("*filter\n:INPUT DROP [0:0]\n:NEW - [0:0]\n-A INPUT -j NEW\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&newIn, "-A NEW -s 198.18.%d.%d/32 -p tcp --dport %d -j ACCEPT\n", i/256%256, i%256, 1+i%60000)
	}
	newIn.WriteString("COMMIT\n")
	file := filepath.Join(t.TempDir(), "new.rules")
	if err := os.WriteFile(file, []byte(newIn.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	save := func(ns *netns.NS) string {
		r := ns.RunTimeout(300, "", filepath.Join(dir, "iptables-save"))
		if r.RC != 0 {
			t.Fatalf("save: %+v", r)
		}
		return rulesOnly(r.Stdout)
	}
	restore := func(ns *netns.NS, in string) {
		if r := ns.RunTimeout(300, in, filepath.Join(dir, "iptables-restore")); r.RC != 0 {
			t.Fatalf("restore: %+v", r)
		}
	}
	// the two states, and how long the full restore takes
	ref := netns.New(t, "crashref")
	restore(ref, oldIn.String())
	oldState := save(ref)
	start := time.Now()
	restore(ref, newIn.String())
	full := time.Since(start)
	newState := save(ref)
	t.Logf("full %d-rule restore: %v", n, full)

	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	sawOld, sawNew := 0, 0
	for _, frac := range []float64{0.05, 0.3, 0.6, 0.85, 0.95, 1.1} {
		ns := netns.New(t, "crash")
		restore(ns, oldIn.String())
		delay := time.Duration(float64(full) * (frac + rng.Float64()*0.1))
		cmd := exec.Command("ip", "netns", "exec", ns.Name, filepath.Join(dir, "iptables-restore"), file)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		killed := err != nil
		switch got := save(ns); got {
		case oldState:
			sawOld++
		case newState:
			sawNew++
		default:
			t.Fatalf("killed after %v (killed=%v): the ruleset is neither the old nor the new one:\n%s", delay, killed, lineDiff(newState, got))
		}
		// the next command works without repair
		ipt := filepath.Join(dir, "iptables")
		if r := ns.Run("", ipt, "-I", "INPUT", "-s", "203.0.113.250", "-j", "ACCEPT"); r.RC != 0 {
			t.Fatalf("command after the kill: %+v", r)
		}
		if r := ns.Run("", ipt, "-D", "INPUT", "-s", "203.0.113.250", "-j", "ACCEPT"); r.RC != 0 {
			t.Fatalf("command after the kill: %+v", r)
		}
	}
	t.Logf("after SIGKILL: old ruleset %d times, new ruleset %d times", sawOld, sawNew)
}

// TestCrashDuringSetRestore kills `ipset restore` of a big set with
// SIGKILL at points spread over its run: the set holds the old members or
// the new ones, never a mix, and the next command works. XDPT_SET_ELEMS
// sets the size (default 1000000, as issue 7 asks).
func TestCrashDuringSetRestore(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	n := 1000000
	if v, err := strconv.Atoi(os.Getenv("XDPT_SET_ELEMS")); err == nil && v > 0 {
		n = v
	}
	ips := filepath.Join(dir, "ipset")
	oldIn := "create big hash:ip family inet hashsize 65536 maxelem 2000000\nadd big 203.0.113.1\nadd big 203.0.113.2\n"
	var newIn strings.Builder
	newIn.WriteString("flush big\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&newIn, "add big 10.%d.%d.%d\n", i>>16&255, i>>8&255, i&255)
	}
	file := filepath.Join(t.TempDir(), "set.restore")
	if err := os.WriteFile(file, []byte(newIn.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	members := func(ns *netns.NS) string {
		// a save right after a big change may fail (see
		// TestSetSaveRightAfterRestore): try again
		r := ns.RunTimeout(300, "", ips, "save", "big")
		for try := 0; r.RC != 0 && strings.Contains(r.Stderr, "changed") && try < 10; try++ {
			time.Sleep(time.Second)
			r = ns.RunTimeout(300, "", ips, "save", "big")
		}
		if r.RC != 0 {
			t.Fatalf("ipset save: %+v", r)
		}
		var out []string
		for _, l := range strings.Split(r.Stdout, "\n") {
			if strings.HasPrefix(l, "add ") {
				out = append(out, l)
			}
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	setup := func(ns *netns.NS) {
		if r := ns.Run(oldIn, ips, "restore"); r.RC != 0 {
			t.Fatalf("ipset restore: %+v", r)
		}
	}
	ref := netns.New(t, "scref")
	setup(ref)
	oldState := members(ref)
	start := time.Now()
	if r := ref.RunTimeout(600, "", ips, "restore", "-f", file); r.RC != 0 {
		t.Fatalf("ipset restore: %+v", r)
	}
	full := time.Since(start)
	newState := members(ref)
	t.Logf("full %d-element restore: %v", n, full)

	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	sawOld, sawNew := 0, 0
	for _, frac := range []float64{0.1, 0.5, 0.8, 0.95, 1.2, 2.5} {
		ns := netns.New(t, "scrash")
		setup(ns)
		delay := time.Duration(float64(full) * (frac + rng.Float64()*0.1))
		cmd := exec.Command("ip", "netns", "exec", ns.Name, ips, "restore", "-f", file)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		switch got := members(ns); got {
		case oldState:
			sawOld++
		case newState:
			sawNew++
		default:
			t.Fatalf("killed after %v: the set is neither the old nor the new one (%d members):\n%s", delay, strings.Count(got, "\n")+1, lineDiff(newState, got))
		}
		if r := ns.Run("", ips, "add", "big", "198.51.100.1"); r.RC != 0 {
			t.Fatalf("command after the kill: %+v", r)
		}
		if r := ns.Run("", ips, "del", "big", "198.51.100.1"); r.RC != 0 {
			t.Fatalf("command after the kill: %+v", r)
		}
	}
	t.Logf("after SIGKILL: old set %d times, new set %d times", sawOld, sawNew)
}

// TestSetSaveRightAfterRestore saves a big set at once after restoring it.
// The kernel is still resizing the set's hash table then, and a dump that
// resumes its walk by skipping what it sent before returns some elements
// twice and misses others, without NLM_F_DUMP_INTR. The save must never
// print such a list: it is complete, or it fails with an error (once
// members were written out, a dump that has to be read again cannot be
// taken back). XDPT_SET_ELEMS sets the size (default 1000000, the size
// where it shows).
func TestSetSaveRightAfterRestore(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	n := 1000000
	if v, err := strconv.Atoi(os.Getenv("XDPT_SET_ELEMS")); err == nil && v > 0 {
		n = v
	}
	ips := filepath.Join(dir, "ipset")
	var in strings.Builder
	in.WriteString("create big hash:ip family inet hashsize 1024 maxelem 2000000\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "add big 10.%d.%d.%d\n", i>>16&255, i>>8&255, i&255)
	}
	file := filepath.Join(t.TempDir(), "set.restore")
	if err := os.WriteFile(file, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := netns.New(t, "setsave")
	if r := ns.RunTimeout(600, "", ips, "restore", "-f", file); r.RC != 0 {
		t.Fatalf("ipset restore: %+v", r)
	}
	for round := 0; round < 10; round++ {
		r := ns.RunTimeout(600, "", ips, "save", "big")
		if r.RC != 0 {
			if !strings.Contains(r.Stderr, "changed") {
				t.Fatalf("save %d: unclear error: rc %d %q", round, r.RC, r.Stderr)
			}
			t.Logf("save %d: %s", round, strings.TrimSpace(r.Stderr))
			time.Sleep(time.Second)
			continue
		}
		seen := make(map[string]bool, n)
		dups := 0
		for _, l := range strings.Split(r.Stdout, "\n") {
			if strings.HasPrefix(l, "add ") {
				if seen[l] {
					dups++
				}
				seen[l] = true
			}
		}
		if len(seen) != n || dups != 0 {
			t.Fatalf("save %d: %d distinct members of %d, %d printed twice", round, len(seen), n, dups)
		}
		return
	}
	t.Fatal("no save succeeded in 10 tries")
}
