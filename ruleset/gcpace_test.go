package ruleset

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// TestLiveHeap: the pacer's estimate of the live heap (from the GC goal)
// is within a few percent of the figure runtime/metrics reads.
func TestLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	keep := make([][]byte, 0, 4096)
	for _, pct := range []int{25, 60, 100} {
		debug.SetGCPercent(pct)
		for len(keep) < cap(keep)*pct/100 {
			keep = append(keep, make([]byte, 4<<10))
		}
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var want, got uint64
		for try := 0; try < 3; try++ {
			runtime.GC()
			metrics.Read(sample)
			want = sample[0].Value.Uint64()
			got = liveHeap(pct)
			// (a collection in between, of some other goroutine's
			// making, would compare two of them: again)
			if metrics.Read(sample); sample[0].Value.Uint64() == want {
				break
			}
		}
		if got < want*95/100 || got > want*105/100 {
			t.Errorf("GC percentage %d: liveHeap %d, runtime/metrics %d", pct, got, want)
		}
	}
	runtime.KeepAlive(keep)
}
