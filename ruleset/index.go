package ruleset

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
)

// The rule index (kernel/ruleindex.go stores it) lets -C and -D by rule
// find the rule without dumping its chain. Per iptables table it maps
// indexKey(chain, spec) to how many rules of the chain have that spec and
// the handle of one of them, and it is written in the same transaction as
// the rules. It can be trusted only while nobody else changed the ruleset:
// its state element names the generation it is valid for (a batch checked
// at generation G commits as G+1), so any transaction that does not
// carry the index forward (another tool, an older xdptables, ipset) makes
// it stale, and the commands fall back to reading the chain.
//
// Counts are exact while the index is valid; handles are hints: a rule's
// handle is predicted from the table's last handle, which a batch the
// kernel refused may have moved on. A hint is verified by reading that
// one rule, and -D trusts an entry only when exactly one rule has it
// (otherwise it must find the first in chain order and reads the chain).
//
// The index of a table becomes valid when the whole table is known to be
// replaced: a restore without --noflush of it, -F of every chain, or the
// first command that creates our table. A change the builder cannot
// account for exactly (a rename, a flush of a chain whose rules were not
// read) makes the table's index stale until then.

// indexKey is the key of rule spec (compared as -C/-D compare rules) in
// chain.
func indexKey(chain, spec string) kernel.IndexKey {
	h := sha256.New()
	h.Write([]byte(chain))
	h.Write([]byte{0})
	h.Write([]byte(spec))
	var k kernel.IndexKey
	copy(k[:], h.Sum(nil))
	if k == (kernel.IndexKey{}) {
		k[0] = 1 // the zero key is the state's
	}
	return k
}

// tableBit is the bit of an iptables table in IndexState.Valid.
func tableBit(table string) uint8 {
	for i, t := range compat.Tables {
		if t == table {
			return 1 << i
		}
	}
	return 0
}

const allTables = 1<<5 - 1

// indexInfo is what a command found of the index at its generation.
type indexInfo struct {
	gen   uint32
	state kernel.IndexState
	// valid are the tables whose index is complete at gen.
	valid uint8
	// present says the state exists at gen (so do all index maps).
	present bool
	// fresh says our table does not exist: a batch that creates it
	// creates the index too, and knows every handle (a new table starts
	// from 0).
	fresh bool
}

// readIndex reads the index state at generation gen.
func (e *Engine) readIndex(gen uint32) (indexInfo, error) {
	info := indexInfo{gen: gen}
	st, ok, err := e.Conn.IndexState(e.kfam())
	if err != nil {
		return info, err
	}
	if !ok {
		exists, err := e.Conn.TableExists(e.kfam())
		if err != nil {
			return info, err
		}
		info.fresh = !exists
		return info, nil
	}
	info.present, info.state = true, st
	if st.GenID == gen {
		info.valid = st.Valid
	}
	return info, nil
}

// probe commits a batch that makes sure the index maps exist and learns
// the table's last handle, carrying the valid tables forward; it returns
// the state as the next batch (at gen+1) finds it, with the handle known
// to this process only.
func (e *Engine) probe(info indexInfo) (indexInfo, uint64, error) {
	b := kernel.NewBatch()
	b.AddTable(e.kfam())
	b.AddIndexSet(e.kfam(), kernel.IndexStateSet)
	for _, t := range compat.Tables {
		b.AddIndexSet(e.kfam(), kernel.IndexSet(t))
	}
	b.ProbeHandles(e.kfam())
	next := kernel.IndexState{GenID: info.gen + 1, Valid: info.valid}
	b.PutIndexState(e.kfam(), next)
	if err := e.Conn.Commit(b, info.gen); err != nil {
		return info, 0, err
	}
	h, _, ok := b.Echoed()
	if !ok {
		return info, 0, errors.New("the kernel did not report the probe's handle")
	}
	return indexInfo{gen: info.gen + 1, state: next, valid: info.valid, present: true}, h, nil
}

// entry is an index entry being built: its handle is a rule's, or, for
// a rule the batch adds (rel), the number of handles the batch had taken
// with it (Batch.Handles), made absolute once the table's last handle
// before the batch is known.
type entry struct {
	count  uint32
	handle uint64
	rel    bool
}

// entryChange is a new value for one key of a table's index.
type entryChange struct {
	key   kernel.IndexKey
	entry entry // count 0: the key goes away
}

