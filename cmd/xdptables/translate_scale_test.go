package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
)

// kubeRestore is a kube-proxy-like filter table in iptables-restore
// format, as bench/kube-rules.awk writes it: per service a rule in
// KUBE-SERVICES, a KUBE-SVC chain with a jump per endpoint and a KUBE-SEP
// chain per endpoint with two rules (10 rules and 4 chains per service).
func kubeRestore(svcs int) string {
	var b strings.Builder
	b.WriteString("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n")
	b.WriteString(":KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n")
	for s := 0; s < svcs; s++ {
		fmt.Fprintf(&b, ":KUBE-SVC-%08X - [0:0]\n", s)
		for e := 0; e < 3; e++ {
			fmt.Fprintf(&b, ":KUBE-SEP-%08X%d - [0:0]\n", s, e)
		}
	}
	b.WriteString("-A INPUT -j KUBE-SERVICES\n-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n")
	for s := 0; s < svcs; s++ {
		fmt.Fprintf(&b, "-A KUBE-SERVICES -d 10.96.%d.%d/32 -p tcp -m comment --comment \"svc-%d\" -m tcp --dport %d -j KUBE-SVC-%08X\n", s/256%256, s%256, s, 80+s%1000, s)
		for e := 0; e < 3; e++ {
			fmt.Fprintf(&b, "-A KUBE-SVC-%08X -m statistic --mode random --probability 0.5 -j KUBE-SEP-%08X%d\n", s, s, e)
			fmt.Fprintf(&b, "-A KUBE-SEP-%08X%d -s 10.128.%d.%d/32 -j KUBE-MARK-MASQ\n", s, e, s/256%256, (s*3+e)%250+1)
			fmt.Fprintf(&b, "-A KUBE-SEP-%08X%d -d 10.128.%d.%d/32 -p tcp -m tcp --dport 8080 -j ACCEPT\n", s, e, s/256%256, (s*3+e)%250+1)
		}
	}
	b.WriteString("COMMIT\n")
	return b.String()
}

// translateAllocs translates a restore file of svcs services and returns
// the bytes it allocated: a count of the work done that does not depend
// on the machine's speed or load.
func translateAllocs(t *testing.T, svcs int) uint64 {
	t.Helper()
	name := filepath.Join(t.TempDir(), "rules")
	if err := os.WriteFile(name, []byte(kubeRestore(svcs)), 0o644); err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(io.Discard)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rc := translateRestore(w, compat.IPv4, "iptables-restore", []string{name})
	runtime.ReadMemStats(&after)
	if rc != 0 {
		t.Fatalf("translate of %d services: status %d", svcs, rc)
	}
	return after.TotalAlloc - before.TotalAlloc
}

// TestTranslateRestoreScalesLinearly translates N and 4N services: the
// work (bytes allocated) must grow about 4 times, not 16 (a step that
// looks at every chain after each line of the file made 10k rules take
// seconds and 100k rules more than ten minutes).
func TestTranslateRestoreScalesLinearly(t *testing.T) {
	const n = 100
	translateAllocs(t, 10) // first-use allocations (tables, caches) out of the count
	small := translateAllocs(t, n)
	large := translateAllocs(t, 4*n)
	ratio := float64(large) / float64(small)
	t.Logf("%d services: %d bytes, %d services: %d bytes, ratio %.2f", n, small, 4*n, large, ratio)
	if ratio > 6 {
		t.Errorf("translating 4x the rules allocated %.1fx the bytes (%d → %d): more than linear", ratio, small, large)
	}
}
