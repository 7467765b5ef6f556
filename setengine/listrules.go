package setengine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/nftables/expr"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/translate"
)

// -m set on a list:set is translated with the list's members (a chain
// bound to the rule tests them: see compat.SetMatch.NftListExprs), so
// the rule follows the list only when it is translated again. relist
// does that in the transaction that changes the list.

// relist returns what keeps the rules that match a list:set in step
// with cur: when a list's members differ from old (add, del, flush,
// swap, restore) or one of its members is deleted or made again, each
// rule matching it is translated again with cur's members, with its
// counters. It replaces the old rule after the sets are made (post),
// keeping its handle; a rule whose old form looks up a set that goes
// away in the transaction is taken out before the sets change (pre) and
// put back in its place after. Both are no-ops when no list changed.
func (e *Engine) relist(old, cur *ipset.State) (pre, post func(b *kernel.Batch), err error) {
	gone := map[string]bool{} // sets deleted or made again
	for _, o := range old.Sets {
		if n := cur.Find(o.Name); n == nil || n.Header() != o.Header() || n.Family != o.Family {
			gone[o.Name] = true
		}
	}
	changed := map[string]bool{} // lists whose rules are translated again
	moving := map[string]bool{}  // ... and taken out first
	for _, l := range cur.Sets {
		if !l.Type.List {
			continue
		}
		var was []string
		if o := old.Find(l.Name); o != nil {
			was = o.Members()
		}
		if !slices.Equal(was, l.Members()) {
			changed[l.Name] = true
		}
		for _, m := range was {
			if gone[m] {
				changed[l.Name], moving[l.Name] = true, true
			}
		}
	}
	if len(changed) == 0 {
		return func(*kernel.Batch) {}, func(*kernel.Batch) {}, nil
	}
	// cur's sets, and the kernel's headers of the sets cur did not read
	read := map[string]*ipset.Set{}
	find := func(name string) *ipset.Set {
		if s := cur.Find(name); s != nil {
			return s
		}
		if s, ok := read[name]; ok {
			return s
		}
		var s *ipset.Set
		if st, err := e.Headers(name); err == nil {
			s = st.Find(name)
		}
		read[name] = s
		return s
	}
	prev := compat.LookupIPSet
	compat.LookupIPSet = func(name string) (compat.SetInfo, bool) {
		s := find(name)
		if s == nil {
			return compat.SetInfo{}, false
		}
		return SetInfo(name, s, find), true
	}
	defer func() { compat.LookupIPSet = prev }()

	type redone struct {
		fam    kernel.Family
		chain  string
		handle uint64
		before uint64 // moved: the next rule of its chain that stays
		moved  bool
		spec   kernel.RuleSpec
	}
	var rules []redone
	for _, fam := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		all, err := e.Conn.TableRules(fam)
		if err != nil {
			return nil, nil, err
		}
		f := compat.IPv4
		if fam == kernel.IPv6 {
			f = compat.IPv6
		}
		next := uint64(0)
		for i := len(all) - 1; i >= 0; i-- {
			kr := all[i]
			if i == len(all)-1 || all[i+1].Chain != kr.Chain {
				next = 0
			}
			table, chain, ok := translate.SplitChainName(kr.Chain)
			text, hasText := translate.StoredSpec(kr.UserData)
			if !ok || !hasText || !strings.Contains(text, "-set ") {
				next = kr.Handle
				continue
			}
			r, err := translate.StoredRule(f, table, chain, kr.UserData)
			if err != nil {
				next = kr.Handle
				continue
			}
			uses, moved := false, false
			for _, m := range r.Matches {
				if sm, ok := m.(*compat.SetMatch); ok && changed[sm.SetName] {
					uses, moved = true, moved || moving[sm.SetName]
				}
			}
			if !uses {
				next = kr.Handle
				continue
			}
			if c := kr.CounterValues(); c != nil {
				r.Counters = &compat.Counters{Packets: c.Packets, Bytes: c.Bytes}
			}
			es, err := translate.ExprsIn(table, chain, r)
			if err != nil {
				return nil, nil, fmt.Errorf("rule %q of chain %s: %w", text, kr.Chain, err)
			}
			spec := kernel.RuleSpec{Exprs: es, UserData: kr.UserData}
			if hasXtables(es) {
				spec.Compat = &kernel.RuleCompat{Proto: uint32(r.Proto), Invert: r.ProtoInv}
			}
			rules = append(rules, redone{fam: fam, chain: kr.Chain, handle: kr.Handle, before: next, moved: moved, spec: spec})
			if !moved {
				next = kr.Handle
			}
		}
	}
	pre = func(b *kernel.Batch) {
		for _, r := range rules {
			if r.moved {
				b.DelRule(r.fam, r.chain, r.handle)
			}
		}
	}
	post = func(b *kernel.Batch) {
		// collected from the end of each chain: put back from the start,
		// so that moved rules before the same stayer keep their order
		for i := len(rules) - 1; i >= 0; i-- {
			switch r := rules[i]; {
			case !r.moved:
				b.ReplaceRule(r.fam, r.chain, r.handle, r.spec)
			case r.before != 0:
				b.InsertRuleBefore(r.fam, r.chain, r.before, r.spec)
			default:
				b.AppendRule(r.fam, r.chain, r.spec)
			}
		}
	}
	return pre, post, nil
}

