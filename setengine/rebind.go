package setengine

import (
	"github.com/google/nftables/expr"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/translate"
)

// rebind handles the sets that diff makes again (their header changed,
// e.g. a swap with a set of another maxelem or hashsize) while rules use
// them: the kernel does not delete a set a rule uses, and nft cannot
// rename a set. The rules are taken out before the sets go (pre) and put
// back after the new ones are made (post), in the same transaction,
// where they were and with their counters, so that they look up the new
// sets. Both are no-ops when no such rule exists.
func (e *Engine) rebind(old, cur *ipset.State) (pre, post func(b *kernel.Batch), err error) {
	names := map[kernel.Family]map[string]bool{}
	for _, o := range old.Sets {
		n := cur.Find(o.Name)
		if n == nil || (n.Header() == o.Header() && n.Family == o.Family) {
			continue
		}
		fam := famOf(o)
		if names[fam] == nil {
			names[fam] = map[string]bool{}
		}
		for _, s := range append(o.NftSetNames(), ipset.NomatchSetName(o.Name)) {
			names[fam][s] = true
		}
	}
	type moved struct {
		r      kernel.Rule
		before uint64
		compat *kernel.RuleCompat
	}
	var rules []moved
	for fam, sets := range names {
		all, err := e.Conn.TableRules(fam)
		if err != nil {
			return nil, nil, err
		}
		// the rules come chain by chain, in order: each moved rule goes
		// back before the next rule of its chain that stays
		next := uint64(0)
		for i := len(all) - 1; i >= 0; i-- {
			r := all[i]
			if i == len(all)-1 || all[i+1].Chain != r.Chain {
				next = 0
			}
			if !usesAny(r, sets) || kernel.IsBoundChainName(r.Chain) {
				// (a bound chain's rules go with the rule it is bound
				// to: those of -m set on a list:set are relist's)
				next = r.Handle
				continue
			}
			rules = append(rules, moved{r: r, before: next, compat: ruleCompat(fam, r)})
		}
	}
	if len(rules) == 0 {
		return func(*kernel.Batch) {}, func(*kernel.Batch) {}, nil
	}
	pre = func(b *kernel.Batch) {
		for _, m := range rules {
			b.DelRule(m.r.Family, m.r.Chain, m.r.Handle)
		}
	}
	post = func(b *kernel.Batch) {
		// collected from the end of each chain: put back from the start,
		// so that rules before the same stayer keep their order
		for i := len(rules) - 1; i >= 0; i-- {
			b.ReinsertRule(rules[i].r, rules[i].before, rules[i].compat)
		}
	}
	return pre, post, nil
}

// usesAny says whether r looks up or updates one of the nft sets.
func usesAny(r kernel.Rule, sets map[string]bool) bool {
	for _, x := range r.Exprs {
		switch l := x.(type) {
		case *expr.Lookup:
			if sets[l.SetName] {
				return true
			}
		case *expr.Dynset:
			if sets[l.SetName] {
				return true
			}
		}
	}
	return false
}

// ruleCompat is the protocol information a rule's xtables extensions
// check (NFTA_RULE_COMPAT, which the kernel does not list back), from the
// rule text kept in its userdata.
func ruleCompat(fam kernel.Family, r kernel.Rule) *kernel.RuleCompat {
	table, chain, ok := translate.SplitChainName(r.Chain)
	if !ok {
		return nil
	}
	f := compat.IPv4
	if fam == kernel.IPv6 {
		f = compat.IPv6
	}
	cr, err := translate.StoredRule(f, table, chain, r.UserData)
	if err != nil {
		return nil
	}
	return &kernel.RuleCompat{Proto: uint32(cr.Proto), Invert: cr.ProtoInv}
}
