package ipset

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// manySets is a restore file of n sets, hash:ip and hash:net in turn,
// with three entries each (Calico, kube-router, per-country lists: many
// sets, few entries).
func manySets(n int) string {
	var b strings.Builder
	for i := range n {
		typ, suffix := "hash:ip", ""
		if i%2 == 1 {
			typ, suffix = "hash:net", "/32"
		}
		fmt.Fprintf(&b, "create s%06d %s family inet hashsize 1024 maxelem 65536\n", i, typ)
		for j := range 3 {
			a := 0xc6120000 + uint32(i)*4 + uint32(j) // 198.18.0.0/15
			fmt.Fprintf(&b, "add s%06d %d.%d.%d.%d%s\n", i, a>>24, a>>16&255, a>>8&255, a&255, suffix)
		}
	}
	return b.String()
}

// execAllocs runs a restore file of n sets against an empty State, as
// translate and the general restore path do, and returns the bytes it
// allocated: a count of the work that does not depend on the machine's
// speed or load.
func execAllocs(t *testing.T, n int) uint64 {
	t.Helper()
	cmds, perr := ParseRestore(manySets(n))
	if perr != nil {
		t.Fatal(Format(perr))
	}
	st := &State{}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, c := range cmds {
		if _, err := st.Exec(c); err != nil {
			t.Fatalf("line %d: %s", c.Line, Format(err))
		}
	}
	runtime.ReadMemStats(&after)
	if len(st.Sets) != n || st.Find(fmt.Sprintf("s%06d", n-1)) == nil {
		t.Fatalf("%d sets made, want %d", len(st.Sets), n)
	}
	return after.TotalAlloc - before.TotalAlloc
}

// TestRestoreManySetsScalesLinearly runs N and 4N sets: the work must
// grow about 4 times, not 16 (a create that looked at every set for the
// first free slot, and an add that looked for its set among all of them,
// made 8000 sets take half a second and 50000 many seconds).
func TestRestoreManySetsScalesLinearly(t *testing.T) {
	const n = 2000
	execAllocs(t, 10)
	small := execAllocs(t, n)
	large := execAllocs(t, 4*n)
	ratio := float64(large) / float64(small)
	t.Logf("%d sets: %d bytes, %d sets: %d bytes, ratio %.2f", n, small, 4*n, large, ratio)
	if ratio > 6 {
		t.Errorf("restoring 4x the sets allocated %.1fx the bytes (%d → %d): more than linear", ratio, small, large)
	}
}
