package compat

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/google/nftables/expr"
)

// SetTarget is -j SET (revision 3): it adds the packet's addresses or
// ports to an ipset, deletes them, or maps set entries to packet
// metadata. Sets are named here; the kernel keeps their index.
type SetTarget struct {
	Add, Del, Map SetRef
	Exist         bool
	Timeout       uint32 // tgSetNoTimeout when not given
	MapMark       bool
	MapPrio       bool
	MapQueue      bool
}

// SetRef is a set with its src/dst direction list (xt_set_info).
type SetRef struct {
	Name string
	// Dirs holds true for "src", false for "dst", per dimension.
	Dirs []bool
}

const tgSetNoTimeout = 0xffffffff

// ipsetMaxTimeout is IPSET_MAX_TIMEOUT, (UINT_MAX >> 1) / MSEC_PER_SEC
// seconds: xt SET lowers a larger --timeout to it.
const ipsetMaxTimeout = 2147483

const (
	tgSetOptAdd = iota
	tgSetOptDel
	tgSetOptExist
	tgSetOptTimeout
	tgSetOptMap
	tgSetOptMapMark
	tgSetOptMapPrio
	tgSetOptMapQueue
)

const (
	tgIPSetMaxNameLen = 32
	tgIPSetDimMax     = 6
)

var setTargetSpec = ExtSpec{
	Name: "SET",
	Options: []OptDef{
		{Name: "add-set", Arg: RequiredArg, ID: tgSetOptAdd},
		{Name: "del-set", Arg: RequiredArg, ID: tgSetOptDel},
		{Name: "exist", Arg: NoArg, ID: tgSetOptExist},
		{Name: "timeout", Arg: RequiredArg, ID: tgSetOptTimeout},
		{Name: "map-set", Arg: RequiredArg, ID: tgSetOptMap},
		{Name: "map-mark", Arg: NoArg, ID: tgSetOptMapMark},
		{Name: "map-prio", Arg: NoArg, ID: tgSetOptMapPrio},
		{Name: "map-queue", Arg: NoArg, ID: tgSetOptMapQueue},
	},
	NewTarget: func(Family) TargetExt { return &SetTarget{Timeout: tgSetNoTimeout} },
}

var _ = RegisterTarget(&setTargetSpec)

func (t *SetTarget) Name() string { return "SET" }

// parseSetRef reads "NAME DIRS" (the directions are the next word).
func tgParseSetRef(p *OptArg, ref *SetRef, what string) error {
	if len(ref.Dirs) > 0 {
		return Paramf("--%s can be specified only once", what)
	}
	dirs, ok := p.NextArg()
	if !ok {
		return Paramf("--%s requires two args.", what)
	}
	if len(p.Arg) > tgIPSetMaxNameLen-1 {
		return Paramf("setname `%s' too long, max %d characters.", p.Arg, tgIPSetMaxNameLen-1)
	}
	if err := p.needSet(p.Arg); err != nil {
		return err
	}
	ref.Name = p.Arg
	rest, more := dirs, true
	for len(ref.Dirs) < tgIPSetDimMax && more {
		var tok string
		tok, rest, more = strings.Cut(rest, ",")
		switch {
		case strings.HasPrefix(tok, "src"):
			ref.Dirs = append(ref.Dirs, true)
		case strings.HasPrefix(tok, "dst"):
			ref.Dirs = append(ref.Dirs, false)
		default:
			// (sic)
			return Paramf("You must spefify (the comma separated list of) 'src' or 'dst'.")
		}
	}
	if more {
		return Paramf("Can't be more src/dst options than %d.", tgIPSetDimMax)
	}
	return nil
}

func (t *SetTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgSetOptAdd:
		return tgParseSetRef(p, &t.Add, "add-set")
	case tgSetOptDel:
		return tgParseSetRef(p, &t.Del, "del-set")
	case tgSetOptMap:
		return tgParseSetRef(p, &t.Map, "map-set")
	case tgSetOptExist:
		t.Exist = true
	case tgSetOptTimeout:
		v, _, ok := tgStrtoul(p.Arg, 0, 0xfffffffe, true)
		if !ok {
			return Paramf("Invalid value for option --timeout or out of range 0-%d", uint32(0xfffffffe))
		}
		t.Timeout = uint32(v)
	case tgSetOptMapMark:
		t.MapMark = true
	case tgSetOptMapPrio:
		t.MapPrio = true
	case tgSetOptMapQueue:
		t.MapQueue = true
	}
	return nil
}

