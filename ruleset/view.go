package ruleset

import (
	"fmt"
	"sort"
	"strings"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
)

// RuleState is one rule of a chain in a view.
type RuleState struct {
	Rule *compat.Rule
	// Spec is the canonical rule specification (after "-A CHAIN"): rules
	// are compared by it.
	Spec string
	// Handle is the kernel handle; 0 for a rule the view added.
	Handle uint64
	// Zeroed asks for the kernel counter to be reset.
	Zeroed bool
	// Line is the restore line that added the rule (for error messages).
	Line int
	// kernel is the rule as read, for re-sending it with zero counters.
	kernel *kernel.Rule
	// prepend places a new rule at the head of a chain whose rules were
	// not read (iptables -I CHAIN without a number).
	prepend bool
	// insert marks a rule of -I CHAIN [1] (iptables-nft's insert at the
	// head, RULE_INSERT in its errors even where the chain is empty);
	// -I CHAIN N one past the last rule is iptables-nft's append.
	insert bool
	// hint is, for a new rule, Batch.Handles right after the builder
	// added it (see indexWriter).
	hint uint64
	// replace marks the rule of -R (RULE_REPLACE in iptables-nft's
	// errors, though it is sent as a delete and an insert).
	replace bool
	// given is, for a new rule the kernel will keep otherwise than the
	// command line said (compat.Kept), the spec as given: until the
	// kernel holds the rule, -C and -D of the same restore compare with
	// it, as iptables-nft compares with its own cache.
	given string
}

// ChainState is one chain of an iptables table in a view.
type ChainState struct {
	Name    string
	Builtin bool
	// InKernel says the chain exists in the kernel (built-in chains are
	// listed even when they do not).
	InKernel bool
	Handle   uint64
	// Policy is ACCEPT/DROP for built-in chains, "" for user chains.
	Policy string
	// Counters are the policy counters; nil when the kernel keeps none.
	Counters *compat.Counters
	Rules    []*RuleState
	// Loaded says Rules holds every rule of the chain.
	Loaded bool
	// use is the kernel's use count of the chain (its rules plus the
	// jumps and gotos to it); kernelRules counts the rules read from the
	// kernel; partial says load skipped some of them (need.exact).
	use, kernelRules int
	partial          bool
	// orig are the rules as loaded (when Loaded), for the rule index.
	orig []*RuleState

	// changes to commit
	create      bool // create the chain
	policySet   bool // send policy and counters
	countersSet bool // send counters only (-Z)
	deleted     bool
	// deletedAt is the restore line of the -X that deleted the chain
	// (the kernel's refusal of the deletion names it)
	deletedAt     int
	renameFrom    string
	flushed       bool // all kernel rules go away
	removed       []uint64
	removedRules  []*RuleState // the rules of removed
	rulesModified bool
}

// View holds the chains of one iptables table that a command needs.
type View struct {
	Family compat.Family
	Table  string
	// Complete says every chain of the table is in the view (with its
	// rules), so references can be counted and -X/-F/-Z without a chain
	// name act on all of them.
	Complete bool
	Chains   map[string]*ChainState
	// order of chains as read
	names []string
	// Line is the restore line being applied (0 outside restore).
	Line int
	// parseFailed is the restore line whose command failed the way
	// iptables-restore fails while it reads the line (not at the
	// kernel's answer): -v prints nothing from that line on.
	parseFailed int
	// Noflush restore mode (a :USER line flushes, a :BUILTIN line only
	// sets the policy).
	Noflush bool
	// jumpsChecked: a restore section checks each rule's jump itself
	// (restoreCmd), to report it at COMMIT as iptables-restore does.
	jumpsChecked bool
	// section is set while a restore section is applied
	section *sectionState
	// out receives the listings of a restore's -L and -S lines (nil:
	// they go nowhere).
	out *strings.Builder
	// sectionReplaced says a restore section replaced the table (not
	// --noflush): iptables-nft-restore deletes the table and makes it
	// again only for a chain, so a table left without chains goes.
	sectionReplaced bool
	// marked says the marker chain of the iptables table exists.
	marked bool
	// tainted says the table holds a base chain that is no built-in
	// chain of it (a built-in renamed with -E): iptables-nft leaves such
	// a chain out, as if absent, and says so in whole-table listings.
	tainted bool
	// hidden are the kernel names of those chains. Like iptables-nft,
	// which flushes or replaces the whole nftables table, -F without a
	// chain empties them (hiddenFlush) and a restore that replaces the
	// table deletes them (hiddenDelete).
	hidden                    []string
	hiddenFlush, hiddenDelete bool
	// ctRead says, for a view of the raw table, that ctMirror, ctUser
	// and ctObjs were read: the mirror base chains
	// (translate.CTHelperMirrorTable) that exist, by built-in chain, and
	// the names of the family's ct helper objects.
	ctRead   bool
	ctMirror map[string]bool
	ctObjs   []string
	// ctUser are the regular chains of the mirrors that exist: the
	// copies of user chains (translate.CTHelperUserChain).
	ctUser []string
	// replaced says every rule of the table is in the view (all chains
	// were emptied in it first): the rule index is built anew.
	replaced bool
}

