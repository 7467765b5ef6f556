package setengine

import (
	"errors"
	"fmt"
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

// Load reads every ipset set from the kernel.
func (e *Engine) Load() (*ipset.State, error) {
	nc, err := nftables.New()
	if err != nil {
		return nil, err
	}
	defer nc.CloseLasting()
	st := &ipset.State{}
	for _, fam := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		tbl := &nftables.Table{Name: kernel.TableName, Family: nftables.TableFamily(fam)}
		infos, err := e.Conn.Sets(fam)
		if err != nil {
			return nil, fmt.Errorf("reading sets: %w", err)
		}
		if len(infos) == 0 {
			continue
		}
		sets, err := nc.GetSets(tbl)
		if err != nil {
			return nil, fmt.Errorf("reading sets: %w", err)
		}
		byName := map[string]*nftables.Set{}
		for _, s := range sets {
			byName[s.Name] = s
		}
		refs := map[string]int{}
		if rules, err := e.Conn.TableRules(fam); err == nil {
			for _, r := range rules {
				for _, x := range r.Exprs {
					if l, ok := x.(*expr.Lookup); ok {
						refs[l.SetName]++
					}
				}
			}
		}
		for _, info := range infos {
			s, ok := ipset.ParseHeader(info.Name, info.Comment)
			ns := byName[info.Name]
			if !ok || ns == nil {
				continue
			}
			s.References = refs[ns.Name]
			src := ns
			if s.Type.Net() {
				if src = byName[ipset.EntriesSetName(s.Name)]; src == nil {
					continue
				}
			}
			src.Table = tbl
			elems, err := nc.GetSetElements(src)
			if err != nil {
				return nil, fmt.Errorf("reading set %s: %w", src.Name, err)
			}
			for _, el := range elems {
				if en, ok := s.DecodeEntry(el); ok {
					s.Insert(en)
				}
			}
			st.Sets = append(st.Sets, s)
		}
	}
	return st, nil
}

// diff adds to b what turns old into cur.
func diff(b *kernel.Batch, old, cur *ipset.State) {
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
	del := func(s *ipset.Set) {
		for _, ns := range s.NftSets() {
			b.DelSet(famOf(s), ns.Set.Name)
		}
	}
	add := func(s *ipset.Set) {
		for _, ns := range s.NftSets() {
			set := ns.Set
			b.AddSet(famOf(s), &set, true)
			var els []nftables.SetElement
			for _, e := range ns.Elems {
				els = append(els, e.Parts...)
			}
			if len(els) > 0 {
				b.AddSetElements(famOf(s), &set, els, false)
			}
		}
	}
	for _, s := range old.Sets {
		if n := curBy[s.Name]; n == nil || n.Header() != s.Header() || n.Family != s.Family {
			del(s)
		}
	}
	for _, s := range cur.Sets {
		o := oldBy[s.Name]
		if o == nil || o.Header() != s.Header() || o.Family != s.Family {
			add(s)
			continue
		}
		os, ns := o.NftSets(), s.NftSets()
		for i := range ns {
			have := map[string]bool{}
			for _, e := range os[i].Elems {
				have[e.ID] = true
			}
			want := map[string]bool{}
			for _, e := range ns[i].Elems {
				want[e.ID] = true
			}
			var dels, adds []nftables.SetElement
			for _, e := range os[i].Elems {
				if !want[e.ID] {
					dels = append(dels, e.Parts...)
				}
			}
			for _, e := range ns[i].Elems {
				if !have[e.ID] {
					adds = append(adds, e.Parts...)
				}
			}
			set := ns[i].Set
			if len(dels) > 0 {
				b.DelSetElements(famOf(s), &set, dels)
			}
			if len(adds) > 0 {
				b.AddSetElements(famOf(s), &set, adds, false)
			}
		}
	}
}

// Run executes cmds (one command, or a restore file's commands) as one
// transaction. The returned error is an *ipset.Error naming the line for
// restore; on any error nothing changes.
func (e *Engine) Run(cmds []*ipset.Command) (Result, error) {
	for attempt := 0; ; attempt++ {
		genid, err := e.Conn.GenID()
		if err != nil {
			return Result{}, kernelErr(err)
		}
		st, err := e.Load()
		if err != nil {
			return Result{}, kernelErr(err)
		}
		old := st.Clone()
		var out, errOut strings.Builder
		for _, c := range cmds {
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
				errOut.WriteString(msg)
			}
			if ierr != nil {
				ierr.Line = c.Line
				return Result{Stdout: out.String(), Stderr: errOut.String()}, ierr
			}
		}
		for _, s := range st.Sets {
			if err := s.Supported(); err != nil {
				if o := old.Find(s.Name); o == nil || o.Header() != s.Header() || len(o.Entries) != len(s.Entries) {
					return Result{}, &ipset.Error{Msg: "Kernel error received: set type not supported", Status: ipset.StatusError}
				}
			}
		}
		b := kernel.NewBatch()
		diff(b, old, st)
		if b.Len() == 0 {
			return Result{Stdout: out.String(), Stderr: errOut.String()}, nil
		}
		err = e.Conn.Commit(b, genid)
		if errors.Is(err, kernel.ErrGenerationChanged) && attempt < 1000 {
			continue
		}
		if err != nil {
			return Result{}, kernelErr(err)
		}
		return Result{Stdout: out.String(), Stderr: errOut.String()}, nil
	}
}

func kernelErr(err error) error {
	switch {
	case errors.Is(err, unix.EPERM):
		return &ipset.Error{Msg: "Kernel error received: Operation not permitted", Status: ipset.StatusError}
	case errors.Is(err, unix.EBUSY):
		return &ipset.Error{Msg: ipset.MsgDestroyBusy, Status: ipset.StatusError}
	case errors.Is(err, unix.ENFILE), errors.Is(err, unix.ENOSPC):
		return &ipset.Error{Msg: ipset.MsgFull, Status: ipset.StatusError}
	}
	return &ipset.Error{Msg: "Kernel error received: " + err.Error(), Status: ipset.StatusError}
}
