package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The rule index lets a command find a rule by its content without dumping
// its chain. It lives in our table as nftables maps that no rule looks
// up, written in the same transactions as the rules they describe:
//
//   - IndexSet(table), one per iptables table: key IndexKey (a hash the
//     caller computes from chain and rule), data the number of such rules
//     in the chain and the handle of one of them (a hint: see IndexEntry);
//   - IndexStateSet: per generation the index is valid for (the key), which
//     iptables tables it covers and the table's last handle; the states
//     of earlier generations are left for a later batch to flush (see
//     PutIndexState).
//
// This package only stores and reads them; what they mean and when they
// can be trusted is decided by the ruleset package.

// IndexStateSet is the map that holds the index's state element.
const IndexStateSet = "rule-index"

// IndexSet is the map holding the index of an iptables table.
func IndexSet(table string) string { return "rule-index." + table }

// indexProbeSet is created and deleted by a handle probe.
const indexProbeSet = "rule-index-probe"

// IndexKey identifies a rule of a chain in the index (never all zero: that
// key holds the state).
type IndexKey [16]byte

// IndexEntry is what the index holds for a key: how many rules of the
// chain have it, and the handle of one of them (0: not known). The handle
// may be wrong (see NextHandle): read the rule to be sure.
type IndexEntry struct {
	Handle uint64
	Count  uint32
}

// IndexState is the index's state element.
type IndexState struct {
	// GenID is the ruleset generation the index describes; when the
	// ruleset is at another generation, something else changed it.
	GenID uint32
	// Valid has bit i set when the index of iptables table i (an index
	// into the caller's list of tables) is complete.
	Valid uint8
	// LastHandle is the last handle the table handed out at GenID, as
	// far as the writer could tell (0: not known).
	LastHandle uint64
}

// nftTypeIP6Addr is nft's ipv6_addr datatype: 16 bytes, as the index's
// keys and data are, so that `nft list ruleset` prints the maps in a form
// `nft -f` reads back.
const nftTypeIP6Addr = 8

const (
	indexDataLen = 16
	indexVersion = 3 // the key layout of ruleset.indexKey (1: jumps with their targets; 2: before the connlimit mask and the frag/rt range flags were part of -C/-D comparisons)
)

// nftMsgDestroySetElem deletes set elements without failing on absent ones
// (NFT_MSG_DESTROYSETELEM, Linux 6.3).
const nftMsgDestroySetElem = 0x1e

func (e IndexEntry) put(d *[indexDataLen]byte) {
	*d = [indexDataLen]byte{}
	binary.BigEndian.PutUint64(d[0:8], e.Handle)
	binary.BigEndian.PutUint32(d[8:12], e.Count)
}

func (s IndexState) data() []byte {
	var d [indexDataLen]byte
	binary.BigEndian.PutUint64(d[0:8], s.LastHandle)
	binary.BigEndian.PutUint32(d[8:12], s.GenID)
	d[12] = s.Valid
	d[13] = indexVersion
	return d[:]
}

// AddIndexSet creates an index map (IndexSet or IndexStateSet) if it does
// not exist. Only send it for a map known to be absent, or in a probe
// batch: an existing map is left alone and takes no handle, which would
// make the handle count (Handles) wrong.
func (b *Batch) AddIndexSet(fam Family, name string) int {
	idx := b.addOp(Op{Kind: OpSetAdd, Family: fam, Set: name})
	b.anonIDs++
	off := b.msg(idx, unix.NFT_MSG_NEWSET, unix.NLM_F_CREATE, fam)
	b.e.str(unix.NFTA_SET_TABLE, TableName)
	b.e.str(unix.NFTA_SET_NAME, name)
	b.e.u32(unix.NFTA_SET_FLAGS, unix.NFT_SET_MAP)
	b.e.u32(unix.NFTA_SET_KEY_TYPE, nftTypeIP6Addr)
	b.e.u32(unix.NFTA_SET_KEY_LEN, uint32(len(IndexKey{})))
	b.e.u32(unix.NFTA_SET_DATA_TYPE, nftTypeIP6Addr)
	b.e.u32(unix.NFTA_SET_DATA_LEN, indexDataLen)
	b.e.u32(unix.NFTA_SET_ID, anonSetIDBase+b.anonIDs)
	b.took()
	return b.done(idx, off)
}

