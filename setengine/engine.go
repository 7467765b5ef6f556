package setengine

import (
	"errors"
	"fmt"
	"github.com/xdptables/xdptables/compat"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// Engine runs ipset commands in the current network namespace.
type Engine struct {
	Conn *kernel.Conn
}

// commit commits b at genid, keeping the rule index of the iptables
// tables valid (ipset changes no rule; see kernel.CarryIndex).
func (e *Engine) commit(b *kernel.Batch, genid uint32) error {
	_ = e.Conn.CarryIndex(b, genid, compat.Tables) // (without it the index is stale: commands read chains)
	return e.commitSized(b, genid)
}

// Result is what a run prints.
type Result struct {
	Stdout, Stderr string
}

func famOf(s *ipset.Set) kernel.Family {
	if s.Family == ipset.Inet6 {
		return kernel.IPv6
	}
	return kernel.IPv4
}

// Load reads every ipset set from the kernel, with its entries and
// references.
func (e *Engine) Load() (*ipset.State, error) {
	return e.load(loadOpts{elems: true, refs: true})
}

// loadOpts says what load reads: which sets (nil: all), whether their
// entries, whether the rules that reference them. nomatch, when not
// nil, is filled with the names of the sets whose nomatch set exists.
type loadOpts struct {
	names   map[string]bool
	elems   bool
	refs    bool
	nomatch map[string]bool
}

// Headers reads the named sets (all when names is nil) without their
// entries or references.
func (e *Engine) Headers(names ...string) (*ipset.State, error) {
	o := loadOpts{}
	if names != nil {
		o.names = map[string]bool{}
		for _, n := range names {
			o.names[n] = true
		}
	}
	return e.load(o)
}

func (e *Engine) load(o loadOpts) (*ipset.State, error) {
	st := &ipset.State{}
	for _, fam := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		// The list is read whole (it is small next to the elements):
		// list:set sets are always loaded, as they reference others.
		infos, err := e.Conn.Sets(fam)
		if err != nil {
			return nil, fmt.Errorf("reading sets: %w", err)
		}
		if len(infos) == 0 {
			continue
		}
		var refs map[string]int
		if o.refs {
			refs = e.references(fam)
		}
		var exists map[string]bool // names of the sets, when needed
		for _, info := range infos {
			if n, ok := ipset.NomatchSetOf(info.Name); ok && o.nomatch != nil {
				o.nomatch[n] = true
			}
			s, ok := ipset.ParseHeader(info.Name, info.Comment)
			if !ok {
				continue
			}
			if s.Sharded() {
				if exists == nil {
					exists = make(map[string]bool, len(infos))
					for _, i := range infos {
						exists[i.Name] = true
					}
				}
				if s.ShardCopies() && !exists[ipset.CountSetName(s.Name)] {
					s.DropShardCopies()
				}
				s.NoteShards(func(n string) bool { return exists[n] })
			}
			if o.names != nil && !o.names[s.Name] && !s.Type.List {
				if s.Slot > 0 {
					st.Reserve(s.Slot)
				}
				continue
			}
			// (rules with --return-nomatch look up the nomatch set)
			s.References = refs[info.Name] + refs[ipset.NomatchSetName(s.Name)]
			if o.elems || s.Type.List {
				if err := e.readEntries(fam, s); err != nil {
					return nil, err
				}
				s.SortLoaded()
			}
			st.Add(s)
		}
	}
	if o.refs {
		// a rule on a list:set looks its members up (relist): it is
		// counted from its text
		lists := map[string]bool{}
		for _, s := range st.Sets {
			if s.Type.List {
				lists[s.Name] = true
			}
		}
		lr := e.listReferences(lists)
		for _, s := range st.Sets {
			s.References += lr[s.Name]
		}
	}
	st.SortBySlot()
	return st, nil
}

// references counts, per nftables set, the rules of our table in fam
// that use it (lookups and set updates).
func (e *Engine) references(fam kernel.Family) map[string]int {
	refs := map[string]int{}
	rules, err := e.Conn.TableRules(fam)
	if err != nil {
		return refs
	}
	for _, r := range rules {
		if isListMemberTest(r) {
			continue
		}
		for i, x := range r.Exprs {
			name := ""
			switch l := x.(type) {
			case *expr.Lookup:
				name = l.SetName
			case *expr.Dynset:
				name = l.SetName
			}
			// -j SET --add-set is one reference in ipset: its guard
			// (an inverted lookup) or the delete of --exist comes
			// right before the add on the same set (compat.SetTarget).
			if name == "" || partOfAdd(r.Exprs[i+1:], name) {
				continue
			}
			refs[name]++
		}
	}
	return refs
}

