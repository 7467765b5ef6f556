package kernel

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/google/nftables/expr"
)

// TestBatchOffHeap: a batch grown past offHeapMin lives in a mapping and
// encodes the same bytes as one on the heap;
// Release returns the mapping.
func TestBatchOffHeap(t *testing.T) {
	fill := func(b *Batch, n int) {
		for i := 0; i < n; i++ {
			b.AppendRule(IPv4, "filter.INPUT", RuleSpec{Exprs: []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept}}, UserData: []byte("-j ACCEPT")})
		}
	}
	heap, mapped := NewBatch(), NewBatch()
	mapped.Grow(offHeapMin, 10)
	if mapped.mapped == nil {
		t.Skip("anonymous mappings refused here (strict overcommit?)")
	}
	fill(heap, 100000)
	fill(mapped, 100000)
	if !bytes.Equal(heap.e.buf, mapped.e.buf) || heap.Messages() != mapped.Messages() {
		t.Fatalf("batches differ: %d and %d bytes", heap.Size(), mapped.Size())
	}
	mapped.Release()
	if mapped.mapped != nil || mapped.e.buf != nil {
		t.Error("Release kept the mapping")
	}
}

// TestBatchNames: the chain of every operation reads back, and chains
// that take turns are kept once each, not once per operation.
func TestBatchNames(t *testing.T) {
	for _, chains := range []int{1, 1000, recentNames + 100} {
		b := NewBatch()
		name := func(i int) string { return "filter.C" + strconv.Itoa(i%chains) }
		for i := range 3 * chains {
			b.FlushChain(IPv4, name(i))
		}
		for i := range b.Len() {
			if got := b.Op(i).Chain; got != name(i) {
				t.Fatalf("%d chains: op %d on %q, want %q", chains, i, got, name(i))
			}
		}
		if chains <= recentNames && b.names.len() != chains {
			t.Errorf("%d chains in turn: %d names kept", chains, b.names.len())
		}
	}
}