// PutIndex adds entries to the index map of table; keys must not be in it
// (DestroyIndex them first in the same batch).
func (b *Batch) PutIndex(fam Family, table string, keys []IndexKey, entries []IndexEntry) int {
	return b.PutIndexFunc(fam, table, len(keys), func(i int) (IndexKey, IndexEntry) { return keys[i], entries[i] })
}

// PutIndexFunc is PutIndex of n entries that elem gives, called once for
// each i from 0 to n-1 in order: a restore's 100k entries go into the
// batch without a copy of them in slices first.
func (b *Batch) PutIndexFunc(fam Family, table string, n int, elem func(i int) (IndexKey, IndexEntry)) int {
	idx := b.addOp(Op{Kind: OpSetElemAdd, Family: fam, Set: IndexSet(table)})
	var key IndexKey
	var data [indexDataLen]byte
	b.indexElems(idx, unix.NFT_MSG_NEWSETELEM, unix.NLM_F_CREATE, fam, IndexSet(table), n,
		func(i int) ([]byte, []byte) {
			var e IndexEntry
			key, e = elem(i)
			e.put(&data)
			return key[:], data[:]
		})
	return idx
}

// DestroyIndex removes keys from the index map of table; absent keys are
// no error.
func (b *Batch) DestroyIndex(fam Family, table string, keys []IndexKey) int {
	idx := b.addOp(Op{Kind: OpSetElemDel, Family: fam, Set: IndexSet(table)})
	b.indexElems(idx, nftMsgDestroySetElem, 0, fam, IndexSet(table), len(keys),
		func(i int) ([]byte, []byte) { return keys[i][:], nil })
	return idx
}

// PutIndexState adds the state element for generation s.GenID (the map
// must exist). States are keyed by their generation, so that writing one
// deletes nothing: a deleted element is freed by the kernel after an RCU
// grace period, and closing the netlink socket waits for that (10-20 ms
// a command would pay for the index alone). The states of earlier
// generations are flushed only by a batch that frees something anyway,
// or every 32 generations.
func (b *Batch) PutIndexState(fam Family, s IndexState) int {
	if b.frees() || s.GenID%32 == 0 {
		b.FlushSet(fam, IndexStateSet)
	}
	idx := b.addOp(Op{Kind: OpSetElemAdd, Family: fam, Set: IndexStateSet})
	key := stateKey(s.GenID)
	b.indexElems(idx, unix.NFT_MSG_NEWSETELEM, unix.NLM_F_CREATE, fam, IndexStateSet, 1,
		func(int) ([]byte, []byte) { return key[:], s.data() })
	return idx
}

// stateKey is the key of the state valid at generation gen (never the
// zero key, which older builds rewrote in place).
func stateKey(gen uint32) IndexKey {
	k := IndexKey{0: 'G'}
	binary.BigEndian.PutUint32(k[12:], gen)
	return k
}

// frees says whether b deletes or replaces anything the kernel frees
// after a grace period (index entries it destroys are left out: most
// are absent).
func (b *Batch) frees() bool {
	for i, r := range b.ops {
		switch r.kind {
		case OpTableDel, OpChainDel, OpRuleFlush, OpRuleReplace, OpRuleDelete, OpSetDel, OpSetFlush, OpSetElemDel:
			if !strings.HasPrefix(b.Op(i).Set, IndexStateSet) {
				return true
			}
		}
	}
	return false
}

func (b *Batch) indexElems(idx, typ int, flags uint16, fam Family, set string, n int, elem func(i int) (key, data []byte)) {
	off, list, start := -1, 0, 0
	b.Grow(n*56, 0)
	for i := range n {
		if off >= 0 && len(b.e.buf)-start >= maxElemMsg {
			b.e.endNest(list)
			b.done(idx, off)
			off = -1
		}
		if off < 0 {
			off = b.msg(idx, typ, flags, fam)
			b.e.str(unix.NFTA_SET_ELEM_LIST_TABLE, TableName)
			b.e.str(unix.NFTA_SET_ELEM_LIST_SET, set)
			list = b.e.nest(unix.NFTA_SET_ELEM_LIST_ELEMENTS)
			start = len(b.e.buf)
		}
		key, data := elem(i)
		item := b.e.nest(unix.NFTA_LIST_ELEM)
		k := b.e.nest(unix.NFTA_SET_ELEM_KEY)
		b.e.bytes(unix.NFTA_DATA_VALUE, key)
		b.e.endNest(k)
		if data != nil {
			d := b.e.nest(unix.NFTA_SET_ELEM_DATA)
			b.e.bytes(unix.NFTA_DATA_VALUE, data)
			b.e.endNest(d)
		}
		b.e.endNest(item)
	}
	if off >= 0 {
		b.e.endNest(list)
		b.done(idx, off)
	}
}

