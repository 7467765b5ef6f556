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

// Without copies the messages of the operations it keeps, byte for byte,
// each still naming its operation's index in the original batch.
func TestBatchWithout(t *testing.T) {
	b := NewBatch()
	var idx []int
	for i := range 3 {
		idx = append(idx, b.AppendRule(IPv4, "filter.INPUT", RuleSpec{Exprs: []expr.Any{&expr.Counter{Packets: uint64(i)}}}))
	}
	c := b.Without(map[int]bool{idx[1]: true})
	if c.Messages() != 2 || c.Len() != 3 {
		t.Fatalf("messages %d, ops %d; want 2, 3", c.Messages(), c.Len())
	}
	for i, want := range []int{0, 2} {
		if int(c.msgOp[i]) != idx[want] {
			t.Errorf("message %d: op %d, want %d", i, c.msgOp[i], idx[want])
		}
		end := len(b.e.buf)
		if idx[want]+1 < len(b.msgOff) {
			end = int(b.msgOff[idx[want]+1])
		}
		orig := b.e.buf[b.msgOff[idx[want]]:end]
		cend := len(c.e.buf)
		if i+1 < len(c.msgOff) {
			cend = int(c.msgOff[i+1])
		}
		if got := c.e.buf[c.msgOff[i]:cend]; !bytes.Equal(got, orig) {
			t.Errorf("message %d differs from the original's", i)
		}
	}
}
