package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// xdpBed is a veth pair with xdptables attached in generic mode on the
// receiving end vb (namespace b).
type xdpBed struct {
	t    *testing.T
	bin  string
	a, b *netns.NS
}

func newXDPBed(t *testing.T) *xdpBed {
	netns.RequireRoot(t)
	if !netns.Have("ping") {
		t.Fatal("ping is needed (make deps)")
	}
	bin := LinkDir(t)
	xdpPins(t)
	a, b := vethPair(t)
	x := &xdpBed{t: t, bin: bin, a: a, b: b}
	x.run("xdptables", "xdp", "attach", "vb", "--mode", "generic")
	t.Cleanup(func() { b.Run("", filepath.Join(bin, "xdptables"), "xdp", "detach", "vb") })
	return x
}

// run runs one of our tools in b and fails on a non-zero status.
func (x *xdpBed) run(prog string, args ...string) string {
	x.t.Helper()
	r := x.b.Run("", append([]string{filepath.Join(x.bin, prog)}, args...)...)
	if r.RC != 0 {
		x.t.Fatalf("%s %v: rc %d: %s%s", prog, args, r.RC, r.Stdout, r.Stderr)
	}
	return r.Stdout + r.Stderr
}

// ping sends n echo requests from a and says how many were answered.
func (x *xdpBed) ping(n int, dst string) int {
	x.t.Helper()
	r := x.a.RunTimeout(30, "", "ping", "-n", "-q", "-c", strconv.Itoa(n), "-i", "0.01", "-W", "1", dst)
	m := regexp.MustCompile(`(\d+) received`).FindStringSubmatch(r.Stdout)
	if m == nil {
		x.t.Fatalf("ping output: %s%s", r.Stdout, r.Stderr)
	}
	got, _ := strconv.Atoi(m[1])
	return got
}

func TestXDPFollowsCommands(t *testing.T) {
	x := newXDPBed(t)
	const n = 7
	rule := "-s 198.18.0.1/32 -p icmp -j DROP"
	// No `xdp sync`: the command itself updates the attached program.
	x.run("iptables", "-t", "raw", "-A", "PREROUTING", "-s", "198.18.0.1", "-p", "icmp", "-j", "DROP")
	if got := x.ping(n, "198.18.0.2"); got != 0 {
		t.Fatalf("%d answers through a DROP rule", got)
	}
	if c := xdpCounts(t, x.run("xdptables", "xdp", "status")); c[rule] != n {
		t.Fatalf("XDP counted %v, want %d", c, n)
	}
	if got := nftPackets(t, x.b, x.bin, "iptables", 1); got != n {
		t.Fatalf("-L -v: %d, want %d", got, n)
	}
	if s := x.run("iptables", "-t", "raw", "-S", "PREROUTING", "-v"); !strings.Contains(s, "-c "+strconv.Itoa(n)+" ") {
		t.Fatalf("-S -v without the XDP count:\n%s", s)
	}
	if s := x.run("iptables-save", "-c", "-t", "raw"); !strings.Contains(s, "["+strconv.Itoa(n)+":") {
		t.Fatalf("iptables-save -c without the XDP count:\n%s", s)
	}
	// Another rule before it: the counter follows the nftables rule.
	x.run("iptables", "-t", "raw", "-I", "PREROUTING", "-s", "203.0.113.0/24", "-j", "DROP")
	if got := nftPackets(t, x.b, x.bin, "iptables", 2); got != n {
		t.Fatalf("counter lost in update: %d", got)
	}
	// -Z zeroes both counters.
	x.run("iptables", "-t", "raw", "-Z", "PREROUTING")
	if got := nftPackets(t, x.b, x.bin, "iptables", 2); got != 0 {
		t.Fatalf("after -Z: %d", got)
	}
	if got := x.ping(3, "198.18.0.2"); got != 0 {
		t.Fatalf("%d answers after -Z", got)
	}
	if got := nftPackets(t, x.b, x.bin, "iptables", 2); got != 3 {
		t.Fatalf("after -Z and 3 drops: %d", got)
	}
	x.run("iptables", "-t", "raw", "-F", "PREROUTING")
	if got := x.ping(3, "198.18.0.2"); got != 3 {
		t.Fatalf("%d of 3 answers after -F", got)
	}

	// A restore of the raw table updates it too.
	restore := exec.Command("ip", "netns", "exec", x.b.Name, filepath.Join(x.bin, "iptables-restore"))
	restore.Stdin = strings.NewReader("*raw\n-A PREROUTING -s 198.18.0.1/32 -p icmp -j DROP\nCOMMIT\n")
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("restore: %v: %s", err, out)
	}
	if got := x.ping(3, "198.18.0.2"); got != 0 {
		t.Fatalf("%d answers after restore", got)
	}
	x.run("iptables", "-t", "raw", "-F", "PREROUTING")

	// -m set: hash:net with nomatch, mirrored; ipset add/del change it
	// in the same command.
	x.run("ipset", "create", "bl", "hash:net")
	x.run("ipset", "add", "bl", "198.18.0.0/24")
	x.run("ipset", "add", "bl", "198.18.0.1", "nomatch")
	x.run("iptables", "-t", "raw", "-A", "PREROUTING", "-m", "set", "--match-set", "bl", "src", "-j", "DROP")
	if st := x.run("xdptables", "xdp", "status"); !strings.Contains(st, "1 of 1 rules in XDP") {
		t.Fatalf("set rule not in XDP:\n%s", st)
	}
	if got := x.ping(3, "198.18.0.2"); got != 3 {
		t.Fatalf("nomatch entry: %d of 3 answers", got)
	}
	x.run("ipset", "del", "bl", "198.18.0.1")
	if got := x.ping(n, "198.18.0.2"); got != 0 {
		t.Fatalf("%d answers after removing the nomatch entry", got)
	}
	if c := xdpCounts(t, x.run("xdptables", "xdp", "status")); c["-m set --match-set bl src -j DROP"] != n {
		t.Fatalf("set rule: XDP counted %v, want %d", c, n)
	}
	x.run("ipset", "add", "bl", "198.18.0.0/30", "nomatch")
	if got := x.ping(3, "198.18.0.2"); got != 3 {
		t.Fatalf("nomatch /30: %d of 3 answers", got)
	}
	x.run("ipset", "flush", "bl")
	x.run("ipset", "add", "bl", "198.18.0.1")
	if got := x.ping(3, "198.18.0.2"); got != 0 {
		t.Fatalf("after flush and add: %d answers", got)
	}
	x.run("iptables", "-t", "raw", "-F", "PREROUTING")
	x.run("ipset", "destroy", "bl")
}

