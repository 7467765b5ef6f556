package ruleset

import (
	"fmt"
	"sort"
	"strings"

	"github.com/xdptables/xdptables/compat"
)

// ListRules prints the view as `iptables -S [CHAIN [N]]` does.
func (v *View) ListRules(cmd *compat.Command) (string, error) {
	v.addXDPCounters()
	var b strings.Builder
	verbose := cmd.Verbose > 0
	policyLine := func(c *ChainState) {
		if c.Builtin {
			fmt.Fprintf(&b, "-P %s %s", c.Name, c.Policy)
			if verbose {
				var cnt compat.Counters
				if c.Counters != nil {
					cnt = *c.Counters
				}
				fmt.Fprintf(&b, " -c %d %d", cnt.Packets, cnt.Bytes)
			}
			b.WriteByte('\n')
		} else {
			fmt.Fprintf(&b, "-N %s\n", c.Name)
		}
	}
	rules := func(c *ChainState) {
		for _, r := range c.Rules {
			b.WriteString(compat.SaveRule(c.Name, r.Rule, verbose))
			b.WriteByte('\n')
		}
	}
	if cmd.Chain != "" {
		c := v.listed(cmd.Chain)
		if c == nil {
			return "", v.incompatible(cmd.Chain)
		}
		if cmd.RuleNum > 0 {
			if cmd.RuleNum <= len(c.Rules) {
				b.WriteString(compat.SaveRule(c.Name, c.Rules[cmd.RuleNum-1].Rule, verbose))
				b.WriteByte('\n')
			}
			return b.String(), nil
		}
		policyLine(c)
		rules(c)
		return b.String(), nil
	}
	chains := v.Sorted()
	for _, c := range chains {
		policyLine(c)
	}
	for _, c := range chains {
		rules(c)
	}
	return b.String(), nil
}

// listed returns a chain for listing: existing ones and absent built-ins.
func (v *View) listed(name string) *ChainState {
	if c := v.existing(name); c != nil {
		return c
	}
	if compat.IsBuiltin(v.Table, name) {
		return &ChainState{Name: name, Builtin: true, Policy: compat.VerdictAccept}
	}
	return nil
}

func (v *View) incompatible(chain string) error {
	return compat.Errorf(compat.StatusOther, "chain `%s' in table `%s' is incompatible, use 'nft' tool.", chain, v.Table)
}

// List prints the view as `iptables -L` does with the command's options.
func (v *View) List(cmd *compat.Command) (string, error) {
	v.addXDPCounters()
	f := compat.ListFormat{Verbose: cmd.Verbose > 0, Numeric: cmd.Numeric, Exact: cmd.Exact, LineNumbers: cmd.LineNumbers}
	var b strings.Builder
	one := func(c *ChainState) {
		var cnt compat.Counters
		if c.Counters != nil {
			cnt = *c.Counters
		}
		policy := ""
		if c.Builtin {
			policy = c.Policy
		}
		b.WriteString(f.ChainHeader(c.Name, policy, cnt, v.References(c.Name)))
		for i, r := range c.Rules {
			b.WriteString(f.ListRule(r.Rule, i+1))
		}
	}
	if cmd.Chain != "" {
		c := v.listed(cmd.Chain)
		if c == nil {
			return "", v.incompatible(cmd.Chain)
		}
		if cmd.RuleNum > 0 {
			if cmd.RuleNum <= len(c.Rules) {
				b.WriteString(f.ListRule(c.Rules[cmd.RuleNum-1].Rule, cmd.RuleNum))
			}
			return b.String(), nil
		}
		one(c)
		return b.String(), nil
	}
	for i, c := range v.Sorted() {
		if i > 0 {
			b.WriteByte('\n')
		}
		one(c)
	}
	return b.String(), nil
}

// Save returns the table for iptables-save.
func (v *View) Save() *compat.SaveTable {
	v.addXDPCounters()
	t := &compat.SaveTable{Name: v.Table}
	for _, c := range v.Sorted() {
		sc := &compat.SaveChain{Name: c.Name, Policy: "-"}
		if c.Builtin {
			sc.Policy = c.Policy
		}
		if c.Counters != nil {
			sc.Counters = *c.Counters
		}
		for _, r := range c.Rules {
			sc.Rules = append(sc.Rules, r.Rule)
		}
		t.Chains = append(t.Chains, sc)
	}
	return t
}

// verboseNotes are the lines iptables -v prints before flushing or
// zeroing chains.
func (v *View) verboseNotes(cmd *compat.Command) string {
	var b strings.Builder
	switch cmd.Op {
	case compat.OpFlush:
		for _, c := range v.Sorted() {
			if cmd.Chain == "" || c.Name == cmd.Chain {
				b.WriteString("Flushing chain `" + c.Name + "'\n")
			}
		}
	case compat.OpZero:
		for _, c := range v.Sorted() {
			if (cmd.Chain == "" && c.InKernel) || c.Name == cmd.Chain {
				b.WriteString("Zeroing chain `" + c.Name + "'\n")
			}
		}
	}
	return b.String()
}

// deletedNotes lists the user chains -X removed ("Deleting chain `X'").
func (v *View) deletedNotes() string {
	var names []string
	for n, c := range v.Chains {
		if c.deleted && c.InKernel && !c.Builtin {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString("Deleting chain `" + n + "'\n")
	}
	return b.String()
}
