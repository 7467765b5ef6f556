package setengine

import (
	"bytes"
	"errors"
	"net/netip"

	"github.com/google/nftables"

	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// netRun runs a single add or del of one prefix in a hash:net (inet or
// inet6) without nomatch entries (no nomatch set) and without timeouts,
// from a few questions to the kernel instead of a read of the set's
// tree: the lookup set's pieces are the flattened prefix tree, and the
// change to them is local.
//   - Which entries contain an address: the longest prefix of it that
//     is an entry (one GETSETELEM per prefix length, longest first).
//   - The piece that holds an address, and its end (GETSETELEM, with
//     the interval end flag for the end).
//
// An added prefix that falls inside one piece of its parent's splits
// that piece; a deleted prefix that is one piece by itself (no nested
// entries) gives its range back to its parent, merged with the
// parent's neighbouring pieces. In a set of the top-level layout
// (ipset.Set.TopLayout) see topAdd and topDel instead. Anything else (a prefix holding other
// entries, a top-level add, which fast's exclusive add decides) goes on
// to the other paths (ok false). One transaction, as many elements as
// the general path's diff would change, and the same ones.
func (e *Engine) netRun(c *ipset.Command) (Result, error, bool) {
	if (c.Op != ipset.OpAdd && c.Op != ipset.OpDel) || len(c.Args) < 2 {
		return Result{}, nil, false
	}
	for attempt := 0; attempt < 100; attempt++ {
		genid, gerr := e.Conn.GenID()
		if gerr != nil {
			return Result{}, kernelErr(gerr), true
		}
		s, fam, found, herr := e.header(c.Args[0])
		// counters and skbinfo are kept per element by the general path
		if herr != nil || !found || !s.Type.Net() || s.Concat() || s.HasTimeout || s.Counters || s.SkbInfo {
			return Result{}, nil, false
		}
		if m, err := e.hasNomatchSet(fam, s); err != nil || m {
			return Result{}, nil, false
		}
		q := netQuery{e: e, s: s, fam: fam}
		var b *kernel.Batch
		var err error
		var ok bool
		switch {
		case s.TopLayout && c.Op == ipset.OpAdd:
			b, err, ok = q.topAdd(c)
		case s.TopLayout:
			b, err, ok = q.topDel(c)
		case c.Op == ipset.OpAdd:
			b, err, ok = q.add(c)
		default:
			b, err, ok = q.del(c)
		}
		if q.err != nil {
			return Result{}, kernelErr(q.err), true
		}
		if !ok || err != nil || b == nil {
			return Result{}, err, ok
		}
		cerr := e.commit(b, genid)
		switch {
		case errors.Is(cerr, kernel.ErrGenerationChanged):
			continue
		case cerr == nil:
			return Result{}, nil, true
		case setFull(cerr) && s.ForceAdd:
			return Result{}, nil, false // (the general path picks the member it replaces)
		case setFull(cerr):
			return Result{}, &ipset.Error{Msg: ipset.MsgFull, Status: ipset.StatusError}, true
		}
		// Unexpected: the general path decides.
		return Result{}, nil, false
	}
	return Result{}, nil, false
}

// netQuery asks the kernel about one hash:net; the first error is kept
// in err (answers are then "no").
type netQuery struct {
	e   *Engine
	s   *ipset.Set
	fam kernel.Family
	err error
}

// entry reports whether the prefix a/bits is an entry, and its comment.
func (q *netQuery) entry(a netip.Addr, bits int) (string, bool) {
	if q.err != nil {
		return "", false
	}
	p := netip.PrefixFrom(a, bits).Masked()
	k := q.s.EntryKey(ipset.NewEntry(ipset.Elem{{Addr: p.Addr(), Bits: bits}}, false))
	el, ok, err := q.e.Conn.GetSetElement(q.fam, q.s.EntriesSetOf(k), k, nil)
	if err != nil {
		q.err = err
	}
	return el.Comment, ok
}

// innermost returns the prefix length of the smallest entry that holds
// a, among those of at most max bits (0: none).
func (q *netQuery) innermost(a netip.Addr, max int) int {
	for b := max; b >= 1; b-- {
		if _, ok := q.entry(a, b); ok {
			return b
		}
	}
	return 0
}

// ownedBy reports whether the smallest entry that holds a is the one of
// d bits (which holds a).
func (q *netQuery) ownedBy(a netip.Addr, d int) bool {
	return q.innermost(a, a.BitLen()) == d && q.err == nil
}

// piece returns the start element of the lookup set's piece holding a.
func (q *netQuery) piece(a netip.Addr) (nftables.SetElement, bool) {
	if q.err != nil {
		return nftables.SetElement{}, false
	}
	el, ok, err := q.e.Conn.GetSetElement(q.fam, ipset.LookupSetName(q.s.Name), a.AsSlice(), nil)
	if err != nil {
		q.err = err
	}
	el.Key = append([]byte(nil), el.Key...)
	return el, ok && !el.IntervalEnd
}

// pieceEnd returns the key of the end element of the piece holding a
// (ok false: the piece runs to the last address).
func (q *netQuery) pieceEnd(a netip.Addr) ([]byte, bool) {
	if q.err != nil {
		return nil, false
	}
	el, ok, err := q.e.Conn.GetIntervalEnd(q.fam, ipset.LookupSetName(q.s.Name), a.AsSlice())
	if err != nil {
		q.err = err
	}
	return append([]byte(nil), el.Key...), ok
}

func start(a netip.Addr, comment string) nftables.SetElement {
	return nftables.SetElement{Key: a.AsSlice(), Comment: comment}
}

func end(a netip.Addr) nftables.SetElement {
	return nftables.SetElement{Key: a.AsSlice(), IntervalEnd: true}
}

// oneAdd runs the add c on an empty copy of the set, which parses its
// element and options: ns is that copy, holding the one entry, when the
// fast paths apply (done false otherwise: the set would be full, or the
// add makes a nomatch entry or more than one); err is the command's
// answer when the element or its options are wrong.
func (q *netQuery) oneAdd(c *ipset.Command) (ns *ipset.Set, err error, done bool) {
	st := &ipset.State{Sets: []*ipset.Set{q.s.HeaderOnly()}}
	cc := *c
	cc.Opts.Exist = false
	if _, ierr := st.Exec(&cc); ierr != nil {
		if ierr.Msg == ipset.MsgFull {
			return nil, nil, false
		}
		return nil, ierr, true
	}
	ns = st.Sets[0]
	if len(ns.Entries) != 1 || ns.Entries[0].Nomatch {
		return nil, nil, false
	}
	return ns, nil, true
}

// oneDel parses the element of the del c, which must be one prefix and
// an entry of the set: el is that prefix when the fast paths apply (nil
// otherwise, with done false: more than one element or more options);
// with el nil and done true, err is the command's answer (a bad
// element, or a missing one without -exist, which answers nil).
func (q *netQuery) oneDel(c *ipset.Command) (el ipset.Elem, err error, done bool) {
	if len(c.Args) > 2 {
		return nil, nil, false
	}
	elems, perr := ipset.ParseElem(q.s, c.Args[1])
	if perr != nil {
		return nil, perr, true
	}
	if len(elems) != 1 {
		return nil, nil, false
	}
	el = elems[0]
	lo, _ := ipset.PrefixBounds(el, 0)
	if _, ok := q.entry(lo, el[0].Bits); !ok {
		if q.err != nil || c.Opts.Exist {
			return nil, nil, true
		}
		return nil, &ipset.Error{Msg: ipset.MsgElemMissing, Status: ipset.StatusError}, true
	}
	return el, nil, true
}

// add: the new prefix must fall inside one piece of its parent's.
func (q *netQuery) add(c *ipset.Command) (*kernel.Batch, error, bool) {
	s := q.s
	ns, err, done := q.oneAdd(c)
	if ns == nil {
		return nil, err, done
	}
	en := ns.Entries[0]
	n := en.Elem[0].Bits
	lo, hi := ipset.PrefixBounds(en.Elem, 0)
	if _, ok := q.entry(lo, n); ok || q.err != nil {
		if ok && !c.Opts.Exist {
			return nil, &ipset.Error{Msg: ipset.MsgElemExists, Status: ipset.StatusError}, true
		}
		if ok && !s.Comment {
			// -exist of an entry whose only option could be its
			// comment: the general path's diff would change nothing.
			return nil, nil, true
		}
		return nil, nil, false // -exist may change its comment: the general path
	}
	d := q.innermost(lo, n-1)
	if d == 0 {
		return nil, nil, false
	}
	p, ok := q.piece(lo)
	p2, ok2 := q.piece(hi)
	if !ok || !ok2 || !bytes.Equal(p.Key, p2.Key) {
		return nil, nil, false
	}
	pe, hasEnd := q.pieceEnd(hi)
	if q.err != nil {
		return nil, nil, true
	}
	ps, _ := netip.AddrFromSlice(p.Key)
	dels := []nftables.SetElement{{Key: p.Key}}
	if hasEnd {
		dels = append(dels, nftables.SetElement{Key: pe, IntervalEnd: true})
	}
	var adds []nftables.SetElement
	if ps.Less(lo) {
		adds = append(adds, start(ps, p.Comment), end(lo))
	}
	sets := ns.NftSetsNoIDs()
	for _, x := range sets[0].Elems { // the new prefix's own piece
		adds = append(adds, x.Parts...)
	}
	if nx := hi.Next(); nx.IsValid() && (!hasEnd || !bytes.Equal(nx.AsSlice(), pe)) {
		adds = append(adds, start(nx, p.Comment))
		if hasEnd {
			adds = append(adds, nftables.SetElement{Key: pe, IntervalEnd: true})
		}
	}
	b := kernel.NewBatch()
	look := ipset.LookupSetName(s.Name)
	b.DelElements(q.fam, look, dels)
	b.AddElements(q.fam, look, false, adds, false)
	if !q.addNew(b, sets) {
		return nil, nil, false
	}
	return b, nil, true
}

// addNew adds to b the entries elements of sets (the nft sets of oneAdd's
// copy, holding the one new entry) and raises the set's entry count by
// one; false when the count would pass maxelem or cannot be read (the
// general path decides).
func (q *netQuery) addNew(b *kernel.Batch, sets []ipset.NftSet) bool {
	var ents []nftables.SetElement
	for _, x := range sets {
		if x.Role == ipset.RoleEntries {
			for _, y := range x.Elems {
				ents = append(ents, y.Parts...)
			}
		}
	}
	addEntries(b, q.fam, q.s, ents, true)
	return q.e.shiftCount(b, q.fam, q.s, 1)
}

// del: the prefix must be one piece by itself.
func (q *netQuery) del(c *ipset.Command) (*kernel.Batch, error, bool) {
	s := q.s
	el, err, done := q.oneDel(c)
	if el == nil {
		return nil, err, done
	}
	n := el[0].Bits
	lo, hi := ipset.PrefixBounds(el, 0)
	p, ok := q.piece(lo)
	p2, ok2 := q.piece(hi)
	if !ok || !ok2 || !bytes.Equal(p.Key, lo.AsSlice()) || !bytes.Equal(p2.Key, p.Key) {
		return nil, nil, false // nested entries
	}
	d := q.innermost(lo, n-1)
	var dComment string
	var left, right bool
	if d > 0 {
		dlo, dhi := ipset.PrefixBounds(ipset.Elem{{Addr: lo, Bits: d}}, 0)
		dComment, _ = q.entry(lo, d)
		left = dlo.Less(lo) && q.ownedBy(lo.Prev(), d)
		right = hi.Less(dhi) && q.ownedBy(hi.Next(), d)
	}
	if q.err != nil {
		return nil, nil, true
	}
	var dels, adds []nftables.SetElement
	switch {
	case left:
		dels = append(dels, end(lo), start(lo, ""))
	case d > 0:
		if p.Comment != dComment {
			dels = append(dels, start(lo, ""))
			adds = append(adds, start(lo, dComment))
		}
	default:
		dels = append(dels, start(lo, ""))
	}
	if nx := hi.Next(); nx.IsValid() {
		switch {
		case right:
			dels = append(dels, end(nx), start(nx, ""))
		case d == 0:
			dels = append(dels, end(nx))
		}
	}
	b := kernel.NewBatch()
	look := ipset.LookupSetName(s.Name)
	delEntries(b, q.fam, s, []nftables.SetElement{{Key: s.EntryKey(ipset.NewEntry(el, false))}})
	if !q.e.shiftCount(b, q.fam, s, -1) {
		return nil, nil, false
	}
	if len(dels) > 0 {
		b.DelElements(q.fam, look, dels)
	}
	if len(adds) > 0 {
		b.AddElements(q.fam, look, false, adds, false)
	}
	return b, nil, true
}
