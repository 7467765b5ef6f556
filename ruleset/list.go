package ruleset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/translate"
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
	b.WriteString(v.taintNote())
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
	b.WriteString(v.taintNote())
	for i, c := range v.Sorted() {
		if i > 0 {
			b.WriteByte('\n')
		}
		one(c)
	}
	return b.String(), nil
}

// taintNote is the line iptables-nft prints before a whole-table
// listing (-L, -S, save) when it left out base chains of other names.
func (v *View) taintNote() string {
	if !v.tainted {
		return ""
	}
	return "# Table `" + v.Table + "' contains incompatible base-chains, use 'nft' tool to list them.\n"
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

// deletionNotes lists the user chains -X NAME (or -X, name empty) is
// about to delete, as iptables -v names them before the kernel answers:
// all of them when it deletes them, the same names when it refuses as
// busy.
func (v *View) deletionNotes(name string) string {
	var names []string
	if name != "" {
		if c := v.existing(name); c != nil && !c.Builtin {
			names = append(names, name)
		}
	} else {
		for n, c := range v.Chains {
			if !c.Builtin && !c.deleted && (c.InKernel || c.create) {
				names = append(names, n)
			}
		}
		sort.Strings(names)
	}
	var b strings.Builder
	for _, n := range names {
		b.WriteString("Deleting chain `" + n + "'\n")
	}
	return b.String()
}

// list carries out -L and -S without -Z. The chains are read first; then
// the rules, chain by chain, are read, translated and printed as they
// come (see readChains), so that only the text is kept. The generation
// id, read before and after, tells whether the chains were read from one
// state of the ruleset; if not, they are read again.
func (e *Engine) list(cmd *compat.Command) (string, error) {
	gc := &gcTuning{}
	defer gc.restore()
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
			gc.forReading(v.ruleEstimate())
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

// gcTuning lets the heap grow further between collections while a
// listing runs (a small one is not collected at all): it keeps little
// (the text, a few batches of rules) and makes much short-lived garbage.
// The heap stays under a limit sized for the text of the rules expected,
// so that the process stays small.
type gcTuning struct {
	set   bool
	pct   int
	limit int64
}

// forReading tunes the collector for reading about rules rules (once).
func (g *gcTuning) forReading(rules int) {
	if g.set {
		return
	}
	g.set = true
	// a smaller listing makes little garbage in all (-L of a chain of
	// 5000 rules: 18 MB): collected only when the heap reaches the limit,
	// it costs ~10% less CPU than with two or three collections (which
	// also slow every allocation while they mark), for a larger process
	// (20 → 27 MB)
	pct, limit := 400, max(64<<20, int64(rules)*512)
	if rules < 20000 {
		pct, limit = -1, 32<<20
	}
	g.pct = debug.SetGCPercent(pct)
	g.limit = debug.SetMemoryLimit(limit)
}

// restore puts the collector's settings back.
func (g *gcTuning) restore() {
	if g.set {
		debug.SetGCPercent(g.pct)
		debug.SetMemoryLimit(g.limit)
	}
}

// ruleEstimate is an upper bound of the number of rules in the chains of
// v: the kernel's use counts (rules, and jumps to the chain).
func (v *View) ruleEstimate() int {
	n := 0
	for _, c := range v.Chains {
		n += c.use
	}
	return n
}

// ruleBatch is a stretch of rules on their way from the kernel dump to
// the printer, in order; small chains share one.
type ruleBatch struct {
	chain   []int         // index of each rule's chain among those read
	kernel  []kernel.Rule // as read
	arena   []byte        // the bytes of kernel's rules (kernel.Rule.CloneTo)
	rules   []listedRule
	scanErr error // the dump's error, after the batch's rules
	trErr   error // the first rule that did not translate
	done    chan struct{}
}

// listedRule is a rule as readChains gives it: the rule, or, when the
// caller asked for text only and the rule's stored text is its -S text
// (translate.ReadSaveSpec), that text and the counters instead.
type listedRule struct {
	rule     *compat.Rule
	spec     string // rule is nil: the -S specification after "-A CHAIN"
	counters *compat.Counters
}

// saveLine appends the rule's -S line without counters.
func (lr *listedRule) saveLine(b []byte, chain string) []byte {
	if lr.rule != nil {
		return append(b, compat.SaveRule(chain, lr.rule, false)...)
	}
	b = append(b, "-A "...)
	b = append(b, chain...)
	return append(b, lr.spec...)
}

// ruleCounters returns the rule's counters (zero when unknown).
func (lr *listedRule) ruleCounters() compat.Counters {
	c := lr.counters
	if lr.rule != nil {
		c = lr.rule.Counters
	}
	if c == nil {
		return compat.Counters{}
	}
	return *c
}

// batchRules is how many rules a ruleBatch holds at most.
const batchRules = 64

// readChains reads the rules of chains (chains of v) from the kernel, one
// chain after the other, translates them and calls fn with each rule, its
// kernel handle and the index of its chain, in order; fn runs in the
// caller's goroutine. Reading the dump runs ahead in a goroutine of its
// own and translating is spread over the CPUs, a bounded number of
// batches ahead of fn. A dump the kernel interrupts ends it with an error
// that wraps kernel.ErrGenerationChanged: read again from the start. The
// rules of raw PREROUTING get their XDP counters added (the whole chain
// is read before fn sees them).
func (e *Engine) readChains(v *View, chains []*ChainState, fn func(i int, r *compat.Rule, handle uint64) error) error {
	return e.readChainsAs(v, chains, false, func(i int, lr *listedRule, handle uint64) error {
		return fn(i, lr.rule, handle)
	})
}

// readChainsText is readChains for callers that print -S lines: rules
// whose stored text is their -S text are not parsed (listedRule.spec).
func (e *Engine) readChainsText(v *View, chains []*ChainState, fn func(i int, lr *listedRule, handle uint64) error) error {
	return e.readChainsAs(v, chains, true, fn)
}

func (e *Engine) readChainsAs(v *View, chains []*ChainState, text bool, fn func(i int, lr *listedRule, handle uint64) error) error {
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *ruleBatch, 4*workers)
	order := make(chan *ruleBatch, 8*workers)
	stop := make(chan struct{})
	errStopped := errors.New("stopped")
	// batches fn is done with come back to the reader: their slices and
	// arena hold the next rules, so that a long listing makes little
	// garbage beyond the rules it parses
	free := make(chan *ruleBatch, 16*workers)
	newBatch := func() *ruleBatch {
		select {
		case b := <-free:
			clear(b.kernel)
			clear(b.rules)
			*b = ruleBatch{kernel: b.kernel[:0], chain: b.chain[:0], arena: b.arena[:0], rules: b.rules[:0], done: make(chan struct{})}
			return b
		default:
		}
		return &ruleBatch{kernel: make([]kernel.Rule, 0, batchRules), chain: make([]int, 0, batchRules), done: make(chan struct{})}
	}
	if XDPCounters != nil && v.Table == "raw" {
		text = false // raw PREROUTING's rules get XDP's counters added
	}
	send := func(b *ruleBatch) bool {
		select {
		case work <- b:
		case <-stop:
			return false
		}
		select {
		case order <- b:
			return true
		case <-stop:
			return false
		}
	}
	go func() {
		defer close(order)
		defer close(work)
		b := newBatch()
		for i, c := range chains {
			if !c.InKernel || c.use == 0 {
				continue // the kernel counts a chain's rules in its use
			}
			err := e.scanChain(v.Table, c.Name, nil, func(kr *kernel.Rule) error {
				b.kernel = append(b.kernel, kr.CloneTo(&b.arena))
				b.chain = append(b.chain, i)
				if len(b.kernel) == batchRules {
					if !send(b) {
						return errStopped
					}
					b = newBatch()
				}
				return nil
			})
			if err == errStopped {
				return
			}
			if err != nil {
				b.scanErr = err
				break
			}
		}
		send(b)
	}()
	for w := 0; w < workers; w++ {
		go func() {
			for b := range work {
				if cap(b.rules) < len(b.kernel) {
					b.rules = make([]listedRule, 0, len(b.kernel))
				}
				for j := range b.kernel {
					name := chains[b.chain[j]].Name
					if text {
						if spec, cnt, ok := translate.ReadSaveSpec(e.Family, v.Table, name, &b.kernel[j]); ok {
							b.rules = append(b.rules, listedRule{spec: spec, counters: cnt})
							continue
						}
					}
					r, err := e.translate(v.Table, name, &b.kernel[j])
					if err != nil {
						b.trErr = err
						break
					}
					b.rules = append(b.rules, listedRule{rule: r})
				}
				close(b.done)
			}
		}()
	}
	defer close(stop)
	// raw PREROUTING's rules wait in xdp.Rules until the chain is complete
	var xdp *ChainState
	xi := -1
	if XDPCounters != nil && v.Table == "raw" {
		for i, c := range chains {
			if c.Name == "PREROUTING" && c.InKernel {
				xdp, xi = c, i
			}
		}
	}
	flushXDP := func() error {
		if xdp == nil || len(xdp.Rules) == 0 {
			return nil
		}
		xdp.Loaded = true
		v.addXDPCounters()
		for _, r := range xdp.Rules {
			if err := fn(xi, &listedRule{rule: r.Rule}, r.Handle); err != nil {
				return err
			}
		}
		xdp.Rules = nil
		return nil
	}
	for b := range order {
		<-b.done
		for j := range b.rules {
			i := b.chain[j]
			if i == xi {
				xdp.Rules = append(xdp.Rules, &RuleState{Rule: b.rules[j].rule, Handle: b.kernel[j].Handle})
				continue
			}
			if xdp != nil && len(xdp.Rules) > 0 {
				if err := flushXDP(); err != nil {
					return err
				}
			}
			if err := fn(i, &b.rules[j], b.kernel[j].Handle); err != nil {
				return err
			}
		}
		if b.trErr != nil {
			return b.trErr
		}
		if b.scanErr != nil {
			return b.scanErr
		}
		select {
		case free <- b:
		default:
		}
	}
	return flushXDP()
}

// streamListRules is ListRules reading the rules chain by chain.
func (e *Engine) streamListRules(v *View, cmd *compat.Command) (string, error) {
	var b strings.Builder
	verbose := cmd.Verbose > 0
	var line []byte
	rule := func(name string, lr *listedRule) {
		if verbose {
			// the counters go before the target: print from the rule
			b.WriteString(compat.SaveRule(name, lr.rule, true))
		} else {
			line = lr.saveLine(line[:0], name)
			b.Write(line)
		}
		b.WriteByte('\n')
	}
	// -S -v needs every rule parsed (see rule)
	read := e.readChainsText
	if verbose {
		read = func(v *View, chains []*ChainState, fn func(int, *listedRule, uint64) error) error {
			return e.readChainsAs(v, chains, false, fn)
		}
	}
	if cmd.Chain != "" {
		c := v.listed(cmd.Chain)
		if c == nil {
			return "", v.incompatible(cmd.Chain)
		}
		if cmd.RuleNum == 0 {
			v.policyLine(&b, c, verbose)
		}
		n := 0
		err := read(v, []*ChainState{c}, func(_ int, lr *listedRule, _ uint64) error {
			n++
			if cmd.RuleNum == 0 || n == cmd.RuleNum {
				rule(c.Name, lr)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		return b.String(), nil
	}
	b.WriteString(v.taintNote())
	chains := v.Sorted()
	for _, c := range chains {
		v.policyLine(&b, c, verbose)
	}
	err := read(v, chains, func(i int, lr *listedRule, _ uint64) error {
		rule(chains[i].Name, lr)
		return nil
	})
	if err != nil {
		return "", err
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
	var chains []*ChainState
	if cmd.Chain != "" {
		c := v.listed(cmd.Chain)
		if c == nil {
			return "", v.incompatible(cmd.Chain)
		}
		chains = []*ChainState{c}
	} else {
		chains = v.Sorted()
	}
	texts := make([]strings.Builder, len(chains))
	if cmd.Chain != "" && cmd.RuleNum == 0 {
		// one chain: its text grows once (a row is about 100-150 bytes)
		texts[0].Grow(min(chains[0].use, 1<<20) * 128)
	}
	counts := make([]int, len(chains))
	jumps := map[string]int{}
	err := e.readChains(v, chains, func(i int, r *compat.Rule, _ uint64) error {
		counts[i]++
		if t, ok := r.Target.(*compat.ChainTarget); ok {
			jumps[t.Chain]++
		}
		if cmd.RuleNum == 0 || counts[i] == cmd.RuleNum {
			f.WriteListRule(&texts[i], r, counts[i])
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if cmd.Chain != "" {
		c := chains[0]
		if cmd.RuleNum > 0 {
			return texts[0].String(), nil
		}
		// as View.References for a view that holds this chain only
		refs := jumps[c.Name]
		if c.InKernel && c.use-counts[0] >= 0 {
			refs = c.use - counts[0]
		}
		var b strings.Builder
		header(&b, c, refs)
		b.Grow(texts[0].Len())
		b.WriteString(texts[0].String())
		return b.String(), nil
	}
	var b strings.Builder
	b.WriteString(v.taintNote())
	for i, c := range chains {
		if i > 0 {
			b.WriteByte('\n')
		}
		header(&b, c, jumps[c.Name])
		b.WriteString(texts[i].String())
		texts[i] = strings.Builder{}
	}
	return b.String(), nil
}

// WriteSave writes what iptables-save prints for the named table (also
// when absent), or for every iptables table that has chains in the
// kernel, in iptables-save's table order; prog names the tool in the
// header, counters adds the rule counters. Each table is read, translated
// and printed chain by chain (see readChains; a table holding a rule
// xdptables did not write prints as incompatible), and the text is
// written once every table was read from one state of the ruleset.
func (e *Engine) WriteSave(w io.Writer, prog, table string, counters bool, now time.Time) error {
	if table != "" {
		if _, ok := compat.BuiltinChains[table]; !ok {
			return compat.Rawf(compat.StatusOther, "Table `%s' does not exist\n", table)
		}
	}
	gc := &gcTuning{}
	defer gc.restore()
	ts := compat.SaveTime(now)
	for attempt := 0; ; attempt++ {
		gen, err := e.Conn.GenID()
		if err != nil {
			return kernelReadError(err)
		}
		var b bytes.Buffer
		err = e.saveOnce(&b, prog, table, counters, ts, gc)
		retry := errors.Is(err, kernel.ErrGenerationChanged)
		if err == nil {
			gen2, gerr := e.Conn.GenID()
			if gerr != nil {
				return kernelReadError(gerr)
			}
			retry = gen2 != gen
		}
		if retry && attempt < listRetries {
			continue
		}
		if err != nil {
			return kernelReadError(err)
		}
		_, err = w.Write(b.Bytes())
		return err
	}
}

func (e *Engine) saveOnce(b *bytes.Buffer, prog, table string, counters bool, ts string, gc *gcTuning) error {
	chains, err := e.Conn.Chains(e.kfam())
	if err != nil {
		return err
	}
	present := map[string]bool{}
	rules := 0
	for _, c := range chains {
		rules += int(c.Use)
		if t, _, ok := kernel.SplitChainName(c.Name); ok {
			present[t] = true
		} else {
			present[c.Name] = true // the table marker
		}
	}
	gc.forReading(rules)
	for _, t := range compat.Tables {
		if (table != "" && t != table) || (table == "" && !present[t]) {
			continue
		}
		v := e.viewOf(t, chains)
		start := b.Len()
		err := writeSaveTable(b, prog, v, counters, ts, func(cs []*ChainState, emit func(c *ChainState, lr *listedRule)) error {
			return e.readChainsText(v, cs, func(i int, lr *listedRule, _ uint64) error {
				emit(cs[i], lr)
				return nil
			})
		})
		var fe *foreignError
		if errors.As(err, &fe) {
			b.Truncate(start)
			fmt.Fprintf(b, "# Table `%s' is incompatible, use 'nft' tool.\n", t)
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeSaveTable prints the chains of v as compat.WriteSave prints a
// table, with the rules that read gives for the chains, in their order.
func writeSaveTable(b *bytes.Buffer, prog string, v *View, counters bool, ts string, read func(chains []*ChainState, emit func(c *ChainState, lr *listedRule)) error) error {
	b.WriteString(v.taintNote())
	fmt.Fprintf(b, "# Generated by %s v%s (nf_tables) on %s\n*%s\n", prog, compat.Version, ts, v.Table)
	chains := v.Sorted()
	for _, c := range chains {
		policy := "-"
		if c.Builtin {
			policy = c.Policy
		}
		var cnt compat.Counters
		if c.Counters != nil {
			cnt = *c.Counters
		}
		fmt.Fprintf(b, ":%s %s [%d:%d]\n", c.Name, policy, cnt.Packets, cnt.Bytes)
	}
	var line []byte
	err := read(chains, func(c *ChainState, lr *listedRule) {
		line = line[:0]
		if counters {
			rc := lr.ruleCounters()
			line = append(line, '[')
			line = strconv.AppendUint(line, rc.Packets, 10)
			line = append(line, ':')
			line = strconv.AppendUint(line, rc.Bytes, 10)
			line = append(line, "] "...)
		}
		line = lr.saveLine(line, c.Name)
		line = append(line, '\n')
		b.Write(line)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "COMMIT\n# Completed on %s\n", ts)
	return nil
}
