package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestXDPDetachOtherBpffs: a command that sees another bpffs than the
// one holding the pins (here /sys/fs/bpf mounted in its own mount
// namespace, where `ip netns exec` children use the fallback) still
// detaches the program it was asked to: detach used to find no pinned
// link, remove the state and succeed, and `xdp status` said "not
// attached" while the program went on dropping.
func TestXDPDetachOtherBpffs(t *testing.T) {
	x := newXDPBed(t)
	const n = 3
	rule := []string{"-t", "raw", "-A", "PREROUTING", "-s", "198.18.0.1", "-p", "icmp", "-j", "DROP"}
	x.run("iptables", rule...)
	if got := x.ping(n, "198.18.0.2"); got != 0 {
		t.Fatalf("%d answers through a DROP rule", got)
	}
	r := x.b.Run("", "sh", "-c", "mount -t bpf bpf /sys/fs/bpf && exec "+filepath.Join(x.bin, "xdptables")+" xdp detach vb")
	if r.RC != 0 {
		t.Fatalf("detach from another bpffs: rc %d: %s%s", r.RC, r.Stdout, r.Stderr)
	}
	rule[2] = "-D"
	x.run("iptables", rule...)
	if got := x.ping(n, "198.18.0.2"); got != n {
		t.Fatalf("%d of %d answered with no rule after detach: the program is still attached\n%s", got, n, x.run("xdptables", "xdp", "status"))
	}
	// attaching again where the pins are: the dead link's pin is
	// replaced (it was: "pinning link: file exists")
	rule[2] = "-A"
	x.run("iptables", rule...)
	x.run("xdptables", "xdp", "attach", "vb", "--mode", "generic")
	if got := x.ping(n, "198.18.0.2"); got != 0 {
		t.Fatalf("%d answers through a DROP rule", got)
	}
	if c := xdpCounts(t, x.run("xdptables", "xdp", "status")); c["-s 198.18.0.1/32 -p icmp -j DROP"] != n {
		t.Fatalf("XDP counted %v after attaching again, want %d", c, n)
	}
}

// TestXDPCollectKeepsOtherBpffs: an xdp command of another namespace
// that sees another bpffs (here /sys/fs/bpf mounted in its own mount
// namespace) does not take this namespace's state for that of a deleted
// one: it found none of its pins and removed the state, and `xdp status`
// said "not attached" while the program went on dropping.
func TestXDPCollectKeepsOtherBpffs(t *testing.T) {
	x := newXDPBed(t)
	x.run("iptables", "-t", "raw", "-A", "PREROUTING", "-s", "198.18.0.1", "-p", "icmp", "-j", "DROP")
	other := netns.New(t, "xc")
	r := other.Run("", "sh", "-c", "mount -t bpf bpf /sys/fs/bpf && exec "+filepath.Join(x.bin, "xdptables")+" xdp status")
	if r.RC != 0 {
		t.Fatalf("status elsewhere: rc %d: %s%s", r.RC, r.Stdout, r.Stderr)
	}
	if out := x.run("xdptables", "xdp", "status"); !strings.Contains(out, "interface vb") {
		t.Fatalf("the attached namespace lost its state to another's command:\n%s", out)
	}
	if got := x.ping(3, "198.18.0.2"); got != 0 {
		t.Fatalf("%d answers through a DROP rule", got)
	}
}
