package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestNonRoot: without privileges every tool fails as the reference
// does, with the same message and exit status, and changes nothing.
func TestNonRoot(t *testing.T) {
	netns.RequireRoot(t)
	copyDir := nobodyLinkDir(t)
	ns := netns.New(t, "nr")
	for _, args := range [][]string{
		{"iptables-nft", "-L"},
		{"iptables-nft", "-A", "INPUT", "-j", "ACCEPT"},
		{"iptables-nft-save"},
		{"ip6tables-nft", "-S"},
	} {
		priv := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}
		ref := ns.Run("", append(priv, args...)...)
		ours := ns.Run("", append(append(priv, filepath.Join(copyDir, args[0])), args[1:]...)...)
		if ref != ours {
			t.Errorf("%v:\nreference rc %d %q\nxdptables rc %d %q", args, ref.RC, ref.Stderr, ours.RC, ours.Stderr)
		}
	}
	if r := ns.Run("", "nft", "list", "ruleset"); r.Stdout != "" {
		t.Errorf("something was created: %s", r.Stdout)
	}
}

// nobodyLinkDir returns a directory that uid nobody can reach, holding a
// copy of the built binary and its personality links.
func nobodyLinkDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is needed to drop privileges")
	}
	dir := LinkDir(t)
	copyDir := t.TempDir()
	if err := os.Chmod(copyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "xdptables"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(copyDir, "xdptables")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "links", copyDir).CombinedOutput(); err != nil {
		t.Fatalf("links: %v %s", err, out)
	}
	return copyDir
}
