package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// OpKind is the kind of a batch operation. Its String is the name
// iptables-nft gives the operation in its error messages where one exists
// ("RULE_APPEND", "CHAIN_DEL", ...).
type OpKind uint8

// Batch operation kinds.
const (
	OpTableAdd     OpKind = iota + 1 // NEWTABLE, create if absent
	OpTableDel                       // DELTABLE (iptables-restore's flush of a table)
	OpChainAdd                       // NEWCHAIN, create if absent (built-in chains)
	OpChainUserAdd                   // NEWCHAIN, exclusive (iptables -N)
	OpChainUpdate                    // NEWCHAIN with a policy (iptables -P)
	OpChainZero                      // NEWCHAIN with base-chain counters
	OpChainRename                    // NEWCHAIN by handle with a new name
	OpChainDel                       // DELCHAIN, non-recursive
	OpRuleFlush                      // DELRULE of a chain or of the whole table
	OpRuleAppend                     // NEWRULE at the end or after a handle
	OpRuleInsert                     // NEWRULE at the head or before a handle
	OpRuleReplace                    // NEWRULE replacing a handle
	OpRuleDelete                     // DELRULE by handle
	OpSetAdd                         // NEWSET
	OpSetDel                         // DELSET
	OpSetFlush                       // DELSETELEM of all elements
	OpSetElemAdd                     // NEWSETELEM, split into as many messages as needed
	OpSetElemDel                     // DELSETELEM of given elements
	OpObjAdd                         // NEWOBJ, create if absent
	OpObjDel                         // DELOBJ
)

var opNames = map[OpKind]string{
	OpTableAdd:     "TABLE_ADD",
	OpTableDel:     "TABLE_FLUSH",
	OpChainAdd:     "CHAIN_ADD",
	OpChainUserAdd: "CHAIN_USER_ADD",
	OpChainUpdate:  "CHAIN_UPDATE",
	OpChainZero:    "CHAIN_ZERO",
	OpChainRename:  "CHAIN_RENAME",
	OpChainDel:     "CHAIN_DEL",
	OpRuleFlush:    "RULE_FLUSH",
	OpRuleAppend:   "RULE_APPEND",
	OpRuleInsert:   "RULE_INSERT",
	OpRuleReplace:  "RULE_REPLACE",
	OpRuleDelete:   "RULE_DELETE",
	OpSetAdd:       "SET_ADD",
	OpSetDel:       "SET_DEL",
	OpSetFlush:     "SET_FLUSH",
	OpSetElemAdd:   "SETELEM_ADD",
	OpSetElemDel:   "SETELEM_DEL",
	OpObjAdd:       "OBJ_ADD",
	OpObjDel:       "OBJ_DEL",
}

func (k OpKind) String() string {
	if s, ok := opNames[k]; ok {
		return s
	}
	return fmt.Sprintf("OP_%d", uint8(k))
}

// Op describes one operation of a batch, for error reports.
type Op struct {
	Kind   OpKind
	Family Family
	Chain  string // nft chain name (the new name for a rename), if any
	Set    string // set name, for set operations
	Obj    string // object name, for object operations
	Handle uint64 // rule or chain handle the operation addresses, if any
}

// ChainSpec says how AddChain creates a chain.
type ChainSpec struct {
	// Base makes a base chain; nil makes a regular chain.
	Base *BaseChain
	// Policy of a base chain. nil leaves the policy alone: accept for a new
	// chain, unchanged for an existing one.
	Policy *Policy
	// Counters, when set, makes the kernel keep policy counters for the base
	// chain, starting at these values. Without them it keeps none.
	Counters *Counters
	// Exclusive fails the operation with EEXIST when the chain exists
	// (iptables -N); otherwise an existing chain with the same hook is left
	// as it is.
	Exclusive bool
}

// RuleSpec is the content of a rule to add or replace.
type RuleSpec struct {
	Exprs    []expr.Any
	UserData []byte
	// Compat is sent as NFTA_RULE_COMPAT. xtables matches and targets run
	// through nft_compat need it when they check the layer-4 protocol.
	Compat *RuleCompat
	// Encoded, when set, is Exprs as EncodeRuleExprs encoded them for
	// family EncodedFamily: the batch copies it instead of encoding
	// Exprs again (when the rule goes to another family, it does).
	Encoded       []byte
	EncodedFamily Family
}

