package ruleset

import (
	"errors"

	"github.com/xdptables/xdptables/compat"
)

// RestoreOptions are iptables-restore's switches that change semantics.
type RestoreOptions struct {
	Noflush  bool
	Counters bool
}

// ApplySection applies one "*table ... COMMIT" section to the view, as
// a restore does (without the kernel: `xdptables canon` uses it).
func (v *View) ApplySection(t *compat.RestoreTable, o RestoreOptions) error {
	return v.restoreSection(t, o)
}

// restoreSection applies one "*table ... COMMIT" section to the view.
func (v *View) restoreSection(t *compat.RestoreTable, o RestoreOptions) error {
	v.Noflush = o.Noflush
	declared := map[string]bool{}
	if !o.Noflush {
		// the section replaces the table: every chain is emptied now and
		// the chains the section does not declare are deleted below
		v.replaced = true
		for _, n := range v.names {
			if c := v.Chains[n]; c != nil && !c.deleted {
				v.flush(c)
			}
		}
	}
	for _, d := range t.Chains {
		v.Line = d.Line
		declared[d.Name] = true
		if compat.IsBuiltin(t.Name, d.Name) {
			if d.Policy == "-" {
				d.Policy = compat.VerdictAccept // ":INPUT -" declares the built-in chain
			}
			if d.Policy != compat.VerdictAccept && d.Policy != compat.VerdictDrop {
				return &compat.RestoreError{Line: d.Line, Err: compat.Plainf(compat.StatusOther, "Bad policy name.")}
			}
			c := v.chain(d.Name)
			v.materialize(c)
			c.Policy, c.policySet = d.Policy, true
			cnt := compat.Counters{}
			if o.Counters {
				cnt = d.Counters
			}
			c.Counters = &cnt
			continue
		}
		if c := v.existing(d.Name); c != nil {
			if o.Noflush {
				v.flush(c)
			}
			continue
		}
		v.newChain(d.Name)
	}
	if !o.Noflush {
		for _, n := range append([]string(nil), v.names...) {
			c := v.Chains[n]
			if c != nil && !c.deleted && c.InKernel && !declared[n] {
				c.deleted, c.create = true, false
			}
		}
	}
	v.deferJumps, v.pendingJumps = true, nil
	defer func() { v.deferJumps = false }()
	for _, rc := range t.Cmds {
		v.Line = rc.Line
		if err := v.Apply(rc.Cmd); err != nil {
			var ke *KernelError
			if errors.As(err, &ke) {
				return &compat.RestoreError{Line: rc.Line, Err: ke.AsCompat()}
			}
			return &compat.RestoreError{Line: rc.Line, Err: err}
		}
	}
	v.deferJumps = false
	for _, j := range v.pendingJumps {
		if err := v.checkJump(&compat.Command{JumpChain: j}); err != nil {
			return &compat.RestoreError{Line: t.CommitLine, Err: err}
		}
	}
	v.Line = 0
	return nil
}

// noflushNeed is what a --noflush restore of table must read: the rules of
// the chains its commands need (-D, -I N, -R, -X CHAIN...), or every rule
// when one of them acts on the whole table.
func noflushNeed(tables []*compat.RestoreTable, table string) need {
	var n need
	seen := map[string]bool{}
	seenChain := map[string]bool{}
	allChains := false
	addChain := func(c string) {
		if c != "" && !seenChain[c] {
			seenChain[c] = true
			n.chains = append(n.chains, c)
		}
	}
	for _, t := range tables {
		if t.Name != table {
			continue
		}
		for _, d := range t.Chains {
			addChain(d.Name)
		}
		for _, rc := range t.Cmds {
			m := needOf(rc.Cmd)
			if m.allRules {
				return need{allRules: true}
			}
			if len(m.chains) == 0 {
				allChains = true // a command on every chain (-F, -X, -Z)
			}
			for _, c := range m.chains {
				addChain(c)
			}
			for _, c := range m.rulesOf {
				if !seen[c] {
					seen[c] = true
					n.rulesOf = append(n.rulesOf, c)
				}
			}
		}
	}
	if allChains {
		n.chains = nil
	}
	return n
}