// partOfAdd reports whether next starts with a dynset add or update on
// set name.
func partOfAdd(next []expr.Any, name string) bool {
	if len(next) == 0 {
		return false
	}
	d, ok := next[0].(*expr.Dynset)
	return ok && d.SetName == name && (d.Operation == unix.NFT_DYNSET_OP_ADD || d.Operation == unix.NFT_DYNSET_OP_UPDATE)
}

// readEntries reads the entries of s from the kernel.
func (e *Engine) readEntries(fam kernel.Family, s *ipset.Set) error {
	s.ReadAt = ipset.Monotime()
	err := e.eachEntry(fam, s, func() { s.ClearEntries(); s.ReadAt = ipset.Monotime() },
		func(el *nftables.SetElement) error {
			if en, ok := s.DecodeEntry(*el); ok {
				s.AppendLoaded(en)
			}
			return nil
		})
	if err != nil {
		return fmt.Errorf("reading set %s: %w", s.Name, err)
	}
	return nil
}

// diff adds to b what turns old into cur.
func diff(b *kernel.Batch, old, cur *ipset.State, nm *nomatchSets) { diffSets(b, old, cur, false, nm) }

// nomatchSets is what the kernel knows about the nomatch sets of net
// types (ipset.NomatchSetName): which exist, and which rules look up.
// A nomatch set exists while its set holds nomatch entries or a rule
// looks it up (the rule creates it; the kernel does not delete a set a
// rule uses): it goes when neither holds any more.
type nomatchSets struct {
	e *Engine
	// exists holds the names of the sets whose nomatch set exists (nil:
	// not read; a set's nomatch entries then tell).
	exists map[string]bool
	used   map[kernel.Family]map[string]bool // nft sets rules look up
}

// has reports whether the nomatch set of s (as loaded) exists.
func (n *nomatchSets) has(s *ipset.Set) bool {
	if n == nil || n.exists == nil {
		return s.HasNomatch()
	}
	return n.exists[s.Name]
}

// inUse reports whether a rule looks up the nomatch set of s; when the
// rules cannot be read it says yes (the set then stays, empty).
func (n *nomatchSets) inUse(s *ipset.Set) bool {
	if n == nil || n.e == nil {
		return true
	}
	fam := famOf(s)
	if n.used == nil {
		n.used = map[kernel.Family]map[string]bool{}
	}
	u, ok := n.used[fam]
	if !ok {
		rules, err := n.e.Conn.TableRules(fam)
		if err != nil {
			return true
		}
		u = map[string]bool{}
		for _, r := range rules {
			for _, x := range r.Exprs {
				if l, ok := x.(*expr.Lookup); ok {
					u[l.SetName] = true
				}
			}
		}
		n.used[fam] = u
	}
	return u[ipset.NomatchSetName(s.Name)]
}