// RuleCompat is the protocol information xtables extensions check.
type RuleCompat struct {
	Proto  uint32
	Invert bool
}

// beginLen is the size of the NFNL_MSG_BATCH_BEGIN message with its
// NFNL_BATCH_GENID attribute; Batch reserves it at the head of its buffer.
const beginLen = unix.NLMSG_HDRLEN + 4 + 8

// Batch collects operations to commit as one nf_tables transaction. The
// methods return the index of the operation they add; errors from Commit
// name operations by that index. A Batch is not safe for concurrent use.
type Batch struct {
	e       encoder
	ops     []opRec
	names   nameList         // the chain and set names of ops (opRec.name)
	recent  map[string]int32 // some names, by their index in names
	msgOff  []uint32         // offset of each message in e.buf
	msgOp   []int32          // operation index of each message
	errOp   int              // operation whose encoding failed first
	anonIDs uint32           // anonymous maps and bound chains sent so far (their IDs)
	mapped  []byte           // the mapping e.buf lives in, when outside the heap (batchmem.go)
	// handles counts the objects the batch creates, each of which takes
	// a handle from the table (see Handles); lastAlloc is the message
	// that creates the last of them (-1: none, or one whose handle cannot
	// be read back), lastAt the count with it, echoed its handle as the
	// kernel reported it at Commit (ruleindex.go).
	handles, lastAt, echoed uint64
	lastAlloc               int
}

// NewBatch returns an empty batch.
func NewBatch() *Batch {
	b := &Batch{errOp: -1, lastAlloc: -1}
	b.e.buf = make([]byte, beginLen, 4096)
	return b
}

// Grow makes room for about n more bytes in ops more operations, so
// that building a large batch does not copy its buffers over and over.
func (b *Batch) Grow(n, ops int) {
	if cap(b.e.buf)-len(b.e.buf) < n && len(b.e.buf)+n >= offHeapMin && b.growOffHeap(n) {
		// placed outside the heap (batchmem.go)
	} else if cap(b.e.buf)-len(b.e.buf) < n {
		nb := make([]byte, len(b.e.buf), len(b.e.buf)+n)
		copy(nb, b.e.buf)
		b.e.buf = nb
	}
	if cap(b.ops)-len(b.ops) < ops {
		b.ops = append(make([]opRec, 0, len(b.ops)+ops), b.ops...)
		b.msgOff = append(make([]uint32, 0, len(b.msgOff)+ops), b.msgOff...)
		b.msgOp = append(make([]int32, 0, len(b.msgOp)+ops), b.msgOp...)
	}
}

// Without returns a copy of b without the messages of the operations in
// drop, to Check what the kernel says of the rest. Its operations are
// b's: errors name them by their index in b. It creates no echo request
// (ruleindex.go).
func (b *Batch) Without(drop map[int]bool) *Batch {
	c := &Batch{ops: b.ops, names: b.names, errOp: b.errOp, lastAlloc: -1}
	c.e.err = b.e.err
	c.e.buf = make([]byte, beginLen, len(b.e.buf))
	for i, off := range b.msgOff {
		if drop[int(b.msgOp[i])] {
			continue
		}
		end := uint32(len(b.e.buf))
		if i+1 < len(b.msgOff) {
			end = b.msgOff[i+1]
		}
		c.msgOff = append(c.msgOff, uint32(len(c.e.buf)))
		c.msgOp = append(c.msgOp, b.msgOp[i])
		c.e.buf = append(c.e.buf, b.e.buf[off:end]...)
	}
	return c
}

// Len returns the number of operations in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Messages returns the number of netlink messages the batch holds, without
// the batch begin and end messages.
func (b *Batch) Messages() int { return len(b.msgOff) }

// Size returns the size in bytes of the batch's messages.
func (b *Batch) Size() int { return len(b.e.buf) }

