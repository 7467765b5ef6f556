package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/xdp"
)

// TestXDPStaleStateOfDeletedNamespace: XDP state is kept per namespace
// inode, and a namespace deleted with XDP attached leaves its state
// behind. A later namespace that gets the same inode must start clean:
// state written for another namespace (another netns cookie) is dropped,
// not shown as its own attachments.
func TestXDPStaleStateOfDeletedNamespace(t *testing.T) {
	netns.RequireRoot(t)
	xdpPins(t)
	bin := filepath.Join(LinkDir(t), "xdptables")
	ns := netns.New(t, "xs")
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", ns.Name), &st); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(xdp.StateDir, strconv.FormatUint(st.Ino, 10))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := xdp.State{Links: []xdp.Attachment{{Ifindex: 42, Name: "ghost0", Mode: xdp.ModeNative}}, Netns: 12345}
	b, _ := json.Marshal(stale)
	if err := os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := ns.Run("", bin, "xdp", "status")
	if r.RC != 0 || strings.Contains(r.Stdout, "ghost0") || !strings.Contains(r.Stdout, "not attached") {
		t.Errorf("status with another namespace's state: rc %d\n%s%s", r.RC, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); !os.IsNotExist(err) {
		t.Errorf("stale state still there: %v", err)
	}
}

// TestXDPStatusAfterForeignFlush: `nft flush ruleset` by another tool
// removes our nftables rules while the XDP program keeps dropping;
// `xdptables xdp status` says so (exit 1), `xdp sync` recompiles XDP from
// what nftables holds, and the drops stop.
func TestXDPStatusAfterForeignFlush(t *testing.T) {
	x := newXDPBed(t)
	x.run("iptables", "-t", "raw", "-A", "PREROUTING", "-s", "198.18.0.1", "-p", "icmp", "-j", "DROP")
	if got := x.ping(3, "198.18.0.2"); got != 0 {
		t.Fatalf("%d answers through a DROP rule", got)
	}
	if r := x.b.Run("", "nft", "flush", "ruleset"); r.RC != 0 {
		t.Fatalf("nft flush ruleset: %+v", r)
	}
	r := x.b.Run("", filepath.Join(x.bin, "xdptables"), "xdp", "status")
	if r.RC != 1 || !strings.Contains(r.Stderr, "out of step") || !strings.Contains(r.Stderr, "-s 198.18.0.1/32 -p icmp -j DROP") {
		t.Fatalf("status after the flush: rc %d\n%s%s", r.RC, r.Stdout, r.Stderr)
	}
	x.run("xdptables", "xdp", "sync")
	if s := x.run("xdptables", "xdp", "status"); !strings.Contains(s, "0 of 0 rules in XDP") {
		t.Fatalf("status after sync:\n%s", s)
	}
	if got := x.ping(3, "198.18.0.2"); got != 3 {
		t.Fatalf("%d of 3 answers after sync", got)
	}
}

// TestXDPPauseOnlyWhenNeeded: a command that changes the rules XDP runs
// pauses it (every packet passes to nftables) until the update; one that
// only appends after them does not, and a finished command leaves
// nothing paused.
func TestXDPPauseOnlyWhenNeeded(t *testing.T) {
	x := newXDPBed(t)
	x.run("iptables", "-t", "raw", "-A", "PREROUTING", "-s", "198.18.0.1", "-p", "icmp", "-j", "DROP")
	for _, args := range [][]string{
		{"-t", "raw", "-A", "PREROUTING", "-s", "203.0.113.1", "-j", "DROP"},
		{"-t", "raw", "-I", "PREROUTING", "1", "-s", "203.0.113.2", "-j", "DROP"},
		{"-t", "raw", "-D", "PREROUTING", "1"},
		{"-t", "raw", "-P", "PREROUTING", "ACCEPT"},
	} {
		x.run("iptables", args...)
		if r := x.b.Run("", filepath.Join(x.bin, "xdptables"), "xdp", "status"); r.RC != 0 {
			t.Fatalf("after %v: status rc %d\n%s%s", args, r.RC, r.Stdout, r.Stderr)
		}
		if got := x.ping(3, "198.18.0.2"); got != 0 {
			t.Fatalf("after %v: %d pings answered", args, got)
		}
	}
}
