package setengine

import (
	"net/netip"

	"github.com/google/nftables"

	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// The lookup set of a hash:net of the top-level layout (ipset.Set.
// TopLayout) without nomatch entries holds one interval per top-level
// entry, its start element counting the entries nested in it (or, for
// a set that keeps the counts apart, ipset.Set.NestedSet, the element of
// the interval's first address in the set of nested counts). A single
// add or del of one prefix changes at most that interval:
//   - an add inside an interval raises its count (its start element, or
//     its count's element, is replaced: a set that keeps the counts
//     apart leaves its lookup set alone, and the kernel does not
//     rebuild that set's lookup array); an add outside every interval
//     is a new interval, added exclusively: the kernel refuses it when it would overlap one, that
//     is when the new prefix holds entries (ok false: treeRun reads its
//     tree);
//   - a del of a nested entry lowers the count of the interval that
//     holds it; a del of a top-level entry with nothing nested in it
//     deletes its interval (with nested entries: ok false, treeRun).
// Transaction and retry are netRun's.

// tree returns the interval of the lookup set that holds a: its first
// and last addresses, its start element and its count of nested
// entries. ok false: no interval holds a, or its start element's
// comment is not a count.
func (q *netQuery) tree(a netip.Addr) (lo, hi netip.Addr, p nftables.SetElement, nested int, ok bool) {
	p, ok = q.piece(a)
	if !ok {
		return
	}
	return q.treeOf(a, p)
}

// treeOf is tree for the interval whose start element p holds a.
func (q *netQuery) treeOf(a netip.Addr, p nftables.SetElement) (lo, hi netip.Addr, _ nftables.SetElement, nested int, ok bool) {
	lo, _ = netip.AddrFromSlice(p.Key)
	pe, hasEnd := q.pieceEnd(a)
	if q.err != nil {
		return lo, hi, p, 0, false
	}
	hi = lastOf(a)
	if hasEnd {
		e, _ := netip.AddrFromSlice(pe)
		hi = e.Prev()
	}
	comment := p.Comment
	if q.s.NestedSet {
		comment = ""
		if el, found, err := q.e.Conn.GetSetElement(q.fam, ipset.NestedSetName(q.s.Name), lo.AsSlice(), nil); err != nil {
			q.err = err
			return lo, hi, p, 0, false
		} else if found {
			comment = el.Comment
		}
	}
	nested, ok = ipset.TopCount(comment)
	return lo, hi, p, nested, ok && !hi.Less(a)
}

// lastOf is the last address of a's family.
func lastOf(a netip.Addr) netip.Addr {
	if a.Is4() {
		return netip.AddrFrom4([4]byte{255, 255, 255, 255})
	}
	var b [16]byte
	for i := range b {
		b[i] = 0xff
	}
	return netip.AddrFrom16(b)
}

// recount sets the count of the interval of s starting at lo from old
// to n: its start element is replaced, or for a set that keeps the
// counts apart (ipset.Set.NestedSet) its count's element (none for 0).
func recount(b *kernel.Batch, fam kernel.Family, s *ipset.Set, lo netip.Addr, old, n int) {
	if !s.NestedSet {
		look := ipset.LookupSetName(s.Name)
		b.DelElements(fam, look, []nftables.SetElement{start(lo, "")})
		b.AddElements(fam, look, false, []nftables.SetElement{start(lo, ipset.TopComment(n))}, false)
		return
	}
	nested := s.NestedNftSet()
	if old > 0 {
		b.DelElements(fam, nested.Name, []nftables.SetElement{start(lo, "")})
	} else if n > 0 && !s.NestedMade() {
		// made with its first element (a set whose trees had no nested
		// entries has none)
		addSet(b, fam, &nested, false)
	}
	if n > 0 {
		b.AddElements(fam, nested.Name, false, []nftables.SetElement{start(lo, ipset.TopComment(n))}, false)
	}
}

func (q *netQuery) topAdd(c *ipset.Command) (*kernel.Batch, error, bool) {
	s := q.s
	ns, err, done := q.oneAdd(c)
	if ns == nil {
		return nil, err, done
	}
	en := ns.Entries[0]
	lo, hi := ipset.PrefixBounds(en.Elem, 0)
	if _, ok := q.entry(lo, en.Elem[0].Bits); ok || q.err != nil {
		if ok && !c.Opts.Exist {
			return nil, &ipset.Error{Msg: ipset.MsgElemExists, Status: ipset.StatusError}, true
		}
		// -exist: an entry of this layout has no options to change.
		return nil, nil, true
	}
	look := ipset.LookupSetName(s.Name)
	b := kernel.NewBatch()
	if p, ok := q.piece(lo); ok {
		tlo, thi, _, n, ok := q.treeOf(lo, p)
		if !ok || hi.Compare(thi) > 0 {
			return nil, nil, false // the new prefix holds its tree: treeRun
		}
		recount(b, q.fam, s, tlo, n, n+1)
	} else {
		if q.err != nil {
			return nil, nil, true
		}
		// A new tree; the kernel refuses it when it overlaps one.
		parts := []nftables.SetElement{start(lo, "")}
		if nx := hi.Next(); nx.IsValid() {
			parts = append(parts, end(nx))
		}
		b.AddElements(q.fam, look, false, parts, true)
	}
	if !q.addNew(b, ns.NftSetsNoIDs()) {
		return nil, nil, false
	}
	return b, nil, true
}

func (q *netQuery) topDel(c *ipset.Command) (*kernel.Batch, error, bool) {
	s := q.s
	el, err, done := q.oneDel(c)
	if el == nil {
		return nil, err, done
	}
	lo, hi := ipset.PrefixBounds(el, 0)
	tlo, thi, _, n, ok := q.tree(lo)
	if q.err != nil {
		return nil, nil, true
	}
	if !ok {
		return nil, nil, false
	}
	look := ipset.LookupSetName(s.Name)
	b := kernel.NewBatch()
	switch {
	case tlo == lo && thi == hi && n == 0:
		parts := []nftables.SetElement{start(lo, "")}
		if nx := hi.Next(); nx.IsValid() {
			parts = append(parts, end(nx))
		}
		b.DelElements(q.fam, look, parts)
	case tlo == lo && thi == hi:
		return nil, nil, false // its nested entries become trees: treeRun
	case n > 0:
		recount(b, q.fam, s, tlo, n, n-1)
	default:
		return nil, nil, false // a count that does not fit: the general path
	}
	delEntries(b, q.fam, s, []nftables.SetElement{{Key: s.EntryKey(ipset.NewEntry(el, false))}})
	if !q.e.shiftCount(b, q.fam, s, -1) {
		return nil, nil, false
	}
	return b, nil, true
}