// Op returns the operation at index i.
func (b *Batch) Op(i int) Op {
	r := b.ops[i]
	op := Op{Kind: r.kind, Family: r.fam, Handle: r.handle}
	switch {
	case r.name < 0:
	case r.set:
		op.Set = b.names.at(int(r.name))
	case r.obj:
		op.Obj = b.names.at(int(r.name))
	default:
		op.Chain = b.names.at(int(r.name))
	}
	return op
}

// opRec is an Op as a batch keeps it: a restore adds hundreds of
// thousands of operations, and an Op is 48 bytes. Operations name the
// chain of the operation before them most of the time (a restore adds the
// rules of a chain one after the other): names holds each run's name once.
type opRec struct {
	kind   OpKind
	fam    Family
	set    bool  // name is Op.Set, not Op.Chain
	obj    bool  // name is Op.Obj
	name   int32 // index in Batch.names; -1: none
	handle uint64
}

func (b *Batch) addOp(op Op) int {
	r := opRec{kind: op.Kind, fam: op.Family, handle: op.Handle, name: -1}
	name := op.Chain
	if op.Set != "" {
		name, r.set = op.Set, true
	}
	if op.Obj != "" {
		name, r.obj = op.Obj, true
	}
	if name != "" {
		r.name = b.nameIndex(name)
	}
	b.ops = append(b.ops, r)
	return len(b.ops) - 1
}

// nameIndex returns the index of name in b.names, adding it unless it is
// the last name or one of the last few thousand added: a restore adds the
// rules of a chain one after the other, or of some chains in turn.
func (b *Batch) nameIndex(name string) int32 {
	n := b.names.len()
	if n > 0 && b.names.is(n-1, name) {
		return int32(n - 1)
	}
	if i, ok := b.recent[name]; ok {
		return i
	}
	if b.recent == nil {
		b.recent = make(map[string]int32)
	} else if len(b.recent) >= recentNames {
		// a restore of 40k chains, each named in a run or two, must not
		// keep a map of them (clear keeps the map's room for the next)
		clear(b.recent)
	}
	b.names.add(name)
	b.recent[name] = int32(n)
	return int32(n)
}

// nameList holds names one after the other in one buffer: no pointer
// per name for the garbage collector to follow in each of the hundred
// collections of a restore that names 80k chains.
type nameList struct {
	buf []byte
	end []uint32 // where each name ends in buf
}

func (l *nameList) len() int { return len(l.end) }

func (l *nameList) bytes(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = l.end[i-1]
	}
	return l.buf[start:l.end[i]]
}

// at returns name i.
func (l *nameList) at(i int) string { return string(l.bytes(i)) }

// is says whether name i is name.
func (l *nameList) is(i int, name string) bool { return string(l.bytes(i)) == name }

func (l *nameList) add(name string) {
	l.buf = append(l.buf, name...)
	l.end = append(l.end, uint32(len(l.buf)))
}

// recentNames bounds Batch.recent.
const recentNames = 4096

// msg starts a message of operation idx.
func (b *Batch) msg(idx int, typ int, flags uint16, fam Family) int {
	off := b.e.begin(nftType(typ), flags, fam, 0)
	b.msgOff = append(b.msgOff, uint32(off))
	b.msgOp = append(b.msgOp, int32(idx))
	return off
}

// done closes the message at off and records an encoding failure of idx.
func (b *Batch) done(idx, off int) int {
	b.e.end(off)
	if b.e.err != nil && b.errOp < 0 {
		b.errOp = idx
	}
	return idx
}

func (b *Batch) fail(idx int, err error) int {
	b.e.fail(err)
	if b.errOp < 0 {
		b.errOp = idx
	}
	return idx
}

// AddTable creates our table in fam if it does not exist.
func (b *Batch) AddTable(fam Family) int {
	idx := b.addOp(Op{Kind: OpTableAdd, Family: fam})
	off := b.msg(idx, unix.NFT_MSG_NEWTABLE, unix.NLM_F_CREATE, fam)
	b.e.str(unix.NFTA_TABLE_NAME, TableName)
	return b.done(idx, off)
}