// diffSets is diff; partial says the sets hold only some of their
// entries, and those not read may hold nomatch entries (a nomatch set
// then stays).
func diffSets(b *kernel.Batch, old, cur *ipset.State, partial bool, nm *nomatchSets) {
	tables := map[kernel.Family]bool{}
	for _, s := range cur.Sets {
		if !tables[famOf(s)] {
			b.AddTable(famOf(s))
			tables[famOf(s)] = true
		}
	}
	oldBy := map[string]*ipset.Set{}
	for _, s := range old.Sets {
		oldBy[s.Name] = s
	}
	curBy := map[string]*ipset.Set{}
	for _, s := range cur.Sets {
		curBy[s.Name] = s
	}
	// ensure: n is a shard that may not exist yet, made when it gets
	// elements
	elems := func(fam kernel.Family, o, n ipset.NftSet, ensure bool) {
		have := make(map[string]bool, len(o.Elems))
		for _, e := range o.Elems {
			have[e.ID] = true
		}
		want := make(map[string]bool, len(n.Elems))
		for _, e := range n.Elems {
			want[e.ID] = true
		}
		var dels, adds []nftables.SetElement
		for _, e := range o.Elems {
			if !want[e.ID] {
				dels = append(dels, e.Parts...)
			}
		}
		for _, e := range n.Elems {
			if !have[e.ID] {
				adds = append(adds, e.Parts...)
			}
		}
		set := n.Set
		if len(dels) > 0 {
			b.DelElements(fam, set.Name, dels)
		}
		if len(adds) > 0 {
			if ensure {
				// (without a size: the kernel takes a size given
				// again as the set's new size)
				def := set
				def.Size = 0
				addSet(b, fam, &def, false)
			}
			b.AddElements(fam, set.Name, set.HasTimeout, adds, false)
		}
	}
	create := func(s *ipset.Set, ns ipset.NftSet) {
		if ns.Lazy && len(ns.Elems) == 0 {
			return // (made with its first element)
		}
		set := ns.Set
		addSet(b, famOf(s), &set, true)
		n := 0
		for _, e := range ns.Elems {
			n += len(e.Parts)
		}
		els := make([]nftables.SetElement, 0, n)
		for _, e := range ns.Elems {
			els = append(els, e.Parts...)
		}
		if len(els) > 0 {
			b.AddElements(famOf(s), set.Name, set.HasTimeout, els, false)
		}
	}
	del := func(s *ipset.Set) {
		for _, n := range s.NftSetNames() {
			b.DelSet(famOf(s), n)
		}
		if s.Type.Net() && nm.has(s) {
			b.DelSet(famOf(s), ipset.NomatchSetName(s.Name))
		}
	}
	// add creates s; remade: it replaces a set of the same name (whose
	// rules come back in the same transaction: see rebind).
	add := func(s *ipset.Set, remade bool) {
		for _, ns := range s.NftSetsNoIDs() {
			create(s, ns)
		}
		if s.Type.Net() && (s.HasNomatch() || remade && nm.inUse(s)) {
			create(s, s.Nomatch(false))
		}
	}
	same := func(a, b *ipset.Set) bool { return a.Header() == b.Header() && a.Family == b.Family }
	for _, s := range old.Sets {
		if n := curBy[s.Name]; n == nil || !same(n, s) {
			del(s)
		}
	}
	for _, s := range cur.Sets {
		o := oldBy[s.Name]
		if o == nil || !same(o, s) {
			add(s, o != nil)
			continue
		}
		os, ns := o.NftSets(), s.NftSets()
		for i := range ns {
			if ns[i].Role == ipset.RoleCount {
				// Rewritten whole: what the kernel holds may be above
				// the count read (expired entries).
				if o.StoredCount() != s.StoredCount() {
					setCount(b, famOf(s), s, s.StoredCount())
				}
				continue
			}
			k, shard := s.ShardIndex(ns[i].Set.Name)
			shard = shard && ns[i].Lazy
			mayExist, made := o.ShardMayExist(k), o.ShardMade(k)
			if ns[i].Role == ipset.RoleNested {
				shard, mayExist, made = true, o.NestedMayExist(), o.NestedMade()
			}
			if shard && !mayExist {
				// not made yet: made now if it gets elements
				create(s, ns[i])
				continue
			}
			elems(famOf(s), os[i], ns[i], shard && !made)
		}
		if !s.Type.Net() {
			continue
		}
		switch has, want := nm.has(o), s.HasNomatch(); {
		case want && !has:
			create(s, s.Nomatch(false))
		case !want && has && !partial && !nm.inUse(s):
			b.DelSet(famOf(s), ipset.NomatchSetName(s.Name))
		case want || has:
			elems(famOf(s), o.Nomatch(true), s.Nomatch(true), false)
		}
	}
}