func (t *SetTarget) Final(_ *Rule, seen OptSet) error {
	if !seen.Has(tgSetOptAdd) && !seen.Has(tgSetOptDel) && !seen.Has(tgSetOptMap) {
		return Paramf("You must specify either `--add-set' or `--del-set' or `--map-set'")
	}
	if !seen.Has(tgSetOptAdd) {
		if seen.Has(tgSetOptExist) {
			return Paramf("Flag `--exist' can be used with `--add-set' only")
		}
		if seen.Has(tgSetOptTimeout) {
			return Paramf("Option `--timeout' can be used with `--add-set' only")
		}
	}
	if !seen.Has(tgSetOptMap) {
		for _, f := range []struct {
			id   int
			name string
		}{{tgSetOptMapMark, "map-mark"}, {tgSetOptMapPrio, "map-prio"}, {tgSetOptMapQueue, "map-queue"}} {
			if seen.Has(f.id) {
				return Paramf("Flag `--%s' can be used with `--map-set' only", f.name)
			}
		}
	}
	if seen.Has(tgSetOptMap) && !seen.Has(tgSetOptMapMark) && !seen.Has(tgSetOptMapPrio) && !seen.Has(tgSetOptMapQueue) {
		return Paramf("You must specify flags `--map-mark' or '--map-prio` or `--map-queue'")
	}
	return nil
}

func tgWriteSetRef(b *strings.Builder, opt string, ref SetRef) {
	tgWriteSetRefAs(b, opt, ref, ref.Name)
}

func tgWriteSetRefAs(b *strings.Builder, opt string, ref SetRef, name string) {
	if len(ref.Dirs) == 0 {
		return
	}
	b.WriteString(" " + opt + " " + name)
	for i, src := range ref.Dirs {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		if src {
			b.WriteString("src")
		} else {
			b.WriteString("dst")
		}
	}
}

func (t *SetTarget) write(b *strings.Builder, pfx string) { t.writeNames(b, pfx, false) }

func (t *SetTarget) writeNames(b *strings.Builder, pfx string, exact bool) {
	ref := func(opt string, r SetRef) {
		name := r.Name
		if exact {
			name = exactWord(name)
		}
		tgWriteSetRefAs(b, opt, r, name)
	}
	ref(pfx+"add-set", t.Add)
	if t.Exist {
		b.WriteString(" " + pfx + "exist")
	}
	if t.Timeout != tgSetNoTimeout {
		fmt.Fprintf(b, " %stimeout %d", pfx, t.Timeout)
	}
	ref(pfx+"del-set", t.Del)
	ref(pfx+"map-set", t.Map)
	if t.MapMark {
		b.WriteString(" " + pfx + "map-mark")
	}
	if t.MapPrio {
		b.WriteString(" " + pfx + "map-prio")
	}
	if t.MapQueue {
		b.WriteString(" " + pfx + "map-queue")
	}
}

// mapRefused reports whether the kernel's xt SET (set_target_v3_checkentry)
// refuses the rule's --map-set: outside the mangle table always, and
// with --map-prio or --map-queue in a built-in chain other than FORWARD,
// OUTPUT and POSTROUTING (a user chain's hooks are checked at the jump,
// after the set's index, which only the kernel's ipset knows).
func (t *SetTarget) mapRefused(ctx *NftContext) bool {
	if ctx.Table != "mangle" {
		return true
	}
	h, builtin := builtinHook[ctx.Chain]
	return builtin && (t.MapPrio || t.MapQueue) && h != 2 && h != 3 && h != 4
}