// DelTable deletes our table in fam with everything in it (ENOENT when it
// does not exist).
func (b *Batch) DelTable(fam Family) int {
	idx := b.addOp(Op{Kind: OpTableDel, Family: fam})
	off := b.msg(idx, unix.NFT_MSG_DELTABLE, 0, fam)
	b.e.str(unix.NFTA_TABLE_NAME, TableName)
	return b.done(idx, off)
}

// AddChain creates the chain name (an nft name, see ChainName) of our table.
func (b *Batch) AddChain(fam Family, name string, spec ChainSpec) int {
	kind, flags := OpChainAdd, uint16(unix.NLM_F_CREATE)
	if spec.Exclusive {
		kind, flags = OpChainUserAdd, unix.NLM_F_CREATE|unix.NLM_F_EXCL
	}
	idx := b.addOp(Op{Kind: kind, Family: fam, Chain: name})
	off := b.msg(idx, unix.NFT_MSG_NEWCHAIN, flags, fam)
	b.e.str(unix.NFTA_CHAIN_TABLE, TableName)
	b.e.str(unix.NFTA_CHAIN_NAME, name)
	if spec.Base != nil {
		h := b.e.nest(unix.NFTA_CHAIN_HOOK)
		b.e.u32(unix.NFTA_HOOK_HOOKNUM, uint32(spec.Base.Hook))
		b.e.u32(unix.NFTA_HOOK_PRIORITY, uint32(spec.Base.Priority))
		b.e.endNest(h)
		b.e.str(unix.NFTA_CHAIN_TYPE, string(spec.Base.Type))
	}
	if spec.Policy != nil {
		b.e.u32(unix.NFTA_CHAIN_POLICY, uint32(*spec.Policy))
	}
	if spec.Counters != nil {
		b.counters(unix.NFTA_CHAIN_COUNTERS, *spec.Counters)
	}
	b.took() // callers add chains that do not exist
	return b.done(idx, off)
}

func (b *Batch) counters(typ uint16, c Counters) {
	n := b.e.nest(typ)
	b.e.u64(unix.NFTA_COUNTER_BYTES, c.Bytes)
	b.e.u64(unix.NFTA_COUNTER_PACKETS, c.Packets)
	b.e.endNest(n)
}

// SetPolicy sets the policy of an existing base chain; counters, when not
// nil, replace its policy counters (iptables -P resets them to zero).
func (b *Batch) SetPolicy(fam Family, name string, policy Policy, counters *Counters) int {
	idx := b.addOp(Op{Kind: OpChainUpdate, Family: fam, Chain: name})
	off := b.msg(idx, unix.NFT_MSG_NEWCHAIN, 0, fam)
	b.e.str(unix.NFTA_CHAIN_TABLE, TableName)
	b.e.str(unix.NFTA_CHAIN_NAME, name)
	b.e.u32(unix.NFTA_CHAIN_POLICY, uint32(policy))
	if counters != nil {
		b.counters(unix.NFTA_CHAIN_COUNTERS, *counters)
	}
	return b.done(idx, off)
}

// SetChainCounters replaces the policy counters of an existing base chain
// (zero them with Counters{}); a regular chain refuses with EOPNOTSUPP.
func (b *Batch) SetChainCounters(fam Family, name string, c Counters) int {
	idx := b.addOp(Op{Kind: OpChainZero, Family: fam, Chain: name})
	off := b.msg(idx, unix.NFT_MSG_NEWCHAIN, 0, fam)
	b.e.str(unix.NFTA_CHAIN_TABLE, TableName)
	b.e.str(unix.NFTA_CHAIN_NAME, name)
	b.counters(unix.NFTA_CHAIN_COUNTERS, c)
	return b.done(idx, off)
}

// RenameChain renames the chain with the given handle. The kernel looks the
// chain up by handle, so a chain created in the same batch cannot be
// renamed (ENOENT), as with iptables-nft; a taken name gives EEXIST.
func (b *Batch) RenameChain(fam Family, handle uint64, newName string) int {
	idx := b.addOp(Op{Kind: OpChainRename, Family: fam, Chain: newName, Handle: handle})
	off := b.msg(idx, unix.NFT_MSG_NEWCHAIN, 0, fam)
	b.e.str(unix.NFTA_CHAIN_TABLE, TableName)
	b.e.u64(unix.NFTA_CHAIN_HANDLE, handle)
	b.e.str(unix.NFTA_CHAIN_NAME, newName)
	return b.done(idx, off)
}