// indexWriter collects the index changes of one batch.
type indexWriter struct {
	info indexInfo
	// base is the table's last handle before the batch, if baseKnown;
	// otherwise new rules get no handle hint.
	base      uint64
	baseKnown bool
	// lookup reads the current entry of a key (counts only matter while
	// the table's index is valid).
	lookup func(table string, key kernel.IndexKey) (kernel.IndexEntry, error)
	// stale are the tables whose index this batch makes stale; rebuilt
	// the ones it replaces entirely.
	stale, rebuilt uint8
	changes        map[string][]entryChange
	// build accumulates, per rebuilt table, the entries of its rules in
	// the order they are added.
	build map[string]map[kernel.IndexKey]*entry
	order map[string][]kernel.IndexKey
	// what finish wrote: the state's tables and the batch's handles
	wrote        bool
	wroteValid   uint8
	wroteHandles uint64
}

// newIndexWriter starts the index changes of a batch built from what was
// read at info.gen.
func newIndexWriter(info indexInfo, lookup func(string, kernel.IndexKey) (kernel.IndexEntry, error)) *indexWriter {
	w := &indexWriter{info: info, lookup: lookup, changes: map[string][]entryChange{},
		build: map[string]map[kernel.IndexKey]*entry{}, order: map[string][]kernel.IndexKey{}}
	switch {
	case info.fresh:
		// a new table starts handing out handles from 1; every iptables
		// table starts empty, so the index of each is complete
		w.baseKnown = true
		w.rebuilt = allTables
	case info.valid != 0 && info.state.LastHandle != 0:
		w.base, w.baseKnown = info.state.LastHandle, true
	}
	return w
}

// needsProbe says whether the batch rebuilds an index without knowing the
// table's last handle (then Engine.probe it and call probed).
func (w *indexWriter) needsProbe() bool {
	return w != nil && !w.baseKnown && w.rebuilt&^w.stale != 0 && !w.info.fresh
}

// probed takes the state a probe left: the batch now commits at its
// generation.
func (w *indexWriter) probed(info indexInfo, last uint64) {
	w.info.gen, w.info.state, w.info.present = info.gen, info.state, true
	w.base, w.baseKnown = last, true
}

func (w *indexWriter) resolve(e entry) kernel.IndexEntry {
	h := e.handle
	if e.rel {
		h = 0
		if w.baseKnown {
			h = w.base + e.handle
		}
	}
	return kernel.IndexEntry{Handle: h, Count: e.count}
}

// maintained says whether changes to table must be written to its index.
func (w *indexWriter) maintained(table string) bool {
	bit := tableBit(table)
	return w != nil && (w.info.valid|w.rebuilt)&bit != 0 && w.stale&bit == 0
}

// rebuild starts the index of table over: the batch replaces every rule
// of it, and each one it adds is given to added. Only while the index
// maps exist: at a valid state, or after a probe.
func (w *indexWriter) rebuild(table string) {
	if w == nil {
		return
	}
	bit := tableBit(table)
	w.rebuilt |= bit
	w.stale &^= bit
	w.changes[table] = nil
	w.build[table] = map[kernel.IndexKey]*entry{}
	w.order[table] = nil
}

// rebuilding says whether added must be told the rules of table.
func (w *indexWriter) rebuilding(table string) bool {
	return w != nil && w.build[table] != nil
}

// added records a rule of a rebuilt table, in chain order: a rule the
// batch adds has handle 0 and at = Batch.Handles right after it.
func (w *indexWriter) added(table, chain, spec string, handle, at uint64) {
	m := w.build[table]
	if m == nil {
		return
	}
	k := indexKey(chain, spec)
	if e := m[k]; e != nil {
		e.count++
		return
	}
	e := &entry{handle: handle, count: 1}
	if handle == 0 {
		e.handle, e.rel = at, true
	}
	m[k] = e
	w.order[table] = append(w.order[table], k)
}

// view records the index changes of a view the builder has emitted.
func (w *indexWriter) view(v *View) error {
	if w == nil {
		return nil
	}
	if v.replaced {
		w.rebuild(v.Table)
		for _, n := range v.names {
			c := v.Chains[n]
			if c == nil || c.deleted || !(c.InKernel || c.create) {
				continue
			}
			for _, rs := range c.Rules {
				w.added(v.Table, c.Name, rs.Spec, rs.Handle, rs.hint)
			}
		}
		return nil
	}
	for _, n := range v.names {
		c := v.Chains[n]
		if c == nil || !(c.rulesModified || c.flushed || c.deleted || c.renameFrom != "") {
			continue
		}
		if err := w.chain(v, c); err != nil {
			return err
		}
	}
	return nil
}

