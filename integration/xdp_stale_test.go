package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestXDPWaitsForAnotherPauser: a command that paused XDP before its
// commit holds it paused until its own update, which compiles from the
// rules after every commit. Another command that finishes meanwhile must
// not resume XDP with what it compiled: that program would run rules
// the pending command is about to replace. The pending command is stood
// in for by a live process recorded as a pauser; once it is gone, the
// next update resumes XDP.
func TestXDPWaitsForAnotherPauser(t *testing.T) {
	x := newXDPBed(t)
	const rule = "-s 198.18.0.1/32 -p icmp -j DROP"
	x.run("iptables", "-t", "raw", "-A", "PREROUTING", "-s", "198.18.0.1", "-p", "icmp", "-j", "DROP")
	status := func() (int, string) {
		r := x.b.Run("", filepath.Join(x.bin, "xdptables"), "xdp", "status")
		return r.RC, r.Stdout + r.Stderr
	}
	if got := x.ping(3, "198.18.0.2"); got != 0 {
		t.Fatalf("%d pings answered through a DROP rule", got)
	}
	if _, out := status(); xdpCounts(t, out)[rule] != 3 {
		t.Fatalf("XDP did not drop the pings:\n%s", out)
	}

	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleeper.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	start, _ := strconv.ParseUint(fields[19], 10, 64)
	var ns syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", x.b.Name), &ns); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(xdp.StateDir, strconv.FormatUint(ns.Ino, 10), "state.json")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var st xdp.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	st.Pausers = append(st.Pausers, xdp.Pauser{PID: sleeper.Process.Pid, Start: start, Since: time.Now().Unix()})
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}

	// A change of the run pauses XDP and, with the other pauser alive,
	// leaves it paused: nftables alone drops, and says how many.
	x.run("iptables", "-t", "raw", "-I", "PREROUTING", "1", "-s", "203.0.113.9", "-j", "DROP")
	rc, out := status()
	if want := fmt.Sprintf("process %d is committing", sleeper.Process.Pid); rc != 1 || !strings.Contains(out, want) {
		t.Fatalf("status while another command holds XDP paused: rc %d, want 1 and %q:\n%s", rc, want, out)
	}
	if got := x.ping(2, "198.18.0.2"); got != 0 {
		t.Fatalf("%d pings answered through a DROP rule while paused", got)
	}
	if _, out := status(); xdpCounts(t, out)[rule] != 3 {
		t.Fatalf("XDP counted packets while paused:\n%s", out)
	}
	if got := nftPackets(t, x.b, x.bin, "iptables", 2); got != 5 {
		t.Fatalf("-L -v counts %d, want 5 (3 in XDP, 2 in nftables)", got)
	}
	// -Z meanwhile zeroes the XDP counters in place.
	x.run("iptables", "-t", "raw", "-Z", "PREROUTING")
	if got := nftPackets(t, x.b, x.bin, "iptables", 2); got != 0 {
		t.Fatalf("-L -v counts %d after -Z, want 0", got)
	}

	// Once the other pauser is gone, the next update resumes XDP.
	_ = sleeper.Process.Kill()
	_ = sleeper.Wait()
	x.run("xdptables", "xdp", "sync")
	if rc, out := status(); rc != 0 {
		t.Fatalf("status after the pauser went away: rc %d\n%s", rc, out)
	}
	if got := x.ping(4, "198.18.0.2"); got != 0 {
		t.Fatalf("%d pings answered", got)
	}
	if _, out := status(); xdpCounts(t, out)[rule] != 4 {
		t.Fatalf("XDP does not drop again after resuming:\n%s", out)
	}
}

// TestXDPCollectsDepartedNamespace: a namespace deleted with XDP attached
// leaves its pinned link behind on the shared bpffs, which keeps the
// program, its set maps and counters in the kernel. The next xdp command
// in any namespace removes them; a namespace whose XDP is still attached
// keeps its own.
func TestXDPCollectsDepartedNamespace(t *testing.T) {
	x := newXDPBed(t) // stays attached throughout
	name := netns.Name("xgone")
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", name), &st); err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatUint(st.Ino, 10)
	stateDir := filepath.Join(xdp.StateDir, id)
	pinDir := filepath.Join(xdp.BPFFSFallback, "xdptables", id)
	t.Cleanup(func() { _ = os.RemoveAll(stateDir); _ = os.RemoveAll(pinDir) })
	for _, argv := range [][]string{
		{"ip", "link", "add", "g0", "type", "veth", "peer", "name", "g1"},
		{"ip", "link", "set", "g0", "up"},
		{filepath.Join(x.bin, "iptables"), "-t", "raw", "-A", "PREROUTING", "-s", "198.18.0.9", "-j", "DROP"},
		{filepath.Join(x.bin, "xdptables"), "xdp", "attach", "g0", "--mode", "generic"},
	} {
		if out, err := exec.Command("ip", append([]string{"netns", "exec", name}, argv...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", argv, err, out)
		}
	}
	for _, d := range []string{stateDir, pinDir} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("no XDP state after attach: %v", err)
		}
	}
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// The kernel tears the namespace down in the background.
	other := netns.New(t, "xo")
	// (a kernel worker, behind every other namespace being deleted: on
	// a loaded machine that takes a while)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := other.Run("", filepath.Join(x.bin, "xdptables"), "xdp", "status")
		if r.RC != 0 {
			t.Fatalf("status: rc %d: %s%s", r.RC, r.Stdout, r.Stderr)
		}
		_, err1 := os.Stat(stateDir)
		_, err2 := os.Stat(pinDir)
		if os.IsNotExist(err1) && os.IsNotExist(err2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state or pins of the deleted namespace still there after 2 min: %v, %v", err1, err2)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// the attached namespace keeps its XDP
	if out := x.run("xdptables", "xdp", "status"); !strings.Contains(out, "vb") {
		t.Fatalf("status of the namespace still attached:\n%s", out)
	}
	if got := x.ping(2, "198.18.0.2"); got != 2 {
		t.Fatalf("%d of 2 pings answered", got)
	}
}