// DelChain deletes a chain without touching its rules: the kernel answers
// EBUSY when it still has rules or something jumps to it.
func (b *Batch) DelChain(fam Family, name string) int {
	idx := b.addOp(Op{Kind: OpChainDel, Family: fam, Chain: name})
	off := b.msg(idx, unix.NFT_MSG_DELCHAIN, unix.NLM_F_NONREC, fam)
	b.e.str(unix.NFTA_CHAIN_TABLE, TableName)
	b.e.str(unix.NFTA_CHAIN_NAME, name)
	return b.done(idx, off)
}

// FlushChain deletes all rules of a chain.
func (b *Batch) FlushChain(fam Family, name string) int {
	idx := b.addOp(Op{Kind: OpRuleFlush, Family: fam, Chain: name})
	off := b.msg(idx, unix.NFT_MSG_DELRULE, 0, fam)
	b.e.str(unix.NFTA_RULE_TABLE, TableName)
	b.e.str(unix.NFTA_RULE_CHAIN, name)
	return b.done(idx, off)
}

// FlushTable deletes all rules of all chains of our table; chains stay.
func (b *Batch) FlushTable(fam Family) int {
	idx := b.addOp(Op{Kind: OpRuleFlush, Family: fam})
	off := b.msg(idx, unix.NFT_MSG_DELRULE, 0, fam)
	b.e.str(unix.NFTA_RULE_TABLE, TableName)
	return b.done(idx, off)
}

// AppendRule adds a rule at the end of a chain.
func (b *Batch) AppendRule(fam Family, chain string, r RuleSpec) int {
	return b.rule(OpRuleAppend, fam, chain, unix.NLM_F_CREATE|unix.NLM_F_APPEND, 0, 0, r)
}

// AppendRuleAfter adds a rule right after the rule with the given handle.
func (b *Batch) AppendRuleAfter(fam Family, chain string, after uint64, r RuleSpec) int {
	return b.rule(OpRuleAppend, fam, chain, unix.NLM_F_CREATE|unix.NLM_F_APPEND, after, 0, r)
}

// InsertRule adds a rule at the head of a chain.
func (b *Batch) InsertRule(fam Family, chain string, r RuleSpec) int {
	return b.rule(OpRuleInsert, fam, chain, unix.NLM_F_CREATE, 0, 0, r)
}

// InsertRuleAtEnd adds a rule at the end of a chain for an insert at
// the head of a chain with no rule after it (iptables -I CHAIN or -I
// CHAIN 1 on an empty chain): iptables-nft's kernel operation is an
// insert there, and a refusal names it RULE_INSERT.
func (b *Batch) InsertRuleAtEnd(fam Family, chain string, r RuleSpec) int {
	return b.rule(OpRuleInsert, fam, chain, unix.NLM_F_CREATE|unix.NLM_F_APPEND, 0, 0, r)
}

// InsertRuleBefore adds a rule right before the rule with the given handle.
func (b *Batch) InsertRuleBefore(fam Family, chain string, before uint64, r RuleSpec) int {
	return b.rule(OpRuleInsert, fam, chain, unix.NLM_F_CREATE, before, 0, r)
}

// ReplaceRule replaces the rule with the given handle; the handle stays.
func (b *Batch) ReplaceRule(fam Family, chain string, handle uint64, r RuleSpec) int {
	return b.rule(OpRuleReplace, fam, chain, unix.NLM_F_REPLACE, 0, handle, r)
}

