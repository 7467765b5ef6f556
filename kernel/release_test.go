package kernel

import (
	"testing"

	"github.com/google/nftables"
)

// Only batches that delete or replace something leave the kernel memory to
// free after a grace period: those are the ones whose socket Release hands
// to a keeper (a batch of creates must not cost a process start).
func TestLeavesWork(t *testing.T) {
	el := []nftables.SetElement{{Key: []byte{198, 18, 7, 0}}}
	set := &nftables.Set{Name: "ipset.s", KeyType: nftables.TypeIPAddr}
	cases := []struct {
		name  string
		build func(b *Batch)
		want  bool
	}{
		{"element adds", func(b *Batch) {
			b.AddTable(IPv4)
			b.AddElements(IPv4, "ipset.s", false, el, true)
		}, false},
		{"new set", func(b *Batch) { b.AddSet(IPv4, set, true) }, false},
		{"new rule and chain", func(b *Batch) {
			b.AddChain(IPv4, "filter.X", ChainSpec{Exclusive: true})
			b.AppendRule(IPv4, "filter.X", RuleSpec{})
		}, false},
		{"element delete", func(b *Batch) {
			b.AddElements(IPv4, "ipset.s", false, el, false)
			b.DelElements(IPv4, "ipset.s", el)
		}, true},
		{"set flush", func(b *Batch) { b.FlushSet(IPv4, "ipset-count.s") }, true},
		{"set delete", func(b *Batch) { b.DelSet(IPv4, "ipset.s") }, true},
		{"rule delete", func(b *Batch) { b.DelRule(IPv4, "filter.INPUT", 7) }, true},
		{"chain re-created", func(b *Batch) { b.AddChain(IPv4, "filter", ChainSpec{}) }, true},
		{"rule and its index entry", func(b *Batch) {
			b.AppendRule(IPv4, "filter.INPUT", RuleSpec{})
			b.DestroyIndex(IPv4, "filter", []IndexKey{{1}})
		}, false},
		{"index state flushed", func(b *Batch) { b.FlushSet(IPv4, IndexStateSet) }, true},
	}
	for _, c := range cases {
		b := NewBatch()
		c.build(b)
		if got := b.leavesWork(); got != c.want {
			t.Errorf("%s: leavesWork %v, want %v", c.name, got, c.want)
		}
	}
}

func TestIsReleaseKeeper(t *testing.T) {
	for _, args := range [][]string{
		{"xdptables"},
		{"ipset", "del", "s", "198.18.7.0"},
		{"xdptables", keeperArg, "x"},
	} {
		if IsReleaseKeeper(args) {
			t.Errorf("IsReleaseKeeper(%q): true", args)
		}
	}
	if !IsReleaseKeeper([]string{"xdptables", keeperArg}) {
		t.Error("IsReleaseKeeper of Release's arguments: false")
	}
}
