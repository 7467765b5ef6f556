package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestIpsetReleaseKeeper: a single ipset command that deletes something
// (the kernel frees it after an RCU grace period, and closing the netlink
// socket would wait for that) hands its socket to a keeper process
// (kernel.Conn.Release) instead of waiting itself; a command that deletes
// nothing starts none. The change itself is done when the command ends.
func TestIpsetReleaseKeeper(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("strace") {
		cmd := exec.Command("apt-get", "install", "-y", "--no-install-recommends", "strace")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("strace is missing and apt-get install strace failed: %v\n%s", err, out)
		}
	}
	ipset := filepath.Join(LinkDir(t), "ipset")
	ns := netns.New(t, "relk")
	mustRun(t, ns, ipset, "create", "ip", "hash:ip")
	mustRun(t, ns, ipset, "create", "net", "hash:net")
	// keepers runs ipset ARGS and returns how many keepers it started.
	keepers := func(args ...string) int {
		t.Helper()
		log := filepath.Join(t.TempDir(), "trace")
		argv := append([]string{"strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", log, ipset}, args...)
		if r := ns.Run("", argv...); r.RC != 0 {
			t.Fatalf("ipset %s: rc %d: %s", strings.Join(args, " "), r.RC, r.Stderr)
		}
		trace, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(trace), "--netlink-release-keeper")
	}
	for _, c := range []struct {
		set, elem string
	}{{"ip", "198.18.7.7"}, {"net", "198.18.7.0/24"}} {
		if n := keepers("add", c.set, c.elem); n != 0 {
			t.Errorf("add %s %s started %d keepers, want none", c.set, c.elem, n)
		}
		if n := keepers("test", c.set, c.elem); n != 0 {
			t.Errorf("test %s %s started %d keepers, want none", c.set, c.elem, n)
		}
		if n := keepers("del", c.set, c.elem); n != 1 {
			t.Errorf("del %s %s started %d keepers, want 1", c.set, c.elem, n)
		}
		if r := ns.Run("", ipset, "test", c.set, c.elem); r.RC != 1 {
			t.Errorf("test %s %s after its del: rc %d, want 1 (%s)", c.set, c.elem, r.RC, r.Stderr)
		}
	}
}
