package kernel

import (
	"testing"
)

// TestRuleIndex checks the index maps against the kernel: entries and the
// state element are written, replaced in one batch and read back; a
// probe reports the table's last handle, and Handles predicts the handles
// of rules added after it.
func TestRuleIndex(t *testing.T) {
	c, _ := newNS(t)
	gen0, _ := c.GenID()
	if _, ok, err := c.IndexState(IPv4, gen0); err != nil || ok {
		t.Fatalf("IndexState without a table: ok %v err %v", ok, err)
	}
	b := NewBatch()
	b.AddTable(IPv4)
	b.AddChain(IPv4, "filter.X", ChainSpec{Exclusive: true})
	b.AddIndexSet(IPv4, IndexStateSet)
	b.AddIndexSet(IPv4, IndexSet("filter"))
	b.ProbeHandles(IPv4)
	commit(t, c, b)
	probed, at, ok := b.Echoed()
	if !ok || at != 4 || probed != 4 {
		t.Fatalf("probe: handle %d at %d ok %v, want 4 at 4 (fresh table: chain, two maps, probe)", probed, at, ok)
	}

	gen, _ := c.GenID()
	k1, k2 := IndexKey{1}, IndexKey{2}
	b = NewBatch()
	base := probed
	b.AppendRule(IPv4, "filter.X", RuleSpec{Exprs: srcDrop(1)})
	h1 := base + b.Handles()
	b.AppendRule(IPv4, "filter.X", RuleSpec{Exprs: srcDrop(2)})
	h2 := base + b.Handles()
	b.PutIndex(IPv4, "filter", []IndexKey{k1, k2}, []IndexEntry{{Handle: h1, Count: 1}, {Handle: h2, Count: 1}})
	b.PutIndexState(IPv4, IndexState{GenID: gen + 1, Valid: 1, LastHandle: base + b.Handles()})
	if err := c.Commit(b, gen); err != nil {
		t.Fatal(err)
	}
	if h, at, ok := b.Echoed(); !ok || h != h2 || at != h2-base {
		t.Fatalf("echo: handle %d at %d ok %v, want %d at %d", h, at, ok, h2, h2-base)
	}
	for _, want := range []uint64{h1, h2} {
		r, ok, err := c.GetRule(IPv4, "filter.X", want)
		if err != nil || !ok || r.Handle != want {
			t.Fatalf("GetRule %d: %+v ok %v err %v", want, r, ok, err)
		}
	}
	if _, ok, err := c.GetRule(IPv4, "filter.X", h2+10); ok || err != nil {
		t.Fatalf("GetRule of a missing handle: ok %v err %v", ok, err)
	}
	st, ok, err := c.IndexState(IPv4, gen+1)
	if err != nil || !ok || st != (IndexState{GenID: gen + 1, Valid: 1, LastHandle: h2}) {
		t.Fatalf("state %+v ok %v err %v", st, ok, err)
	}
	if e, ok, err := c.IndexLookup(IPv4, "filter", k2); err != nil || !ok || e != (IndexEntry{Handle: h2, Count: 1}) {
		t.Fatalf("entry %+v ok %v err %v", e, ok, err)
	}
	if _, ok, err := c.IndexLookup(IPv4, "filter", IndexKey{3}); err != nil || ok {
		t.Fatalf("absent entry: ok %v err %v", ok, err)
	}
	if _, ok, err := c.IndexLookup(IPv4, "nat", k1); err != nil || ok {
		t.Fatalf("entry of a missing map: ok %v err %v", ok, err)
	}

	// replace one entry, remove another and one that is absent, in one batch
	gen, _ = c.GenID()
	b = NewBatch()
	b.DestroyIndex(IPv4, "filter", []IndexKey{k1, k2, {9}})
	b.PutIndex(IPv4, "filter", []IndexKey{k1}, []IndexEntry{{Handle: 77, Count: 3}})
	b.PutIndexState(IPv4, IndexState{GenID: gen + 1, Valid: 3, LastHandle: 5})
	if err := c.Commit(b, gen); err != nil {
		t.Fatal(err)
	}
	if e, ok, _ := c.IndexLookup(IPv4, "filter", k1); !ok || e != (IndexEntry{Handle: 77, Count: 3}) {
		t.Fatalf("replaced entry %+v ok %v", e, ok)
	}
	if _, ok, _ := c.IndexLookup(IPv4, "filter", k2); ok {
		t.Fatal("destroyed entry still there")
	}
	if st, _, _ := c.IndexState(IPv4, gen+1); st != (IndexState{GenID: gen + 1, Valid: 3, LastHandle: 5}) {
		t.Fatalf("state %+v", st)
	}
	// at a later generation the state is stale: the map is there,
	// nothing is valid
	if st, ok, err := c.IndexState(IPv4, gen+2); err != nil || !ok || st != (IndexState{}) {
		t.Fatalf("stale state %+v ok %v err %v", st, ok, err)
	}

	// a refused batch takes handles all the same: the next batch's echo
	// shows it
	gen, _ = c.GenID()
	b = NewBatch()
	b.AppendRule(IPv4, "filter.X", RuleSpec{Exprs: srcDrop(3)})
	b.AppendRule(IPv4, "filter.NOPE", RuleSpec{Exprs: srcDrop(3)})
	if err := c.Commit(b, gen); err == nil {
		t.Fatal("append to a missing chain committed")
	}
	b = NewBatch()
	b.AppendRule(IPv4, "filter.X", RuleSpec{Exprs: srcDrop(4)})
	if err := c.Commit(b, gen); err != nil {
		t.Fatal(err)
	}
	if h, at, ok := b.Echoed(); !ok || at != 1 || h != h2+2 {
		t.Fatalf("echo after a refused batch: handle %d at %d ok %v, want %d", h, at, ok, h2+2)
	}
	h2 += 2

	// a second probe in an existing table sees the rules' handles
	gen, _ = c.GenID()
	b = NewBatch()
	b.ProbeHandles(IPv4)
	if err := c.Commit(b, gen); err != nil {
		t.Fatal(err)
	}
	if p, at, ok := b.Echoed(); !ok || at != 1 || p != h2+1 {
		t.Fatalf("probe: %d at %d ok %v, want %d", p, at, ok, h2+1)
	}
}