// ProbeHandles adds to the batch a set created and deleted again: the
// last object the batch creates, so that Echoed reports the table's
// handles (see Echoed) even when the batch creates nothing else.
func (b *Batch) ProbeHandles(fam Family) int {
	idx := b.addOp(Op{Kind: OpSetAdd, Family: fam, Set: indexProbeSet})
	b.anonIDs++
	off := b.msg(idx, unix.NFT_MSG_NEWSET, unix.NLM_F_CREATE, fam)
	b.e.str(unix.NFTA_SET_TABLE, TableName)
	b.e.str(unix.NFTA_SET_NAME, indexProbeSet)
	b.e.u32(unix.NFTA_SET_KEY_LEN, 4)
	b.e.u32(unix.NFTA_SET_ID, anonSetIDBase+b.anonIDs)
	b.done(idx, off)
	b.took()
	off = b.msg(idx, unix.NFT_MSG_DELSET, 0, fam)
	b.e.str(unix.NFTA_SET_TABLE, TableName)
	b.e.str(unix.NFTA_SET_NAME, indexProbeSet)
	b.done(idx, off)
	return idx
}

// took records that the message just added creates an object, which
// takes a handle.
func (b *Batch) took() {
	b.handles++
	b.lastAlloc, b.lastAt = len(b.msgOff)-1, b.handles
}

// tookUnseen is took for a message whose handle is not read back.
func (b *Batch) tookUnseen() {
	b.handles++
	b.lastAlloc = -1
}

// Handles returns how many handles the kernel will hand out for what the
// batch holds so far (chains, rules, sets created; a replaced rule keeps
// its handle): a rule added just now gets the table's last handle before
// the batch plus Handles(), if the callers created only objects that did
// not exist and the kernel handed out no handle since that last handle
// became known. A batch the kernel refuses still takes the handles of
// what it processed before the refusal.
func (b *Batch) Handles() uint64 { return b.handles }

// Echoed returns, after a successful Commit, the handle the kernel gave
// the last object the batch created, and Handles as it was with that
// object: the table's last handle before the batch was handle - at. ok is
// false when the batch created nothing, or nothing whose handle is read
// back.
func (b *Batch) Echoed() (handle, at uint64, ok bool) {
	return b.echoed, b.lastAt, b.echoed != 0
}

// echoRequest asks the kernel to report back the last object the batch
// creates (NLM_F_ECHO); seq is that message's sequence number.
func (b *Batch) echoRequest() (seq uint32, ok bool) {
	b.echoed = 0
	if b.lastAlloc < 0 {
		return 0, false
	}
	off := b.msgOff[b.lastAlloc]
	flags := binary.NativeEndian.Uint16(b.e.buf[off+6 : off+8])
	binary.NativeEndian.PutUint16(b.e.buf[off+6:off+8], flags|unix.NLM_F_ECHO)
	return binary.NativeEndian.Uint32(b.e.buf[off+8 : off+12]), true
}

// echo looks at a message the kernel sent back during Commit that is
// neither an error nor an ack: the report echoRequest asked for.
func (b *Batch) echo(m syscall.NetlinkMessage, seq uint32) {
	if m.Header.Seq != seq || len(m.Data) < 4 {
		return
	}
	var attr uint16
	switch m.Header.Type {
	case nftType(unix.NFT_MSG_NEWRULE):
		attr = unix.NFTA_RULE_HANDLE
	case nftType(unix.NFT_MSG_NEWCHAIN):
		attr = unix.NFTA_CHAIN_HANDLE
	case nftType(unix.NFT_MSG_NEWSET):
		attr = nftaSetHandle
	default:
		return
	}
	eachAttr(m.Data[4:], func(t uint16, v []byte) bool {
		if t == attr && len(v) == 8 {
			b.echoed = be64(v)
		}
		return true
	})
}

