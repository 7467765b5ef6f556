package setengine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// Sharded entries sets (ipset.ShardSetName): the entries of a net type
// with a large maxelem live in several nftables sets, and a plain hash
// type of a large maxelem keeps a copy of its lookup set's elements in
// them (ipset.Set.ShardCopies), so that reading them is several small
// dumps instead of one whose cost grows with the square of the set's
// size. The kernel's size limit then holds per
// shard, so maxelem is checked against a count kept in the set
// ipset.CountSetName, which every change of the entries rewrites in the
// same transaction. The count is never below the number of live
// entries (an expired entry leaves it until the next full rewrite): a
// single add that the count says would pass maxelem takes the general
// path, which counts exactly.

// eachEntry streams the elements of the sets that hold the entries of s
// to fn (see kernel.Conn.SetElements; restart is called before they
// come again). The shards of a sharded set are read one after the
// other, each held until its dump is complete: a shard's dump that the
// kernel interrupts, or that gives elements twice while the kernel
// resizes the shard's hash table (just after a large restore), is
// read again without fn seeing its elements twice. When the ruleset
// changed while the shards were read, all are read again.
func (e *Engine) eachEntry(fam kernel.Family, s *ipset.Set, restart func(), fn func(*nftables.SetElement) error) error {
	names := s.EntriesSets()
	if s.ShardCopies() && fewShards(s) {
		// The lookup set holds them too: one dump instead of one per
		// shard (the kernel looks each set up by name through all the
		// sets of the table).
		names = []string{ipset.LookupSetName(s.Name)}
	}
	if !s.Sharded() || len(names) == 1 && !strings.HasPrefix(names[0], ipset.ShardPrefix) {
		return e.Conn.SetElements(fam, names[0], restart, fn)
	}
	var held []nftables.SetElement
	var ctrs []expr.Counter
	var keys []byte
	drop := func() { held, ctrs, keys = held[:0], ctrs[:0], keys[:0] }
	for attempt := 0; ; attempt++ {
		gen, err := e.Conn.GenID()
		if err != nil {
			return err
		}
		for _, n := range names {
			drop()
			err := e.Conn.SetElements(fam, n, drop, func(el *nftables.SetElement) error {
				// The element and its key are only valid until the
				// next one: copied into arenas (a slice taken before an
				// arena grows stays valid).
				c := *el
				keys = append(keys, el.Key...)
				c.Key = keys[len(keys)-len(el.Key) : len(keys) : len(keys)]
				if len(el.KeyEnd) > 0 {
					keys = append(keys, el.KeyEnd...)
					c.KeyEnd = keys[len(keys)-len(el.KeyEnd) : len(keys) : len(keys)]
				}
				if el.Counter != nil {
					ctrs = append(ctrs, *el.Counter)
					c.Counter = &ctrs[len(ctrs)-1]
				}
				held = append(held, c)
				return nil
			})
			if errors.Is(err, unix.ENOENT) {
				// a shard not made yet (see ipset.Set.ShardMayExist)
				drop()
			} else if err != nil {
				return err
			}
			for i := range held {
				if err := fn(&held[i]); err != nil {
					return err
				}
			}
		}
		now, err := e.Conn.GenID()
		if err != nil {
			return err
		}
		if now == gen {
			return nil
		}
		if attempt >= 16 {
			return fmt.Errorf("dump of set %s kept being interrupted: %w", s.Name, kernel.ErrGenerationChanged)
		}
		if restart != nil {
			restart()
		}
	}
}

// fewShards reports whether sharded set s has made fewer than half its
// shards: it holds few entries (each of the first ones makes a shard,
// about).
func fewShards(s *ipset.Set) bool {
	return s.Sharded() && 2*len(s.EntriesSets()) < s.Shards
}

