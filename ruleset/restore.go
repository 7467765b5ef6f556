package ruleset

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/xdptables/xdptables/compat"
)

// RestoreOptions are iptables-restore's switches that change semantics.
type RestoreOptions struct {
	Noflush  bool
	Counters bool
	// Verbose (-v) without Noflush: each section prints the chains it
	// flushes and deletes and every rule it adds or deletes, as
	// iptables-restore -v does (it then runs the section as -F, -X and
	// single commands with -v). The text goes to the compat.RestoreOptions
	// Echo.
	Verbose bool
	// Print receives what the restore prints on stdout: the listings of
	// the -L and -S lines of its file (and, when the compat options
	// have an Echo, everything goes there instead).
	Print func(string)
}

// verboseFlush is what iptables-restore -v prints first when it
// commits a section to the table v holds: the chains it flushes and
// deletes.
func (v *View) verboseFlush() string {
	var b strings.Builder
	var users []string
	for _, c := range v.Sorted() {
		b.WriteString("Flushing chain `" + c.Name + "'\n")
		if !c.Builtin {
			users = append(users, c.Name)
		}
	}
	for _, n := range users {
		b.WriteString("Deleting chain `" + n + "'\n")
	}
	return b.String()
}

// verboseBefore is what verboseCommands needs to know of the table
// before a --noflush section: the chains it held, and the built-in ones
// -X without a name keeps (with rules, or a policy other than ACCEPT).
type verboseBefore struct {
	present []string
	kept    map[string]bool
}

// verboseCommands is what iptables-restore prints for the command lines
// of section t that run verbosely: every one when all (-v without
// --noflush), otherwise those given -v themselves. before is nil when
// the section replaces the table. stop, when not 0, is a line whose
// command failed as iptables-restore fails while reading it: the text
// ends before that command.
func verboseCommands(t *compat.RestoreTable, stop int, all bool, before *verboseBefore) string {
	var b strings.Builder
	// the chains of the section as -F, -Z and -X without a chain see
	// them: -F every built-in chain of the table, -Z the built-in ones
	// the table holds or the section has declared or used so far (both
	// in hook order), then the user chains held, declared or created so
	// far: by name, but in the order the section made them after -v
	// of iptables-restore has flushed the table
	isBuiltin := func(n string) bool { return slices.Contains(compat.BuiltinChains[t.Name], n) }
	seen := map[string]bool{}
	kept := map[string]bool{}
	var users []string
	addUser := func(n string) {
		if !slices.Contains(users, n) {
			users = append(users, n)
		}
	}
	if before != nil {
		for _, n := range before.present {
			if isBuiltin(n) {
				seen[n] = true
			} else {
				addUser(n)
			}
		}
		maps.Copy(kept, before.kept)
	}
	for _, d := range t.Chains {
		if isBuiltin(d.Name) {
			seen[d.Name] = true
		} else {
			addUser(d.Name)
		}
	}
	userOrder := func() []string {
		us := slices.Clone(users)
		if !all {
			slices.Sort(us)
		}
		return us
	}
	chains := func(everyBuiltin bool) []string {
		var out []string
		for _, n := range compat.BuiltinChains[t.Name] {
			if everyBuiltin || seen[n] {
				out = append(out, n)
			}
		}
		return append(out, userOrder()...)
	}
	for _, rc := range t.Cmds {
		if stop > 0 && rc.Line >= stop {
			break
		}
		if isBuiltin(rc.Cmd.Chain) {
			seen[rc.Cmd.Chain] = true
		}
		verbose := all || rc.Cmd.Verbose > 0
		switch rc.Cmd.Op {
		case compat.OpAppend, compat.OpInsert, compat.OpReplace, compat.OpDelete, compat.OpCheck:
			if rc.Cmd.Op != compat.OpDelete && rc.Cmd.Op != compat.OpCheck {
				kept[rc.Cmd.Chain] = true
			}
			for _, r := range rc.Cmd.Rules {
				if verbose {
					b.WriteString(compat.VerboseRule(r))
				}
			}
		case compat.OpNewChain:
			addUser(rc.Cmd.Chain)
		case compat.OpFlush, compat.OpZero:
			// iptables -v names each chain it flushes or zeroes
			verb := "Flushing"
			if rc.Cmd.Op == compat.OpZero {
				verb = "Zeroing"
			}
			names := []string{rc.Cmd.Chain}
			if rc.Cmd.Chain == "" {
				names = chains(rc.Cmd.Op == compat.OpFlush)
				if rc.Cmd.Op == compat.OpFlush {
					for _, n := range compat.BuiltinChains[t.Name] {
						seen[n] = true
						delete(kept, n)
					}
				}
			} else if rc.Cmd.Op == compat.OpFlush {
				delete(kept, rc.Cmd.Chain)
			}
			for _, n := range names {
				if verbose {
					b.WriteString(verb + " chain `" + n + "'\n")
				}
			}
		case compat.OpDeleteChain:
			names := []string{rc.Cmd.Chain}
			if rc.Cmd.Chain == "" {
				// every user chain, and the built-in ones left empty
				// with policy ACCEPT (not named)
				names = userOrder()
				for _, n := range compat.BuiltinChains[t.Name] {
					if !kept[n] {
						seen[n] = false
					}
				}
			}
			for _, n := range names {
				if verbose {
					b.WriteString("Deleting chain `" + n + "'\n")
				}
				users = slices.DeleteFunc(users, func(u string) bool { return u == n })
			}
		}
	}
	return b.String()
}

