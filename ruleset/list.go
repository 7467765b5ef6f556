package ruleset

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
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

// list carries out -L and -S without -Z. The chains are read first; then
// each chain's rules are read, translated and printed one chain at a
// time, so that no more than one rule (one chain for raw PREROUTING with
// XDP counters) is held at once, only the text. The generation id, read
// before and after, tells whether the chains were read from one state.
func (e *Engine) list(cmd *compat.Command) (string, error) {
	for attempt := 0; ; attempt++ {
		gen, err := e.Conn.GenID()
		if err != nil {
			return "", kernelReadError(err)
		}
		n := need{}
		if cmd.Chain != "" {
			n.chains = []string{cmd.Chain}
		}
		v, err := e.load(cmd.Table, n)
		var out string
		if err == nil {
			if cmd.Op == compat.OpList {
				out, err = e.streamList(v, cmd)
			} else {
				out, err = e.streamListRules(v, cmd)
			}
		}
		retry := errors.Is(err, kernel.ErrGenerationChanged)
		if err == nil {
			gen2, gerr := e.Conn.GenID()
			if gerr != nil {
				return "", kernelReadError(gerr)
			}
			retry = gen2 != gen
		}
		if retry && attempt < listRetries {
			continue
		}
		if err != nil {
			var fe *foreignError
			var ce *compat.Error
			if errors.As(err, &ce) {
				return "", err
			}
			if errors.As(err, &fe) {
				if cmd.Chain != "" {
					return "", v.incompatible(cmd.Chain)
				}
				return "", compat.Errorf(compat.StatusOther, "table `%s' is incompatible, use 'nft' tool.", cmd.Table)
			}
			return "", kernelReadError(err)
		}
		return out, nil
	}
}

// listRetries bounds how often a listing is read again because the
// ruleset changed meanwhile; after that the last reading is printed.
const listRetries = 20

// eachRule calls fn with every rule of chain c of v, translated, and its
// kernel handle, in chain order. The rules of raw PREROUTING are read
// first and get their XDP counters added; those of other chains are
// passed on as they are read. restart is called when the reading starts
// over (the dump was interrupted): fn will see the rules again.
func (e *Engine) eachRule(v *View, c *ChainState, restart func(), fn func(r *compat.Rule, handle uint64) error) error {
	if !c.InKernel {
		return nil
	}
	if XDPCounters != nil && v.Table == "raw" && c.Name == "PREROUTING" {
		c.Rules = nil
		err := e.scanChain(v.Table, c.Name, func() { c.Rules = nil }, func(kr *kernel.Rule) error {
			r, err := e.translate(v.Table, c.Name, kr)
			if err == nil {
				c.Rules = append(c.Rules, &RuleState{Rule: r, Handle: kr.Handle})
			}
			return err
		})
		if err != nil {
			return err
		}
		c.Loaded = true
		v.addXDPCounters()
		for _, r := range c.Rules {
			if err := fn(r.Rule, r.Handle); err != nil {
				return err
			}
		}
		c.Rules = nil
		return nil
	}
	return e.scanChain(v.Table, c.Name, restart, func(kr *kernel.Rule) error {
		r, err := e.translate(v.Table, c.Name, kr)
		if err != nil {
			return err
		}
		return fn(r, kr.Handle)
	})
}