// NewView returns an empty view.
func NewView(f compat.Family, table string) *View {
	return &View{Family: f, Table: table, Chains: map[string]*ChainState{}}
}

// AddChain puts a chain read from the kernel into the view.
func (v *View) AddChain(c *ChainState) {
	c.InKernel = true
	v.Chains[c.Name] = c
	v.names = append(v.names, c.Name)
}

// ChainNames returns the names of the chains in the order they entered
// the view (read, created, or renamed to). Every name that becomes a key
// of Chains is appended, so a caller that remembers how many it has seen
// finds the chains added since in the tail; a name can repeat.
func (v *View) ChainNames() []string {
	return v.names
}

// chain returns the chain, including absent built-ins (created lazily).
func (v *View) chain(name string) *ChainState {
	if c, ok := v.Chains[name]; ok && !c.deleted {
		return c
	}
	if compat.IsBuiltin(v.Table, name) {
		c := v.Chains[name]
		if c == nil {
			c = &ChainState{Name: name, Builtin: true, Policy: compat.VerdictAccept}
			v.Chains[name] = c
			v.names = append(v.names, name)
		}
		if c.deleted && c.InKernel {
			// deleted earlier in this transaction and used again: it comes
			// back as a fresh built-in chain
			c.Policy, c.policySet, c.Counters = compat.VerdictAccept, true, &compat.Counters{}
		}
		c.deleted = false
		return c
	}
	return nil
}

// existing returns a chain only if it really exists (kernel or created).
func (v *View) existing(name string) *ChainState {
	c, ok := v.Chains[name]
	if !ok || c.deleted || (!c.InKernel && !c.create) {
		return nil
	}
	return c
}

// materialize makes sure a (built-in) chain will exist after commit.
func (v *View) materialize(c *ChainState) {
	if !c.InKernel && !c.create {
		c.create = true
	}
}

// Sorted returns the chains as iptables lists them: built-ins in hook
// order (also absent ones), then user chains in byte order.
func (v *View) Sorted() []*ChainState {
	var out []*ChainState
	for _, b := range compat.BuiltinChains[v.Table] {
		c := v.Chains[b]
		if c == nil || c.deleted {
			c = &ChainState{Name: b, Builtin: true, Policy: compat.VerdictAccept}
		}
		out = append(out, c)
	}
	var users []string
	for n, c := range v.Chains {
		if !c.Builtin && !c.deleted && (c.InKernel || c.create) {
			users = append(users, n)
		}
	}
	sort.Strings(users)
	for _, n := range users {
		out = append(out, v.Chains[n])
	}
	return out
}

// References counts the rules of the table that jump or go to chain.
// Without every rule of the table in the view, the count of a chain whose
// rules were read comes from the kernel's use count.
func (v *View) References(chain string) int {
	if c := v.Chains[chain]; !v.Complete && c != nil && c.InKernel && c.Loaded && !c.partial {
		if n := c.use - c.kernelRules; n >= 0 {
			return n
		}
	}
	n := 0
	for _, c := range v.Chains {
		if c.deleted {
			continue
		}
		for _, r := range c.Rules {
			if t, ok := r.Rule.Target.(*compat.ChainTarget); ok && t.Chain == chain {
				n++
			}
		}
	}
	return n
}