// TestXDPSetTimeouts: a set with timeouts mirrored in XDP follows ipset
// add -exist with another timeout in the same command: re-added with a
// shorter one, its entry stops matching in XDP before the kernel's
// element expires (after it, pings are answered); added again, it
// matches in XDP again.
func TestXDPSetTimeouts(t *testing.T) {
	x := newXDPBed(t)
	const n = 5
	rule := "-m set --match-set tl src -j DROP"
	x.run("ipset", "create", "tl", "hash:ip", "timeout", "600")
	x.run("ipset", "add", "tl", "198.18.0.1")
	x.run("iptables", "-t", "raw", "-A", "PREROUTING", "-m", "set", "--match-set", "tl", "src", "-j", "DROP")
	if st := x.run("xdptables", "xdp", "status"); !strings.Contains(st, "1 of 1 rules in XDP") {
		t.Fatalf("set rule not in XDP:\n%s", st)
	}
	if got := x.ping(n, "198.18.0.2"); got != 0 {
		t.Fatalf("%d answers through the set", got)
	}
	if c := xdpCounts(t, x.run("xdptables", "xdp", "status")); c[rule] != n {
		t.Fatalf("XDP counted %v, want %d", c, n)
	}
	x.run("ipset", "add", "tl", "198.18.0.1", "timeout", "3", "-exist")
	readded := time.Now()
	time.Sleep(3500*time.Millisecond - time.Since(readded))
	if got := x.ping(3, "198.18.0.2"); got != 3 {
		t.Fatalf("%d of 3 answers after the entry's shorter timeout ran out", got)
	}
	x.run("ipset", "add", "tl", "198.18.0.1", "timeout", "600")
	if got := x.ping(n, "198.18.0.2"); got != 0 {
		t.Fatalf("%d answers after the entry came back", got)
	}
	if c := xdpCounts(t, x.run("xdptables", "xdp", "status")); c[rule] != 2*n {
		t.Fatalf("XDP counted %v, want %d", c, 2*n)
	}
	x.run("ipset", "del", "tl", "198.18.0.1")
	if got := x.ping(3, "198.18.0.2"); got != 3 {
		t.Fatalf("%d of 3 answers after del", got)
	}
	x.run("iptables", "-t", "raw", "-F", "PREROUTING")
	x.run("ipset", "destroy", "tl")
}