// anyVerbose says whether a command line of section t has -v.
func anyVerbose(t *compat.RestoreTable) bool {
	for _, rc := range t.Cmds {
		if rc.Cmd.Verbose > 0 {
			return true
		}
	}
	return false
}

// ApplySection applies one "*table ... COMMIT" section to the view, as
// a restore does (without the kernel: `xdptables canon` uses it).
func (v *View) ApplySection(t *compat.RestoreTable, o RestoreOptions) error {
	return v.restoreSection(t, o)
}

// restoreSection applies one "*table ... COMMIT" section to the view:
// chain declarations and commands in file order, as iptables-restore
// runs them at COMMIT.
func (v *View) restoreSection(t *compat.RestoreTable, o RestoreOptions) error {
	v.Noflush = o.Noflush
	if !o.Noflush {
		// the section replaces the table: every chain is emptied, and the
		// chains the section does not declare are deleted
		v.replaced = true
		declared := map[string]bool{}
		for _, d := range t.Chains {
			declared[d.Name] = true
		}
		v.hiddenDelete = len(v.hidden) > 0
		for _, n := range append([]string(nil), v.names...) {
			c := v.Chains[n]
			if c == nil || c.deleted {
				continue
			}
			v.flush(c)
			// (also a chain an earlier section of this restore made)
			if (c.InKernel || c.create) && !declared[n] {
				c.deleted, c.create = true, false
			}
		}
		v.sectionReplaced = true
	}
	// the jump of each rule is checked here, against the chains that
	// exist at its place in the section
	v.jumpsChecked = true
	v.section = &sectionState{made: map[*ChainState]bool{}}
	defer func() { v.jumpsChecked, v.section = false, nil }()
	ci := 0
	cmdsBefore := func(line int) error {
		for ; ci < len(t.Cmds) && t.Cmds[ci].Line < line; ci++ {
			if err := v.restoreCmd(t, t.Cmds[ci]); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range t.Chains {
		if err := cmdsBefore(d.Line); err != nil {
			return err
		}
		if err := v.declare(t, d, o); err != nil {
			return err
		}
	}
	if err := cmdsBefore(math.MaxInt); err != nil {
		return err
	}
	if r := v.section.refused; len(r) == 1 {
		return &compat.RestoreError{Line: r[0].line, Err: r[0].ke.AsCompat()}
	} else if len(r) > 1 {
		return refusalsIn(r, []*compat.RestoreTable{t})
	}
	for _, r := range v.section.renames {
		if v.existing(r.to) != nil {
			// made under that name later in the section
			return &compat.RestoreError{Line: t.CommitLine, Err: (&KernelError{Op: "CHAIN_RENAME", Errno: "File exists", Object: "chain " + r.to}).AsCompat()}
		}
		v.rename(r.c, r.to)
	}
	v.Line = 0
	return nil
}

// declare applies a ":CHAIN POLICY [p:b]" line.
func (v *View) declare(t *compat.RestoreTable, d compat.ChainDecl, o RestoreOptions) error {
	v.Line = d.Line
	if compat.IsBuiltin(t.Name, d.Name) {
		if d.Policy == "-" {
			// ":INPUT -" declares the built-in chain; a --noflush
			// restore keeps the policy the chain has
			d.Policy = compat.VerdictAccept
			if c := v.existing(d.Name); o.Noflush && c != nil && c.Policy != "" {
				d.Policy = c.Policy
			}
		}
		if d.Policy != compat.VerdictAccept && d.Policy != compat.VerdictDrop {
			return &compat.RestoreError{Line: d.Line, Err: compat.ErrBadPolicy}
		}
		c := v.chain(d.Name)
		v.materialize(c)
		c.Policy, c.policySet = d.Policy, true
		cnt := compat.Counters{}
		if o.Counters {
			cnt = d.Counters
		}
		c.Counters = &cnt
		return nil
	}
	if c := v.existing(d.Name); c != nil {
		if o.Noflush {
			v.flush(c)
		}
		return nil
	}
	v.newChain(d.Name)
	return nil
}

// restoreCmd applies one command line of a section.
func (v *View) restoreCmd(t *compat.RestoreTable, rc compat.RestoreCmd) error {
	v.Line = rc.Line
	if op := rc.Cmd.Op; op == compat.OpList || op == compat.OpListRules {
		return v.restoreList(rc)
	}
	if j := rc.Cmd.JumpChain; j != "" && isRuleCmd(rc.Cmd.Op) && !compat.IsBuiltin(t.Name, j) {
		// a jump to a built-in chain is a rule that is not there (-C/-D)
		// or one the kernel refuses (see View.builtinJump)
		if c := v.existing(j); c == nil || c.Builtin {
			v.parseFailed = rc.Line
			return atCommit(jumpError(j), t)
		}
	}
	if err := v.Apply(rc.Cmd); err != nil {
		var ke *KernelError
		if errors.As(err, &ke) {
			return &compat.RestoreError{Line: rc.Line, Err: ke.AsCompat()}
		}
		// iptables -v prints a rule before it adds, deletes or checks it
		v.parseFailed = rc.Line
		if isRuleCmd(rc.Cmd.Op) {
			v.parseFailed++
		}
		return &compat.RestoreError{Line: rc.Line, Err: err}
	}
	return nil
}

// restoreList runs a -L or -S line of a section: iptables-restore lists
// the table as the section has it at that line (at COMMIT, before the
// kernel sees the batch) and zeroes with -Z.
func (v *View) restoreList(rc compat.RestoreCmd) error {
	var out string
	var err error
	if rc.Cmd.Op == compat.OpList {
		out, err = v.List(rc.Cmd)
	} else {
		out, err = v.ListRules(rc.Cmd)
	}
	if err != nil {
		return &compat.RestoreError{Line: rc.Line, Err: err}
	}
	if v.out != nil {
		v.out.WriteString(out)
	}
	if !rc.Cmd.ZeroToo {
		return nil
	}
	z := *rc.Cmd
	z.Op = compat.OpZero
	if z.ZeroNum {
		z.Op = compat.OpZeroNum
	}
	if err := v.Apply(&z); err != nil && !(z.ZeroNum && errors.Is(err, compat.ErrBadRule)) {
		return &compat.RestoreError{Line: rc.Line, Err: asCompat(err)}
	}
	return nil
}

func isRuleCmd(op compat.Op) bool {
	switch op {
	case compat.OpAppend, compat.OpInsert, compat.OpReplace, compat.OpDelete, compat.OpCheck:
		return true
	}
	return false
}

// noflushNeed is what a --noflush restore of table must read: the rules of
// the chains its commands need (-D, -I N, -R, -X CHAIN...), or every rule
// when one of them acts on the whole table.
func noflushNeed(tables []*compat.RestoreTable, table string) need {
	var n need
	seen := map[string]bool{}
	seenChain := map[string]bool{}
	allChains := false
	// a chain renamed earlier in the restore is read by its name in the
	// kernel
	kernelName := map[string]string{}
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
				addChain(kernelName[c])
			}
			for _, c := range m.rulesOf {
				for _, c := range []string{c, kernelName[c]} {
					if c != "" && !seen[c] {
						seen[c] = true
						n.rulesOf = append(n.rulesOf, c)
					}
				}
			}
			if rc.Cmd.Op == compat.OpRenameChain {
				old := rc.Cmd.Chain
				if k := kernelName[old]; k != "" {
					old = k
				}
				kernelName[rc.Cmd.NewName] = old
			}
		}
	}
	if allChains {
		n.chains = nil
	}
	return n
}