// xtInfo is struct xt_set_info_target_v3 (x86_64): add_set, del_set and
// map_set as struct xt_set_info (index, dim, per-dimension source bits),
// flags, timeout. Sets given by name have no ipset index here: add_set
// and del_set say none (IPSET_INVALID_ID), so the kernel's check reaches
// the --map-set tests; map_set's index is 0.
func (t *SetTarget) xtInfo() []byte {
	ref := func(r SetRef, index uint16) []byte {
		if len(r.Dirs) == 0 {
			index = 0xffff
		}
		var flags byte
		for i, src := range r.Dirs {
			if src {
				flags |= 1 << i
			}
		}
		return append(binary.NativeEndian.AppendUint16(nil, index), byte(len(r.Dirs)), flags)
	}
	b := append(ref(t.Add, 0xffff), ref(t.Del, 0xffff)...)
	b = append(b, ref(t.Map, 0)...)
	var flags uint32
	if t.Exist {
		flags |= 1 << 0 // IPSET_FLAG_EXIST
	}
	if t.MapMark {
		flags |= 1 << 8 // IPSET_FLAG_MAP_SKBMARK
	}
	if t.MapPrio {
		flags |= 1 << 9 // IPSET_FLAG_MAP_SKBPRIO
	}
	if t.MapQueue {
		flags |= 1 << 10 // IPSET_FLAG_MAP_SKBQUEUE
	}
	b = binary.NativeEndian.AppendUint32(b, flags)
	return binary.NativeEndian.AppendUint32(b, t.Timeout)
}

func (t *SetTarget) Save(b *strings.Builder, _ *Rule) { t.write(b, "--") }

// SaveExact quotes set names with a space or a quote (-S prints them as
// they are), so that the rule's kept text reads back as the same rule.
func (t *SetTarget) SaveExact(b *strings.Builder, _ *Rule) { t.writeNames(b, "--", true) }

// ExactIsSave: no set name needs quotes.
func (t *SetTarget) ExactIsSave() bool {
	return !ifaceNeedsQuote(t.Add.Name) && !ifaceNeedsQuote(t.Del.Name) && !ifaceNeedsQuote(t.Map.Name)
}

func (t *SetTarget) List(b *strings.Builder, _ *Rule, _ bool) { t.write(b, "") }

// nft_dynset operations.
const (
	dynsetOpAdd    = 0 // NFT_DYNSET_OP_ADD
	dynsetOpUpdate = 1 // NFT_DYNSET_OP_UPDATE
	dynsetOpDelete = 2 // NFT_DYNSET_OP_DELETE
)

