package setengine

import (
	"errors"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// Targeted add, del and test: one set's header is read, the element is
// asked for or changed directly, and the kernel's own answers (EEXIST,
// ENOENT, interval overlap, set full) stand in for reading the set. The
// cost does not grow with the set. Whatever these paths cannot decide
// exactly goes to the general path (ok false), which reads the set.
//
// Net types: with no nomatch entry in the set (no nomatch set), every
// address an entry covers is in some piece of the lookup set, so
//   - a new prefix that the kernel lets into the lookup interval set
//     without overlap overlaps no entry: its piece is the prefix itself;
//   - an entry with no piece just before or after its range has no
//     enclosing entry, and when its own range then holds one piece
//     exactly (checked by deleting its bounds and re-adding the whole
//     range exclusively in the same transaction) it has no nested ones,
//     so deleting it is deleting that piece.
// The overlap checks need the kernel's rbtree backend: concatenated net
// types (pipapo) take the general path for add and del.

// maxFastElems bounds how many elements (a range's expansion) the
// targeted paths handle.
const maxFastElems = 256

// header reads the header of set name; fam is the table it lives in.
func (e *Engine) header(name string) (*ipset.Set, kernel.Family, bool, error) {
	for _, fam := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		info, ok, err := e.Conn.Set(fam, ipset.LookupSetName(name))
		if err != nil {
			return nil, 0, false, err
		}
		if !ok {
			continue
		}
		s, ok := ipset.ParseHeader(info.Name, info.Comment)
		if !ok {
			continue
		}
		if s.ShardCopies() {
			// A -j SET rule drops the shards (the count set with them).
			if _, ok, err := e.Conn.Set(fam, ipset.CountSetName(s.Name)); err != nil {
				return nil, 0, false, err
			} else if !ok {
				s.DropShardCopies()
			}
		}
		return s, fam, true, nil
	}
	return nil, 0, false, nil
}

// hasNomatchSet reports whether the nomatch set of s exists: when it does
// not, s holds no nomatch entries.
func (e *Engine) hasNomatchSet(fam kernel.Family, s *ipset.Set) (bool, error) {
	_, ok, err := e.Conn.Set(fam, ipset.NomatchSetName(s.Name))
	return ok, err
}

// fast runs a single add, del or test without reading the set, when it
// can; ok false sends the command to the general path.
func (e *Engine) fast(c *ipset.Command) (res Result, err error, ok bool) {
	if c.Op != ipset.OpAdd && c.Op != ipset.OpDel && c.Op != ipset.OpTest {
		return Result{}, nil, false
	}
	for attempt := 0; attempt < 100; attempt++ {
		// (the generation the commit of an add or del is checked
		// against, read before what it is computed from; a test only
		// reads)
		var genid uint32
		if c.Op != ipset.OpTest {
			var gerr error
			if genid, gerr = e.Conn.GenID(); gerr != nil {
				return Result{}, kernelErr(gerr), true
			}
		}
		s, fam, found, herr := e.header(c.Args[0])
		if herr != nil || !found || s.Type.List || s.Type.OptionalMAC {
			// Unknown names (and list:set, kept elsewhere, and
			// bitmap:ip,mac, one entry per address whatever its MAC)
			// take the general path, which has the messages.
			return Result{}, nil, false
		}
		var retry bool
		switch c.Op {
		case ipset.OpTest:
			res, err, ok = e.fastTest(c, s, fam)
		case ipset.OpAdd:
			res, err, ok, retry = e.fastAdd(c, s, fam, genid)
		case ipset.OpDel:
			res, err, ok, retry = e.fastDel(c, s, fam, genid)
		}
		if !retry {
			return res, err, ok
		}
	}
	return Result{}, nil, false
}