// invalidate makes the index of table stale.
func (w *indexWriter) invalidate(table string) {
	if w != nil {
		w.stale |= tableBit(table)
		delete(w.build, table)
		w.changes[table] = nil
	}
}

// chain records the index changes of one chain of a view after the
// builder emitted its operations.
func (w *indexWriter) chain(v *View, c *ChainState) error {
	table := v.Table
	if !w.maintained(table) || w.build[table] != nil {
		return nil
	}
	if c.renameFrom != "" && c.InKernel {
		// the chain's keys and those of the rules jumping to it change
		w.invalidate(table)
		return nil
	}
	var after []*RuleState
	if !c.deleted {
		after = c.Rules
	}
	if !c.InKernel || (c.Loaded && !c.partial) {
		// before and after are both known
		before := c.orig
		if !c.InKernel {
			before = nil
		}
		old := groupRules(c.Name, before)
		cur := groupRules(c.Name, after)
		for _, k := range old.order {
			if _, ok := cur.m[k]; !ok {
				w.changes[table] = append(w.changes[table], entryChange{key: k})
			}
		}
		for _, k := range cur.order {
			if o, ok := old.m[k]; !ok || *o != *cur.m[k] {
				w.changes[table] = append(w.changes[table], entryChange{key: k, entry: *cur.m[k]})
			}
		}
		return nil
	}
	if c.flushed || c.deleted {
		w.invalidate(table)
		return nil
	}
	// only some rules of the chain are known: apply the differences to
	// the entries as they are
	delta := map[kernel.IndexKey]int{}
	var keys []kernel.IndexKey
	removed := map[uint64]bool{}
	for _, rs := range c.removedRules {
		k := indexKey(c.Name, rs.Spec)
		if _, ok := delta[k]; !ok {
			keys = append(keys, k)
		}
		delta[k]--
		removed[rs.Handle] = true
	}
	for _, rs := range c.Rules {
		if rs.Handle == 0 {
			k := indexKey(c.Name, rs.Spec)
			if _, ok := delta[k]; !ok {
				keys = append(keys, k)
			}
			delta[k]++
		}
	}
	known := groupRules(c.Name, c.Rules)
	for _, k := range keys {
		if delta[k] == 0 {
			continue
		}
		e, err := w.lookup(table, k)
		if err != nil {
			return err
		}
		n := int(e.Count) + delta[k]
		if n < 0 {
			w.invalidate(table) // the index does not know these rules
			return nil
		}
		ne := entry{count: uint32(n)}
		switch kn := known.m[k]; {
		case n == 0:
		case kn != nil && int(kn.count) == n:
			ne.handle, ne.rel = kn.handle, kn.rel // every such rule is in the view
		case e.Count > 0 && !removed[e.Handle]:
			ne.handle = e.Handle
		}
		w.changes[table] = append(w.changes[table], entryChange{key: k, entry: ne})
	}
	return nil
}

// ruleGroups counts rules by key, keeping the handle of the first.
type ruleGroups struct {
	m     map[kernel.IndexKey]*entry
	order []kernel.IndexKey
}

func groupRules(chain string, rules []*RuleState) ruleGroups {
	g := ruleGroups{m: map[kernel.IndexKey]*entry{}}
	for _, rs := range rules {
		k := indexKey(chain, rs.Spec)
		if e := g.m[k]; e != nil {
			e.count++
			continue
		}
		e := &entry{handle: rs.Handle, count: 1}
		if rs.Handle == 0 {
			e.handle, e.rel = rs.hint, true
		}
		g.m[k] = e
		g.order = append(g.order, k)
	}
	return g
}