// storedCount reads the entry count of a sharded set.
func (e *Engine) storedCount(fam kernel.Family, s *ipset.Set) (int, error) {
	n, found := 0, false
	err := e.Conn.SetElements(fam, ipset.CountSetName(s.Name), func() { found = false }, func(el *nftables.SetElement) error {
		if v, ok := ipset.ParseCount(el.Key); ok {
			n, found = v, true
		}
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("set %s: no entry count", ipset.CountSetName(s.Name))
	}
	return n, err
}

// shiftCount puts into b the stored entry count of a sharded set moved
// by delta (nothing for another set). It reports false when the count
// cannot be read, or when an add (delta > 0) would take a net type past
// its maxelem, which the shards do not know: the general path decides
// then. (The lookup set of a set with shard copies holds every entry
// and has maxelem as its size: the kernel refuses the add itself.)
func (e *Engine) shiftCount(b *kernel.Batch, fam kernel.Family, s *ipset.Set, delta int) bool {
	if !s.Sharded() {
		return true
	}
	n, err := e.storedCount(fam, s)
	if err != nil || (delta > 0 && !s.ShardCopies() && n+delta > int(s.MaxElem)) {
		return false
	}
	setCount(b, fam, s, max(n+delta, 0))
	return true
}

// setCount replaces the entry count of a sharded set with n.
func setCount(b *kernel.Batch, fam kernel.Family, s *ipset.Set, n int) {
	name := ipset.CountSetName(s.Name)
	b.FlushSet(fam, name)
	b.AddElements(fam, name, false, []nftables.SetElement{{Key: ipset.CountKey(n)}}, false)
}

// addEntries adds elements of the entries sets of s (keys as
// ipset.Set.EntryKey gives them), each to its shard; it returns the
// batch's operations.
func addEntries(b *kernel.Batch, fam kernel.Family, s *ipset.Set, els []nftables.SetElement, exclusive bool) []int {
	var ops []int
	for name, part := range byShard(s, els) {
		if i, ok := s.ShardIndex(name); ok && !s.ShardMade(i) {
			ensureShard(b, fam, s, name)
		}
		ops = append(ops, b.AddElements(fam, name, s.HasTimeout, part, exclusive))
	}
	return ops
}

// ensureShard puts into b the creation of shard nftables set name of s
// when it does not exist (shards are made with their first element; the
// kernel takes the same definition again as no change, and a size given
// again as the set's new size: none is given).
func ensureShard(b *kernel.Batch, fam kernel.Family, s *ipset.Set, name string) {
	for _, ns := range s.HeaderOnly().NftSetsNoIDs() {
		if ns.Set.Name == name {
			set := ns.Set
			set.Size = 0
			addSet(b, fam, &set, false)
			return
		}
	}
}

// delEntries deletes elements of the entries sets of s, each from its
// shard.
func delEntries(b *kernel.Batch, fam kernel.Family, s *ipset.Set, els []nftables.SetElement) {
	for name, part := range byShard(s, els) {
		b.DelElements(fam, name, part)
	}
}

// byShard groups els by the entries set that holds them, in the order
// of their first element.
func byShard(s *ipset.Set, els []nftables.SetElement) func(yield func(string, []nftables.SetElement) bool) {
	return func(yield func(string, []nftables.SetElement) bool) {
		if !s.Sharded() {
			if len(els) > 0 {
				yield(s.EntriesNftSet(), els)
			}
			return
		}
		var order []string
		parts := map[string][]nftables.SetElement{}
		for _, el := range els {
			n := s.EntriesSetOf(el.Key)
			if _, ok := parts[n]; !ok {
				order = append(order, n)
			}
			parts[n] = append(parts[n], el)
		}
		for _, n := range order {
			if !yield(n, parts[n]) {
				return
			}
		}
	}
}

// commitSized commits b at genid; when the kernel refuses adds because
// shards created with a size (ipset.Set.ShardSize) are full, those
// shards are re-created without one, holding the same elements, in a
// transaction of their own that changes nothing else, and the answer is
// kernel.ErrGenerationChanged: the caller builds its change again and
// retries, as after any concurrent change. Other errors come back as
// they are.
func (e *Engine) commitSized(b *kernel.Batch, genid uint32) error {
	err := e.Conn.Commit(b, genid)
	var ce *kernel.CommitError
	if !errors.As(err, &ce) {
		return err
	}
	type shard struct {
		fam  kernel.Family
		name string
	}
	var full []shard
	for _, oe := range ce.Errors {
		if oe.Errno != unix.ENFILE || oe.Op.Kind != kernel.OpSetElemAdd {
			continue
		}
		if _, ok := ipset.ShardSetOf(oe.Op.Set); ok && !slices.Contains(full, shard{oe.Op.Family, oe.Op.Set}) {
			full = append(full, shard{oe.Op.Family, oe.Op.Set})
		}
	}
	if len(full) == 0 {
		return err
	}
	g, gerr := e.Conn.GenID()
	if gerr != nil {
		return err
	}
	u := kernel.NewBatch()
	for _, sh := range full {
		if !e.unsizeShard(u, sh.fam, sh.name) {
			return err
		}
	}
	_ = e.Conn.CarryIndex(u, g, compat.Tables)
	if uerr := e.Conn.Commit(u, g); uerr != nil && !errors.Is(uerr, kernel.ErrGenerationChanged) {
		return err
	}
	return kernel.ErrGenerationChanged
}

// unsizeShard puts into b the re-creation of shard nftables set name
// without a size, with the elements it holds (false: it cannot be read,
// or it is not a shard of a set that sizes its shards).
func (e *Engine) unsizeShard(b *kernel.Batch, fam kernel.Family, name string) bool {
	setName, _ := ipset.ShardSetOf(name)
	s, sfam, found, err := e.header(setName)
	if err != nil || !found || sfam != fam || s.HasTimeout || s.Counters {
		return false
	}
	var def *nftables.Set
	for _, ns := range s.NftSetsNoIDs() {
		if ns.Role == ipset.RoleEntries && ns.Set.Name == name {
			def = &ns.Set
		}
	}
	if def == nil {
		return false
	}
	def.Size = 0
	var els []nftables.SetElement
	err = e.Conn.SetElements(fam, name, func() { els = els[:0] }, func(el *nftables.SetElement) error {
		els = append(els, nftables.SetElement{Key: slices.Clone(el.Key), Comment: strings.Clone(el.Comment)})
		return nil
	})
	if err != nil {
		return false
	}
	b.DelSet(fam, name)
	addSet(b, fam, def, true)
	if len(els) > 0 {
		b.AddElements(fam, name, false, els, false)
	}
	return true
}
