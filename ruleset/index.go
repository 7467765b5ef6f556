package ruleset

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
)

// The rule index (kernel/ruleindex.go stores it) lets -C and -D by rule
// find the rule without dumping its chain. Per iptables table a map, in
// the same transactions as the rules, holds:
//
//   - for an indexed chain, a marker (chainKey);
//   - for the rules of indexed chains, per ruleKey(chain, rule) a count
//     that is never below the number of such rules in the chain, and the
//     handle of one of them (a hint).
//
// Counts may be too high (a chain flushed without reading its rules
// leaves its entries behind): only a count of 0 (no rule) and a count of
// 1 with the hinted rule read back and found equal (the only one) are
// trusted; anything else reads the chain as before. A chain without a
// marker (renamed, or small when the table was restored) is read too.
//
// The whole index can be trusted only while nobody else changed the
// ruleset: its state element names the generation it is valid for (a
// batch checked at generation G commits as G+1), so any transaction that
// does not carry the index forward (another tool, an older xdptables,
// ipset) makes it stale until the table is rebuilt: by a restore without
// --noflush, -F of every chain, or the command that creates our table.
//
// Handles are predicted from the table's last handle, kept in the state;
// the kernel reports back the handle of the batch's last object, and when
// the prediction was wrong (a batch the kernel refused took handles too)
// a second transaction corrects the batch's entries (repairHints).

// ruleKey is the key of a rule (as -C/-D compare rules) of chain. A jump
// or goto to a user chain counts without its target, so that renaming
// the target changes no key (rules that differ only there share one, and
// their count is the sum).
func ruleKey(chain string, rs *RuleState) kernel.IndexKey {
	return indexKey(chain, keyText(rs.Rule, rs.Spec))
}

func keyText(r *compat.Rule, text string) string {
	if t, ok := r.Target.(*compat.ChainTarget); !ok || t.IsVerdict() {
		return text
	}
	return ruleKeyText(r)
}

// ruleKeyText is keyText of a rule whose spec is not known yet.
func ruleKeyText(r *compat.Rule) string {
	t, ok := r.Target.(*compat.ChainTarget)
	if !ok || t.IsVerdict() {
		return spec(r)
	}
	c := *r
	c.Target = &compat.ChainTarget{Goto: t.Goto}
	return spec(&c)
}

// ruleKeyTextExact is ruleKeyText of r given its exact text: that text
// itself when it is also the key's (no jump to a user chain, and the
// exact text is the -S text spec gives), which saves printing the rule
// again for each rule a restore indexes.
func ruleKeyTextExact(r *compat.Rule, exact string) string {
	if t, ok := r.Target.(*compat.ChainTarget); (!ok || t.IsVerdict()) && compat.ExactIsCanonical(r) && recentDefaultMasks(r) == 0 {
		return exact
	}
	return ruleKeyText(r)
}

// chainKey is the key of chain's marker.
func chainKey(chain string) kernel.IndexKey { return indexKey("\x01chain", chain) }

// indexKey hashes chain and text into a key. (Keys made another way
// need another version of the index state: kernel.IndexState.)
func indexKey(chain, text string) kernel.IndexKey {
	var buf [512]byte
	in := append(append(append(buf[:0], chain...), 0), text...)
	sum := sha256.Sum256(in)
	k := kernel.IndexKey(sum[:16])
	if k == (kernel.IndexKey{}) {
		k[0] = 1 // the zero key is the state's
	}
	return k
}

// indexedMin is the number of rules from which a restore indexes a
// chain: reading a smaller chain takes one netlink datagram.
const indexedMin = 16

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
	// other is the index state of the other family when it is valid at
	// gen: the generation is shared, so every batch carries it forward.
	other *kernel.IndexState
	// off says the kernel cannot keep the index (kernel.IndexSupported).
	off bool
}

// otherFamily is the family whose index a batch of e carries forward.
func (e *Engine) otherFamily() kernel.Family {
	if e.kfam() == kernel.IPv4 {
		return kernel.IPv6
	}
	return kernel.IPv4
}

// carryOther adds to b the other family's state, valid one generation
// later (b commits at gen and changes nothing of that family).
func (e *Engine) carryOther(b *kernel.Batch, info indexInfo) {
	if info.other != nil {
		st := *info.other
		st.GenID = info.gen + 1
		b.PutIndexState(e.otherFamily(), st)
	}
}