// IndexState reads the index's state at generation gen; ok is false when
// the index's map (or our table) does not exist. When the map exists but
// holds no state for gen (another commit came after the last one that
// wrote the index), the state is stale: ok, with GenID 0 and nothing
// valid.
func (c *Conn) IndexState(fam Family, gen uint32) (IndexState, bool, error) {
	d, ok, err := c.indexGet(fam, IndexStateSet, stateKey(gen))
	if err != nil {
		return IndexState{}, false, err
	}
	if ok && d[13] == indexVersion {
		return IndexState{LastHandle: binary.BigEndian.Uint64(d[0:8]), GenID: binary.BigEndian.Uint32(d[8:12]), Valid: d[12]}, true, nil
	}
	_, ok, err = c.Set(fam, IndexStateSet)
	return IndexState{}, ok, err
}

// IndexLookup reads the entry of key in the index map of table; ok is
// false when there is none (or no such map).
func (c *Conn) IndexLookup(fam Family, table string, key IndexKey) (IndexEntry, bool, error) {
	d, ok, err := c.indexGet(fam, IndexSet(table), key)
	if err != nil || !ok {
		return IndexEntry{}, false, err
	}
	return IndexEntry{Handle: binary.BigEndian.Uint64(d[0:8]), Count: binary.BigEndian.Uint32(d[8:12])}, true, nil
}

func (c *Conn) indexGet(fam Family, set string, key IndexKey) (data [indexDataLen]byte, ok bool, err error) {
	msgs, err := c.request(unix.NFT_MSG_GETSETELEM, false, fam, func(e *encoder) {
		e.str(unix.NFTA_SET_ELEM_LIST_TABLE, TableName)
		e.str(unix.NFTA_SET_ELEM_LIST_SET, set)
		l := e.nest(unix.NFTA_SET_ELEM_LIST_ELEMENTS)
		item := e.nest(unix.NFTA_LIST_ELEM)
		k := e.nest(unix.NFTA_SET_ELEM_KEY)
		e.bytes(unix.NFTA_DATA_VALUE, key[:])
		e.endNest(k)
		e.endNest(item)
		e.endNest(l)
	})
	if errors.Is(err, unix.ENOENT) {
		return data, false, nil
	}
	if err != nil {
		return data, false, fmt.Errorf("read %s: %w", set, err)
	}
	eachIndexElem(msgs, func(_, d []byte) bool {
		if len(d) == indexDataLen {
			copy(data[:], d)
			ok = true
		}
		return false
	})
	return data, ok, nil
}

// eachIndexElem calls fn with the key and data of each element in set
// element messages until fn returns false.
func eachIndexElem(msgs []syscall.NetlinkMessage, fn func(key, data []byte) bool) {
	more := true
	for _, m := range msgs {
		if len(m.Data) < 4 || !more {
			continue
		}
		eachAttr(m.Data[4:], func(t uint16, v []byte) bool {
			if t != unix.NFTA_SET_ELEM_LIST_ELEMENTS {
				return true
			}
			eachAttr(v, func(_ uint16, el []byte) bool {
				var k, d []byte
				eachAttr(el, func(t uint16, v []byte) bool {
					switch t {
					case unix.NFTA_SET_ELEM_KEY:
						k = dataValue(v)
					case unix.NFTA_SET_ELEM_DATA:
						d = dataValue(v)
					}
					return true
				})
				more = fn(k, d)
				return more
			})
			return more
		})
	}
}

// GetRule reads one rule of chain by handle, without dumping the chain;
// ok is false when the chain has no such rule. The rule owns its bytes.
func (c *Conn) GetRule(fam Family, chain string, handle uint64) (r Rule, ok bool, err error) {
	msgs, err := c.request(unix.NFT_MSG_GETRULE, false, fam, func(e *encoder) {
		e.str(unix.NFTA_RULE_TABLE, TableName)
		e.str(unix.NFTA_RULE_CHAIN, chain)
		e.u64(unix.NFTA_RULE_HANDLE, handle)
	})
	if errors.Is(err, unix.ENOENT) {
		return r, false, nil
	}
	if errors.Is(err, unix.EPERM) {
		// the kernel answers -1 (EPERM) when the rule does not fit the
		// one page it gives a single-rule answer (nf_tables_fill_rule_info
		// fails; two xt u32 matches are enough): a dump has room for it
		return c.getRuleByDump(fam, chain, handle)
	}
	if err != nil {
		return r, false, fmt.Errorf("get rule %d of chain %s: %w", handle, chain, err)
	}
	for _, m := range msgs {
		if m.Header.Type != nftType(unix.NFT_MSG_NEWRULE) {
			continue
		}
		var last string
		ours, err := parseRule(fam, m.Data, &r, &last)
		if err != nil {
			return Rule{}, false, err
		}
		if ours && r.Handle == handle && r.Chain == chain {
			return r.Clone(), true, nil
		}
	}
	return Rule{}, false, nil
}