// KernelError is a refusal of the kind the kernel gives (EBUSY, ENOENT)
// for one operation; it prints as iptables-nft prints netlink errors.
type KernelError struct {
	Op     string // "CHAIN_DEL", "RULE_APPEND", ...
	Errno  string // strerror text
	Object string // "chain C1", "rule in chain INPUT"
	Line   int    // restore line, 0 for a command
}

func (e *KernelError) Error() string {
	return fmt.Sprintf("%s failed (%s): %s", e.Op, e.Errno, e.Object)
}

// AsCompat renders the error with iptables' text and exit status 4.
func (e *KernelError) AsCompat() *compat.Error {
	if e.Line > 0 {
		return compat.Errorf(compat.StatusResource, "\nline %d: %s", e.Line, e.Error())
	}
	return compat.Errorf(compat.StatusResource, " %s", e.Error())
}

func spec(r *compat.Rule) string {
	var b strings.Builder
	compat.WriteRuleSpec(&b, r, false)
	// -m recent without --mask is another rule than with --mask
	// 255.255.255.255 for -C/-D, though -S prints both alike (see
	// compat.RecentMatch.MaskGiven)
	for range recentDefaultMasks(r) {
		b.WriteString("\x00recent: default mask")
	}
	// fields of xtables structs that -S leaves out, which iptables-nft
	// compares (see compat.CompareKeyer)
	for _, m := range r.Matches {
		if k, ok := m.(compat.CompareKeyer); ok {
			b.WriteString("\x00")
			b.WriteString(k.CompareKey())
		}
	}
	return b.String()
}

// recentDefaultMasks counts the -m recent matches of r without --mask.
func recentDefaultMasks(r *compat.Rule) int {
	n := 0
	for _, m := range r.Matches {
		if rm, ok := m.(*compat.RecentMatch); ok && !rm.MaskGiven {
			n++
		}
	}
	return n
}

// find returns the index of the first rule equal to r, or -1.
func find(c *ChainState, r *compat.Rule) int {
	s := spec(r)
	for i, rs := range c.Rules {
		if rs.given != "" && rs.Handle == 0 {
			if rs.given == s {
				return i
			}
			continue
		}
		if rs.Spec == s {
			return i
		}
	}
	return -1
}

func newRule(r *compat.Rule, line int) *RuleState {
	return &RuleState{Rule: r, Spec: spec(r), Line: line}
}

// newKeptRule is newRule of r as the kernel will keep it.
func newKeptRule(r *compat.Rule, line int) *RuleState {
	k := compat.Kept(r)
	rs := newRule(k, line)
	if k != r {
		rs.given = spec(r)
	}
	return rs
}

func (v *View) removeAt(c *ChainState, i int) {
	if h := c.Rules[i].Handle; h != 0 {
		c.removed = append(c.removed, h)
		c.removedRules = append(c.removedRules, c.Rules[i])
	}
	c.Rules = append(c.Rules[:i:i], c.Rules[i+1:]...)
	c.rulesModified = true
}

// flush removes every rule of c; rules the kernel holds go with one
// flush operation, without needing to be read first.
func (v *View) flush(c *ChainState) {
	c.Rules = nil
	c.removed, c.removedRules = nil, nil
	if c.InKernel {
		c.flushed = true
	}
	c.rulesModified = true
}

func (v *View) insertAt(c *ChainState, i int, rs []*RuleState) {
	tail := append([]*RuleState(nil), c.Rules[i:]...)
	c.Rules = append(append(c.Rules[:i], rs...), tail...)
	c.rulesModified = true
}

func (v *View) checkJump(cmd *compat.Command) error {
	if cmd.JumpChain == "" {
		return nil
	}
	if v.jumpsChecked {
		return nil
	}
	if compat.IsBuiltin(v.Table, cmd.JumpChain) {
		// -C/-D only ask whether the name is known (a jump to a
		// built-in chain is a rule that is not there); -A/-I/-R meet
		// the kernel's refusal (see builtinJump)
		return nil
	}
	if c := v.existing(cmd.JumpChain); c == nil || c.Builtin {
		return errNoJump(cmd.JumpChain)
	}
	return nil
}