// readIndex reads the index state at generation gen.
func (e *Engine) readIndex(gen uint32) (indexInfo, error) {
	info := indexInfo{gen: gen}
	if !kernel.IndexSupported() {
		info.off = true
		return info, nil
	}
	if o, ok, err := e.Conn.IndexState(e.otherFamily(), gen); err != nil {
		return info, err
	} else if ok && o.GenID == gen && o.Valid != 0 {
		info.other = &o
	}
	st, ok, err := e.Conn.IndexState(e.kfam(), gen)
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
	e.carryOther(b, info)
	if err := e.Conn.Commit(b, info.gen); err != nil {
		return info, 0, err
	}
	h, _, ok := b.Echoed()
	if !ok {
		return info, 0, errors.New("the kernel did not report the probe's handle")
	}
	out := indexInfo{gen: info.gen + 1, state: next, valid: info.valid, present: true, other: info.other}
	if out.other != nil {
		o := *out.other
		o.GenID = out.gen
		out.other = &o
	}
	return out, h, nil
}

// entry is an index entry being built: its handle is a rule's, or, for
// a rule the batch adds (rel), the number of handles the batch had taken
// with it (Batch.Handles), made absolute once the table's last handle
// before the batch is known.
type entry struct {
	handle uint64
	count  uint32
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
	// lookup reads the current entry of a key.
	lookup func(table string, key kernel.IndexKey) (kernel.IndexEntry, bool, error)
	// rebuilt are the tables whose index the batch builds anew (it
	// replaces all their rules)
	rebuilt uint8
	changes map[string][]entryChange
	build   map[string]*tableBuild
	// what finish wrote: the state's tables and the batch's handles
	wrote        bool
	wroteValid   uint8
	wroteHandles uint64
}

// tableBuild is the index of a table being rebuilt: its keys in the
// order of their first rule, their entries and chains (nothing the
// garbage collector must scan, for the 100k rules of a restore).
type tableBuild struct {
	pos     keyTable // finds a key in keys
	keys    []kernel.IndexKey
	entries []entry
	chainOf []uint32 // index into chains
	chains  []string
	rules   []uint32 // rules per chain
	chainNo map[string]uint32
	// streamed: the table comes from a streamed restore, which tells
	// only of the chains it indexes (and of all their rules)
	streamed bool
}

// newIndexWriter starts the index changes of a batch built from what was
// read at info.gen.
func newIndexWriter(info indexInfo, lookup func(string, kernel.IndexKey) (kernel.IndexEntry, bool, error)) *indexWriter {
	if info.off {
		return nil
	}
	w := &indexWriter{info: info, lookup: lookup, changes: map[string][]entryChange{}, build: map[string]*tableBuild{}}
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
	return w != nil && !w.baseKnown && w.rebuilt != 0 && !w.info.fresh
}

// probed takes the state a probe left: the batch now commits at its
// generation.
func (w *indexWriter) probed(info indexInfo, last uint64) {
	w.info.gen, w.info.state, w.info.present, w.info.other = info.gen, info.state, true, info.other
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
	return w != nil && (w.info.valid|w.rebuilt)&bit != 0
}

// rebuild starts the index of table over: the batch replaces every rule
// of it, and each one it adds is given to added. (The index maps exist:
// the state is valid, or the table is new, or needsProbe.)
func (w *indexWriter) rebuild(table string, streamed bool) {
	if w == nil {
		return
	}
	bit := tableBit(table)
	w.rebuilt |= bit
	w.changes[table] = nil
	w.build[table] = &tableBuild{chainNo: map[string]uint32{}, streamed: streamed}
}

// reserve makes room in the index of table being rebuilt for n rules (a
// restore counts them first): 100k keys grown by doubling would take
// twice their room at the end.
func (w *indexWriter) reserve(table string, n int) {
	if w == nil || w.build[table] == nil || len(w.build[table].keys) > 0 {
		return
	}
	tb := w.build[table]
	tb.pos = newKeyTable(n)
	tb.keys = make([]kernel.IndexKey, 0, n)
	tb.entries = make([]entry, 0, n)
	tb.chainOf = make([]uint32, 0, n)
}

// rebuilding says whether added must be told the rules of table.
func (w *indexWriter) rebuilding(table string) bool {
	return w != nil && w.build[table] != nil
}

// addedChain records a chain of a rebuilt table (rules or not).
func (w *indexWriter) addedChain(table, chain string) uint32 {
	if w == nil || w.build[table] == nil {
		return 0
	}
	tb := w.build[table]
	n, ok := tb.chainNo[chain]
	if !ok {
		n = uint32(len(tb.chains))
		tb.chainNo[chain] = n
		tb.chains = append(tb.chains, chain)
		tb.rules = append(tb.rules, 0)
	}
	return n
}

