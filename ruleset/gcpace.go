package ruleset

import (
	"runtime"
	"runtime/debug"
)

// gcPacer sets the garbage collector's percentage during a restore so
// that the heap may grow by about a fixed headroom beyond what is live,
// instead of by a fixed share of it. A restore's live heap grows from almost
// nothing (the operations of the batch, whose bytes live outside the
// heap) while every rule makes a few KB of short-lived garbage: a fixed
// 25% of a live heap of 2 MB collected every 500 KB, 40 times in a 10k
// rule restore, while 25% of the 20 MB of a 100k restore is as much
// memory as the peak can take (issue 7: 100 MB).
type gcPacer struct {
	prev     int // the percentage before the restore
	headroom uint64
	n        int
	current  int
}

const (
	// the headroom is the size of the restore file, within these
	// bounds: a small restore's peak is mostly what every run of the
	// binary takes, and a few collections more cost it little (10k
	// rules: a live heap of 2 MB; 1.25 MB of headroom rather than 1.5
	// is 0.25 MB less peak, the rules translated ahead in flight
	// included, for 2 ms of CPU). Above it, each collection marks the
	// whole live heap (at 100k rules 14 MB, most of it the 40k chains'
	// names), and with 3 MB of headroom that was 90 collections, a
	// tenth of the user CPU time; the restore file's size (13 MB at
	// 100k rules) takes it to about 30 collections for 9 MB more peak
	// (bench/iptables.sh: 90 MB against iptables-nft-restore's 232 MB;
	// issue 7 asks for at most 100)
	gcHeadroomMin = 5 << 18
	gcHeadroomMax = 16 << 20
	gcMinPct      = 25
	gcMaxPct      = 100
	// every gcEvery command lines the percentage is adjusted
	gcEvery = 512
)

func newGCPacer(size int64) *gcPacer {
	// until the first rule, while the table is read from the kernel (the
	// chains of a large ruleset: a live heap that grows fast), the
	// percentage stays low
	p := &gcPacer{current: gcMinPct, headroom: uint64(min(max(size, gcHeadroomMin), gcHeadroomMax))}
	p.prev = debug.SetGCPercent(gcMinPct)
	return p
}

// rule counts a command line and adjusts the percentage every gcEvery
// of them.
func (p *gcPacer) rule() {
	p.n++
	if p.n%gcEvery != 1 {
		return
	}
	live := liveHeap(p.current)
	pct := gcMaxPct
	if live > 0 {
		pct = int(min(uint64(gcMaxPct), max(uint64(gcMinPct), p.headroom*100/live)))
	}
	// small changes are not worth a call (it starts a collection's worth
	// of bookkeeping)
	if pct < p.current*7/8 || pct > p.current*9/8 {
		debug.SetGCPercent(pct)
		p.current = pct
	}
}

// liveHeap is about the heap the last collection found live, with the
// percentage at pct: the runtime's goal for the next one (NextGC) is that
// plus pct% of it and of the goroutine stacks and globals. 0 before the
// first collection. (runtime/metrics reads the figure itself, but its
// package init, which every command would run, costs about 25 µs of the
// 1.5 ms a command takes to start; a restore asks for the figure every
// gcEvery lines, and ReadMemStats stops the world for a few µs.)
func liveHeap(pct int) uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.NumGC == 0 {
		return 0
	}
	over := ms.StackInuse * uint64(pct) / 100
	if ms.NextGC <= over {
		return 0
	}
	return (ms.NextGC - over) * 100 / uint64(100+pct)
}

// done puts the percentage back.
func (p *gcPacer) done() { debug.SetGCPercent(p.prev) }