// scope returns what cmds need read from the kernel: the sets they name
// (nil: all) and whether references matter.
func scope(cmds []*ipset.Command) loadOpts {
	o := loadOpts{names: map[string]bool{}, elems: true}
	for _, c := range cmds {
		switch c.Op {
		case ipset.OpList, ipset.OpSave, ipset.OpDestroy, ipset.OpRename:
			o.refs = true
		}
		switch c.Op {
		case ipset.OpList, ipset.OpSave, ipset.OpFlush, ipset.OpDestroy:
			if len(c.Args) == 0 {
				o.names = nil
				return o
			}
			o.names[c.Args[0]] = true
		case ipset.OpSwap, ipset.OpRename:
			o.names[c.Args[0]] = true
			o.names[c.Args[1]] = true
		case ipset.OpAdd, ipset.OpDel, ipset.OpTest:
			o.names[c.Args[0]] = true
			if len(c.Args) > 1 {
				o.names[c.Args[1]] = true // list:set members
				for _, n := range strings.Split(c.Args[1], ",") {
					o.names[n] = true // NAME,before|after,REF
				}
			}
			for i, a := range c.Args[2:] {
				if a := ipset.OptionName(a); a == "before" || a == "after" {
					o.refs = true
					if 3+i < len(c.Args) {
						o.names[c.Args[3+i]] = true // must exist
					}
				}
			}
		default:
			if len(c.Args) > 0 {
				o.names[c.Args[0]] = true
			}
		}
	}
	return o
}

// Run executes cmds (one command, or a restore file's commands) as one
// transaction. The returned error is an *ipset.Error naming the line for
// restore; on any error nothing changes. Only the sets the commands name
// are read; a single add, del or test asks the kernel about the element
// instead of reading the set when it can.
func (e *Engine) Run(cmds []*ipset.Command) (Result, error) {
	if len(cmds) == 1 && cmds[0].Line == 0 && !xdpWatching() {
		if res, err, ok := e.netRun(cmds[0]); ok {
			return res, err
		}
		if res, err, ok := e.fast(cmds[0]); ok {
			return res, err
		}
		if res, err, ok := e.treeRun(cmds[0]); ok {
			return res, err
		}
	}
	opts := scope(cmds)
	opts.nomatch = map[string]bool{}
	if xdpWatching() {
		// AfterCommit mirrors whole states: read every set.
		opts.names = nil
	}
	for attempt := 0; ; attempt++ {
		genid, err := e.Conn.GenID()
		if err != nil {
			return Result{}, kernelErr(err)
		}
		clear(opts.nomatch)
		st, err := e.load(opts)
		if err != nil {
			return Result{}, kernelErr(err)
		}
		old := st.Clone()
		nm := &nomatchSets{e: e, exists: opts.nomatch}
		var out, errOut strings.Builder
		warned := false
		for i, c := range cmds {
			if warned {
				// ipset exits after it printed a restore line's warning
				break
			}
			var ierr *ipset.Error
			switch c.Op {
			case ipset.OpList, ipset.OpSave:
				var sets []*ipset.Set
				if sets, ierr = st.Select(c); ierr == nil {
					st.Write(&out, c, sets)
				}
			default:
				var msg string
				msg, ierr = st.Exec(c)
				if !c.Opts.Quiet {
					errOut.WriteString(msg)
				}
				// test warns only when not quiet; create's warning of
				// ignored options is made (and ends a restore) even so
				warned = msg != "" && c.Line > 0 && (c.Op != ipset.OpTest || !c.Opts.Quiet)
			}
			if ierr != nil {
				if ierr.Status != ipset.StatusUsage {
					// ipset names no line for usage errors.
					ierr.Line = c.Line
				}
				ierr.Quiet = c.Opts.Quiet
				if c.Line > 0 && !ipset.FromUserspace(ierr) && !lookupErr(c, ierr) && (c.Op == ipset.OpAdd || c.Op == ipset.OpDel) {
					if perr := laterParseError(st, cmds[i+1:], c); perr != nil {
						ierr = perr
					}
				}
				res := Result{Stdout: out.String(), Stderr: errOut.String()}
				if len(cmds) == 1 && c.Line == 0 && (c.Op == ipset.OpAdd || c.Op == ipset.OpDel) {
					// ipset adds (deletes) the elements of a range one
					// by one and keeps what it did before an error.
					if retry, err := e.commitPartial(old, st, genid, nm); retry && attempt < 1000 {
						continue
					} else if err != nil {
						return Result{}, kernelErr(err)
					}
				}
				return res, ierr
			}
		}
		for _, s := range st.Sets {
			if err := s.Supported(); err != nil {
				if o := old.Find(s.Name); o == nil || o.Header() != s.Header() || len(o.Entries) != len(s.Entries) {
					return Result{}, &ipset.Error{Msg: "Kernel error received: set type not supported", Status: ipset.StatusError}
				}
			}
		}
		pre, post, rerr := e.rebind(old, st)
		if rerr != nil {
			return Result{}, kernelErr(rerr)
		}
		lpre, lpost, lerr := e.relist(old, st)
		if lerr != nil {
			return Result{}, kernelErr(lerr)
		}
		b := kernel.NewBatch()
		lpre(b)
		pre(b)
		diff(b, old, st, nm)
		post(b)
		lpost(b)
		if b.Len() == 0 {
			return Result{Stdout: out.String(), Stderr: errOut.String()}, nil
		}
		err = e.commit(b, genid)
		if errors.Is(err, kernel.ErrGenerationChanged) && attempt < 1000 {
			continue
		}
		if err != nil {
			return Result{}, kernelErr(err)
		}
		afterCommit(e, old, st)
		return Result{Stdout: out.String(), Stderr: errOut.String()}, nil
	}
}

