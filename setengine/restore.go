package setengine

import (
	"errors"
	"iter"
	"runtime/debug"

	"github.com/google/nftables"

	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// Restore of sets the file creates. A restore file that only creates
// new sets and adds to them (the boot-time and blocklist case) needs
// nothing from the kernel but the names of the sets that exist: the
// sets are filled as ipset.Bulk values, never as entries of the model,
// and their elements are encoded into the batch one at a time. The
// result, errors and line numbers included, are those of Run on the
// parsed file.

// errFallback stops the walk of a file that needs the general path.
var errFallback = &ipset.Error{Msg: "general path"}

// Restore runs a restore file (already checked with
// ipset.EachRestoreCommand: it parses) as one transaction. exist is the
// command line's -exist. handled is false when the file does something
// other than creating sets that do not exist and adding to them: then
// nothing happened and the caller runs it with Run.
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
		st := &ipset.State{}
		bulks := map[string]*ipset.Bulk{}
		werr := ipset.EachRestoreCommand(text, func(c *ipset.Command) *ipset.Error {
			c.Opts.Exist = c.Opts.Exist || exist
			var ierr *ipset.Error
			switch c.Op {
			case ipset.OpCreate:
				if known.Find(c.Args[0]) != nil {
					return errFallback
				}
				n := len(st.Sets)
				if _, ierr = st.Exec(c); ierr == nil && len(st.Sets) > n {
					s := st.Sets[n]
					if !ipset.BulkSupported(s) {
						return errFallback
					}
					bulks[s.Name] = ipset.NewBulk(s)
				}
			case ipset.OpAdd:
				b := bulks[c.Args[0]]
				if b == nil {
					if known.Find(c.Args[0]) != nil {
						return errFallback
					}
					ierr = &ipset.Error{Msg: ipset.MsgNoSet, Status: ipset.StatusError}
					break
				}
				var ok bool
				if ierr, ok = b.Add(c.Args, c.Opts.Exist); !ok {
					return errFallback
				}
			default:
				return errFallback
			}
			if ierr != nil {
				ierr.Line = c.Line
			}
			return ierr
		})
		if werr == errFallback {
			return Result{}, nil, false
		}
		if werr != nil {
			return Result{}, werr, true
		}
		b := kernel.NewBatch()
		bulkBatch(b, st, bulks)
		if b.Len() == 0 {
			return Result{}, nil, true
		}
		cerr := e.Conn.Commit(b, genid)
		if errors.Is(cerr, kernel.ErrGenerationChanged) && attempt < 1000 {
			continue
		}
		if cerr != nil {
			return Result{}, atFirst(kernelErr(cerr)), true
		}
		return Result{}, nil, true
	}
}

// bulkBatch adds to b the sets of st (all new, filled as bulks), as
// diff adds sets that are new.
func bulkBatch(b *kernel.Batch, st *ipset.State, bulks map[string]*ipset.Bulk) {
	tables := map[kernel.Family]bool{}
	for _, s := range st.Sets {
		if !tables[famOf(s)] {
			b.AddTable(famOf(s))
			tables[famOf(s)] = true
		}
	}
	// The batch's size is known in advance: one allocation for it.
	size := 0
	count := map[string]int{}
	for _, s := range st.Sets {
		bk := bulks[s.Name]
		for _, ns := range s.NftSetsNoIDs() {
			n := 0
			for el := range bulkElems(s, bk, ns.Set.Name) {
				size += kernel.ElementSize(len(el.Key), len(el.KeyEnd), el.IntervalEnd, ns.Set.HasTimeout && el.Timeout != 0, len(el.Comment))
				n++
			}
			count[ns.Set.Name] = n
		}
	}
	// What parsing left behind goes back to the system first: the
	// batch is the largest piece of memory a restore needs.
	debug.FreeOSMemory()
	b.Grow(size+size/32+4096, 0)
	for _, s := range st.Sets {
		bk := bulks[s.Name]
		for _, ns := range s.NftSetsNoIDs() {
			set := ns.Set
			b.AddSet(famOf(s), &set, true)
			if count[set.Name] > 0 {
				b.AddElementsSeq(famOf(s), set.Name, set.HasTimeout, bulkElems(s, bk, set.Name), false)
			}
		}
		if s.Type.Net() && bk.HasNomatch() {
			m := s.MarkerSet()
			b.AddSet(famOf(s), &m, false)
		}
	}
}

// bulkElems yields the elements of the nftables set name of s.
func bulkElems(s *ipset.Set, bk *ipset.Bulk, name string) iter.Seq[*nftables.SetElement] {
	if s.Type.Net() && name == ipset.LookupSetName(s.Name) {
		return bk.Pieces()
	}
	return bk.Entries()
}