// builtinJump is the kernel's answer to a rule that jumps to a built-in
// chain: iptables-nft sends it, and nf_tables refuses a jump to a base
// chain (EOPNOTSUPP), or to a chain that is not there (ENOENT).
func (v *View) builtinJump(cmd *compat.Command) error {
	if cmd.JumpChain == "" || !compat.IsBuiltin(v.Table, cmd.JumpChain) {
		return nil
	}
	op := map[compat.Op]string{compat.OpAppend: "RULE_APPEND", compat.OpInsert: "RULE_INSERT", compat.OpReplace: "RULE_REPLACE"}[cmd.Op]
	errno := "No such file or directory"
	if v.existing(cmd.JumpChain) != nil {
		errno = "Operation not supported"
	}
	err := &KernelError{Op: op, Errno: errno, Object: "rule in chain " + cmd.Chain, Line: v.Line}
	if v.section != nil {
		// the kernel's answer at COMMIT: after the section's own errors
		v.section.deferErr(err)
		return nil
	}
	return err
}

// errNoJump is iptables-nft's error for a jump to a chain that does not
// exist; it comes before the rule is printed with -v.
func errNoJump(chain string) *compat.Error {
	return compat.Paramf("Chain '%s' does not exist", chain)
}

// Apply carries out a modifying command on the view. Listing commands
// are handled by List; Apply returns iptables' error for bad requests.
func (v *View) Apply(cmd *compat.Command) error {
	switch cmd.Op {
	case compat.OpAppend, compat.OpInsert, compat.OpReplace:
		if err := v.checkJump(cmd); err != nil {
			return err
		}
		c := v.chain(cmd.Chain)
		if c == nil || (!c.Builtin && v.existing(cmd.Chain) == nil) {
			return compat.ErrNoChain
		}
		var rs []*RuleState
		for _, r := range cmd.Rules {
			rs = append(rs, newKeptRule(r, v.Line))
		}
		switch cmd.Op {
		case compat.OpAppend:
			if err := v.builtinJump(cmd); err != nil {
				return err
			}
			v.materialize(c)
			v.insertAt(c, len(c.Rules), rs)
		case compat.OpInsert:
			if cmd.RuleNum > len(c.Rules)+1 {
				return compat.ErrIndexInsert
			}
			if err := v.builtinJump(cmd); err != nil {
				return err
			}
			if !c.Loaded && c.InKernel {
				for _, r := range rs {
					r.prepend = true
				}
			}
			if cmd.RuleNum <= 1 {
				for _, r := range rs {
					r.insert = true
				}
			}
			v.materialize(c)
			// each rule goes to position N in turn, as iptables does
			for _, r := range rs {
				v.insertAt(c, cmd.RuleNum-1, []*RuleState{r})
			}
		case compat.OpReplace:
			if v.existing(cmd.Chain) == nil {
				return compat.ErrNoChain // also a built-in chain not in the kernel
			}
			if cmd.RuleNum > len(c.Rules) {
				return compat.ErrIndexReplace
			}
			if err := v.builtinJump(cmd); err != nil {
				return err
			}
			for _, r := range rs {
				r.replace = true
			}
			v.removeAt(c, cmd.RuleNum-1)
			v.insertAt(c, cmd.RuleNum-1, rs)
		}
	case compat.OpDelete, compat.OpCheck:
		// iptables-nft looks for the jump's chain first (Docker's daemon
		// deletes its old jumps before it creates the chains)
		if err := v.checkJump(cmd); err != nil {
			return err
		}
		c := v.existing(cmd.Chain)
		if c == nil {
			return compat.ErrBadRule
		}
		// all rules must be there (several for address lists)
		for _, r := range cmd.Rules {
			i := find(c, r)
			if i < 0 {
				return compat.ErrBadRule
			}
			if cmd.Op == compat.OpDelete {
				v.removeAt(c, i)
			}
		}
	case compat.OpDeleteNum:
		c := v.existing(cmd.Chain)
		if c == nil {
			return compat.ErrNoChain // also a built-in chain not in the kernel
		}
		if cmd.RuleNum > len(c.Rules) {
			return compat.ErrIndexDelete
		}
		v.removeAt(c, cmd.RuleNum-1)
	case compat.OpFlush:
		if cmd.Chain == "" {
			v.hiddenFlush = len(v.hidden) > 0
			// every chain of the table is in the view (needOf)
			v.replaced = true
			if cmd.Verbose > 0 {
				// iptables-nft flushes chain by chain to name each one,
				// after making the table's built-in chains
				for _, b := range compat.BuiltinChains[v.Table] {
					v.materialize(v.chain(b))
				}
			}
		}
		return v.each(cmd.Chain, v.flush)
	case compat.OpZero, compat.OpZeroNum:
		return v.zero(cmd)
	case compat.OpNewChain:
		if v.existing(cmd.Chain) != nil || compat.IsBuiltin(v.Table, cmd.Chain) && v.Chains[cmd.Chain] != nil && v.Chains[cmd.Chain].InKernel {
			return compat.ErrChainExists
		}
		if compat.IsBuiltin(v.Table, cmd.Chain) {
			return compat.ErrChainExists
		}
		v.newChain(cmd.Chain)
	case compat.OpDeleteChain:
		return v.deleteChain(cmd.Chain)
	case compat.OpRenameChain:
		// iptables looks at the new name first (a built-in chain's name
		// is taken whether or not the chain is in the kernel), and leaves
		// its length to the kernel
		if v.existing(cmd.NewName) != nil || compat.IsBuiltin(v.Table, cmd.NewName) {
			return compat.ErrFileExists
		}
		c := v.existing(cmd.Chain)
		if c == nil {
			return compat.ErrNoChain
		}
		if v.section != nil {
			// in a restore section the chain keeps its name up to the
			// COMMIT (iptables-nft renames it in the kernel by handle):
			// a chain the section makes has no handle yet
			if v.section.made[c] {
				v.section.deferErr(&KernelError{Op: "CHAIN_RENAME", Errno: "No such file or directory", Object: "chain " + cmd.NewName, Line: v.Line})
				return nil
			}
			v.section.renames = append(v.section.renames, pendingRename{c: c, to: cmd.NewName})
			return nil
		}
		v.rename(c, cmd.NewName)
	case compat.OpPolicy:
		// the policy is looked at before the chain
		if cmd.Policy != compat.VerdictAccept && cmd.Policy != compat.VerdictDrop {
			return compat.ErrBadPolicy
		}
		if !compat.IsBuiltin(v.Table, cmd.Chain) {
			return compat.ErrBadBuiltin
		}
		c := v.chain(cmd.Chain)
		v.materialize(c)
		c.Policy = cmd.Policy
		c.policySet = true
		// -P resets the policy counters; iptables-nft does not apply -c
		// to them (-c is for rules)
		c.Counters = &compat.Counters{}
	default:
		return fmt.Errorf("command %d is not a modifying command", cmd.Op)
	}
	return nil
}