// NftExprs adds the packet's key to the set (--add-set) or deletes it
// (--del-set) with nft dynset on the same nftables set -m set looks up,
// as xt SET does (add, then del). The element an add creates has the
// timeout of --timeout, else the set's default, and counters of one
// packet of the packet's length, as ipset's packet path starts them
// (dynset counts the packet in the new element). An add of an element
// that exists:
//   - without --exist leaves it alone (ipset refuses the add). dynset
//     add would count the packet in its counters, so on a set with
//     counters an inverted lookup skips the add for an existing key.
//   - with --exist replaces its timeout and starts its counters again
//     (ipset overwrites the extensions): dynset delete, then add. On a
//     set whose elements have a comment or skbinfo values, which ipset
//     keeps and an element added by a rule cannot have, dynset update
//     refreshes the timeout of an element that has one instead (and
//     counts the packet in its counters; docs/extensions.md).
//
// The guard of the first case ends the rule, as do those of bitmap
// types (a bitmap:port adds and deletes the ports of TCP and UDP only,
// a bitmap adds nothing outside its range): when --del-set follows an
// add that may end the rule, the two run in a chain bound to the rule,
// one rule each.
// Net types (an interval set holds their flattened pieces, which the
// packet path cannot update: the kernel refuses dynset on rbtree and
// pipapo sets) and --map-set have no native form. Where the kernel
// refuses xt SET's --map-set (mapRefused) the rule carries the xt
// target, which the kernel refuses as for iptables-nft.
func (t *SetTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if len(t.Map.Dirs) > 0 && t.mapRefused(ctx) {
		return []expr.Any{tgXtTarget("SET", 3, t.xtInfo())}, nil
	}
	if LookupIPSet == nil || len(t.Map.Dirs) > 0 {
		return nil, ErrNoNative
	}
	var parts [][]expr.Any
	guarded := false
	for _, op := range []struct {
		ref SetRef
		add bool
	}{{t.Add, true}, {t.Del, false}} {
		if len(op.ref.Dirs) == 0 {
			continue
		}
		info, ok := LookupIPSet(op.ref.Name)
		if !ok {
			return nil, Errorf(StatusParameter, "Set %s doesn't exist.\n", op.ref.Name)
		}
		if err := info.familyError(op.ref.Name, ctx.Family); err != nil {
			return nil, err
		}
		if info.List {
			return nil, Errorf(StatusParameter, "Set %s is a list:set: the nftables backend cannot update it from rules yet.", op.ref.Name)
		}
		if !info.Updatable {
			// (the message names the set, as the list:set one does)
			return nil, Errorf(StatusParameter, "Set %s is of a net type: the nftables backend cannot update it from rules (its lookup set is an interval set, which the kernel's dynset refuses).", op.ref.Name)
		}
		if info.Family != ctx.Family || len(op.ref.Dirs) < len(info.Dims) {
			continue // ipset does nothing for these (see -m set)
		}
		dirs := op.ref.Dirs
		// the guards end the rule where ipset does nothing
		guard := portOnlyGuard(info)
		part := append(guard, setKeyExprs(ctx, info, func(i int) bool { return dirs[i] })...)
		if op.add {
			part = append(part, rangeGuard(info)...)
			guarded = len(guard) > 0 || info.RangeLo != nil
		}
		dyn := func(op uint32) *expr.Dynset {
			return &expr.Dynset{SrcRegKey: KernelReg(8), SetName: info.NftName, Operation: op}
		}
		if !op.add {
			parts = append(parts, dropCopies(append(part, dyn(dynsetOpDelete)), info))
			continue
		}
		add := dyn(dynsetOpAdd)
		if info.HasTimeout {
			secs := info.Timeout
			if t.Timeout != tgSetNoTimeout {
				// xt SET caps it to what fits in jiffies
				secs = min(t.Timeout, ipsetMaxTimeout)
			}
			add.Timeout = time.Duration(secs) * time.Second
		}
		switch {
		case t.Exist && !info.ElemData && (info.HasTimeout || info.Counters):
			part = append(part, dyn(dynsetOpDelete), add)
		case t.Exist && info.HasTimeout:
			add.Operation = dynsetOpUpdate
			part = append(part, add)
		case !t.Exist && info.Counters:
			part = append(part, &expr.Lookup{SourceRegister: KernelReg(8), SetName: info.NftName, Invert: true}, add)
			guarded = true
		default:
			part = append(part, add)
		}
		parts = append(parts, dropCopies(part, info))
	}
	if guarded && len(parts) > 1 {
		return []expr.Any{&BoundJump{Verdict: &expr.Verdict{Kind: expr.VerdictJump}, Rules: parts}}, nil
	}
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// CopyDroppingDynset is the dynset of a -j SET rule on a set whose
// entries other sets keep a copy of (SetInfo.Copies): the rule destroys
// them in its own transaction (kernel.DroppingDynset), since the packet
// path changes only the set itself.
type CopyDroppingDynset struct {
	*expr.Dynset
	Copies []string
}

// DroppedSets returns the dynset and the sets to destroy.
func (d *CopyDroppingDynset) DroppedSets() (*expr.Dynset, []string) { return d.Dynset, d.Copies }

// dropCopies makes the dynset that ends part drop the copies of the
// set of info, when it has any.
func dropCopies(part []expr.Any, info SetInfo) []expr.Any {
	if len(info.Copies) == 0 || len(part) == 0 {
		return part
	}
	if d, ok := part[len(part)-1].(*expr.Dynset); ok {
		part[len(part)-1] = &CopyDroppingDynset{Dynset: d, Copies: info.Copies}
	}
	return part
}
