package compat

import (
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

func init() {
	RegisterTarget(&ExtSpec{
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
	})
}

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
	if len(ref.Dirs) == 0 {
		return
	}
	b.WriteString(" " + opt + " " + ref.Name)
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

func (t *SetTarget) write(b *strings.Builder, pfx string) {
	tgWriteSetRef(b, pfx+"add-set", t.Add)
	if t.Exist {
		b.WriteString(" " + pfx + "exist")
	}
	if t.Timeout != tgSetNoTimeout {
		fmt.Fprintf(b, " %stimeout %d", pfx, t.Timeout)
	}
	tgWriteSetRef(b, pfx+"del-set", t.Del)
	tgWriteSetRef(b, pfx+"map-set", t.Map)
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

func (t *SetTarget) Save(b *strings.Builder, _ *Rule) { t.write(b, "--") }

func (t *SetTarget) List(b *strings.Builder, _ *Rule, _ bool) { t.write(b, "") }

// nft_dynset operations.
const (
	dynsetOpAdd    = 0 // NFT_DYNSET_OP_ADD
	dynsetOpUpdate = 1 // NFT_DYNSET_OP_UPDATE
	dynsetOpDelete = 2 // NFT_DYNSET_OP_DELETE
)

// NftExprs adds the packet's key to the set (--add-set) or deletes it
// (--del-set) with nft dynset on the same nftables set -m set looks up.
// --add-set adds a missing element and leaves an existing one alone;
// with --exist it also refreshes an existing element's timeout
// (dynset update). The timeout is --timeout, else the set's default.
// Net types (an interval set holds their flattened pieces, which the
// packet path cannot update) are refused with a message naming the set;
// --map-set has no native form.
func (t *SetTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if LookupIPSet == nil || len(t.Map.Dirs) > 0 {
		return nil, ErrNoNative
	}
	var out []expr.Any
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
			// a net type: its lookup set is an interval set (ipset/doc.go)
			return nil, Errorf(StatusParameter, "Set %s holds networks: the nftables backend cannot update a net type (hash:net, hash:net,port, ...) from rules yet.", op.ref.Name)
		}
		if info.Family != ctx.Family || len(op.ref.Dirs) < len(info.Dims) {
			continue // ipset does nothing for these (see -m set)
		}
		dirs := op.ref.Dirs
		out = append(out, setKeyExprs(ctx, info, func(i int) bool { return dirs[i] })...)
		d := &expr.Dynset{SrcRegKey: KernelReg(8), SetName: info.NftName, Operation: dynsetOpDelete}
		if op.add {
			d.Operation = dynsetOpAdd
			if t.Exist && info.HasTimeout {
				d.Operation = dynsetOpUpdate
			}
			if info.HasTimeout {
				secs := info.Timeout
				if t.Timeout != tgSetNoTimeout {
					secs = t.Timeout
				}
				d.Timeout = time.Duration(secs) * time.Second
			}
		}
		out = append(out, d)
	}
	return out, nil
}