func (e *Engine) fastTest(c *ipset.Command, s *ipset.Set, fam kernel.Family) (Result, error, bool) {
	if len(c.Args) > 2 || s.HasIface() || s.NetDims() > 1 {
		// The lookup key of hash:net,iface does not hold physdev:,
		// and the lookup set of two net dimensions resolves nomatch
		// nesting in the first only: the model answers.
		return Result{}, nil, false
	}
	// (as the model: the element's syntax, then ipset's refusal of a
	// range in test, then the kernel's refusal of the element)
	elems, perr := ipset.ParseElemFor(s, c.Args[1], c.Op)
	if perr != nil && ipset.ParseError(perr) {
		return Result{}, perr, true
	}
	if perr != nil && perr.Mandatory {
		return Result{}, perr, true
	}
	if herr := ipset.HostPrefixErr(s, c.Args[1], c.Op); herr != nil {
		return Result{}, herr, true
	}
	if rerr := ipset.TestRangeErr(s, c.Args[1]); rerr != nil {
		return Result{}, rerr, true
	}
	if perr != nil && perr.Checked {
		return Result{}, perr, true
	}
	if perr != nil {
		return Result{}, ipset.NotInSet(s, c.Args[1]), true // (as the model's test)
	}
	// ipset tests the first element of a range or prefix.
	for _, el := range elems[:1] {
		var in bool
		var err error
		switch {
		case !s.Type.Net():
			k := s.EntryKey(ipset.NewEntry(el, false))
			_, in, err = e.Conn.GetSetElement(fam, s.EntriesSetOf(k), k, nil)
		case ipset.HostKey(s, el):
			// The lookup set answers as a packet would.
			k := s.LookupKey(el)
			var end []byte
			if s.Concat() {
				end = k
			}
			var got nftables.SetElement
			got, in, err = e.Conn.GetSetElement(fam, ipset.LookupSetName(s.Name), k, end)
			in = in && !got.IntervalEnd
		default:
			// A prefix is in the set when it is an entry (not nomatch).
			k := s.EntryKey(ipset.NewEntry(el, false))
			_, in, err = e.Conn.GetSetElement(fam, s.EntriesSetOf(k), k, nil)
		}
		if err != nil {
			return Result{}, kernelErr(err), true
		}
		if !in {
			return Result{}, ipset.NotInSet(s, c.Args[1]), true
		}
	}
	return Result{Stderr: ipset.InSet(s, c.Args[1])}, nil, true
}