// added records a rule of a rebuilt table, in chain order: a rule the
// batch adds has handle 0 and at = Batch.Handles right after it.
func (w *indexWriter) added(table, chain string, k kernel.IndexKey, handle, at uint64) {
	tb := w.build[table]
	if tb == nil {
		return
	}
	cn := w.addedChain(table, chain)
	tb.rules[cn]++
	slot, i, ok := tb.pos.find(tb.keys, k)
	if ok {
		tb.entries[i].count++
		return
	}
	e := entry{handle: handle, count: 1}
	if handle == 0 {
		e.handle, e.rel = at, true
	}
	tb.keys = append(tb.keys, k)
	tb.pos.put(tb.keys, slot, uint32(len(tb.keys)-1))
	tb.entries = append(tb.entries, e)
	tb.chainOf = append(tb.chainOf, cn)
}

// view records the index changes of a view the builder has emitted.
func (w *indexWriter) view(v *View) error {
	if w == nil {
		return nil
	}
	if v.replaced {
		w.rebuild(v.Table, false)
		for _, n := range v.names {
			c := v.Chains[n]
			if c == nil || c.deleted || !(c.InKernel || c.create) {
				continue
			}
			w.addedChain(v.Table, c.Name)
			for _, rs := range c.Rules {
				w.added(v.Table, c.Name, ruleKey(c.Name, rs), rs.Handle, rs.hint)
			}
		}
		return nil
	}
	for _, n := range v.names {
		c := v.Chains[n]
		if c == nil || !(c.rulesModified || c.flushed || c.deleted || c.renameFrom != "" || c.create) {
			continue
		}
		if err := w.chain(v, c); err != nil {
			return err
		}
	}
	return nil
}

func (w *indexWriter) put(table string, k kernel.IndexKey, e entry) {
	w.changes[table] = append(w.changes[table], entryChange{key: k, entry: e})
}