// hasXtables says whether es (or the rules of a chain bound to them)
// hold an xtables match or target, which read NFTA_RULE_COMPAT.
func hasXtables(es []expr.Any) bool {
	for _, x := range es {
		switch x := x.(type) {
		case *expr.Match, *expr.Target:
			return true
		case kernel.BoundChain:
			for _, r := range x.BoundRules() {
				if hasXtables(r) {
					return true
				}
			}
		}
	}
	return false
}

// isListMemberTest says whether r, a rule of a chain bound to another,
// is one of the member tests of a -m set on a list:set (its lookups are
// the members', which ipset does not count as references of the rule):
// keys loaded from the packet and looked up, ending in return or in
// nothing (the rules that count a member, or the list's element of it,
// where it is the first member that matches). Other bound
// chains' rules hold other statements (-j SET's dynset, the rest of a
// list:set rule its counter).
func isListMemberTest(r kernel.Rule) bool {
	if !kernel.IsBoundChainName(r.Chain) {
		return false
	}
	lookups := 0
	for i, x := range r.Exprs {
		switch x := x.(type) {
		case *expr.Lookup:
			lookups++
		case *expr.Payload:
			if x.OperationType != expr.PayloadLoad {
				return false
			}
		case *expr.Meta:
			if x.SourceRegister {
				return false
			}
		case *expr.Bitwise:
		case *expr.Immediate:
			if x.Register == 0 { // NFT_REG_VERDICT
				return false
			}
		case *expr.Verdict:
			if i != len(r.Exprs)-1 || x.Kind != expr.VerdictReturn {
				return false
			}
		default:
			return false
		}
	}
	return lookups > 0
}

// listReferences counts, per set name, the -m set matches of the rules
// of our tables (both families) that name it, for the list:set sets
// among them: their rules look their members up, not them.
func (e *Engine) listReferences(lists map[string]bool) map[string]int {
	refs := map[string]int{}
	if len(lists) == 0 {
		return refs
	}
	for _, fam := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		f := compat.IPv4
		if fam == kernel.IPv6 {
			f = compat.IPv6
		}
		rules, err := e.Conn.TableRules(fam)
		if err != nil {
			continue
		}
		for _, kr := range rules {
			table, chain, ok := translate.SplitChainName(kr.Chain)
			text, hasText := translate.StoredSpec(kr.UserData)
			if !ok || !hasText || !strings.Contains(text, "-set ") {
				continue
			}
			r, err := translate.StoredRule(f, table, chain, kr.UserData)
			if err != nil {
				continue
			}
			for _, m := range r.Matches {
				if sm, ok := m.(*compat.SetMatch); ok && lists[sm.SetName] {
					refs[sm.SetName]++
				}
			}
		}
	}
	return refs
}