// entryExists asks whether en's key is an entry, as written or with the
// opposite nomatch flag.
func (e *Engine) entryExists(fam kernel.Family, s *ipset.Set, el ipset.Elem) (bool, error) {
	variants := []bool{false}
	if s.Type.Net() {
		variants = append(variants, true)
	}
	for _, nm := range variants {
		k := s.EntryKey(ipset.NewEntry(el, nm))
		_, ok, err := e.Conn.GetSetElement(fam, s.EntriesSetOf(k), k, nil)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func (e *Engine) fastAdd(c *ipset.Command, s *ipset.Set, fam kernel.Family, genid uint32) (res Result, err error, ok, retry bool) {
	if (s.Type.Net() && s.Concat()) || (s.Counters && c.Opts.Exist) {
		// (add -exist keeps counters it does not give: the general
		// path knows them.)
		return Result{}, nil, false, false
	}
	// The model on the empty set parses the element and its options and
	// applies ipset's defaults; the kernel then says whether it exists.
	st := &ipset.State{Sets: []*ipset.Set{s.HeaderOnly()}}
	cc := *c
	cc.Opts.Exist = false
	if _, ierr := st.Exec(&cc); ierr != nil {
		if ierr.Msg == ipset.MsgFull {
			return Result{}, nil, false, false
		}
		return Result{}, ierr, true, false
	}
	ns := st.Sets[0]
	if len(ns.Entries) > maxFastElems {
		return Result{}, nil, false, false
	}
	if s.Type.Net() {
		if ns.HasNomatch() {
			return Result{}, nil, false, false
		}
		if m, err := e.hasNomatchSet(fam, s); err != nil || m {
			return Result{}, nil, false, false
		}
	}
	var replace []nftables.SetElement
	if c.Opts.Exist {
		for _, en := range ns.Entries {
			got, err := e.entryExists(fam, s, en.Elem)
			if err != nil {
				return Result{}, kernelErr(err), true, false
			}
			if got {
				if s.Type.Net() {
					return Result{}, nil, false, false
				}
				replace = append(replace, nftables.SetElement{Key: s.EntryKey(en)})
			}
		}
	}
	b := kernel.NewBatch()
	if !e.shiftCount(b, fam, s, len(ns.Entries)-len(replace)) {
		return Result{}, nil, false, false
	}
	if len(replace) > 0 && s.ShardCopies() {
		// The shard copies of a plain type are replaced as the lookup
		// set's elements are.
		delEntries(b, fam, s, replace)
	}
	var entriesOps []int
	for _, n := range ns.NftSetsNoIDs() {
		set := n.Set
		var els []nftables.SetElement
		for _, x := range n.Elems {
			els = append(els, x.Parts...)
		}
		switch {
		case n.Role == ipset.RoleCount || len(els) == 0:
		case n.Role == ipset.RoleEntries:
			entriesOps = append(entriesOps, addEntries(b, fam, s, els, true)...)
		default:
			if len(replace) > 0 {
				b.DelElements(fam, set.Name, replace)
			}
			op := b.AddElements(fam, set.Name, set.HasTimeout, els, true)
			if !s.Type.Net() {
				entriesOps = append(entriesOps, op)
			}
		}
	}
	cerr := e.commit(b, genid)
	if errors.Is(cerr, kernel.ErrGenerationChanged) {
		return Result{}, nil, false, true
	}
	// The entry itself exists (as written: a net type has no nomatch
	// entries here).
	exists := false
	var ce *kernel.CommitError
	if errors.As(cerr, &ce) {
		for _, oe := range ce.Errors {
			exists = exists || (slices.Contains(entriesOps, oe.Index) && oe.Errno == unix.EEXIST)
		}
	}
	switch {
	case cerr == nil:
		return Result{}, nil, true, false
	case exists && !c.Opts.Exist && len(ns.Entries) > 1:
		// ipset keeps the elements added before the one that exists:
		// the general path does that.
		return Result{}, nil, false, false
	case exists && !c.Opts.Exist:
		return Result{}, &ipset.Error{Msg: ipset.MsgElemExists, Status: ipset.StatusError}, true, false
	case setFull(cerr) && len(ns.Entries) > 1:
		// ipset keeps the elements added before the set was full: the
		// general path does that too.
		return Result{}, nil, false, false
	case setFull(cerr) && s.ForceAdd:
		// a full forceadd set replaces a member: the general path
		// picks it (ipset.Set.forceAddVictim)
		return Result{}, nil, false, false
	case setFull(cerr):
		return Result{}, &ipset.Error{Msg: ipset.MsgFull, Status: ipset.StatusError}, true, false
	}
	// Overlaps (net types) and anything unexpected: the general path.
	return Result{}, nil, false, false
}

func (e *Engine) fastDel(c *ipset.Command, s *ipset.Set, fam kernel.Family, genid uint32) (res Result, err error, ok, retry bool) {
	if len(c.Args) > 2 || (s.Type.Net() && (s.Concat() || s.TopLayout)) {
		// (The top-level layout: netRun and treeRun; the probe below
		// cannot see entries nested in a top-level entry.)
		return Result{}, nil, false, false
	}
	elems, perr := ipset.ParseElemFor(s, c.Args[1], c.Op)
	if perr != nil && ipset.ParseError(perr) {
		return Result{}, perr, true, false
	}
	if herr := ipset.HostPrefixErr(s, c.Args[1], c.Op); herr != nil {
		return Result{}, herr, true, false
	}
	if perr != nil {
		return Result{}, perr, true, false
	}
	if len(elems) > maxFastElems || (s.Type.Net() && len(elems) != 1) {
		return Result{}, nil, false, false
	}
	if s.Type.Net() {
		if m, err := e.hasNomatchSet(fam, s); err != nil || m {
			return Result{}, nil, false, false
		}
	}
	var keys []nftables.SetElement
	for _, el := range elems {
		k := s.EntryKey(ipset.NewEntry(el, false))
		if c.Opts.Exist || s.Type.Net() {
			_, got, err := e.Conn.GetSetElement(fam, s.EntriesSetOf(k), k, nil)
			if err != nil {
				return Result{}, kernelErr(err), true, false
			}
			if !got {
				if c.Opts.Exist {
					continue
				}
				return Result{}, &ipset.Error{Msg: ipset.MsgElemMissing, Status: ipset.StatusError}, true, false
			}
		}
		keys = append(keys, nftables.SetElement{Key: k})
	}
	if len(keys) == 0 {
		return Result{}, nil, true, false
	}
	b := kernel.NewBatch()
	if s.ShardCopies() {
		// The lookup set holds the entries, the shards a copy.
		b.DelElements(fam, ipset.LookupSetName(s.Name), keys)
	}
	delEntries(b, fam, s, keys)
	if !e.shiftCount(b, fam, s, -len(keys)) {
		return Result{}, nil, false, false
	}
	if s.Type.Net() {
		lo, hi := ipset.PrefixBounds(elems[0], 0)
		look := ipset.LookupSetName(s.Name)
		// An enclosing entry would own the address next to the range.
		for _, a := range []netip.Addr{lo.Prev(), hi.Next()} {
			if !a.IsValid() {
				continue
			}
			_, got, err := e.Conn.GetSetElement(fam, look, a.AsSlice(), nil)
			if err != nil {
				return Result{}, kernelErr(err), true, false
			}
			if got {
				return Result{}, nil, false, false
			}
		}
		piece := []nftables.SetElement{{Key: lo.AsSlice()}}
		if n := hi.Next(); n.IsValid() {
			piece = append(piece, nftables.SetElement{Key: n.AsSlice(), IntervalEnd: true})
		}
		set := nftables.Set{Name: look, Interval: true}
		// Nested entries would leave pieces inside the range: with the
		// range's bounds deleted, an exclusive add of the whole range
		// then overlaps them. The probe transaction always fails (its
		// last operation deletes a set that does not exist), so it
		// changes nothing; the overlap shows as a second error.
		probe := kernel.NewBatch()
		probe.DelElements(fam, set.Name, piece)
		probe.AddElements(fam, set.Name, false, piece, true)
		sentinel := probe.DelSet(fam, ipset.NomatchPrefix)
		perr := e.Conn.Commit(probe, genid)
		if errors.Is(perr, kernel.ErrGenerationChanged) {
			return Result{}, nil, false, true
		}
		var ce *kernel.CommitError
		if !errors.As(perr, &ce) || len(ce.Errors) != 1 || ce.Errors[0].Index != sentinel {
			return Result{}, nil, false, false
		}
		b.DelElements(fam, set.Name, piece)
	}
	cerr := e.commit(b, genid)
	switch {
	case errors.Is(cerr, kernel.ErrGenerationChanged):
		return Result{}, nil, false, true
	case cerr == nil:
		return Result{}, nil, true, false
	case errors.Is(cerr, unix.ENOENT) && !s.Type.Net() && len(keys) > 1:
		return Result{}, nil, false, false // deletes before the missing one stay
	case errors.Is(cerr, unix.ENOENT) && !s.Type.Net():
		return Result{}, &ipset.Error{Msg: ipset.MsgElemMissing, Status: ipset.StatusError}, true, false
	}
	return Result{}, nil, false, false
}

// treeRun runs a single add or del of one prefix on a hash:net (or its
// inet6 form) that the targeted paths could not decide, reading only
// the entries of the prefix tree it falls in: pieces of the lookup set
// depend only on the entries of their own tree (prefixes nest or are
// disjoint). One pass over the entries set finds the outermost entry
// enclosing the prefix and keeps the entries near the prefix; a second
// pass is needed only when that entry is larger than a /8 (a /16 for
// inet6). Memory stays small; the time is that of a dump of the set.
func (e *Engine) treeRun(c *ipset.Command) (Result, error, bool) {
	if (c.Op != ipset.OpAdd && c.Op != ipset.OpDel) || len(c.Args) < 2 {
		return Result{}, nil, false
	}
	for attempt := 0; attempt < 100; attempt++ {
		genid, gerr := e.Conn.GenID()
		if gerr != nil {
			return Result{}, kernelErr(gerr), true
		}
		s, fam, found, herr := e.header(c.Args[0])
		// (forceadd: a full set's victim follows from all its members'
		// buckets, which the tree's do not tell)
		if herr != nil || !found || !s.Type.Net() || s.Concat() || s.ForceAdd && c.Op == ipset.OpAdd {
			return Result{}, nil, false
		}
		elems, perr := ipset.ParseElem(s, c.Args[1])
		if perr != nil && len(c.Args) > 2 && !ipset.ParseError(perr) {
			return Result{}, nil, false // (the general path orders it after the options')
		}
		if perr != nil {
			return Result{}, perr, true
		}
		if len(elems) != 1 {
			return Result{}, nil, false
		}
		lo, hi := ipset.PrefixBounds(elems[0], 0)
		// Pass 1: the outermost entry that holds the prefix; meanwhile
		// the entries of a window around the prefix (a /8, a /16 for
		// inet6) are kept, which usually holds that entry's tree.
		wbits := 8
		if s.Family == ipset.Inet6 {
			wbits = 16
		}
		wlo, whi := ipset.PrefixBounds(ipset.Elem{{Addr: lo, Bits: min(wbits, elems[0][0].Bits)}}, 0)
		top, tophi := lo, hi
		old := s.HeaderOnly()
		nomatch := 0 // nomatch entries in the whole set
		err := e.eachEntry(fam, s, func() { top, tophi, nomatch = lo, hi, 0; old.ClearEntries() }, func(el *nftables.SetElement) error {
			en, ok := s.DecodeEntry(*el)
			if !ok {
				return nil
			}
			if en.Nomatch {
				nomatch++
			}
			a, b := ipset.PrefixBounds(en.Elem, 0)
			if !lo.Less(a) && !b.Less(hi) && !top.Less(a) && !b.Less(tophi) {
				top, tophi = a, b
			}
			if !a.Less(wlo) && !whi.Less(b) {
				old.AppendLoaded(en)
			}
			return nil
		})
		if err != nil {
			return Result{}, kernelErr(err), true
		}
		inTree := func(en *ipset.Entry) bool {
			a, b := ipset.PrefixBounds(en.Elem, 0)
			return !a.Less(top) && !tophi.Less(b)
		}
		if !top.Less(wlo) && !whi.Less(tophi) {
			kept := old.Entries
			old.ClearEntries()
			for _, en := range kept {
				if inTree(en) {
					old.AppendLoaded(en)
				}
			}
		} else {
			// Pass 2: the tree is larger than the window.
			old.ClearEntries()
			err = e.eachEntry(fam, s, old.ClearEntries, func(el *nftables.SetElement) error {
				if en, ok := s.DecodeEntry(*el); ok && inTree(en) {
					old.AppendLoaded(en)
				}
				return nil
			})
			if err != nil {
				return Result{}, kernelErr(err), true
			}
		}
		if s.Sharded() {
			// The count covers the entries not read.
			n, err := e.storedCount(fam, s)
			if err != nil {
				return Result{}, kernelErr(err), true
			}
			old.SetCountBias(n - len(old.Entries))
		}
		oldSt := &ipset.State{Sets: []*ipset.Set{old}}
		st := oldSt.Clone()
		if _, ierr := st.Exec(c); ierr != nil {
			if ierr.Msg == ipset.MsgFull {
				return Result{}, nil, false // counted on the partial set
			}
			return Result{}, ierr, true
		}
		if ns := st.Sets[0]; s.Sharded() && ns.StoredCount() > int(s.MaxElem) && ns.StoredCount() > old.StoredCount() {
			return Result{}, nil, false // maxelem: the general path counts exactly
		}
		m, merr := e.hasNomatchSet(fam, s)
		if merr != nil {
			return Result{}, kernelErr(merr), true
		}
		// The nomatch set may go when no entry outside the tree needs it.
		for _, en := range old.Entries {
			if en.Nomatch {
				nomatch--
			}
		}
		b := kernel.NewBatch()
		diffSets(b, oldSt, st, nomatch > 0, &nomatchSets{e: e, exists: map[string]bool{s.Name: m}})
		if b.Len() == 0 {
			return Result{}, nil, true
		}
		cerr := e.commit(b, genid)
		if errors.Is(cerr, kernel.ErrGenerationChanged) {
			continue
		}
		if cerr != nil {
			return Result{}, kernelErr(cerr), true
		}
		return Result{}, nil, true
	}
	return Result{}, nil, false
}
