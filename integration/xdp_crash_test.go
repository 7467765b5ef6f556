package integration

import (
	"fmt"
	"math/rand"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCrashDuringXDPUpdate kills iptables-restore of the raw table with
// SIGKILL at points spread over its run, which commits to nftables and
// then rebuilds and swaps the XDP maps: nftables holds the old rules or
// the new ones, never a mix; the pinned XDP objects stay usable (`xdp
// status` either agrees with nftables or reports that XDP is paused,
// nothing else); packets get the verdict of the rules nftables holds;
// and the next restore works and brings XDP in
// step.
func TestCrashDuringXDPUpdate(t *testing.T) {
	x := newXDPBed(t)
	const n = 2000
	rules := func(tag int, dropClient bool) string {
		var b strings.Builder
		b.WriteString("*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "-A PREROUTING -s 203.0.113.%d/32 -p udp -m udp --dport %d -j DROP\n", i%250, 1+tag*n+i)
		}
		if dropClient {
			b.WriteString("-A PREROUTING -s 198.18.0.1/32 -p icmp -j DROP\n")
		}
		b.WriteString("COMMIT\n")
		return b.String()
	}
	oldIn, newIn := rules(0, true), rules(1, false)
	bin := func(name string) string { return filepath.Join(x.bin, name) }
	restore := func(in string) {
		t.Helper()
		if r := x.b.RunTimeout(120, in, bin("iptables-restore")); r.RC != 0 {
			t.Fatalf("restore: rc %d: %s", r.RC, r.Stderr)
		}
	}
	save := func() string {
		t.Helper()
		r := x.b.Run("", bin("iptables-save"), "-t", "raw")
		if r.RC != 0 {
			t.Fatalf("save: %+v", r)
		}
		return rulesOnly(r.Stdout)
	}
	restore(oldIn)
	oldState := save()
	start := time.Now()
	restore(newIn)
	full := time.Since(start)
	newState := save()
	t.Logf("full restore of %d raw rules with XDP attached: %v", n, full)

	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	counts := map[string]int{}
	for _, frac := range []float64{0.1, 0.3, 0.5, 0.65, 0.8, 0.9, 0.97, 1.2} {
		restore(oldIn)
		delay := time.Duration(float64(full) * (frac + rng.Float64()*0.05))
		cmd := exec.Command("ip", "netns", "exec", x.b.Name, bin("iptables-restore"))
		cmd.Stdin = strings.NewReader(newIn)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		state := "old"
		switch got := save(); got {
		case oldState:
		case newState:
			state = "new"
		default:
			t.Fatalf("killed after %v: raw is neither the old nor the new ruleset:\n%s", delay, lineDiff(newState, got))
		}
		st := x.b.Run("", bin("xdptables"), "xdp", "status")
		switch {
		case st.RC == 0:
			want := 3
			if state == "old" {
				want = 0
			}
			if got := x.ping(3, "198.18.0.2"); got != want {
				t.Fatalf("killed after %v, nftables holds the %s rules and XDP is in step, but %d of 3 pings answered", delay, state, got)
			}
			counts[state]++
		case st.RC == 1 && strings.Contains(st.Stderr, "paused"):
			// killed between pausing and resuming: XDP passes every
			// packet and nftables decides
			want := 3
			if state == "old" {
				want = 0
			}
			if got := x.ping(3, "198.18.0.2"); got != want {
				t.Fatalf("killed after %v, nftables holds the %s rules and XDP is paused, but %d of 3 pings answered", delay, state, got)
			}
			counts[state+", XDP paused"]++
		default:
			t.Fatalf("killed after %v: xdp status: rc %d\n%s%s", delay, st.RC, st.Stdout, st.Stderr)
		}
		// the next command works and brings XDP in step
		restore(oldIn)
		if r := x.b.Run("", bin("xdptables"), "xdp", "status"); r.RC != 0 {
			t.Fatalf("status after the next restore: rc %d\n%s%s", r.RC, r.Stdout, r.Stderr)
		}
		if got := x.ping(3, "198.18.0.2"); got != 0 {
			t.Fatalf("%d of 3 pings answered after the next restore", got)
		}
	}
	t.Logf("after SIGKILL: %v", counts)
}
