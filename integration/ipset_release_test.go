package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// keepersStarted runs argv in ns under strace and returns how many
// processes it started to keep its released netlink sockets, and how many
// times it handed them to a keeper that was alive already
// (kernel.Conn.Release).
func keepersStarted(t *testing.T, ns *netns.NS, argv ...string) (started, handed int) {
	t.Helper()
	if !netns.Have("strace") {
		cmd := exec.Command("apt-get", "install", "-y", "--no-install-recommends", "strace")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("strace is missing and apt-get install strace failed: %v\n%s", err, out)
		}
	}
	log := filepath.Join(t.TempDir(), "trace")
	full := append([]string{"strace", "-f", "-qq", "-e", "trace=execve,connect", "-e", "signal=none", "-o", log}, argv...)
	if r := ns.Run("", full...); r.RC != 0 {
		t.Fatalf("%s: rc %d: %s", strings.Join(argv, " "), r.RC, r.Stderr)
	}
	trace, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(trace), "\n") {
		switch {
		case strings.Contains(l, "--netlink-release-keeper"):
			started++
		case strings.Contains(l, "xdptables-netlink-keeper") && strings.HasSuffix(l, "= 0"):
			handed++
		}
	}
	return started, handed
}

// TestIpsetReleaseKeeper: a single ipset command that deletes something
// (the kernel frees it after an RCU grace period, and closing the netlink
// socket would wait for that) hands its socket to a keeper process
// (kernel.Conn.Release) instead of waiting itself; a command that deletes
// nothing starts none. The change itself is done when the command ends.
func TestIpsetReleaseKeeper(t *testing.T) {
	netns.RequireRoot(t)
	ipset := filepath.Join(LinkDir(t), "ipset")
	ns := netns.New(t, "relk")
	mustRun(t, ns, ipset, "create", "ip", "hash:ip")
	mustRun(t, ns, ipset, "create", "net", "hash:net")
	for _, c := range []struct {
		set, elem string
	}{{"ip", "198.18.7.7"}, {"net", "198.18.7.0/24"}} {
		if n, _ := keepersStarted(t, ns, ipset, "add", c.set, c.elem); n != 0 {
			t.Errorf("add %s %s started %d keepers, want none", c.set, c.elem, n)
		}
		if n, _ := keepersStarted(t, ns, ipset, "test", c.set, c.elem); n != 0 {
			t.Errorf("test %s %s started %d keepers, want none", c.set, c.elem, n)
		}
		// (a keeper still alive from an earlier command takes the
		// sockets instead)
		if n, h := keepersStarted(t, ns, ipset, "del", c.set, c.elem); n+h != 1 {
			t.Errorf("del %s %s started %d keepers and handed its socket %d times, want one of them", c.set, c.elem, n, h)
		}
		if r := ns.Run("", ipset, "test", c.set, c.elem); r.RC != 1 {
			t.Errorf("test %s %s after its del: rc %d, want 1 (%s)", c.set, c.elem, r.RC, r.Stderr)
		}
	}
}

// TestIptablesReleaseKeeper: the same for iptables: -D (and a restore
// that flushes) leave the wait to a keeper, -A starts none.
func TestIptablesReleaseKeeper(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	iptables := filepath.Join(dir, "iptables")
	ns := netns.New(t, "relki")
	rule := []string{"INPUT", "-s", "198.51.100.7", "-j", "DROP"}
	// (the first command creates the table and its chains)
	mustRun(t, ns, append([]string{iptables, "-A"}, rule...)...)
	if n, h := keepersStarted(t, ns, append([]string{iptables, "-D"}, rule...)...); n+h != 1 {
		t.Errorf("-D started %d keepers and handed its socket %d times, want one of them", n, h)
	}
	if r := ns.Run("", append([]string{iptables, "-C"}, rule...)...); r.RC != 1 {
		t.Errorf("-C after -D: rc %d, want 1 (%s)", r.RC, r.Stderr)
	}
	if n, _ := keepersStarted(t, ns, append([]string{iptables, "-A"}, rule...)...); n != 0 {
		t.Errorf("-A started %d keepers, want none", n)
	}
	restore := filepath.Join(t.TempDir(), "rules")
	if err := os.WriteFile(restore, []byte("*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, h := keepersStarted(t, ns, filepath.Join(dir, "iptables-restore"), restore); n+h != 1 {
		t.Errorf("iptables-restore flushing a rule started %d keepers and handed its socket %d times, want one of them", n, h)
	}
}

// socketsHanded runs argv in ns beside a stand-in keeper (a listening
// socket at the keeper's address that takes what it is sent and never
// reads it) and returns the number of sockets in each message that argv
// sent it (kernel.Release).
func socketsHanded(t *testing.T, ns *netns.NS, argv ...string) []int {
	t.Helper()
	if !netns.Have("python3") {
		t.Skip("python3 is missing: it stands in for the keeper")
	}
	keeper := `import socket, subprocess, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind("\0xdptables-netlink-keeper")
s.listen(64)
sys.exit(subprocess.call(sys.argv[1:]))`
	log := filepath.Join(t.TempDir(), "trace")
	full := append([]string{"python3", "-c", keeper, "strace", "-f", "-qq", "-e", "trace=sendmsg", "-e", "signal=none", "-o", log}, argv...)
	if r := ns.Run("", full...); r.RC != 0 {
		t.Fatalf("%s: rc %d: %s", strings.Join(argv, " "), r.RC, r.Stderr)
	}
	trace, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []int
	for _, l := range strings.Split(string(trace), "\n") {
		_, fds, ok := strings.Cut(l, "SCM_RIGHTS, cmsg_data=[")
		if !ok {
			continue
		}
		fds, _, _ = strings.Cut(fds, "]")
		msgs = append(msgs, len(strings.Split(fds, ",")))
	}
	return msgs
}

// TestReleaseLookupSockets: commands whose process ends right after they
// close their netlink sockets hand them to a live keeper instead of
// waiting in close(2) for what another command deleted: iptables-save,
// and the socket of the parser's ipset lookups of an iptables command,
// which goes with the command's own (closed alone after the command
// committed, it would wait for what the command deleted).
func TestReleaseLookupSockets(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	iptables := filepath.Join(dir, "iptables")
	ns := netns.New(t, "relkl")
	mustRun(t, ns, filepath.Join(dir, "ipset"), "create", "s", "hash:ip")
	rule := []string{"INPUT", "-m", "set", "--match-set", "s", "src", "-j", "DROP"}
	mustRun(t, ns, append([]string{iptables, "-A"}, rule...)...)
	if got := socketsHanded(t, ns, filepath.Join(dir, "iptables-save")); len(got) != 1 || got[0] < 1 {
		t.Errorf("iptables-save handed the keeper messages with %v sockets, want one message", got)
	}
	if got := socketsHanded(t, ns, append([]string{iptables, "-D"}, rule...)...); len(got) != 1 || got[0] != 2 {
		t.Errorf("iptables -D with an ipset lookup handed the keeper messages with %v sockets, want one with 2 (its own and the lookup's)", got)
	}
}