// extendView reads into v, the view of a table that an earlier section
// of the same --noflush restore loaded for its own needs, what a later
// section needs beyond that (n): the chains v does not hold and the rules
// of chains it did not read. A chain the restore renamed, deleted or
// created is already in v, under its new name.
func (e *Engine) extendView(v *View, n need) error {
	var missing []string
	for _, c := range n.chains {
		if v.Chains[c] == nil {
			missing = append(missing, c)
		}
	}
	if n.allRules || len(n.chains) == 0 || len(missing) > 0 {
		names := missing
		if n.allRules || len(n.chains) == 0 {
			names = nil
		}
		chains, err := e.chainsOf(v.Table, names)
		if err != nil {
			return err
		}
		known := map[string]bool{}
		for name, c := range v.Chains {
			known[name] = true
			if c.renameFrom != "" {
				known[c.renameFrom] = true
			}
		}
		w := e.viewOf(v.Table, chains)
		for _, name := range w.names {
			if !known[name] {
				v.AddChain(w.Chains[name])
			}
		}
		v.tainted = v.tainted || w.tainted
	}
	read := n.rulesOf
	if n.allRules {
		read = append([]string(nil), v.names...)
	}
	if err := e.loadRules(v, need{rulesOf: read}); err != nil {
		return err
	}
	if n.allRules {
		v.Complete = true
	}
	return nil
}

// jumpError is a rule's jump to a chain that does not exist at that point
// of its section. iptables-restore builds the rules at COMMIT, in file
// order, and names the COMMIT line (see atCommit).
func jumpError(chain string) error {
	return &compat.RestoreError{Err: compat.Paramf("Chain '%s' does not exist", chain)}
}

// atCommit puts the COMMIT line of t into an error found at COMMIT.
func atCommit(err error, t *compat.RestoreTable) error {
	if re, ok := err.(*compat.RestoreError); ok && re.Line == 0 {
		re.Line = t.CommitLine
	}
	return err
}
