package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// TestPacketsBPFPinned: -m bpf --object-pinned with socket filter
// programs pinned in a bpffs of the test's own, against iptables-nft:
// the kernel opens the program by its path (one that matches every
// packet, one that matches none), -S prints the rules alike, and a path
// with no object, or with a pinned map, fails as for iptables-nft (parse
// error, status 2; the kernel's EINVAL, status 4).
func TestPacketsBPFPinned(t *testing.T) {
	tools := pktTools(t)
	dir := t.TempDir()
	if err := unix.Mount("bpf", dir, "bpf", 0, ""); err != nil {
		t.Fatalf("mount bpffs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	for name, ret := range map[string]int32{"all": 1, "none": 0} {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Type:         ebpf.SocketFilter,
			License:      "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, ret), asm.Return()},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer prog.Close()
		if err := prog.Pin(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Pin(filepath.Join(dir, "map")); err != nil {
		t.Fatal(err)
	}
	rules := []string{
		"-A INPUT -p icmp -m bpf --object-pinned " + filepath.Join(dir, "all"),
		"-A INPUT -p icmp -m bpf --object-pinned " + filepath.Join(dir, "none"),
	}
	bad := []string{
		"-A INPUT -m bpf --object-pinned " + filepath.Join(dir, "missing"),
		"-A INPUT -m bpf --object-pinned " + filepath.Join(dir, "map"),
		"-A INPUT -m bpf --object-pinned " + dir,
	}
	got := map[string]string{}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "h33b"+label[:1])
		var out strings.Builder
		for _, r := range bad {
			res := p.server.Run("", append([]string{tools[label]}, strings.Fields(r)...)...)
			fmt.Fprintf(&out, "%s: rc %d %s\n", r, res.RC, res.Stderr)
		}
		loadRules(t, p.server, tools[label], rules)
		mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "1", pktServer)
		time.Sleep(100 * time.Millisecond)
		fmt.Fprintf(&out, "counters %v\n%s", ruleCounters(t, p.server, tools[label], "filter", "INPUT"), mustRun(t, p.server, tools[label], "-S", "INPUT")+mustRun(t, p.server, tools[label], "-L", "INPUT", "-n"))
		got[label] = out.String()
	}
	// unpinned: the rules still list, and a command naming the path fails
	// as it parses
	if err := os.Remove(filepath.Join(dir, "none")); err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "h33u"+label[:1])
		loadRules(t, p.server, tools[label], rules[:1])
		mustRun(t, p.server, tools[label], "-A", "INPUT", "-p", "icmp", "-m", "bpf", "--object-pinned", filepath.Join(dir, "all"))
		if err := os.Rename(filepath.Join(dir, "all"), filepath.Join(dir, "moved")); err != nil {
			t.Fatal(err)
		}
		res := p.server.Run("", tools[label], "-D", "INPUT", "-p", "icmp", "-m", "bpf", "--object-pinned", filepath.Join(dir, "all"))
		got[label] += fmt.Sprintf("after unpinning: -D rc %d %s%s", res.RC, res.Stderr, mustRun(t, p.server, tools[label], "-S", "INPUT"))
		if err := os.Rename(filepath.Join(dir, "moved"), filepath.Join(dir, "all")); err != nil {
			t.Fatal(err)
		}
	}
	if got["ref"] != got["ours"] {
		t.Errorf("reference:\n%s\nxdptables:\n%s", got["ref"], got["ours"])
	}
	if !strings.Contains(got["ours"], "counters [3 0]") {
		t.Errorf("counters: %s", got["ours"])
	}
}
