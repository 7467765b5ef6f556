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