// finish adds the index changes and the new state to b; fam is the
// family of the batch.
func (w *indexWriter) finish(b *kernel.Batch, fam kernel.Family, tableCreated bool) {
	if w == nil {
		return
	}
	if w.info.fresh {
		if !tableCreated {
			return // the batch does not create our table: no index
		}
		b.AddIndexSet(fam, kernel.IndexStateSet)
		for _, t := range compat.Tables {
			b.AddIndexSet(fam, kernel.IndexSet(t))
		}
	}
	valid := (w.info.valid | w.rebuilt) &^ w.stale
	if valid == 0 && w.info.valid == 0 {
		return // there was no index and there is none
	}
	for _, t := range compat.Tables {
		bit := tableBit(t)
		if valid&bit == 0 {
			continue
		}
		if m := w.build[t]; m != nil {
			if !w.info.fresh {
				b.FlushSet(fam, kernel.IndexSet(t))
			}
			entries := make([]kernel.IndexEntry, len(w.order[t]))
			for i, k := range w.order[t] {
				entries[i] = w.resolve(*m[k])
			}
			if len(entries) > 0 {
				b.PutIndex(fam, t, w.order[t], entries)
			}
			continue
		}
		ch := w.changes[t]
		if len(ch) == 0 {
			continue
		}
		keys := make([]kernel.IndexKey, len(ch))
		var putKeys []kernel.IndexKey
		var puts []kernel.IndexEntry
		for i, c := range ch {
			keys[i] = c.key
			if c.entry.count > 0 {
				putKeys = append(putKeys, c.key)
				puts = append(puts, w.resolve(c.entry))
			}
		}
		b.DestroyIndex(fam, t, keys)
		if len(puts) > 0 {
			b.PutIndex(fam, t, putKeys, puts)
		}
	}
	last := uint64(0)
	if w.baseKnown {
		last = w.base + b.Handles()
	}
	b.PutIndexState(fam, kernel.IndexState{GenID: w.info.gen + 1, Valid: valid, LastHandle: last})
	w.wrote, w.wroteValid, w.wroteHandles = true, valid, b.Handles()
}

// newRuleEntries returns the entries of table that point at rules the
// batch added, resolved with the current base.
func (w *indexWriter) newRuleEntries(table string) ([]kernel.IndexKey, []kernel.IndexEntry) {
	var keys []kernel.IndexKey
	var entries []kernel.IndexEntry
	if m := w.build[table]; m != nil {
		for _, k := range w.order[table] {
			if e := m[k]; e.rel {
				keys, entries = append(keys, k), append(entries, w.resolve(*e))
			}
		}
		return keys, entries
	}
	for _, c := range w.changes[table] {
		if c.entry.rel && c.entry.count > 0 {
			keys, entries = append(keys, c.key), append(entries, w.resolve(c.entry))
		}
	}
	return keys, entries
}

// repairHints runs after a batch that wrote the index committed at gen:
// the kernel reported the handle of the last object the batch created,
// which shows the table's real last handle before the batch. When the
// index was given other handles (a batch the kernel refused earlier took
// handles, or the last handle was not known), a second transaction
// rewrites the entries of the new rules and the state. It is only done
// if nothing else committed in between; otherwise the hints stay wrong,
// which costs the commands that meet them a read of the chain.
func (e *Engine) repairHints(bl *builder, gen uint32) {
	w := bl.ix
	if w == nil || !w.wrote {
		return
	}
	h, at, ok := bl.b.Echoed()
	if !ok || h < at {
		return
	}
	base := h - at
	if w.baseKnown && base == w.base {
		return
	}
	w.base, w.baseKnown = base, true
	b := kernel.NewBatch()
	for _, t := range compat.Tables {
		if w.wroteValid&tableBit(t) == 0 {
			continue
		}
		keys, entries := w.newRuleEntries(t)
		if len(keys) > 0 {
			b.DestroyIndex(e.kfam(), t, keys)
			b.PutIndex(e.kfam(), t, keys, entries)
		}
	}
	b.PutIndexState(e.kfam(), kernel.IndexState{GenID: gen + 2, Valid: w.wroteValid, LastHandle: base + w.wroteHandles})
	_ = e.Conn.Commit(b, gen+1)
}

// lookupFunc reads index entries for an indexWriter, answering from seen
// (entries a fast -C/-D already read) first.
func (e *Engine) lookupFunc(seen map[kernel.IndexKey]kernel.IndexEntry) func(string, kernel.IndexKey) (kernel.IndexEntry, error) {
	return func(table string, k kernel.IndexKey) (kernel.IndexEntry, error) {
		if ent, ok := seen[k]; ok {
			return ent, nil
		}
		ent, _, err := e.Conn.IndexLookup(e.kfam(), table, k)
		return ent, err
	}
}

