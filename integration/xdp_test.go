package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/xdp"
)

// xdpPins makes sure a bpffs that `ip netns exec` children can see is
// mounted (they get a fresh /sys), unmounting it at the end if tests
// mounted it and no other test, of this run or another, still uses it.
func xdpPins(t *testing.T) {
	t.Helper()
	dir := xdp.BPFFSFallback
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Test runs of several checkouts share the mount: each holds a shared
	// lock while it uses it, and only one that finds no other holder
	// unmounts it.
	users, err := os.OpenFile(dir+".users", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(users.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer users.Close()
		if unix.Flock(int(users.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			return // still in use
		}
		if os.Remove(mountedByTests) != nil {
			return // not ours to unmount
		}
		// lazily: a pinned object still held elsewhere must not keep the
		// mount on the host after the tests
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil && isBPFFS(dir) {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	if isBPFFS(dir) {
		return
	}
	if out, err := exec.Command("mount", "-t", "bpf", "bpf", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount bpffs: %v: %s", err, out)
	}
	if err := os.WriteFile(mountedByTests, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

var mountedByTests = xdp.BPFFSFallback + ".test-mount"

func isBPFFS(dir string) bool {
	out, _ := exec.Command("stat", "-f", "-c", "%T", dir).Output()
	return strings.TrimSpace(string(out)) == "bpf_fs"
}

// vethPair makes namespaces a (sender) and b (receiver) joined by veth
// va–vb with 198.18.0.1/24 and 198.18.0.2/24, 2001:db8::1 and ::2.
func vethPair(t *testing.T) (a, b *netns.NS) {
	a, b = netns.New(t, "xa"), netns.New(t, "xb")
	must := func(r netns.Result) {
		t.Helper()
		if r.RC != 0 {
			t.Fatalf("rc %d: %s%s", r.RC, r.Stdout, r.Stderr)
		}
	}
	must(a.Run("", "ip", "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b.Name))
	must(a.Run("", "ip", "addr", "add", "198.18.0.1/24", "dev", "va"))
	must(b.Run("", "ip", "addr", "add", "198.18.0.2/24", "dev", "vb"))
	must(a.Run("", "ip", "addr", "add", "2001:db8::1/64", "dev", "va", "nodad"))
	must(b.Run("", "ip", "addr", "add", "2001:db8::2/64", "dev", "vb", "nodad"))
	must(a.Run("", "ip", "link", "set", "va", "up"))
	must(b.Run("", "ip", "link", "set", "vb", "up"))
	must(a.Run("", "ip", "link", "set", "lo", "up"))
	must(b.Run("", "ip", "link", "set", "lo", "up"))
	return a, b
}

var xdpRow = regexp.MustCompile(`(?m)^\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(.*)$`)

// xdpCounts parses `xdptables xdp status`: rule spec → XDP packets.
func xdpCounts(t *testing.T, out string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, g := range xdpRow.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(g[2])
		m[g[6]] += n
	}
	return m
}

// nftPackets is the packet counter of raw PREROUTING rule num (1-based).
func nftPackets(t *testing.T, ns *netns.NS, bin, prog string, num int) int {
	t.Helper()
	r := ns.Run("", filepath.Join(bin, prog), "-t", "raw", "-L", "PREROUTING", "-v", "-x", "-n")
	if r.RC != 0 {
		t.Fatalf("%s -L: %s", prog, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) < 2+num {
		t.Fatalf("no rule %d in\n%s", num, r.Stdout)
	}
	n, _ := strconv.Atoi(strings.Fields(lines[1+num])[0])
	return n
}

func TestXDPDropsOverVeth(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("ping") {
		t.Fatal("ping is needed (make deps)")
	}
	bin := LinkDir(t)
	xdpPins(t)
	for _, mode := range []string{"generic", "native"} {
		t.Run(mode, func(t *testing.T) {
			a, b := vethPair(t)
			xt := filepath.Join(bin, "xdptables")
			run := func(ns *netns.NS, argv ...string) string {
				t.Helper()
				r := ns.Run("", argv...)
				if r.RC != 0 {
					t.Fatalf("%v: rc %d: %s%s", argv, r.RC, r.Stdout, r.Stderr)
				}
				return r.Stdout + r.Stderr
			}
			run(b, filepath.Join(bin, "iptables"), "-t", "raw", "-A", "PREROUTING", "-s", "198.51.100.0/24", "-j", "ACCEPT")
			run(b, filepath.Join(bin, "iptables"), "-t", "raw", "-A", "PREROUTING", "-s", "198.18.0.1", "-p", "icmp", "-j", "DROP")
			run(b, filepath.Join(bin, "ip6tables"), "-t", "raw", "-A", "PREROUTING", "-s", "2001:db8::1", "-p", "ipv6-icmp", "-m", "length", "--length", "100:200", "-j", "DROP")
			run(b, xt, "xdp", "attach", "vb", "--mode", mode)
			t.Cleanup(func() { b.Run("", xt, "xdp", "detach", "vb") })

			const n = 5
			ping := func(args ...string) {
				r := a.RunTimeout(30, "", append([]string{"ping", "-n", "-q", "-c", strconv.Itoa(n), "-i", "0.2", "-W", "1"}, args...)...)
				if r.RC == 0 {
					t.Fatalf("ping %v got answers through a DROP rule:\n%s", args, r.Stdout)
				}
			}
			ping("198.18.0.2")
			ping("-s", "100", "2001:db8::2") // 40+8+100 = 148 bytes
			// Small pings are not in the length range: answered.
			if r := a.Run("", "ping", "-n", "-q", "-c", "1", "-W", "2", "-s", "16", "2001:db8::2"); r.RC != 0 {
				t.Fatalf("ping6 outside the length range failed: %s", r.Stdout)
			}
			st := run(b, xt, "xdp", "status")
			c := xdpCounts(t, st)
			if c["-s 198.18.0.1/32 -p icmp -j DROP"] != n || c["-s 2001:db8::1/128 -p ipv6-icmp -m length --length 100:200 -j DROP"] != n {
				t.Fatalf("XDP counters, want %d each:\n%s", n, st)
			}
			if !strings.Contains(st, "interface vb") || !strings.Contains(st, mode) {
				t.Fatalf("status does not show vb in %s mode:\n%s", mode, st)
			}
			// -L -v shows nftables' counter plus XDP's: each packet once.
			if got := nftPackets(t, b, bin, "iptables", 2); got != n {
				t.Fatalf("-L -v counted %d packets, want %d", got, n)
			}

			// An update keeps the counters of surviving rules.
			run(b, filepath.Join(bin, "iptables"), "-t", "raw", "-I", "PREROUTING", "-s", "203.0.113.0/24", "-j", "DROP")
			run(b, xt, "xdp", "sync")
			if c := xdpCounts(t, run(b, xt, "xdp", "status")); c["-s 198.18.0.1/32 -p icmp -j DROP"] != n {
				t.Fatalf("counter lost in update: %v", c)
			}

			// Without XDP nftables drops and counts the same packets.
			run(b, xt, "xdp", "detach", "vb")
			ping("198.18.0.2")
			if got := nftPackets(t, b, bin, "iptables", 3); got != n {
				t.Fatalf("nftables counted %d, want %d", got, n)
			}
		})
	}
}