// TestXDPUpdatesUnderTraffic: ping floods through a steady DROP rule
// while 1000 updates (-I and -D of another rule in front of it) each
// replace the XDP program: every packet is dropped and counted exactly
// once (by XDP, or by nftables while an update pauses XDP).
func TestXDPUpdatesUnderTraffic(t *testing.T) {
	x := newXDPBed(t)
	x.run("iptables", "-t", "raw", "-A", "PREROUTING", "-s", "198.18.0.1", "-p", "icmp", "-j", "DROP")
	// the updates take a minute on a quiet machine and many on a loaded
	// one: the bounds are for a hang; ping stops when they are done
	ping := exec.Command("ip", "netns", "exec", x.a.Name, "ping", "-n", "-q", "-i", "0.002", "-w", "1800", "198.18.0.2")
	var out strings.Builder
	ping.Stdout, ping.Stderr = &out, &out
	if err := ping.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	script := `for i in $(seq 500); do
  "$1" -t raw -I PREROUTING 1 -s 203.0.113.$((i % 250 + 1)) -p udp --dport $i -j DROP || exit 1
  "$1" -t raw -D PREROUTING 1 || exit 1
done`
	r := x.b.RunTimeout(1800, "", "sh", "-c", script, "sh", filepath.Join(x.bin, "iptables"))
	_ = ping.Process.Signal(os.Interrupt)
	_ = ping.Wait()
	if r.RC != 0 {
		t.Fatalf("updates: rc %d: %s%s", r.RC, r.Stdout, r.Stderr)
	}
	t.Logf("1000 updates in %v", time.Since(start))
	m := regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("ping: %s", out.String())
	}
	sent, _ := strconv.Atoi(m[1])
	if m[2] != "0" {
		t.Fatalf("%s of %d echo requests answered through a DROP rule", m[2], sent)
	}
	// the last requests may still wait in the backlog for a softirq
	// (ksoftirqd runs late on a loaded machine): counted as they come
	got := nftPackets(t, x.b, x.bin, "iptables", 1)
	for deadline := time.Now().Add(10 * time.Second); got < sent && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		got = nftPackets(t, x.b, x.bin, "iptables", 1)
	}
	if got != sent {
		t.Fatalf("counted %d, sent %d", got, sent)
	}
	// while an update that changes the run commits, XDP passes to
	// nftables, which drops and counts the rest
	c := xdpCounts(t, x.run("xdptables", "xdp", "status"))
	if n := c["-s 198.18.0.1/32 -p icmp -j DROP"]; n == 0 || n > sent {
		t.Fatalf("XDP counted %v, sent %d", c, sent)
	}
	t.Logf("XDP dropped %d of %d, nftables the rest", c["-s 198.18.0.1/32 -p icmp -j DROP"], sent)
}

// TestXDPFaults: failures to attach are reported and change nothing; an
// interface that disappears is dropped from the fast path; commands keep
// working and nftables keeps enforcing the rules.
func TestXDPFaults(t *testing.T) {
	x := newXDPBed(t)
	xt := filepath.Join(x.bin, "xdptables")
	if r := x.b.Run("", xt, "xdp", "attach", "nosuchdev"); r.RC == 0 || !strings.Contains(r.Stderr, "nosuchdev") {
		t.Fatalf("attach to a missing device: rc %d: %s", r.RC, r.Stderr)
	}
	if r := x.b.Run("", "ip", "link", "add", "dm0", "type", "bridge"); r.RC != 0 {
		t.Fatal(r.Stderr)
	}
	x.b.Run("", "ip", "link", "set", "dm0", "up")
	if r := x.b.Run("", xt, "xdp", "attach", "dm0", "--mode", "native"); r.RC == 0 {
		t.Fatalf("native attach to a bridge succeeded")
	} else if !strings.Contains(r.Stderr, "dm0") {
		t.Fatalf("no message naming dm0: %s", r.Stderr)
	}
	r := x.b.Run("", xt, "xdp", "attach", "dm0")
	if r.RC != 0 || !strings.Contains(r.Stderr, "fell back to generic") {
		t.Fatalf("auto attach to a bridge: rc %d: %s", r.RC, r.Stderr)
	}
	x.run("iptables", "-t", "raw", "-A", "PREROUTING", "-s", "198.18.0.1", "-p", "icmp", "-j", "DROP")
	// The device goes away: commands still work, status says what is left.
	x.b.Run("", "ip", "link", "del", "dm0")
	x.run("iptables", "-t", "raw", "-A", "PREROUTING", "-s", "198.51.100.0/24", "-j", "DROP")
	st := x.run("xdptables", "xdp", "status")
	if strings.Contains(st, "dm0") || !strings.Contains(st, "interface vb") {
		t.Fatalf("status after dm0 went away:\n%s", st)
	}
	if got := x.ping(3, "198.18.0.2"); got != 0 {
		t.Fatalf("%d answers", got)
	}
	// A rule XDP cannot evaluate ends the run; nftables enforces it.
	x.run("iptables", "-t", "raw", "-I", "PREROUTING", "1", "-p", "icmp", "-m", "limit", "--limit", "1/hour", "--limit-burst", "1", "-j", "ACCEPT")
	st = x.run("xdptables", "xdp", "status")
	if !strings.Contains(st, "0 of 3 rules in XDP") || !strings.Contains(st, "run ends at rule 1") {
		t.Fatalf("status:\n%s", st)
	}
	if got := x.ping(3, "198.18.0.2"); got != 1 {
		t.Fatalf("%d answers, want 1 (the limit's burst)", got)
	}
}