// chain records the index changes of one chain of a view after the
// builder emitted its operations.
func (w *indexWriter) chain(v *View, c *ChainState) error {
	table := v.Table
	if !w.maintained(table) || w.build[table] != nil {
		return nil
	}
	marker := entry{count: 1}
	if c.renameFrom != "" && c.InKernel {
		// the rules' keys carry the old name: the chain is no longer
		// indexed (its entries stay behind, too high counts of a chain
		// that is gone)
		w.put(table, chainKey(c.renameFrom), entry{})
		w.put(table, chainKey(c.Name), entry{})
		return nil
	}
	if c.deleted {
		if c.InKernel {
			w.put(table, chainKey(c.Name), entry{})
			if c.Loaded && !c.partial {
				for _, rs := range c.orig {
					w.put(table, ruleKey(c.Name, rs), entry{})
				}
			}
		}
		return nil
	}
	if !c.InKernel {
		// a new chain: every rule is known
		w.put(table, chainKey(c.Name), marker)
		g := groupRules(c.Name, c.Rules)
		for _, k := range g.order {
			w.put(table, k, *g.m[k])
		}
		return nil
	}
	_, indexed, err := w.lookup(table, chainKey(c.Name))
	if err != nil {
		return err
	}
	if c.Loaded && !c.partial {
		// before and after are both known
		old := groupRules(c.Name, c.orig)
		cur := groupRules(c.Name, c.Rules)
		if !indexed {
			w.put(table, chainKey(c.Name), marker)
			old = ruleGroups{}
		}
		for _, k := range old.order {
			if _, ok := cur.m[k]; !ok {
				w.put(table, k, entry{})
			}
		}
		for _, k := range cur.order {
			if o, ok := old.m[k]; !ok || *o != *cur.m[k] {
				w.put(table, k, *cur.m[k])
			}
		}
		return nil
	}
	if !indexed {
		return nil
	}
	// only some rules of the chain are known: apply the differences to
	// the entries as they are (a flush without reading leaves them as
	// they were: too high, which is allowed)
	delta := map[kernel.IndexKey]int{}
	var keys []kernel.IndexKey
	removed := map[uint64]bool{}
	for _, rs := range c.removedRules {
		k := ruleKey(c.Name, rs)
		if _, ok := delta[k]; !ok {
			keys = append(keys, k)
		}
		delta[k]--
		removed[rs.Handle] = true
	}
	for _, rs := range c.Rules {
		if rs.Handle == 0 {
			k := ruleKey(c.Name, rs)
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
		e, _, err := w.lookup(table, k)
		if err != nil {
			return err
		}
		n := max(int(e.Count)+delta[k], 0)
		ne := entry{count: uint32(n)}
		switch kn := known.m[k]; {
		case n == 0:
		case kn != nil && int(kn.count) == n:
			ne.handle, ne.rel = kn.handle, kn.rel // every such rule is in the view
		case e.Count > 0 && !removed[e.Handle]:
			ne.handle = e.Handle
		}
		w.put(table, k, ne)
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
		k := ruleKey(chain, rs)
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
// family of the batch, other the other one's.
func (w *indexWriter) finish(b *kernel.Batch, fam, other kernel.Family, tableCreated bool) {
	if w == nil {
		return
	}
	if o := w.info.other; o != nil {
		st := *o
		st.GenID = w.info.gen + 1
		b.PutIndexState(other, st)
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
	valid := w.info.valid | w.rebuilt
	if valid == 0 && w.info.valid == 0 {
		return // there was no index and there is none
	}
	for _, t := range compat.Tables {
		bit := tableBit(t)
		if valid&bit == 0 {
			continue
		}
		if tb := w.build[t]; tb != nil {
			if !w.info.fresh {
				b.FlushSet(fam, kernel.IndexSet(t))
			}
			tb.put(w, b, fam, t)
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

// indexedChain says whether a rebuild indexes the chain: an empty one
// (rules are often added to it one by one) or a large one. A streamed
// restore decides before the rules come, and only tells of those.
func (tb *tableBuild) indexedChain(cn uint32) bool {
	return tb.streamed || tb.rules[cn] == 0 || tb.rules[cn] >= indexedMin
}

// put adds the markers and entries of a rebuilt table to b. They go from
// tb into the batch directly; a restore of 100k rules would otherwise
// hold a copy of them (5 MB) at its peak.
func (tb *tableBuild) put(w *indexWriter, b *kernel.Batch, fam kernel.Family, table string) {
	n, next := tb.indexed(w)
	if n == 0 {
		return
	}
	tb.pos = keyTable{} // not needed any more
	b.PutIndexFunc(fam, table, n, func(int) (kernel.IndexKey, kernel.IndexEntry) { return next() })
}

// indexed returns the number of markers and entries of a rebuilt table
// and a function that returns them one by one: the markers of its
// indexed chains, then the entries of their rules.
func (tb *tableBuild) indexed(w *indexWriter) (int, func() (kernel.IndexKey, kernel.IndexEntry)) {
	n := 0
	for cn := range tb.chains {
		if tb.indexedChain(uint32(cn)) {
			n++
		}
	}
	for i := range tb.entries {
		if tb.indexedChain(tb.chainOf[i]) {
			n++
		}
	}
	cn, i := 0, 0
	return n, func() (kernel.IndexKey, kernel.IndexEntry) {
		for ; cn < len(tb.chains); cn++ {
			if tb.indexedChain(uint32(cn)) {
				cn++
				return chainKey(tb.chains[cn-1]), kernel.IndexEntry{Count: 1}
			}
		}
		for !tb.indexedChain(tb.chainOf[i]) {
			i++
		}
		i++
		return tb.keys[i-1], w.resolve(tb.entries[i-1])
	}
}

// keyTable finds keys in a slice of them: open addressing on the keys'
// own bits (they are hashes), four bytes a slot, about a quarter of what
// a map of 100k keys to positions takes.
type keyTable struct {
	slots []uint32 // a position in the keys + 1; 0: empty
	n     int
}

func newKeyTable(n int) keyTable {
	size := 16
	for size < 2*n {
		size *= 2
	}
	return keyTable{slots: make([]uint32, size)}
}

func keyHash(k kernel.IndexKey) uint64 { return binary.LittleEndian.Uint64(k[:8]) }

// find returns the position of k in keys, or the slot where put must put
// it.
func (t *keyTable) find(keys []kernel.IndexKey, k kernel.IndexKey) (slot int, pos uint32, ok bool) {
	if len(t.slots) == 0 {
		*t = newKeyTable(len(keys) + 1)
		for i := range keys {
			s, _, _ := t.find(keys, keys[i])
			t.put(keys, s, uint32(i))
		}
	}
	mask := len(t.slots) - 1
	for i := int(keyHash(k)) & mask; ; i = (i + 1) & mask {
		p := t.slots[i]
		if p == 0 {
			return i, 0, false
		}
		if keys[p-1] == k {
			return i, p - 1, true
		}
	}
}

// put puts the position pos of a key into the slot find returned for it;
// it grows the table when it is half full.
func (t *keyTable) put(keys []kernel.IndexKey, slot int, pos uint32) {
	t.slots[slot] = pos + 1
	t.n++
	if 2*t.n > len(t.slots) {
		old := t.slots
		*t = newKeyTable(len(old))
		mask := len(t.slots) - 1
		for _, p := range old {
			if p == 0 {
				continue
			}
			i := int(keyHash(keys[p-1])) & mask
			for t.slots[i] != 0 {
				i = (i + 1) & mask
			}
			t.slots[i] = p
			t.n++
		}
	}
}

// newRuleEntries returns the entries of table that point at rules the
// batch added, resolved with the current base.
func (w *indexWriter) newRuleEntries(table string) ([]kernel.IndexKey, []kernel.IndexEntry) {
	var keys []kernel.IndexKey
	var entries []kernel.IndexEntry
	if tb := w.build[table]; tb != nil {
		for i, e := range tb.entries {
			if e.rel && tb.indexedChain(tb.chainOf[i]) {
				keys, entries = append(keys, tb.keys[i]), append(entries, w.resolve(e))
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
	if o := w.info.other; o != nil {
		st := *o
		st.GenID = gen + 2
		b.PutIndexState(e.otherFamily(), st)
	}
	_ = e.Conn.Commit(b, gen+1)
}

// lookupFunc reads index entries for an indexWriter, answering from seen
// (entries a fast -C/-D already read, Count 0 for absent ones) first.
func (e *Engine) lookupFunc(seen map[kernel.IndexKey]kernel.IndexEntry) func(string, kernel.IndexKey) (kernel.IndexEntry, bool, error) {
	return func(table string, k kernel.IndexKey) (kernel.IndexEntry, bool, error) {
		if ent, ok := seen[k]; ok {
			return ent, ent.Count > 0, nil
		}
		return e.Conn.IndexLookup(e.kfam(), table, k)
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
	mk := chainKey(c.Name)
	marker, indexed, err := e.Conn.IndexLookup(e.kfam(), cmd.Table, mk)
	if err != nil || !indexed {
		return nil, nil, false, err
	}
	seen[mk] = marker
	var rules []*RuleState
	kchain := cmd.Table + "." + c.Name
	for _, r := range cmd.Rules {
		s := spec(r)
		k := indexKey(c.Name, keyText(r, s))
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
		if errors.Is(err, kernel.ErrGenerationChanged) {
			return gen, err
		}
		if err != nil {
			// the maps cannot be made (e.g. ones of another layout are
			// in the way): the batch goes without the index
			bl.ix = nil
			return gen, nil
		}
		w.probed(info, last)
		gen = info.gen
	}
	w.finish(bl.b, e.kfam(), e.otherFamily(), bl.tabled != nil)
	return gen, nil
}

// IndexReport is what CheckIndex found.
type IndexReport struct {
	// Valid are the iptables tables whose index is valid, Indexed their
	// chains that have a marker.
	Valid, Indexed []string
	// Over counts entries whose count is above the rules' (allowed);
	// Hints counts the entries of single rules, Exact those whose handle
	// is the rule's.
	Over, Hints, Exact int
}

// CheckIndex compares the rule index of every table it claims to cover
// with the rules in the kernel (read in full): every rule of an indexed
// chain must be counted. It returns an error describing the first
// difference.
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
		got, err := e.Conn.IndexEntries(e.kfam(), t)
		if err != nil {
			return rep, err
		}
		for _, n := range v.names {
			c := v.Chains[n]
			if _, ok := got[chainKey(c.Name)]; !ok {
				continue
			}
			rep.Indexed = append(rep.Indexed, t+"."+c.Name)
			g := groupRules(c.Name, c.Rules)
			for _, k := range g.order {
				w, ix := g.m[k], got[k]
				if ix.Count < w.count {
					what := ""
					for _, rs := range c.Rules {
						if ruleKey(c.Name, rs) == k {
							what = rs.Spec
						}
					}
					return rep, fmt.Errorf("table %s: -A %s %s: %d in the chain, index counts %d", t, c.Name, what, w.count, ix.Count)
				}
				if ix.Count > w.count {
					rep.Over++
				}
				if w.count == 1 && ix.Count == 1 {
					rep.Hints++
					if ix.Handle == w.handle {
						rep.Exact++
					}
				}
			}
		}
	}
	if gen2, err := e.Conn.GenID(); err != nil || gen2 != gen {
		return rep, fmt.Errorf("ruleset changed while checking the index (%v)", err)
	}
	return rep, nil
}