// loadIndexed loads what -C/-D need through the index: the chains, and
// in the command's chain only the rules the index points to. ok is false
// when the index cannot answer (then load the chain); seen holds the
// entries read (absent keys with Count 0).
func (e *Engine) loadIndexed(cmd *compat.Command, n need, info indexInfo) (v *View, seen map[kernel.IndexKey]kernel.IndexEntry, ok bool, err error) {
	v, err = e.load(cmd.Table, need{chains: n.chains})
	if err != nil {
		return nil, nil, false, err
	}
	c := v.existing(cmd.Chain)
	if c == nil {
		return v, nil, true, nil // Apply gives the error
	}
	seen = map[kernel.IndexKey]kernel.IndexEntry{}
	var rules []*RuleState
	kchain := cmd.Table + "." + c.Name
	for _, r := range cmd.Rules {
		s := spec(r)
		k := indexKey(c.Name, s)
		if _, dup := seen[k]; dup {
			return nil, nil, false, nil
		}
		ent, _, err := e.Conn.IndexLookup(e.kfam(), cmd.Table, k)
		if err != nil {
			return nil, nil, false, err
		}
		seen[k] = ent
		if ent.Count == 0 {
			continue // no such rule: Apply says so
		}
		if ent.Handle == 0 || (cmd.Op == compat.OpDelete && ent.Count != 1) {
			return nil, nil, false, nil
		}
		kr, found, err := e.Conn.GetRule(e.kfam(), kchain, ent.Handle)
		if err != nil {
			return nil, nil, false, err
		}
		if !found {
			return nil, nil, false, nil
		}
		got, err := e.translate(cmd.Table, c.Name, &kr)
		if err != nil || spec(got) != s {
			return nil, nil, false, nil
		}
		rs := &RuleState{Rule: got, Spec: s, Handle: kr.Handle}
		if !n.dropKernel {
			rs.kernel = &kr
		}
		rules = append(rules, rs)
	}
	c.Rules, c.partial = rules, true
	return v, seen, true, nil
}

// finishIndex adds the index changes to a built batch that holds
// anything, first probing the table's last handle if the batch rebuilds
// an index without it; it returns the generation to commit at.
func (e *Engine) finishIndex(bl *builder, gen uint32) (uint32, error) {
	w := bl.ix
	if w == nil || bl.b.Len() == 0 {
		return gen, nil
	}
	if w.needsProbe() {
		info, last, err := e.probe(w.info)
		if err != nil {
			return gen, err
		}
		w.probed(info, last)
		gen = info.gen
	}
	w.finish(bl.b, e.kfam(), bl.tabled != nil)
	return gen, nil
}

// IndexReport is what CheckIndex found.
type IndexReport struct {
	// Valid are the iptables tables whose index is valid.
	Valid []string
	// Hints counts entries of single rules, Exact those whose handle is
	// the rule's.
	Hints, Exact int
}

// CheckIndex compares the rule index of every table it claims to cover
// with the rules in the kernel (read in full): the same keys with the
// same counts. It returns an error describing the first difference.
func (e *Engine) CheckIndex() (IndexReport, error) {
	var rep IndexReport
	gen, err := e.Conn.GenID()
	if err != nil {
		return rep, err
	}
	info, err := e.readIndex(gen)
	if err != nil {
		return rep, err
	}
	for _, t := range compat.Tables {
		if info.valid&tableBit(t) == 0 {
			continue
		}
		rep.Valid = append(rep.Valid, t)
		v, err := e.load(t, need{allRules: true, dropKernel: true})
		if err != nil {
			return rep, fmt.Errorf("table %s: %w", t, err)
		}
		want := map[kernel.IndexKey]*entry{}
		what := map[kernel.IndexKey]string{}
		for _, n := range v.names {
			c := v.Chains[n]
			g := groupRules(c.Name, c.Rules)
			for k, e := range g.m {
				want[k] = e
				what[k] = c.Name + " " + c.Rules[0].Spec
				for _, rs := range c.Rules {
					if indexKey(c.Name, rs.Spec) == k {
						what[k] = c.Name + " " + rs.Spec
						break
					}
				}
			}
		}
		got, err := e.Conn.IndexEntries(e.kfam(), t)
		if err != nil {
			return rep, err
		}
		for k, w := range want {
			g, ok := got[k]
			if !ok || g.Count != w.count {
				return rep, fmt.Errorf("table %s: rule -A %s: %d in the chain, index has %d", t, what[k], w.count, g.Count)
			}
			if w.count == 1 {
				rep.Hints++
				if g.Handle == w.handle {
					rep.Exact++
				}
			}
		}
		for k, g := range got {
			if _, ok := want[k]; !ok {
				return rep, fmt.Errorf("table %s: index has %d rules for key %x that no chain has", t, g.Count, k)
			}
		}
	}
	if gen2, err := e.Conn.GenID(); err != nil || gen2 != gen {
		return rep, fmt.Errorf("ruleset changed while checking the index (%v)", err)
	}
	return rep, nil
}