func (v *View) newChain(name string) *ChainState {
	c := &ChainState{Name: name, create: true}
	if old, ok := v.Chains[name]; ok && old.deleted {
		// deleted and created again in one transaction
		old.deleted = false
		old.create = true
		old.Rules = nil
		c = old
	} else {
		v.Chains[name] = c
		v.names = append(v.names, name)
	}
	if v.section != nil {
		v.section.made[c] = true
	}
	return c
}

// rename gives chain c its new name.
func (v *View) rename(c *ChainState, to string) {
	delete(v.Chains, c.Name)
	if c.renameFrom == "" && c.InKernel {
		c.renameFrom = c.Name
	}
	c.Name = to
	c.Builtin = false
	v.Chains[c.Name] = c
	v.names = append(v.names, c.Name)
}

// sectionState is what a restore section keeps until its COMMIT.
type sectionState struct {
	made    map[*ChainState]bool // chains the section creates
	renames []pendingRename      // -E lines, applied at COMMIT
	// refused are the kernel's answers at COMMIT to lines of the
	// section, reported when nothing in the section fails before
	refused []refusal
}

type pendingRename struct {
	c  *ChainState
	to string
}

func (s *sectionState) deferErr(ke *KernelError) {
	s.refused = append(s.refused, refusal{line: ke.Line, ke: ke})
}