// lookupErr reports whether err is ipset's answer to the set lookup of
// an add, del or test line (the set does not exist): ipset asks for the
// set's type to parse the element, so it answers as it parses the line,
// not when it sends the batch.
func lookupErr(c *ipset.Command, err *ipset.Error) bool {
	return err.Msg == ipset.MsgNoSet && (c.Op == ipset.OpAdd || c.Op == ipset.OpDel || c.Op == ipset.OpTest)
}

// laterParseError is what ipset answers instead of the kernel's refusal
// of restore line c, an add or del: ipset sends a run of adds (dels) to
// one set as one batch once it has parsed the line after the run, so a
// parse error in the rest of the run or in that line comes first (and
// the batch is never sent). rest are the lines after c.
func laterParseError(st *ipset.State, rest []*ipset.Command, c *ipset.Command) *ipset.Error {
	tmp := st.Clone()
	for _, n := range rest {
		if n.AfterCommit {
			return nil // (the COMMIT line sent the run)
		}
		if n.Op == ipset.OpList || n.Op == ipset.OpSave {
			return nil // (their words were parsed with the file)
		}
		if _, err := tmp.Exec(n); err != nil && (ipset.FromUserspace(err) || lookupErr(n, err)) {
			if err.Status != ipset.StatusUsage {
				err.Line = n.Line
			}
			err.Quiet = n.Opts.Quiet
			return err
		}
		if n.Op != c.Op || len(n.Args) == 0 || n.Args[0] != c.Args[0] {
			return nil // the line that sent the batch
		}
	}
	return nil
}

// commitPartial commits what a failed add or del changed before its
// error; retry says the generation changed.
func (e *Engine) commitPartial(old, st *ipset.State, genid uint32, nm *nomatchSets) (retry bool, err error) {
	lpre, lpost, err := e.relist(old, st)
	if err != nil {
		return false, err
	}
	b := kernel.NewBatch()
	lpre(b)
	diff(b, old, st, nm)
	lpost(b)
	if b.Len() == 0 {
		return false, nil
	}
	err = e.commit(b, genid)
	if errors.Is(err, kernel.ErrGenerationChanged) {
		return true, nil
	}
	if err == nil {
		afterCommit(e, old, st)
	}
	return false, err
}

func kernelErr(err error) error {
	switch {
	case errors.Is(err, unix.EPERM):
		return &ipset.Error{Msg: "Kernel error received: Operation not permitted", Status: ipset.StatusError}
	case errors.Is(err, unix.EBUSY):
		return &ipset.Error{Msg: ipset.MsgDestroyBusy, Status: ipset.StatusError}
	case setFull(err):
		return &ipset.Error{Msg: ipset.MsgFull, Status: ipset.StatusError}
	}
	return &ipset.Error{Msg: "Kernel error received: " + err.Error(), Status: ipset.StatusError}
}

// setFull reports whether the kernel refused an element for the set's
// size (ENFILE; ENOSPC from a set that cannot grow): ipset's "Hash is
// full".
func setFull(err error) bool { return errors.Is(err, unix.ENFILE) || errors.Is(err, unix.ENOSPC) }

// addSet creates nftables set set of an ipset set (see ipset.LongGC).
func addSet(b *kernel.Batch, fam kernel.Family, set *nftables.Set, exclusive bool) int {
	if ipset.LongGC(*set) {
		return b.AddSetLongGC(fam, set, exclusive)
	}
	return b.AddSet(fam, set, exclusive)
}