func (b *Batch) rule(kind OpKind, fam Family, chain string, flags uint16, pos, handle uint64, r RuleSpec) int {
	op := Op{Kind: kind, Family: fam, Chain: chain, Handle: handle}
	if handle == 0 {
		op.Handle = pos
	}
	idx := b.addOp(op)
	encoded := r.Encoded != nil && r.EncodedFamily == fam
	exprs := r.Exprs
	if !encoded {
		exprs = b.prepareExprs(idx, fam, r.Exprs)
	}
	off := b.msg(idx, unix.NFT_MSG_NEWRULE, flags, fam)
	b.e.str(unix.NFTA_RULE_TABLE, TableName)
	b.e.str(unix.NFTA_RULE_CHAIN, chain)
	if handle != 0 {
		b.e.u64(unix.NFTA_RULE_HANDLE, handle)
	} else {
		b.took()
	}
	if pos != 0 {
		b.e.u64(unix.NFTA_RULE_POSITION, pos)
	}
	if encoded {
		n := b.e.nest(unix.NFTA_RULE_EXPRESSIONS)
		copy(b.e.extend(len(r.Encoded)), r.Encoded)
		b.e.endNest(n)
	} else if err := b.exprList(fam, exprs); err != nil {
		b.e.end(off)
		return b.fail(idx, err)
	}
	b.ruleTail(r.UserData, r.Compat)
	return b.done(idx, off)
}

// prepareExprs sends, for operation idx, what the rule's expressions
// create with it (anonymous maps, bound chains, sets it looks up that
// may not exist yet) and returns the
// expressions to encode in the rule: exprs itself when there is nothing.
func (b *Batch) prepareExprs(idx int, fam Family, exprs []expr.Any) []expr.Any {
	out := exprs
	for i, x := range exprs {
		var y expr.Any
		switch m := x.(type) {
		case AnonMap:
			y = b.anonMap(idx, fam, m)
		case BoundChain:
			y = b.boundChain(idx, fam, m)
		case EnsuredLookup:
			y = b.ensureSet(idx, fam, m)
		case DroppingDynset:
			y = b.dropSets(idx, fam, m)
		default:
			continue
		}
		if &out[0] == &exprs[0] {
			out = append([]expr.Any(nil), exprs...)
		}
		out[i] = y
	}
	return out
}

// exprList encodes NFTA_RULE_EXPRESSIONS.
func (b *Batch) exprList(fam Family, exprs []expr.Any) error {
	n := b.e.nest(unix.NFTA_RULE_EXPRESSIONS)
	defer b.e.endNest(n)
	for i, x := range exprs {
		if j, ok := x.(boundJump); ok {
			j.encode(&b.e)
			continue
		}
		if b.e.encodeExpr(x) {
			continue
		}
		data, err := expr.Marshal(byte(fam), x)
		if err != nil {
			return fmt.Errorf("expression %d (%T): %w", i, x, err)
		}
		b.e.bytes(unix.NFTA_LIST_ELEM|unix.NLA_F_NESTED, data)
	}
	return nil
}

func (b *Batch) ruleTail(userdata []byte, compat *RuleCompat) {
	if compat != nil {
		n := b.e.nest(unix.NFTA_RULE_COMPAT)
		b.e.u32(unix.NFTA_RULE_COMPAT_PROTO, compat.Proto)
		var flags uint32
		if compat.Invert {
			flags = unix.NFT_RULE_COMPAT_F_INV
		}
		b.e.u32(unix.NFTA_RULE_COMPAT_FLAGS, flags)
		b.e.endNest(n)
	}
	if userdata != nil {
		b.e.bytes(unix.NFTA_RULE_USERDATA, userdata)
	}
}

// DelRule deletes the rule with the given handle.
func (b *Batch) DelRule(fam Family, chain string, handle uint64) int {
	idx := b.addOp(Op{Kind: OpRuleDelete, Family: fam, Chain: chain, Handle: handle})
	off := b.msg(idx, unix.NFT_MSG_DELRULE, 0, fam)
	b.e.str(unix.NFTA_RULE_TABLE, TableName)
	b.e.str(unix.NFTA_RULE_CHAIN, chain)
	b.e.u64(unix.NFTA_RULE_HANDLE, handle)
	return b.done(idx, off)
}

