package setengine

import (
	"cmp"
	"errors"
	"iter"
	"runtime/debug"

	"github.com/google/nftables"

	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// Restore without the in-memory model. A restore file that creates
// sets and adds to them (the boot-time and blocklist case), flushes
// sets, swaps a new set with an existing one (the blocklist update), or
// adds to existing sets (a second restore -exist of a saved file) fills
// the sets as ipset.Bulk values, never as entries of the model, and
// encodes their elements into the batch one at a time. An existing set
// that is flushed or swapped is refilled without being read; one that
// is added to is read into a Bulk (streamed) and only the elements that
// differ change, as the general path's diff would change them. The
// result, errors and line numbers included, are those of Run on the
// parsed file.

// errFallback stops the walk of a file that needs the general path.
var errFallback = &ipset.Error{Msg: "general path"}

// Restore runs a restore file (already checked with
// ipset.EachRestoreCommand: it parses) as one transaction. exist is the
// command line's -exist. handled is false when the file does something
// the bulk path does not do (see above): then nothing happened and the
// caller runs it with Run.
func (e *Engine) Restore(text string, exist bool) (res Result, err error, handled bool) {
	if xdpWatching() {
		return Result{}, nil, false
	}
	// As for Run: a restore that cannot reach the kernel fails at its
	// first line.
	first := 0
	ipset.EachRestoreCommand(text, func(c *ipset.Command) *ipset.Error {
		first = c.Line
		return errFallback
	})
	atFirst := func(err error) error {
		if ie, ok := err.(*ipset.Error); ok && ie.Line == 0 {
			ie.Line = first
		}
		return err
	}
	for attempt := 0; ; attempt++ {
		genid, gerr := e.Conn.GenID()
		if gerr != nil {
			return Result{}, atFirst(kernelErr(gerr)), true
		}
		known, lerr := e.load(loadOpts{})
		if lerr != nil {
			return Result{}, atFirst(kernelErr(lerr)), true
		}
		r := newBulkRestore(e, known)
		werr := ipset.EachRestoreCommand(text, func(c *ipset.Command) *ipset.Error {
			c.Opts.Exist = c.Opts.Exist || exist
			ierr := r.exec(c)
			if ierr != nil && ierr != errFallback && ierr.Status != ipset.StatusUsage {
				ierr.Line = c.Line // usage errors name no line, as ipset's
			}
			if ierr != nil && ierr != errFallback {
				ierr.Quiet = c.Opts.Quiet
			}
			return ierr
		})
		if r.err != nil {
			return Result{}, atFirst(kernelErr(r.err)), true
		}
		if werr == errFallback || len(r.swapped) > 0 || werr != nil && !ipset.ParseError(werr) {
			// (the kernel's refusal of a line: the general path finds
			// whether ipset answers with a later line's parse error)
			return Result{}, nil, false
		}
		if werr != nil {
			return Result{}, werr, true
		}
		st, bulks := r.st, r.bulks
		b := kernel.NewBatch()
		nm := &nomatchSets{e: e}
		bulkBatch(b, st, bulks, r.replaced, r.loaded, r.hadNomatch, nm.inUse)
		if b.Len() == 0 {
			return Result{}, nil, true
		}
		cerr := e.commit(b, genid)
		if errors.Is(cerr, kernel.ErrGenerationChanged) && attempt < 1000 {
			continue
		}
		if cerr != nil {
			return Result{}, atFirst(kernelErr(cerr)), true
		}
		return Result{}, nil, true
	}
}

// bulkBatch adds to b the sets of st, filled as bulks: new sets, as
// diff adds sets that are new; sets that exist and whose elements the
// bulk replaces (replaced: flushed and refilled); sets read by load
// (loaded: the elements that differ change). hadNomatch: the set's
// nomatch set exists; inUse says whether a rule looks it up.
func bulkBatch(b *kernel.Batch, st *ipset.State, bulks map[string]*ipset.Bulk, replaced, loaded, hadNomatch map[string]bool, inUse func(*ipset.Set) bool) {
	tables := map[kernel.Family]bool{}
	for _, s := range st.Sets {
		if !tables[famOf(s)] {
			b.AddTable(famOf(s))
			tables[famOf(s)] = true
		}
	}
	// What happens to each nftables set before its elements change.
	// changes: only the elements that differ from the loaded ones change.
	// unmade: a shard not made yet, made here if it gets elements.
	type target struct {
		set     nftables.Set
		prep    bulkPrep
		changes bool
		unmade  bool
	}
	targets := map[string][]target{}
	for _, s := range st.Sets {
		var ts []target
		for _, ns := range s.NftSetsNoIDs() {
			// The count of a sharded set is rewritten whole (what the
			// kernel holds may be above the entries read: expired ones).
			changes := loaded[s.Name] && ns.Role != ipset.RoleCount
			prep := bulkCreate
			switch {
			case changes:
				prep = bulkKeep
			case replaced[s.Name]:
				prep = bulkFlush
			}
			i, shard := s.ShardIndex(ns.Set.Name)
			mayExist := s.ShardMayExist(i)
			if ns.Role == ipset.RoleNested {
				shard, mayExist = true, s.NestedMayExist()
			}
			unmade := shard && ns.Lazy && (prep == bulkCreate || !mayExist)
			if unmade {
				// (a set that exists had no element in this shard, or
				// no tree with nested entries)
				prep, changes = bulkCreate, false
				if ns.Role != ipset.RoleNested {
					ns.Set.Size = s.ShardSize(bulks[s.Name].ShardLen(i))
				}
			}
			ts = append(ts, target{ns.Set, prep, changes, unmade})
		}
		if s.Type.Net() {
			had, has := hadNomatch[s.Name], bulks[s.Name].HasNomatch()
			n := s.NomatchNftSet()
			switch {
			case had && !has && !inUse(s):
				ts = append(ts, target{n, bulkDelete, false, false})
			case !had && has:
				ts = append(ts, target{n, bulkEnsure, loaded[s.Name], false})
			case had:
				ts = append(ts, target{n, ts[0].prep, loaded[s.Name], false})
			}
		}
		targets[s.Name] = ts
	}
	// The batch's size is known in advance: one allocation for it.
	type key struct {
		set  string
		dels bool
	}
	size := 0
	count := map[key]int{}
	for _, s := range st.Sets {
		bk := bulks[s.Name]
		for _, t := range targets[s.Name] {
			for _, dels := range []bool{false, true} {
				if dels && !t.changes || t.prep == bulkDelete {
					continue
				}
				n := 0
				if !t.changes {
					// A set filled whole: bounded, and only asked
					// whether it gets any element (elements with a
					// comment take at most 10 bytes more than it).
					m, keyLen, comments := bk.FillBound(t.set.Name)
					size += m*(kernel.ElementSize(keyLen, 0, true, t.set.HasTimeout, 0)+10) + comments
					for range bulkElems(s, bk, t.set.Name, false, false) {
						n = 1
						break
					}
					count[key{t.set.Name, dels}] = n
					continue
				}
				for el := range bulkElems(s, bk, t.set.Name, t.changes, dels) {
					size += kernel.ElementSize(len(el.Key), len(el.KeyEnd), el.IntervalEnd, t.set.HasTimeout && el.Timeout != 0, len(el.Comment))
					n++
				}
				count[key{t.set.Name, dels}] = n
			}
		}
	}
	// What parsing left behind goes back to the system first: the
	// batch is the largest piece of memory a restore needs.
	debug.FreeOSMemory()
	b.Grow(size+size/32+4096, 0)
	for _, s := range st.Sets {
		bk := bulks[s.Name]
		for _, t := range targets[s.Name] {
			set := t.set
			if t.unmade && count[key{set.Name, false}] == 0 {
				continue
			}
			switch t.prep {
			case bulkFlush:
				b.FlushSet(famOf(s), set.Name)
			case bulkCreate, bulkEnsure:
				addSet(b, famOf(s), &set, t.prep == bulkCreate)
			case bulkDelete:
				b.DelSet(famOf(s), set.Name)
				continue
			}
			if count[key{set.Name, true}] > 0 {
				b.DelElementsSeq(famOf(s), set.Name, bulkElems(s, bk, set.Name, true, true))
			}
			if count[key{set.Name, false}] > 0 {
				b.AddElementsSeq(famOf(s), set.Name, set.HasTimeout, bulkElems(s, bk, set.Name, t.changes, false), false)
			}
		}
	}
}

// bulkPrep is what bulkBatch does with an nftables set before its
// elements change.
type bulkPrep uint8

const (
	bulkCreate bulkPrep = iota // a new set
	bulkKeep                   // elements change (loaded)
	bulkFlush                  // elements are replaced
	bulkEnsure                 // a nomatch set that may exist (a rule made it)
	bulkDelete                 // a nomatch set no longer needed
)

// bulkRestore is the state of a restore file run by Restore: the sets
// it fills as bulks (st: their headers), among them sets that exist
// and whose elements are replaced (flushed, or swapped with a new set),
// and the new sets that hold, after a swap, what such a set held
// (swapped: only a destroy may follow).
type bulkRestore struct {
	e          *Engine
	known      *ipset.State // the sets in the kernel (headers)
	st         *ipset.State
	bulks      map[string]*ipset.Bulk
	replaced   map[string]bool
	loaded     map[string]bool // replaced sets read by load: changed, not flushed
	hadNomatch map[string]bool
	swapped    map[string]bool
	err        error // a kernel error
}

func newBulkRestore(e *Engine, known *ipset.State) *bulkRestore {
	r := &bulkRestore{e: e, known: known, st: &ipset.State{}, bulks: map[string]*ipset.Bulk{},
		replaced: map[string]bool{}, loaded: map[string]bool{}, hadNomatch: map[string]bool{}, swapped: map[string]bool{}}
	// A create takes the first slot free among the sets in the kernel
	// too, as ipset's create takes it (listing order).
	for _, s := range known.Sets {
		if s.Slot > 0 {
			r.st.Reserve(s.Slot)
		}
	}
	for _, n := range known.Reserved {
		r.st.Reserve(n)
	}
	return r
}

// target returns the set name refers to if it is filled here.
func (r *bulkRestore) target(name string) *ipset.Bulk { return r.bulks[name] }

// untouched returns the kernel's set called name when this file has not
// changed it.
func (r *bulkRestore) untouched(name string) *ipset.Set {
	if r.replaced[name] || r.swapped[name] || r.bulks[name] != nil {
		return nil
	}
	return r.known.Find(name)
}

// replace makes the existing set s filled here: its elements are
// replaced by bk's.
func (r *bulkRestore) replace(s *ipset.Set, bk *ipset.Bulk) *ipset.Error {
	m, err := r.e.hasNomatchSet(famOf(s), s)
	if err != nil {
		r.err = err
		return errFallback
	}
	h := s.HeaderOnly()
	r.st.Add(h)
	r.bulks[s.Name], r.replaced[s.Name], r.hadNomatch[s.Name] = bk, true, m
	return nil
}

// load makes the existing set s filled here, with the entries it holds:
// they are read into a Bulk (streamed, never as entries of the model);
// the batch then changes the elements that differ, as the general
// path's diff does (untouched elements keep their timers and counters).
func (r *bulkRestore) load(s *ipset.Set) *ipset.Error {
	if !ipset.BulkSupported(s) {
		return errFallback
	}
	bk := ipset.NewBulk(s)
	bad := false
	err := r.e.eachEntry(famOf(s), s, func() { bk, bad = ipset.NewBulk(s), false },
		func(el *nftables.SetElement) error {
			var timeout uint32
			if s.HasTimeout && el.Timeout > 0 {
				timeout = ipset.RemainingTimeout(el.Expires) // as DecodeEntry
			}
			if !bad && !bk.Load(el.Key, el.Comment, timeout) {
				bad = true
			}
			return nil
		})
	if err != nil {
		r.err = err
		return errFallback
	}
	if bad {
		return errFallback
	}
	r.loaded[s.Name] = true
	return r.replace(s, bk)
}

func (r *bulkRestore) exec(c *ipset.Command) *ipset.Error {
	if c.Err != nil {
		// (whether a line before it fails first: Run's)
		return errFallback
	}
	a := c.Args
	switch c.Op {
	case ipset.OpCreate:
		if r.swapped[a[0]] {
			return errFallback
		}
		if s := r.untouched(a[0]); s != nil {
			// An existing set: the model says whether the create is
			// refused or changes nothing; then its elements are read.
			hs := &ipset.State{Sets: []*ipset.Set{s.HeaderOnly()}}
			if warn, ierr := hs.Exec(c); ierr != nil || warn != "" {
				// (a warning ends the restore: the general path's)
				return cmp.Or(ierr, errFallback)
			}
			return r.load(s)
		}
		n := len(r.st.Sets)
		if warn, ierr := r.st.Exec(c); ierr != nil || warn != "" {
			return cmp.Or(ierr, errFallback)
		}
		if len(r.st.Sets) > n {
			s := r.st.Sets[n]
			if !ipset.BulkSupported(s) {
				return errFallback
			}
			r.bulks[s.Name] = ipset.NewBulk(s)
		}
	case ipset.OpAdd:
		bk := r.target(a[0])
		if bk == nil {
			if s := r.untouched(a[0]); s != nil {
				if ierr := r.load(s); ierr != nil {
					return ierr
				}
				bk = r.target(a[0])
			}
		}
		if bk == nil {
			if r.known.Find(a[0]) != nil || r.swapped[a[0]] {
				return errFallback
			}
			return &ipset.Error{Msg: ipset.MsgNoSet, Status: ipset.StatusError}
		}
		ierr, ok := bk.Add(a, c.Opts.Exist)
		if !ok {
			return errFallback
		}
		return ierr
	case ipset.OpFlush:
		if len(a) == 0 {
			return errFallback
		}
		if bk := r.target(a[0]); bk != nil {
			r.bulks[a[0]] = ipset.NewBulk(bk.Set)
			delete(r.loaded, a[0]) // now flushed and refilled
			return nil
		}
		s := r.untouched(a[0])
		if s == nil || !ipset.BulkSupported(s) {
			return errFallback
		}
		return r.replace(s, ipset.NewBulk(s))
	case ipset.OpDestroy:
		// A new set (never created) or one holding what a replaced set
		// held (its elements are gone with the replacement).
		if len(a) == 0 {
			return errFallback
		}
		switch {
		case r.swapped[a[0]]:
			delete(r.swapped, a[0])
		case r.bulks[a[0]] != nil && !r.replaced[a[0]]:
			delete(r.bulks, a[0])
			r.st.Remove(a[0])
		default:
			return errFallback
		}
	case ipset.OpSwap:
		// A new set and an existing one (the blocklist update): the
		// existing set's elements are replaced by the new set's, and
		// the new set's name holds the old elements until destroyed.
		x, y := a[0], a[1]
		if r.target(x) == nil || r.replaced[x] {
			x, y = y, x
		}
		bk := r.target(x)
		old := r.untouched(y)
		if bk == nil || r.replaced[x] || old == nil {
			return errFallback
		}
		// The model checks the swap and says what the headers become.
		hs := &ipset.State{Sets: []*ipset.Set{bk.Set.HeaderOnly(), old.HeaderOnly()}}
		hs.Sets[0].Name = x
		if _, ierr := hs.Exec(&ipset.Command{Op: ipset.OpSwap, Args: []string{x, y}}); ierr != nil {
			return errFallback
		}
		if ny := hs.Find(y); ny.Header() != old.Header() || ny.Family != old.Family || !ipset.BulkSupported(old) {
			return errFallback
		}
		// (the name keeps its shard copies: the bulk's elements go
		// to the shards old has)
		bk.Set.Shards = old.Shards
		delete(r.bulks, x)
		r.st.Remove(x)
		r.swapped[x] = true
		return r.replace(old, bk)
	default:
		return errFallback
	}
	return nil
}

// bulkElems yields the elements of the nftables set name of s: all of
// them, or (changes) those to delete (dels) or to add.
func bulkElems(s *ipset.Set, bk *ipset.Bulk, name string, changes, dels bool) iter.Seq[*nftables.SetElement] {
	lookup := s.Type.Net() && name == ipset.LookupSetName(s.Name)
	nomatch := s.Type.Net() && name == ipset.NomatchSetName(s.Name)
	shard, sharded := s.ShardIndex(name)
	switch {
	case s.Sharded() && name == ipset.CountSetName(s.Name):
		return bk.CountChanges(changes, dels)
	case s.NestedSet && name == ipset.NestedSetName(s.Name) && changes:
		return bk.NestedChanges(dels)
	case s.NestedSet && name == ipset.NestedSetName(s.Name):
		return bk.NestedElems()
	case sharded && changes:
		return bk.ShardEntryChanges(shard, dels)
	case sharded:
		return bk.ShardEntries(shard)
	case changes && nomatch:
		return bk.NomatchPieceChanges(dels)
	case nomatch:
		return bk.NomatchPieces()
	case changes && lookup:
		return bk.PieceChanges(dels)
	case changes:
		return bk.EntryChanges(dels)
	case lookup:
		return bk.Pieces()
	}
	return bk.Entries()
}