// streamListRules is ListRules reading the rules chain by chain.
func (e *Engine) streamListRules(v *View, cmd *compat.Command) (string, error) {
	var b strings.Builder
	verbose := cmd.Verbose > 0
	rule := func(name string, r *compat.Rule) {
		b.WriteString(compat.SaveRule(name, r, verbose))
		b.WriteByte('\n')
	}
	if cmd.Chain != "" {
		c := v.listed(cmd.Chain)
		if c == nil {
			return "", v.incompatible(cmd.Chain)
		}
		if cmd.RuleNum == 0 {
			v.policyLine(&b, c, verbose)
		}
		start := b.Len()
		var nth *compat.Rule
		i := 0
		restart := func() {
			i, nth = 0, nil
			s := b.String()[:start]
			b.Reset()
			b.WriteString(s)
		}
		err := e.eachRule(v, c, restart, func(r *compat.Rule, _ uint64) error {
			i++
			switch {
			case cmd.RuleNum == 0:
				rule(c.Name, r)
			case i == cmd.RuleNum:
				nth = r
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		if nth != nil {
			rule(c.Name, nth)
		}
		return b.String(), nil
	}
	chains := v.Sorted()
	for _, c := range chains {
		v.policyLine(&b, c, verbose)
	}
	for _, c := range chains {
		start := b.Len()
		restart := func() {
			s := b.String()[:start]
			b.Reset()
			b.WriteString(s)
		}
		err := e.eachRule(v, c, restart, func(r *compat.Rule, _ uint64) error {
			rule(c.Name, r)
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// policyLine is a chain's line in -S: "-P CHAIN POLICY" or "-N CHAIN".
func (v *View) policyLine(b *strings.Builder, c *ChainState, verbose bool) {
	if c.Builtin {
		fmt.Fprintf(b, "-P %s %s", c.Name, c.Policy)
		if verbose {
			var cnt compat.Counters
			if c.Counters != nil {
				cnt = *c.Counters
			}
			fmt.Fprintf(b, " -c %d %d", cnt.Packets, cnt.Bytes)
		}
		b.WriteByte('\n')
	} else {
		fmt.Fprintf(b, "-N %s\n", c.Name)
	}
}

// streamList is List reading the rules chain by chain. A chain's header
// shows how many rules refer to it, which is only known once every chain
// was read: each chain's rules are printed into a text of their own.
func (e *Engine) streamList(v *View, cmd *compat.Command) (string, error) {
	f := compat.ListFormat{Verbose: cmd.Verbose > 0, Numeric: cmd.Numeric, Exact: cmd.Exact, LineNumbers: cmd.LineNumbers}
	header := func(b *strings.Builder, c *ChainState, refs int) {
		var cnt compat.Counters
		if c.Counters != nil {
			cnt = *c.Counters
		}
		policy := ""
		if c.Builtin {
			policy = c.Policy
		}
		b.WriteString(f.ChainHeader(c.Name, policy, cnt, refs))
	}
	// body reads the rules of c into text, counting the jumps to each
	// chain, and returns how many rules it has.
	body := func(c *ChainState, text *strings.Builder, jumps map[string]int, only int) (int, error) {
		i := 0
		var counted []string
		restart := func() {
			i = 0
			text.Reset()
			for _, t := range counted {
				jumps[t]--
			}
			counted = counted[:0]
		}
		err := e.eachRule(v, c, restart, func(r *compat.Rule, _ uint64) error {
			i++
			if t, ok := r.Target.(*compat.ChainTarget); ok {
				jumps[t.Chain]++
				counted = append(counted, t.Chain)
			}
			if only == 0 || i == only {
				text.WriteString(f.ListRule(r, i))
			}
			return nil
		})
		return i, err
	}
	if cmd.Chain != "" {
		c := v.listed(cmd.Chain)
		if c == nil {
			return "", v.incompatible(cmd.Chain)
		}
		var text strings.Builder
		jumps := map[string]int{}
		n, err := body(c, &text, jumps, cmd.RuleNum)
		if err != nil {
			return "", err
		}
		if cmd.RuleNum > 0 {
			return text.String(), nil
		}
		// as View.References for a view holding one chain
		refs := jumps[c.Name]
		if c.InKernel && c.use-n >= 0 {
			refs = c.use - n
		}
		var b strings.Builder
		header(&b, c, refs)
		b.WriteString(text.String())
		return b.String(), nil
	}
	chains := v.Sorted()
	texts := make([]string, len(chains))
	jumps := map[string]int{}
	for i, c := range chains {
		var text strings.Builder
		if _, err := body(c, &text, jumps, 0); err != nil {
			return "", err
		}
		texts[i] = text.String()
	}
	var b strings.Builder
	for i, c := range chains {
		if i > 0 {
			b.WriteByte('\n')
		}
		header(&b, c, jumps[c.Name])
		b.WriteString(texts[i])
		texts[i] = ""
	}
	return b.String(), nil
}