// ZeroRuleCounter replaces r, a rule read from the kernel, with itself with
// every counter at zero; handle, position, userdata and all other
// expressions are sent back byte for byte as read. compat is needed, as for
// adding the rule, when it holds xtables extensions that check the
// protocol: the kernel does not list NFTA_RULE_COMPAT back.
func (b *Batch) ZeroRuleCounter(r Rule, compat *RuleCompat) int {
	idx := b.addOp(Op{Kind: OpRuleReplace, Family: r.Family, Chain: r.Chain, Handle: r.Handle})
	if r.rawExprs == nil || r.Handle == 0 {
		return b.fail(idx, errors.New("ZeroRuleCounter needs a rule read from the kernel"))
	}
	off := b.msg(idx, unix.NFT_MSG_NEWRULE, unix.NLM_F_REPLACE, r.Family)
	b.e.str(unix.NFTA_RULE_TABLE, TableName)
	b.e.str(unix.NFTA_RULE_CHAIN, r.Chain)
	b.e.u64(unix.NFTA_RULE_HANDLE, r.Handle)
	n := b.e.nest(unix.NFTA_RULE_EXPRESSIONS)
	err := forEachExpr(r.rawExprs, func(name string, data []byte) error {
		el := b.e.nest(unix.NFTA_LIST_ELEM)
		b.e.str(unix.NFTA_EXPR_NAME, name)
		if name == "counter" {
			b.counters(unix.NFTA_EXPR_DATA, Counters{})
		} else if data != nil {
			b.e.bytes(unix.NFTA_EXPR_DATA|unix.NLA_F_NESTED, data)
		}
		b.e.endNest(el)
		return nil
	})
	b.e.endNest(n)
	if err != nil {
		b.e.end(off)
		return b.fail(idx, fmt.Errorf("re-encode rule %d: %w", r.Handle, err))
	}
	b.ruleTail(r.UserData, compat)
	return b.done(idx, off)
}

// ReinsertRule adds r, a rule read from the kernel, again as it was read:
// its expressions byte for byte (counters included) and its userdata,
// right before the rule with handle before, or at the end of its chain
// when before is 0. compat is as for ZeroRuleCounter. Sets the rule looks
// up are found by name when the batch commits, so a set deleted and made
// again earlier in the batch is the one the rule gets.
func (b *Batch) ReinsertRule(r Rule, before uint64, compat *RuleCompat) int {
	kind, flags := OpRuleInsert, uint16(unix.NLM_F_CREATE)
	if before == 0 {
		kind, flags = OpRuleAppend, unix.NLM_F_CREATE|unix.NLM_F_APPEND
	}
	idx := b.addOp(Op{Kind: kind, Family: r.Family, Chain: r.Chain, Handle: before})
	if r.rawExprs == nil {
		return b.fail(idx, fmt.Errorf("ReinsertRule needs a rule read from the kernel"))
	}
	off := b.msg(idx, unix.NFT_MSG_NEWRULE, flags, r.Family)
	b.took()
	b.e.str(unix.NFTA_RULE_TABLE, TableName)
	b.e.str(unix.NFTA_RULE_CHAIN, r.Chain)
	if before != 0 {
		b.e.u64(unix.NFTA_RULE_POSITION, before)
	}
	b.e.bytes(unix.NFTA_RULE_EXPRESSIONS|unix.NLA_F_NESTED, r.rawExprs)
	b.ruleTail(r.UserData, compat)
	return b.done(idx, off)
}

// appendLibMessages adds messages marshalled by github.com/google/nftables
// to operation idx, keeping their type, payload and create/exclusive flags
// but dropping the ack and echo requests: in a batch only errors come back.
func (b *Batch) appendLibMessages(idx int, msgs []netlink.Message, extra uint16) {
	for _, m := range msgs {
		flags := uint16(m.Header.Flags) &^ (unix.NLM_F_ACK | unix.NLM_F_ECHO)
		off := len(b.e.buf)
		var h [unix.NLMSG_HDRLEN]byte
		binary.NativeEndian.PutUint16(h[4:6], uint16(m.Header.Type))
		binary.NativeEndian.PutUint16(h[6:8], flags|extra|unix.NLM_F_REQUEST)
		b.e.buf = append(b.e.buf, h[:]...)
		b.e.buf = append(b.e.buf, m.Data...)
		b.msgOff = append(b.msgOff, uint32(off))
		b.msgOp = append(b.msgOp, int32(idx))
		b.done(idx, off)
	}
}
