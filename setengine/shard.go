package setengine

import (
	"errors"
	"fmt"

	"github.com/google/nftables"

	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// Sharded entries sets (ipset.ShardSetName): the entries of a net type
// with a large maxelem live in several nftables sets, so that reading
// them is several small dumps instead of one whose cost grows with the
// square of the set's size. The kernel's size limit then holds per
// shard, so maxelem is checked against a count kept in the set
// ipset.CountSetName, which every change of the entries rewrites in the
// same transaction. The count is never below the number of live
// entries (an expired entry leaves it until the next full rewrite): a
// single add that the count says would pass maxelem takes the general
// path, which counts exactly.

// errRedo stops a shard's dump when an earlier shard's elements were
// dropped: the dump of all shards starts again.
var errRedo = errors.New("dump of the shards starts again")

// eachEntry streams the elements of the sets that hold the entries of s
// to fn (see kernel.Conn.SetElements; restart is called before they
// come again). The shards of a sharded set are read one after the
// other; when one is interrupted, or the ruleset changed meanwhile, all
// are read again.
func (e *Engine) eachEntry(fam kernel.Family, s *ipset.Set, restart func(), fn func(*nftables.SetElement) error) error {
	names := s.EntriesSets()
	if len(names) == 1 {
		return e.Conn.SetElements(fam, names[0], restart, fn)
	}
	for attempt := 0; ; attempt++ {
		gen, err := e.Conn.GenID()
		if err != nil {
			return err
		}
		again := false
		for _, n := range names {
			err := e.Conn.SetElements(fam, n, func() { again = true }, func(el *nftables.SetElement) error {
				if again {
					return errRedo
				}
				return fn(el)
			})
			if again || errors.Is(err, errRedo) {
				again = true
				break
			}
			if err != nil {
				return err
			}
		}
		if !again {
			now, err := e.Conn.GenID()
			if err != nil {
				return err
			}
			again = now != gen
		}
		if !again {
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
		ops = append(ops, b.AddElements(fam, name, s.HasTimeout, part, exclusive))
	}
	return ops
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
