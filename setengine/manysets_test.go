package setengine

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// manySetsFile is a restore file of n sets named PREFIXNNNNNN, hash:ip
// and hash:net in turn, with three entries each.
func manySetsFile(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		typ, suffix := "hash:ip", ""
		if i%2 == 1 {
			typ, suffix = "hash:net", "/32"
		}
		fmt.Fprintf(&b, "create %s%06d %s family inet hashsize 1024 maxelem 65536\n", prefix, i, typ)
		for j := range 3 {
			a := 0xc6120000 + uint32(i)*4 + uint32(j) // 198.18.0.0/15
			fmt.Fprintf(&b, "add %s%06d %d.%d.%d.%d%s\n", prefix, i, a>>24, a>>16&255, a>>8&255, a&255, suffix)
		}
	}
	return b.String()
}

// bulkAllocs runs the bulk restore of n new sets beside n sets the
// kernel holds, up to the batch it commits, and returns the bytes it
// allocated (a count of the work, whatever the machine's load).
func bulkAllocs(t *testing.T, n int) uint64 {
	t.Helper()
	known := &ipset.State{}
	cmds, perr := ipset.ParseRestore(manySetsFile("old", n))
	if perr != nil {
		t.Fatal(ipset.Format(perr))
	}
	for _, c := range cmds {
		if _, err := known.Exec(c); err != nil {
			t.Fatal(ipset.Format(err))
		}
	}
	for _, s := range known.Sets {
		s.ClearEntries() // (headers, as Restore reads them)
	}
	text := manySetsFile("new", n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := newBulkRestore(nil, known)
	if err := ipset.EachRestoreCommand(text, r.exec); err != nil {
		t.Fatalf("line %d: %s", err.Line, ipset.Format(err))
	}
	b := kernel.NewBatch()
	bulkBatch(b, r.st, r.bulks, r.replaced, r.loaded, r.hadNomatch, func(*ipset.Set) bool { return false })
	runtime.ReadMemStats(&after)
	if len(r.st.Sets) != n || r.st.Sets[n-1].Slot != 2*n {
		t.Fatalf("%d sets made, the last in slot %d: want %d in slot %d", len(r.st.Sets), r.st.Sets[n-1].Slot, n, 2*n)
	}
	return after.TotalAlloc - before.TotalAlloc
}

// TestBulkRestoreManySetsScalesLinearly restores N and 4N new sets
// beside as many existing ones: the work must grow about 4 times, not
// 16 (each create looked through every set for the first free slot).
func TestBulkRestoreManySetsScalesLinearly(t *testing.T) {
	const n = 1000
	bulkAllocs(t, 10)
	small := bulkAllocs(t, n)
	large := bulkAllocs(t, 4*n)
	ratio := float64(large) / float64(small)
	t.Logf("%d sets: %d bytes, %d sets: %d bytes, ratio %.2f", n, small, 4*n, large, ratio)
	if ratio > 6 {
		t.Errorf("restoring 4x the sets allocated %.1fx the bytes (%d → %d): more than linear", ratio, small, large)
	}
}

// setsMade counts the nftables sets b creates.
func setsMade(b *kernel.Batch) int {
	n := 0
	for i := range b.Len() {
		if b.Op(i).Kind == kernel.OpSetAdd {
			n++
		}
	}
	return n
}

// Sets of a large maxelem with few entries (Calico creates every set
// with maxelem 1048576: 128 shards) make only the shards that get
// entries: the kernel looks a set up by name through all the sets of
// the table, so that a hundred such sets made 13000 nftables sets and
// took seconds to restore and to list.
func TestShardsMadeWithEntries(t *testing.T) {
	text := strings.ReplaceAll(manySetsFile("cali", 20), "maxelem 65536", "maxelem 1048576")
	// the bulk restore
	r := newBulkRestore(nil, &ipset.State{})
	if err := ipset.EachRestoreCommand(text, r.exec); err != nil {
		t.Fatalf("line %d: %s", err.Line, ipset.Format(err))
	}
	b := kernel.NewBatch()
	bulkBatch(b, r.st, r.bulks, r.replaced, r.loaded, r.hadNomatch, func(*ipset.Set) bool { return false })
	// per set: the lookup set, the count, at most three shards (and a
	// hash:net's entries live in shards only)
	if n := setsMade(b); n > 20*5 {
		t.Errorf("bulk restore of 20 sets of 3 entries made %d nftables sets", n)
	}
	// the general path (diff) from an empty state
	cmds, perr := ipset.ParseRestore(text)
	if perr != nil {
		t.Fatal(ipset.Format(perr))
	}
	st := &ipset.State{}
	for _, c := range cmds {
		if _, err := st.Exec(c); err != nil {
			t.Fatal(ipset.Format(err))
		}
	}
	b = kernel.NewBatch()
	diff(b, &ipset.State{}, st, nil)
	if n := setsMade(b); n > 20*5 {
		t.Errorf("general path: 20 sets of 3 entries made %d nftables sets", n)
	}
	// adding to a set read back: the shard that gets the entry is made
	// (not exclusively), the others are not touched
	old := st.Clone()
	for _, s := range old.Sets {
		s.NoteShards(func(name string) bool {
			for _, ns := range s.NftSets() {
				if ns.Set.Name == name {
					return len(ns.Elems) > 0
				}
			}
			return false
		})
	}
	cur := old.Clone()
	if _, err := cur.Exec(&ipset.Command{Op: ipset.OpAdd, Args: []string{"cali000000", "203.0.113.9"}}); err != nil {
		t.Fatal(ipset.Format(err))
	}
	b = kernel.NewBatch()
	diff(b, old, cur, nil)
	if n := setsMade(b); n > 1 {
		t.Errorf("an add made %d nftables sets", n)
	}
}