// getRuleByDump is GetRule through a dump of the chain.
func (c *Conn) getRuleByDump(fam Family, chain string, handle uint64) (r Rule, ok bool, err error) {
	err = c.ScanRules(fam, chain, func() { ok = false }, func(kr *Rule) error {
		if kr.Handle == handle {
			r, ok = kr.Clone(), true
		}
		return nil
	})
	if errors.Is(err, unix.ENOENT) {
		return Rule{}, false, nil
	}
	if err != nil {
		return Rule{}, false, fmt.Errorf("get rule %d of chain %s: %w", handle, chain, err)
	}
	return r, ok, nil
}

// IndexEntries reads the whole index map of table (for checks: commands
// look keys up one by one); a missing map gives none.
func (c *Conn) IndexEntries(fam Family, table string) (map[IndexKey]IndexEntry, error) {
	msgs, err := c.request(unix.NFT_MSG_GETSETELEM, true, fam, func(e *encoder) {
		e.str(unix.NFTA_SET_ELEM_LIST_TABLE, TableName)
		e.str(unix.NFTA_SET_ELEM_LIST_SET, IndexSet(table))
	})
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", IndexSet(table), err)
	}
	out := map[IndexKey]IndexEntry{}
	eachIndexElem(msgs, func(k, d []byte) bool {
		if len(k) == len(IndexKey{}) && len(d) == indexDataLen {
			out[IndexKey(k)] = IndexEntry{Handle: binary.BigEndian.Uint64(d[0:8]), Count: binary.BigEndian.Uint32(d[8:12])}
		}
		return true
	})
	return out, nil
}

// IndexSupported says whether the kernel can keep the rule index: its
// updates delete elements that may be absent (NFT_MSG_DESTROYSETELEM,
// Linux 6.3).
func IndexSupported() bool {
	indexOnce.Do(func() {
		var u unix.Utsname
		if unix.Uname(&u) != nil {
			return
		}
		var major, minor int
		if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
			return
		}
		indexOK = major > 6 || major == 6 && minor >= 3
	})
	return indexOK
}

var (
	indexOnce sync.Once
	indexOK   bool
)

// CarryIndex adds to b, a batch to commit at genid that changes no rule
// (or takes rules out and puts the same back, as ipset's rebind does),
// the index state of each family that is valid at genid, valid one
// generation later: the index stays usable across it. The table's last
// handle becomes unknown (b may create sets); the next batch that writes
// the index learns it again. When b creates our table, it creates the
// index of tables (the iptables tables, in the order of the state's
// Valid bits) with it, empty and valid.
func (c *Conn) CarryIndex(b *Batch, genid uint32, tables []string) error {
	if !IndexSupported() {
		return nil
	}
	for _, fam := range []Family{IPv4, IPv6} {
		st, ok, err := c.IndexState(fam, genid)
		if err != nil {
			return err
		}
		if ok && st.GenID == genid && st.Valid != 0 {
			st.GenID, st.LastHandle = genid+1, 0
			b.PutIndexState(fam, st)
			continue
		}
		if ok || !b.addsTable(fam) {
			continue
		}
		if exists, err := c.TableExists(fam); err != nil || exists {
			continue
		}
		b.AddIndexSet(fam, IndexStateSet)
		for _, t := range tables {
			b.AddIndexSet(fam, IndexSet(t))
		}
		// a new table hands out handles from 1: b's are all it has
		b.PutIndexState(fam, IndexState{GenID: genid + 1, Valid: uint8(1)<<len(tables) - 1, LastHandle: b.Handles()})
	}
	return nil
}

// addsTable says whether b creates our table in fam (if absent).
func (b *Batch) addsTable(fam Family) bool {
	for _, r := range b.ops {
		if r.kind == OpTableAdd && r.fam == fam {
			return true
		}
	}
	return false
}