// each runs fn on one chain, or on every chain of the table.
func (v *View) each(name string, fn func(c *ChainState)) error {
	if name != "" {
		c := v.chain(name)
		if c == nil || (!c.Builtin && v.existing(name) == nil) {
			return compat.ErrNoChain
		}
		if c.Builtin {
			v.materialize(c)
		}
		fn(c)
		return nil
	}
	for _, n := range v.names {
		if c := v.Chains[n]; c != nil && !c.deleted && (c.InKernel || c.create) {
			fn(c)
		}
	}
	return nil
}

func (v *View) zero(cmd *compat.Command) error {
	if cmd.Op == compat.OpZeroNum {
		c := v.existing(cmd.Chain)
		if c == nil {
			// iptables-nft returns without setting errno, so the error
			// is whatever reading the ruleset left: ENOENT in most states
			return compat.ErrBadRule
		}
		if cmd.RuleNum <= len(c.Rules) {
			zeroRule(c.Rules[cmd.RuleNum-1])
		}
		return nil
	}
	if cmd.ZeroToo {
		// -L -Z: iptables creates the built-in chains it zeroes when the
		// table exists, and fails on the first one when it does not
		for _, b := range compat.BuiltinChains[v.Table] {
			if (cmd.Chain == "" || cmd.Chain == b) && v.existing(b) == nil {
				if !v.marked {
					return &KernelError{Op: "CHAIN_ZERO", Errno: "No such file or directory", Object: "chain " + b}
				}
				v.materialize(v.chain(b))
			}
		}
	} else if cmd.Chain != "" && v.existing(cmd.Chain) == nil {
		return compat.ErrNoChain // -Z of a built-in chain not in the kernel does not create it
	}
	return v.each(cmd.Chain, func(c *ChainState) {
		for _, r := range c.Rules {
			zeroRule(r)
		}
		if c.Builtin {
			c.Counters = &compat.Counters{}
			c.countersSet = true
		}
	})
}

func zeroRule(r *RuleState) {
	if r.Rule.Counters != nil && (r.Rule.Counters.Packets != 0 || r.Rule.Counters.Bytes != 0) {
		r.Zeroed = true
		r.Rule.Counters = &compat.Counters{}
	}
}

func (v *View) deleteChain(name string) error {
	busy := func(c *ChainState) error {
		return &KernelError{Op: "CHAIN_DEL", Errno: "Device or resource busy", Object: "chain " + c.Name, Line: v.Line}
	}
	del := func(c *ChainState) {
		c.deleted = true
		c.deletedAt = v.Line
		c.create = false
	}
	if name != "" {
		c := v.existing(name)
		if c == nil {
			return compat.ErrNoChain
		}
		if c.Builtin && c.Policy != compat.VerdictAccept {
			// iptables-nft keeps a built-in chain whose policy is not
			// ACCEPT, and says so before it looks at the rules
			return compat.ErrChainNotEmpty
		}
		if len(c.Rules) > 0 || (v.Complete && v.References(name) > 0) {
			return busy(c)
		}
		del(c)
		return nil
	}
	// every user chain, and every empty built-in chain with policy ACCEPT
	var victims []*ChainState
	for _, n := range v.names {
		c := v.Chains[n]
		if c == nil || c.deleted || !(c.InKernel || c.create) {
			continue
		}
		if c.Builtin && (len(c.Rules) > 0 || c.Policy != compat.VerdictAccept) {
			continue
		}
		victims = append(victims, c)
	}
	for _, c := range victims {
		if len(c.Rules) > 0 {
			return busy(c)
		}
		refs := 0
		for _, o := range v.Chains {
			if o.deleted || isVictim(victims, o) {
				continue
			}
			for _, r := range o.Rules {
				if t, ok := r.Rule.Target.(*compat.ChainTarget); ok && t.Chain == c.Name {
					refs++
				}
			}
		}
		if refs > 0 {
			return busy(c)
		}
	}
	for _, c := range victims {
		del(c)
	}
	return nil
}

func isVictim(vs []*ChainState, c *ChainState) bool {
	for _, v := range vs {
		if v == c {
			return true
		}
	}
	return false
}
