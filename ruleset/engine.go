package ruleset

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/translate"
	"golang.org/x/sys/unix"
)

// MaxRetries bounds how often a command is rebuilt after another process
// committed in between (iptables-nft retries without bound).
const MaxRetries = 1000

// Engine runs commands for one family on one kernel connection.
type Engine struct {
	Conn   *kernel.Conn
	Family compat.Family
}

func (e *Engine) kfam() kernel.Family {
	if e.Family == compat.IPv6 {
		return kernel.IPv6
	}
	return kernel.IPv4
}

// need says what a command must read.
type need struct {
	allRules bool
	rulesOf  []string
	// chains, when set, are the only chains the command needs: they are
	// looked up one by one instead of dumping every chain of the family.
	chains []string
	// exact, when set (-C/-D by rule), lets load translate back only the
	// rules of rulesOf whose stored text is one of these rules' exact
	// text; the view then holds a subset of those chains' rules.
	exact []*compat.Rule
	// dropKernel says no rule's counters will be reset, so the kernel
	// rules need not be kept with the view (see RuleState.kernel).
	dropKernel bool
}

func needOf(cmd *compat.Command) need {
	n := needOfRules(cmd)
	n.dropKernel = cmd.Op != compat.OpZero && cmd.Op != compat.OpZeroNum && !cmd.ZeroToo
	if n.allRules || cmd.Chain == "" {
		return n
	}
	for _, c := range []string{cmd.Chain, cmd.JumpChain, cmd.NewName} {
		if c != "" {
			n.chains = append(n.chains, c)
		}
	}
	if cmd.Op == compat.OpCheck || cmd.Op == compat.OpDelete {
		n.exact = cmd.Rules
	}
	return n
}

// changesRules says whether op changes the rules of a chain.
func changesRules(op compat.Op) bool {
	switch op {
	case compat.OpAppend, compat.OpInsert, compat.OpDelete, compat.OpDeleteNum, compat.OpReplace, compat.OpFlush:
		return true
	}
	return false
}

func needOfRules(cmd *compat.Command) need {
	switch cmd.Op {
	case compat.OpAppend, compat.OpNewChain, compat.OpRenameChain, compat.OpPolicy:
		return need{}
	case compat.OpInsert:
		if cmd.RuleNum > 1 {
			return need{rulesOf: []string{cmd.Chain}}
		}
		return need{}
	case compat.OpList, compat.OpListRules:
		if cmd.Chain == "" {
			// -L shows reference counts of every chain
			return need{allRules: true}
		}
		// -L CHAIN: the reference count comes from the kernel's use count
		return need{rulesOf: []string{cmd.Chain}}
	case compat.OpFlush:
		return need{}
	}
	if cmd.Chain == "" {
		return need{allRules: true}
	}
	return need{rulesOf: []string{cmd.Chain}}
}

// chainsOf reads the chains of our table in family: all of them, or only
// the named iptables chains of table when names is not empty.
func (e *Engine) chainsOf(table string, names []string) ([]kernel.Chain, error) {
	if len(names) == 0 {
		return e.Conn.Chains(e.kfam())
	}
	var out []kernel.Chain
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		kc, err := e.Conn.Chain(e.kfam(), table+"."+n)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *kc)
	}
	return out, nil
}

// load reads the chains of the table and the rules n asks for.
func (e *Engine) load(table string, n need) (*View, error) {
	chains, err := e.chainsOf(table, n.chains)
	if err != nil {
		return nil, err
	}
	marked := false
	if len(n.chains) > 0 {
		// the marker of the iptables table (see builder.table)
		if _, err := e.Conn.Chain(e.kfam(), table); err == nil {
			marked = true
		} else if !errors.Is(err, unix.ENOENT) {
			return nil, err
		}
	}
	v := e.viewOf(table, chains)
	v.marked = v.marked || marked
	if table == "raw" {
		if err := e.readCTMirror(v); err != nil {
			return nil, err
		}
	}
	return v, e.loadRules(v, n)
}

// ctHelperChains are the built-in raw chains whose CT --helper rules are
// mirrored after conntrack (see builder.ctHelpers).
var ctHelperChains = []string{"PREROUTING", "OUTPUT"}

// ctNeed widens n, what a change to the rules of the raw table reads,
// to all the table's rules when CT --helper mirrors are concerned: the
// change adds CT --helper rules or jumps to user chains, which may hold
// some (helper, see mirrorRelevant), or a mirror exists (a chain
// reaches such rules). builder.ctHelpers writes a mirror from all the
// rules of the table; a built-in chain without a mirror reaches no CT
// --helper rule.
func (e *Engine) ctNeed(n need, helper bool) (need, error) {
	if !helper {
		exists := false
		for _, c := range ctHelperChains {
			_, err := e.Conn.Chain(e.kfam(), translate.CTHelperChain(c))
			if err == nil {
				exists = true
			} else if !errors.Is(err, unix.ENOENT) {
				return n, err
			}
		}
		if !exists {
			return n, nil
		}
	}
	return need{allRules: true, dropKernel: n.dropKernel}, nil
}

// hasCTHelper says whether rules hold a rule that matters to CT
// --helper mirrors when there is none yet (mirrorRelevant).
func hasCTHelper(rules []*compat.Rule) bool {
	for _, r := range rules {
		if mirrorRelevant(r) {
			return true
		}
	}
	return false
}

// mirrorRelevant says whether a new raw rule r may need a mirror where
// none exists: a CT --helper rule, or a jump or goto to a user chain,
// which may hold CT --helper rules that no built-in chain reached.
func mirrorRelevant(r *compat.Rule) bool {
	if translate.IsCTHelper(r) {
		return true
	}
	t, ok := r.Target.(*compat.ChainTarget)
	return ok && !t.IsVerdict()
}

// readCTMirror reads into a view of the raw table which mirror chains
// and ct helper objects exist.
func (e *Engine) readCTMirror(v *View) error {
	v.ctRead = true
	v.ctMirror = map[string]bool{}
	for _, c := range ctHelperChains {
		_, err := e.Conn.Chain(e.kfam(), translate.CTHelperChain(c))
		if err == nil {
			v.ctMirror[c] = true
		} else if !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	if v.ctMirror["PREROUTING"] || v.ctMirror["OUTPUT"] {
		// the copies of user chains exist only with a base chain
		chains, err := e.Conn.Chains(e.kfam())
		if err != nil {
			return err
		}
		for _, c := range chains {
			if strings.HasPrefix(c.Name, translate.CTHelperPrefix) && strings.Contains(c.Name, "/") {
				v.ctUser = append(v.ctUser, c.Name)
			}
		}
	}
	objs, err := e.Conn.CtHelpers(e.kfam())
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	for _, o := range objs {
		v.ctObjs = append(v.ctObjs, o.Name)
	}
	return nil
}

// viewOf makes a view of table's chains among chains, without rules.
func (e *Engine) viewOf(table string, chains []kernel.Chain) *View {
	v := NewView(e.Family, table)
	prefix := table + "."
	for _, kc := range chains {
		if kc.Name == table {
			v.marked = true
		}
		if !strings.HasPrefix(kc.Name, prefix) {
			continue
		}
		c := &ChainState{Name: kc.Name[len(prefix):], Handle: kc.Handle, use: int(kc.Use)}
		if kc.Base != nil && !compat.IsBuiltin(table, c.Name) {
			v.tainted = true
			v.hidden = append(v.hidden, kc.Name)
			continue
		}
		if kc.Base != nil {
			c.Builtin = true
			c.Policy = compat.VerdictAccept
			if kc.Policy != nil && *kc.Policy == kernel.PolicyDrop {
				c.Policy = compat.VerdictDrop
			}
			if kc.Counters != nil {
				c.Counters = &compat.Counters{Packets: kc.Counters.Packets, Bytes: kc.Counters.Bytes}
			}
		}
		v.AddChain(c)
	}
	return v
}

// loadRules reads into v the rules n asks for.
func (e *Engine) loadRules(v *View, n need) error {
	table := v.Table
	var wanted map[string]bool
	if len(n.exact) > 0 && !n.allRules {
		wanted = map[string]bool{}
		for _, r := range n.exact {
			wanted[compat.ExactSpec(r)] = true
		}
	}
	read := func(c *ChainState) error {
		c.Loaded = true
		// rules an earlier section of a restore added before the chain
		// was read: -I ones (prepend) go before the kernel's rules, -A
		// ones after them
		var pre, post []*RuleState
		for _, r := range c.Rules {
			if r.prepend {
				pre = append(pre, r)
			} else {
				post = append(post, r)
			}
		}
		restart := func() { c.Rules, c.kernelRules, c.partial = slices.Clone(pre), 0, false }
		restart()
		defer func() {
			c.orig = slices.Clone(c.Rules[len(pre):])
			c.Rules = append(c.Rules, post...)
		}()
		kname := c.Name
		if c.renameFrom != "" {
			kname = c.renameFrom // renamed by an earlier section of a restore
		}
		return e.scanChain(table, kname, restart, func(kr *kernel.Rule) error {
			c.kernelRules++
			if wanted != nil && !maybeWanted(kr, wanted) {
				c.partial = true
				return nil
			}
			r, err := e.translate(table, c.Name, kr)
			if err != nil {
				return err
			}
			rs := &RuleState{Rule: r, Spec: spec(r), Handle: kr.Handle}
			if !n.dropKernel {
				k := kr.Clone()
				rs.kernel = &k
			}
			c.Rules = append(c.Rules, rs)
			return nil
		})
	}
	if n.allRules {
		v.Complete = true
		for _, name := range v.names {
			if err := read(v.Chains[name]); err != nil {
				return err
			}
		}
		return nil
	}
	for _, name := range n.rulesOf {
		if c := v.Chains[name]; c != nil && !c.Loaded {
			if err := read(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanChain calls fn with each rule of an iptables chain of table as the
// kernel dump delivers it (see kernel.Conn.ScanRules: kr is only valid
// during the call, and restart drops what fn kept when the dump starts
// over).
func (e *Engine) scanChain(table, chain string, restart func(), fn func(kr *kernel.Rule) error) error {
	return e.Conn.ScanRules(e.kfam(), table+"."+chain, restart, fn)
}

// translate turns a kernel rule of chain back into the iptables rule it
// was written from; a rule xdptables did not write gives a foreignError.
func (e *Engine) translate(table, chain string, kr *kernel.Rule) (*compat.Rule, error) {
	r, err := translate.ReadRule(e.Family, table, chain, kr)
	if errors.Is(err, translate.ErrForeign) {
		return nil, &foreignError{table: table, chain: chain}
	}
	return r, err
}

// maybeWanted says whether a kernel rule can be one of the wanted rules:
// its stored text is one of theirs, or it may have been written with
// another text (stored text not ours, or a jump whose target was renamed
// since), so that it must be translated back to be compared.
func maybeWanted(kr *kernel.Rule, wanted map[string]bool) bool {
	text, ok := translate.StoredSpec(kr.UserData)
	if !ok {
		return true
	}
	if wanted[text] {
		return true
	}
	if chain, ok := kr.JumpTarget(); ok {
		_, target, _ := strings.Cut(chain, ".")
		return !strings.HasSuffix(text, " "+target)
	}
	return false
}

// findsAll says whether every rule of rs is in chain (as -C/-D look).
func (v *View) findsAll(chain string, rs []*compat.Rule) bool {
	c := v.existing(chain)
	if c == nil {
		return false
	}
	for _, r := range rs {
		if find(c, r) < 0 {
			return false
		}
	}
	return true
}

// partial says whether load skipped rules of some chain (need.exact).
func (v *View) partial() bool {
	for _, c := range v.Chains {
		if c.partial {
			return true
		}
	}
	return false
}

type foreignError struct{ table, chain string }

func (f *foreignError) Error() string { return "foreign rule in " + f.table + "." + f.chain }

func validTable(t string) error {
	if _, ok := compat.BuiltinChains[t]; !ok {
		return compat.Errorf(compat.StatusVersion, "table '%s' does not exist", t)
	}
	return nil
}

// Command carries out one iptables command and returns its output.
func (e *Engine) Command(cmd *compat.Command) (string, error) {
	if err := validTable(cmd.Table); err != nil {
		return "", err
	}
	if cmd.ChainGiven && cmd.Chain == "" {
		// an empty word names no chain (it does not mean every chain)
		switch cmd.Op {
		case compat.OpList, compat.OpListRules:
			return "", NewView(e.Family, cmd.Table).incompatible("")
		case compat.OpFlush, compat.OpZero, compat.OpDeleteChain:
			return "", compat.ErrNoChain
		case compat.OpZeroNum:
			return "", compat.ErrBadRule // as for any missing chain
		}
	}
	pre := ""
	if cmd.Verbose > 0 {
		switch cmd.Op {
		case compat.OpAppend, compat.OpInsert, compat.OpReplace, compat.OpDelete, compat.OpCheck:
			for _, r := range cmd.Rules {
				pre += compat.VerboseRule(r)
			}
		}
	}
	out, err := e.command(cmd)
	if err != nil && (cmd.Op != compat.OpAppend && lookupFailed(err) || isNoJump(err, cmd)) {
		// iptables prints the rule once it has found the chain and the
		// rule or position; -A prints it before it looks
		pre = ""
	}
	return pre + out, err
}

// isNoJump says whether err is the missing jump chain of cmd.
func isNoJump(err error, cmd *compat.Command) bool {
	var ce *compat.Error
	return cmd.JumpChain != "" && errors.As(err, &ce) && *ce == *errNoJump(cmd.JumpChain)
}

// lookupFailed says whether err is a missing chain, rule or position.
func lookupFailed(err error) bool {
	for _, e := range []error{compat.ErrNoChain, compat.ErrBadRule, compat.ErrIndexInsert, compat.ErrIndexReplace, compat.ErrIndexDelete} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (e *Engine) command(cmd *compat.Command) (_ string, err error) {
	if (cmd.Op == compat.OpList || cmd.Op == compat.OpListRules) && !cmd.ZeroToo {
		return e.list(cmd)
	}
	paused := false // XDP passes everything from before the commit
	defer func() {
		if err != nil {
			e.resume(paused)
		}
	}()
	for attempt := 0; ; attempt++ {
		gen, err := e.Conn.GenID()
		if err != nil {
			return "", kernelReadError(err)
		}
		info, err := e.readIndex(gen)
		if err != nil {
			return "", kernelReadError(err)
		}
		n := needOf(cmd)
		if cmd.Table == "raw" && changesRules(cmd.Op) {
			if n, err = e.ctNeed(n, hasCTHelper(cmd.Rules)); err != nil {
				return "", kernelReadError(err)
			}
		}
		var v *View
		var seen map[kernel.IndexKey]kernel.IndexEntry
		indexed := false
		if n.exact != nil && info.valid&tableBit(cmd.Table) != 0 {
			// -C/-D: the index finds the rule without reading the chain
			v, seen, indexed, err = e.loadIndexed(cmd, n, info)
		}
		if !indexed && err == nil {
			v, err = e.load(cmd.Table, n)
		}
		if err == nil && !indexed && n.exact != nil && v.partial() && !v.findsAll(cmd.Chain, cmd.Rules) {
			// -C/-D: only rules stored with the given text were read
			// back and none matched: compare with every rule of the chain
			n.exact = nil
			v, err = e.load(cmd.Table, n)
		}
		if errors.Is(err, kernel.ErrGenerationChanged) && attempt < MaxRetries {
			continue
		}
		if err != nil {
			var fe *foreignError
			if errors.As(err, &fe) {
				if cmd.Chain != "" {
					return "", compat.Errorf(compat.StatusOther, "chain `%s' in table `%s' is incompatible, use 'nft' tool.", cmd.Chain, cmd.Table)
				}
				return "", compat.Errorf(compat.StatusOther, "table `%s' is incompatible, use 'nft' tool.", cmd.Table)
			}
			return "", kernelReadError(err)
		}
		var out string
		switch cmd.Op {
		case compat.OpList, compat.OpListRules:
			if cmd.Op == compat.OpList {
				out, err = v.List(cmd)
			} else {
				out, err = v.ListRules(cmd)
			}
			if err != nil || !cmd.ZeroToo {
				return out, err
			}
			z := *cmd
			z.Op = compat.OpZero
			if cmd.ZeroNum {
				// -Z CHAIN N -L: the listed rule; iptables-nft ignores
				// that the chain or the rule is not there
				z.Op = compat.OpZeroNum
				if err := v.Apply(&z); err != nil && !errors.Is(err, compat.ErrBadRule) {
					return out, asCompat(err)
				}
				break
			}
			if cmd.Verbose > 0 {
				for _, c := range v.Sorted() {
					if cmd.Chain == "" || c.Name == cmd.Chain {
						out += "Zeroing chain `" + c.Name + "'\n"
					}
				}
			}
			if err := v.Apply(&z); err != nil {
				return out, asCompat(err)
			}
		case compat.OpCheck:
			err := v.Apply(cmd)
			if indexed {
				// the index and the rule were read one by one: they
				// belong together only if nothing committed meanwhile
				if now, gerr := e.Conn.GenID(); gerr != nil {
					return "", kernelReadError(gerr)
				} else if now != gen && attempt < MaxRetries {
					continue
				}
			}
			return "", err
		default:
			if cmd.Verbose > 0 {
				out = v.verboseNotes(cmd)
				if cmd.Op == compat.OpDeleteChain {
					// iptables names each chain as it queues its deletion:
					// the kernel's refusal (busy) comes after the names
					out = v.deletionNotes(cmd.Chain)
				}
			}
			if err := v.Apply(cmd); err != nil {
				if !isChainBusy(err) {
					out = ""
				}
				return out, asCompat(err)
			}
		}
		b := kernel.NewBatch()
		bld := &builder{b: b, fam: e.kfam(), family: e.Family, ix: newIndexWriter(info, e.lookupFunc(seen))}
		if err := bld.add(v); err != nil {
			return "", err
		}
		if len(bld.refused) > 0 {
			var checked error
			if bld.hasProbes() {
				// The target's own refusal comes as the kernel sets the
				// rule up, before any validation of the table: a
				// sentinel refused alike keeps the kernel from
				// validating, so that only the probes' own refusals
				// come, not those of a chain a hook reaches them from
				sentinel := b.DelChain(bld.fam, probeSentinel)
				checked = withoutOp(e.Conn.Check(b), sentinel)
			}
			return "", bld.refusals(checked, nil)
		}
		if gen, err = e.finishIndex(bld, gen); err != nil {
			if errors.Is(err, kernel.ErrGenerationChanged) && attempt < MaxRetries {
				continue
			}
			return "", kernelReadError(err)
		}
		e.beforeCommit(&paused, rawChangeFrom(cmd))
		err = e.Conn.Commit(b, gen)
		if errors.Is(err, kernel.ErrGenerationChanged) {
			if attempt >= MaxRetries {
				return "", compat.Errorf(compat.StatusResource, "ruleset changed %d times while applying the command; giving up", attempt)
			}
			continue
		}
		if err != nil {
			if cmd.Op == compat.OpDeleteChain && isChainBusy(err) {
				return out, bld.commitError(err)
			}
			return "", bld.commitError(err)
		}
		e.repairHints(bld, gen)
		e.afterCommand(cmd, v)
		return out, nil
	}
}

// isChainBusy says whether err is the refusal to delete a chain that has
// rules or is jumped to: the view's (KernelError) or the kernel's.
func isChainBusy(err error) bool {
	var ke *KernelError
	if errors.As(err, &ke) {
		return ke.Op == "CHAIN_DEL" && ke.Errno == "Device or resource busy"
	}
	var oe *kernel.OpError
	return errors.As(err, &oe) && oe.Errno == unix.EBUSY
}

// checkBatch is Conn.Check of b, a batch of the engine's family, with the
// kernel's validation of the table (a native expression in a hook it is
// not allowed in, also where a jump reaches it) in the answer also when b
// creates our table: in a batch it does not apply, the kernel validates
// only tables that existed before it (the replay that reports the
// refusals makes a created table again, which has lost its need for
// validation). So the table is made first, alone, and removed after the
// check when it is still empty and nothing else changed meanwhile (the
// generation id): what the command or restore leaves is as before. Only
// for a batch already known to fail: it changes the generation id, which
// a batch to commit afterwards would find changed.
func (e *Engine) checkBatch(b *kernel.Batch) error {
	fam := e.kfam()
	if exists, err := e.Conn.TableExists(fam); err != nil || exists {
		return e.Conn.Check(b)
	}
	mk := kernel.NewBatch()
	mk.AddTable(fam)
	err := e.Conn.Commit(mk, 0)
	mk.Release()
	if err != nil {
		return e.Conn.Check(b)
	}
	defer e.dropEmptyTable(fam)
	return e.Conn.Check(b)
}

// dropEmptyTable deletes our table of fam (checkBatch made it) when it
// holds nothing, unless the ruleset changed meanwhile.
func (e *Engine) dropEmptyTable(fam kernel.Family) {
	gen, err := e.Conn.GenID()
	if err != nil {
		return
	}
	ts, err := e.Conn.Tables(fam)
	if err != nil {
		return
	}
	for _, t := range ts {
		if t.Name == kernel.TableName && t.Family == fam && t.Use == 0 {
			del := kernel.NewBatch()
			del.DelTable(fam)
			_ = e.Conn.Commit(del, gen) // (a change meanwhile: left as it is)
			del.Release()
		}
	}
}

func asCompat(err error) error {
	var ke *KernelError
	if errors.As(err, &ke) {
		return ke.AsCompat()
	}
	return err
}

func kernelReadError(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return compat.Errorf(compat.StatusResource, "Could not fetch rule set generation id: Permission denied (you must be root)")
	}
	return compat.Errorf(compat.StatusResource, "%v", err)
}

// builder turns the changes of views into batch operations.
type builder struct {
	b      *kernel.Batch
	fam    kernel.Family
	family compat.Family
	tabled map[string]bool
	// opLine and opChain give, per operation index, the restore line and
	// the iptables chain (an index into chains, -1: none), for error
	// messages; opChainAt the chains of operations noted out of order.
	// Names are kept once per run of operations on the same chain (most
	// are: a restore adds the rules of a chain one after the other), or
	// once for chains that take turns (recent finds them again).
	opLine    []int32
	opChain   []int32
	chains    chainList
	recent    map[string]int32
	opChainAt map[int]string
	// ix collects the changes to the rule index (nil: none).
	ix *indexWriter
	// ruleOp: the operation that adds each new CT --helper rule of the
	// raw table; opKindAs: the operation an error of a helper object's
	// creation is reported as (that of the rule that needs it, as
	// iptables-nft reports the CT target's refusal).
	ruleOp   map[*RuleState]int
	opKindAs map[int]kernel.OpKind
	// refused: rules the kernel would refuse, left out of the batch
	// (refuse)
	refused []refusal
	// jumpOps has bit idx set for an operation that adds a rule jumping
	// (or going) to a user chain (noteJump)
	jumpOps []uint64
	// check asks the kernel about a batch without applying it (Conn.Check),
	// for the refusals a restore reports (restoreRefusals); nil: not asked
	check func(*kernel.Batch) error
}

func (bl *builder) note(idx int, chain string, line int) {
	if idx < len(bl.opLine) {
		bl.opLine[idx] = int32(line)
		if bl.opChainAt == nil {
			bl.opChainAt = map[int]string{}
		}
		bl.opChainAt[idx] = chain
		return
	}
	for len(bl.opLine) < idx {
		// operations in between have no chain
		bl.opLine = append(bl.opLine, 0)
		bl.opChain = append(bl.opChain, -1)
	}
	bl.opLine = append(bl.opLine, int32(line))
	bl.opChain = append(bl.opChain, bl.chainIndex(chain))
}

// chainIndex returns the index of chain in bl.chains, adding it unless it
// is the last one or one of the last few thousand added.
func (bl *builder) chainIndex(chain string) int32 {
	n := bl.chains.len()
	if n > 0 && bl.chains.is(n-1, chain) {
		return int32(n - 1)
	}
	if i, ok := bl.recent[chain]; ok {
		return i
	}
	if bl.recent == nil {
		bl.recent = make(map[string]int32)
	} else if len(bl.recent) >= recentChains {
		clear(bl.recent) // keeps the map's room
	}
	bl.chains.add(chain)
	bl.recent[chain] = int32(n)
	return int32(n)
}

// recentChains bounds builder.recent: a restore of 40k chains, each named
// in a run or two, must not keep a map of them.
const recentChains = 4096

// chainOf returns the chain noted for operation idx.
func (bl *builder) chainOf(idx int) string {
	if c, ok := bl.opChainAt[idx]; ok {
		return c
	}
	if idx >= len(bl.opChain) || bl.opChain[idx] < 0 {
		return ""
	}
	return bl.chains.at(int(bl.opChain[idx]))
}

// chainList holds chain names one after the other in one buffer: no
// pointer per name for the garbage collector to follow in each of the
// hundred collections of a restore of 40k chains.
type chainList struct {
	buf []byte
	end []uint32 // where each name ends in buf
}

func (l *chainList) len() int { return len(l.end) }

func (l *chainList) bytes(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = l.end[i-1]
	}
	return l.buf[start:l.end[i]]
}

func (l *chainList) at(i int) string { return string(l.bytes(i)) }

func (l *chainList) is(i int, name string) bool { return string(l.bytes(i)) == name }

func (l *chainList) add(name string) {
	l.buf = append(l.buf, name...)
	l.end = append(l.end, uint32(len(l.buf)))
}

// table makes sure our nft table and the marker of the iptables table
// exist. The marker is an empty regular chain named after the iptables
// table: iptables tables exist independently of their chains (after -X
// removed every chain, iptables-save still prints the table).
//
// The marker is only sent when it is missing: re-creating an existing
// chain is a no-op for the ruleset, but it leaves the kernel work to
// finish that makes closing the socket wait for an RCU grace period
// (milliseconds, on every command).
func (bl *builder) table(v *View) {
	if bl.tabled == nil {
		bl.tabled = map[string]bool{}
		bl.b.AddTable(bl.fam)
	}
	if !bl.tabled[v.Table] && !v.marked {
		bl.b.AddChain(bl.fam, v.Table, kernel.ChainSpec{})
	}
	bl.tabled[v.Table] = true
}

// dropEmptyTable deletes the marker of an iptables table that a restore
// section replaced and left without any chain (see sectionReplaced):
// iptables-save no longer prints it.
func (bl *builder) dropEmptyTable(v *View) {
	if !v.sectionReplaced || !v.marked || bl.tabled[v.Table] {
		return
	}
	for _, c := range v.Chains {
		if !c.deleted && (c.InKernel || c.create) {
			return
		}
	}
	bl.note(bl.b.DelChain(bl.fam, v.Table), v.Table, v.Line)
}

func toKernelCounters(c *compat.Counters) *kernel.Counters {
	if c == nil {
		return nil
	}
	return &kernel.Counters{Packets: c.Packets, Bytes: c.Bytes}
}

func policyOf(p string) *kernel.Policy {
	k := kernel.PolicyAccept
	if p == compat.VerdictDrop {
		k = kernel.PolicyDrop
	}
	return &k
}

// add emits the operations that make the kernel match the view.
func (bl *builder) add(v *View) error {
	prefix := v.Table + "."
	// size the batch once: about 320 bytes per new rule, 100 per chain
	newRules := 0
	for _, c := range v.Chains {
		for _, r := range c.Rules {
			if r.Handle == 0 {
				newRules++
			}
		}
	}
	bl.b.Grow(newRules*320+len(v.Chains)*100, newRules+len(v.Chains))
	names := append([]string(nil), v.names...)
	defer bl.dropEmptyTable(v)
	// 0. base chains iptables does not show (see View.hidden)
	for _, kname := range v.hidden {
		if v.hiddenFlush || v.hiddenDelete {
			bl.note(bl.b.FlushChain(bl.fam, kname), kname, v.Line)
		}
		if v.hiddenDelete {
			bl.note(bl.b.DelChain(bl.fam, kname), kname, v.Line)
		}
	}
	// 1. rules that go away (before chains they reference are deleted)
	for _, n := range names {
		c := v.Chains[n]
		if c == nil || !c.InKernel {
			continue
		}
		kname := prefix + c.Name
		if c.renameFrom != "" {
			kname = prefix + c.renameFrom
		}
		if c.flushed {
			bl.note(bl.b.FlushChain(bl.fam, kname), c.Name, v.Line)
			continue
		}
		for _, h := range c.removed {
			bl.note(bl.b.DelRule(bl.fam, kname, h), c.Name, v.Line)
		}
	}
	// 2. renames, deletions, creations, policies
	for _, n := range names {
		c := v.Chains[n]
		if c == nil {
			continue
		}
		switch {
		case c.deleted && c.InKernel:
			name := c.Name
			if c.renameFrom != "" {
				name = c.renameFrom
			}
			line := v.Line
			if c.deletedAt > 0 {
				line = c.deletedAt
			}
			bl.note(bl.b.DelChain(bl.fam, prefix+name), name, line)
			continue
		case c.deleted:
			continue
		}
		if c.renameFrom != "" && c.InKernel {
			bl.table(v)
			bl.note(bl.b.RenameChain(bl.fam, c.Handle, prefix+c.Name), c.Name, v.Line)
		}
		if c.create && !c.InKernel {
			bl.table(v)
			spec := kernel.ChainSpec{}
			if c.Builtin {
				base, _ := kernel.BuiltinChain(v.Table, c.Name)
				spec.Base = &base
				if c.policySet {
					spec.Policy = policyOf(c.Policy)
					spec.Counters = toKernelCounters(c.Counters)
				}
			} else {
				spec.Exclusive = true
			}
			bl.note(bl.b.AddChain(bl.fam, prefix+c.Name, spec), c.Name, v.Line)
		} else if c.policySet {
			bl.note(bl.b.SetPolicy(bl.fam, prefix+c.Name, *policyOf(c.Policy), toKernelCounters(c.Counters)), c.Name, v.Line)
		} else if c.countersSet && c.Counters != nil {
			bl.note(bl.b.SetChainCounters(bl.fam, prefix+c.Name, *toKernelCounters(c.Counters)), c.Name, v.Line)
		}
	}
	// 3. new rules, placed before the next rule that stays; zeroed counters.
	// Until the batch commits, the kernel knows a chain renamed in it by
	// its old name only: rules go into it, and jumps go to it, by that name
	// (a restore that renames in one section and uses the new name in the
	// next is one batch)
	renamed := map[string]string{}
	for _, c := range v.Chains {
		if c.renameFrom != "" && c.InKernel && !c.deleted {
			renamed[prefix+c.Name] = prefix + c.renameFrom
		}
	}
	ruleSpec := func(table, chain string, r *RuleState) (kernel.RuleSpec, error) {
		spec, err := ruleSpec(table, chain, r)
		for _, e := range spec.Exprs {
			if vd, ok := e.(*expr.Verdict); ok && renamed[vd.Chain] != "" {
				vd.Chain = renamed[vd.Chain]
			}
		}
		return spec, err
	}
	for _, n := range names {
		c := v.Chains[n]
		if c == nil || c.deleted || !(c.rulesModified || c.anyZeroed()) {
			continue
		}
		kname := prefix + c.Name
		if old := renamed[kname]; old != "" {
			kname = old
		}
		// new rules for the head of an unread chain go in reverse order
		for i := len(c.Rules) - 1; i >= 0; i-- {
			if r := c.Rules[i]; r.prepend {
				spec, err := ruleSpec(v.Table, c.Name, r)
				if bl.refuse(err, r, c.Name, kernel.OpRuleInsert) {
					bl.table(v)
					bl.probeRefused(v.Table, kname, c.Name, r, kernel.OpRuleInsert)
					continue
				}
				if err != nil {
					return err
				}
				bl.table(v)
				bl.noteRule(v, r, bl.b.InsertRule(bl.fam, kname, spec), c.Name)
				r.hint = bl.b.Handles()
			}
		}
		// next[i] is the handle of the first kernel rule after rule i
		next := make([]uint64, len(c.Rules))
		for i, h := len(c.Rules)-1, uint64(0); i >= 0; i-- {
			next[i] = h
			if c.Rules[i].Handle != 0 {
				h = c.Rules[i].Handle
			}
		}
		for i, r := range c.Rules {
			if r.prepend {
				continue
			}
			if r.Handle != 0 {
				if r.Zeroed && r.kernel != nil && r.kernel.BindsObjects() {
					// rebuilt with new maps/chains: the old ones go with the old rule
					spec, err := ruleSpec(v.Table, c.Name, r)
					if err != nil {
						return err
					}
					spec.UserData = r.kernel.UserData
					bl.note(bl.b.ReplaceRule(bl.fam, kname, r.Handle, spec), c.Name, r.Line)
				} else if r.Zeroed && r.kernel != nil {
					bl.note(bl.b.ZeroRuleCounter(*r.kernel, ruleCompat(r.Rule)), c.Name, r.Line)
				}
				continue
			}
			spec, err := ruleSpec(v.Table, c.Name, r)
			kind := kernel.OpRuleAppend
			if next[i] != 0 || r.insert {
				kind = kernel.OpRuleInsert
			}
			if bl.refuse(err, r, c.Name, kind) {
				bl.table(v)
				bl.probeRefused(v.Table, kname, c.Name, r, kind)
				continue
			}
			if err != nil {
				return err
			}
			bl.table(v)
			if next[i] != 0 {
				bl.noteRule(v, r, bl.b.InsertRuleBefore(bl.fam, kname, next[i], spec), c.Name)
			} else if r.insert {
				bl.noteRule(v, r, bl.b.InsertRuleAtEnd(bl.fam, kname, spec), c.Name)
			} else {
				bl.noteRule(v, r, bl.b.AppendRule(bl.fam, kname, spec), c.Name)
			}
			r.hint = bl.b.Handles()
		}
	}
	if err := bl.ctHelpers(v); err != nil {
		return err
	}
	return bl.ix.view(v)
}

// noteRule notes operation idx, which adds rule r to chain.
func (bl *builder) noteRule(v *View, r *RuleState, idx int, chain string) {
	bl.note(idx, chain, r.Line)
	bl.noteJump(idx, r.Rule)
	if r.replace {
		bl.kindAs(idx, kernel.OpRuleReplace)
	}
	if v.Table == "raw" && translate.IsCTHelper(r.Rule) {
		if bl.ruleOp == nil {
			bl.ruleOp = map[*RuleState]int{}
		}
		bl.ruleOp[r] = idx
	}
}

// noteJump notes that operation idx adds rule r, when r jumps (or goes)
// to a user chain: the kernel refuses such a rule by validating the
// table (the chain it jumps to holds what the hook does not allow), for
// the reference's rule as for ours (see cascade).
func (bl *builder) noteJump(idx int, r *compat.Rule) {
	if t, ok := r.Target.(*compat.ChainTarget); !ok || t.IsVerdict() {
		return
	}
	for len(bl.jumpOps) <= idx/64 {
		bl.jumpOps = append(bl.jumpOps, 0)
	}
	bl.jumpOps[idx/64] |= 1 << (idx % 64)
}

// isJump says whether operation idx adds a rule noteJump noted.
func (bl *builder) isJump(idx int) bool {
	return idx/64 < len(bl.jumpOps) && bl.jumpOps[idx/64]&(1<<(idx%64)) != 0
}

// ctHelpers writes, when rules of the raw table change, for each
// built-in raw chain, the mirror that assigns the helpers of the CT
// --helper rules it reaches after conntrack
// (translate.CTHelperMirrorTable): its base chain, the copies of the
// user chains it reaches, and the ct helper objects they use; or
// removes them when the chain reaches no such rule any more. A change
// after which a mirror would not be exact fails: with the CT target's
// own message when it adds a CT --helper rule.
func (bl *builder) ctHelpers(v *View) error {
	if v.Table != "raw" || !v.ctRead {
		return nil
	}
	changed, added := false, false
	for _, c := range v.Chains {
		if c.rulesModified || c.flushed || c.Builtin && c.deleted {
			changed = true
		}
		if c.rulesModified {
			for _, r := range c.Rules {
				added = added || r.Handle == 0 && mirrorRelevant(r.Rule)
			}
		}
	}
	if !changed || !added && !v.ctMirror["PREROUTING"] && !v.ctMirror["OUTPUT"] {
		// no mirror before, and nothing that could need one
		return nil
	}
	user := map[string][]*compat.Rule{}
	for name, c := range v.Chains {
		if c.deleted {
			continue
		}
		if c.InKernel && !c.flushed && (!c.Loaded || c.partial) {
			return compat.Errorf(compat.StatusResource, "internal error: raw %s changed without all the table's rules read", name)
		}
		if !c.Builtin {
			rules := make([]*compat.Rule, 0, len(c.Rules))
			for _, r := range c.Rules {
				rules = append(rules, r.Rule)
			}
			user[name] = rules
		}
	}
	checked := map[string]bool{}
	for _, name := range ctHelperChains {
		c := v.Chains[name]
		var rules []*compat.Rule
		if c != nil && !c.deleted {
			for _, r := range c.Rules {
				rules = append(rules, r.Rule)
			}
		}
		mirror, copies, objs, err := translate.CTHelperMirrorTable(bl.family, name, rules, user)
		if err != nil {
			return bl.ctRefused(v, name, err)
		}
		kname := translate.CTHelperChain(name)
		exists := v.ctMirror[name]
		if exists {
			bl.note(bl.b.FlushChain(bl.fam, kname), name, v.Line)
			if len(mirror) == 0 {
				bl.note(bl.b.DelChain(bl.fam, kname), name, v.Line)
			}
		}
		// the copies of user chains: emptied, and deleted when no longer
		// reached (their jumps went with the flush above)
		wantCopy := map[string]bool{}
		for _, cp := range copies {
			wantCopy[cp.Name] = true
		}
		haveCopy := map[string]bool{}
		var keptUser []string
		for _, u := range v.ctUser {
			if !translate.CTHelperUserChainOf(u, name) {
				keptUser = append(keptUser, u)
				continue
			}
			haveCopy[u] = true
			bl.note(bl.b.FlushChain(bl.fam, u), name, v.Line)
		}
		for _, u := range v.ctUser {
			if haveCopy[u] && !wantCopy[u] {
				bl.note(bl.b.DelChain(bl.fam, u), name, v.Line)
			}
		}
		have := map[string]bool{}
		var kept []string
		for _, o := range v.ctObjs {
			if translate.CTHelperObjOf(o, name) {
				have[o] = true
			} else {
				kept = append(kept, o)
			}
		}
		want := map[string]bool{}
		for _, o := range objs {
			want[o.Name()] = true
			kept = append(kept, o.Name())
			if have[o.Name()] {
				continue
			}
			bl.table(v)
			idx := bl.b.AddCtHelper(bl.fam, kernel.CtHelper{Name: o.Name(), Helper: o.Helper, L4Proto: o.Proto}, true)
			bl.note(idx, name, v.Line)
			// an error is that of the first new rule that needs the
			// object
			var first *RuleState
			firstChain := ""
			for _, ch := range v.Chains {
				for _, r := range ch.Rules {
					if _, ok := bl.ruleOp[r]; ok && r.Rule.Target.(*compat.CTTarget).Helper == o.Helper && translateObjProto(r.Rule) == o.Proto &&
						(first == nil || r.Line < first.Line) {
						first, firstChain = r, ch.Name
					}
				}
			}
			if first != nil {
				if bl.opKindAs == nil {
					bl.opKindAs = map[int]kernel.OpKind{}
				}
				bl.opKindAs[idx] = bl.b.Op(bl.ruleOp[first]).Kind
				bl.note(idx, firstChain, first.Line)
			}
		}
		if len(mirror) > 0 {
			if !exists {
				base, _ := kernel.BuiltinChain("raw", name)
				base.Priority = translate.CTHelperPriority
				bl.table(v)
				bl.note(bl.b.AddChain(bl.fam, kname, kernel.ChainSpec{Base: &base}), name, v.Line)
			}
			for _, cp := range copies {
				if !haveCopy[cp.Name] {
					bl.note(bl.b.AddChain(bl.fam, cp.Name, kernel.ChainSpec{}), name, v.Line)
				}
				keptUser = append(keptUser, cp.Name)
			}
			add := func(chain string, rules []translate.CTMirrorRule) {
				for _, mr := range rules {
					spec := kernel.RuleSpec{Exprs: mr.Exprs}
					if mr.From != nil && hasXtables(mr.Exprs) {
						spec.Compat = ruleCompat(mr.From)
					}
					bl.note(bl.b.AppendRule(bl.fam, chain, spec), name, v.Line)
				}
			}
			for _, cp := range copies {
				add(cp.Name, cp.Rules)
			}
			add(kname, mirror)
		}
		for o := range have {
			if !want[o] {
				bl.note(bl.b.DelCtHelper(bl.fam, o), name, v.Line)
			}
		}
		v.ctMirror[name] = len(mirror) > 0
		v.ctObjs = kept
		v.ctUser = keptUser
		for _, o := range objs {
			checked[o.Helper+"/"+strconv.Itoa(int(o.Proto))] = true
		}
	}
	bl.ctCheckHelpers(v, checked)
	return nil
}

// ctCheckHelpers asks the kernel whether the helpers of the new CT
// --helper rules that no mirror uses (no built-in chain reaches them)
// exist, as it checks xt's CT when such a rule is added: with a ct
// helper object made and deleted in the same transaction, whose error
// is the rule's. checked are the helpers (NAME/PROTO) the mirrors use.
func (bl *builder) ctCheckHelpers(v *View, checked map[string]bool) {
	names := make([]string, 0, len(v.Chains))
	for name := range v.Chains {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, r := range v.Chains[name].Rules {
			ri, ok := bl.ruleOp[r]
			if !ok || r.Handle != 0 || !translate.IsCTHelper(r.Rule) {
				continue
			}
			o := translate.CTHelperObj{Chain: "check", Helper: r.Rule.Target.(*compat.CTTarget).Helper, Proto: translateObjProto(r.Rule)}
			key := o.Helper + "/" + strconv.Itoa(int(o.Proto))
			if checked[key] {
				continue
			}
			checked[key] = true
			bl.table(v)
			idx := bl.b.AddCtHelper(bl.fam, kernel.CtHelper{Name: o.Name(), Helper: o.Helper, L4Proto: o.Proto}, true)
			if bl.opKindAs == nil {
				bl.opKindAs = map[int]kernel.OpKind{}
			}
			bl.opKindAs[idx] = bl.b.Op(ri).Kind
			bl.note(idx, name, r.Line)
			bl.note(bl.b.DelCtHelper(bl.fam, o.Name()), name, r.Line)
		}
	}
}

// translateObjProto is the protocol of the helper object of a CT
// --helper rule (see translate.CTHelperMirror).
func translateObjProto(r *compat.Rule) uint8 {
	if r.ProtoSet && !r.ProtoInv {
		return r.Proto
	}
	return 0
}

// ctRefused is the error of a change after which the CT --helper rules
// that the built-in raw chain chain reaches cannot be mirrored exactly
// (why).
func (bl *builder) ctRefused(v *View, chain string, why error) error {
	// the first new CT --helper rule, by its line
	var first *RuleState
	for _, c := range v.Chains {
		for _, r := range c.Rules {
			if translate.IsCTHelper(r.Rule) && r.Handle == 0 && (first == nil || r.Line < first.Line) {
				first = r
			}
		}
	}
	if first != nil {
		ct := first.Rule.Target.(*compat.CTTarget)
		return lineErr(first.Line, compat.Errorf(compat.StatusOther, "target %q: %v", ct.Name(), ct.NotNative()))
	}
	return lineErr(v.Line, compat.Errorf(compat.StatusOther, "chain %s of table raw reaches CT --helper rules, whose helpers are assigned after conntrack: after this change, %v (see docs/extensions.md)", chain, why))
}

// ruleSpec translates a new rule of chain for the kernel.
func ruleSpec(table, chain string, r *RuleState) (kernel.RuleSpec, error) {
	return ruleSpecText(table, chain, r, compat.ExactSpec(r.Rule))
}

// ruleSpecText is ruleSpec with the rule's exact text (compat.ExactSpec)
// at hand.
func ruleSpecText(table, chain string, r *RuleState, exact string) (kernel.RuleSpec, error) {
	return ruleSpecEncoded(table, chain, r, exact, nil)
}

// ruleSpecEncoded is ruleSpecText that, with sent not nil, has the rule's
// expressions encoded into sent's room as a batch sends them
// (RuleSpec.Encoded), where they can be.
func ruleSpecEncoded(table, chain string, r *RuleState, exact string, sent []byte) (kernel.RuleSpec, error) {
	es, err := translate.ExprsIn(table, chain, r.Rule)
	if kr := (*compat.KernelRefusal)(nil); errors.As(err, &kr) {
		return kernel.RuleSpec{}, kr // reported with the kernel's refusals (builder.refuse)
	}
	if err != nil {
		// An extension's own error (e.g. -m set's "Set X doesn't
		// exist.") prints as the extension words it.
		var ce *compat.Error
		if errors.As(err, &ce) {
			return kernel.RuleSpec{}, lineErr(r.Line, ce)
		}
		return kernel.RuleSpec{}, lineErr(r.Line, compat.Errorf(compat.StatusOther, "%v", err))
	}
	ud, sent, err := translate.UserDataEncoding(r.Rule.Family, table, chain, r.Rule, es, exact, sent)
	if err != nil {
		return kernel.RuleSpec{}, lineErr(r.Line, compat.Errorf(compat.StatusOther, "%v", err))
	}
	spec := kernel.RuleSpec{Exprs: es, UserData: ud}
	if len(sent) > 0 {
		spec.Encoded, spec.EncodedFamily = sent, kernel.Family(r.Rule.Family)
	}
	if hasXtables(es) {
		spec.Compat = ruleCompat(r.Rule)
	}
	return spec, nil
}

// hasXtables says whether es hold an xtables match or target: only those
// read NFTA_RULE_COMPAT, so only their rules carry it (20 bytes of every
// rule in the batch otherwise).
func hasXtables(es []expr.Any) bool {
	for _, x := range es {
		switch x.(type) {
		case *expr.Match, *expr.Target:
			return true
		}
	}
	return false
}

func lineErr(line int, err error) error {
	if line > 0 {
		return &compat.RestoreError{Line: line, Err: err}
	}
	return err
}

func (c *ChainState) anyZeroed() bool {
	for _, r := range c.Rules {
		if r.Zeroed {
			return true
		}
	}
	return false
}

func ruleCompat(r *compat.Rule) *kernel.RuleCompat {
	return &kernel.RuleCompat{Proto: uint32(r.Proto), Invert: r.ProtoInv}
}

// kindAs reports an error of operation idx as one of kind.
func (bl *builder) kindAs(idx int, kind kernel.OpKind) {
	if bl.opKindAs == nil {
		bl.opKindAs = map[int]kernel.OpKind{}
	}
	bl.opKindAs[idx] = kind
}

// refuse notes, when err is a compat.KernelRefusal, that the kernel would
// refuse the operation of kind that adds rule r to chain: the rule is
// left out of the batch, and the refusal is reported with the batch's
// (refusals).
func (bl *builder) refuse(err error, r *RuleState, chain string, kind kernel.OpKind) bool {
	var kr *compat.KernelRefusal
	if !errors.As(err, &kr) {
		return false
	}
	if r.replace {
		kind = kernel.OpRuleReplace
	}
	bl.refused = append(bl.refused, refusal{line: r.Line, ke: &KernelError{Op: kind.String(), Errno: kernel.Strerror(kr.Errno), Object: "rule in chain " + chain, Line: r.Line}})
	return true
}

// refusal is an operation the kernel refuses, with its restore line.
type refusal struct {
	line int
	ke   *KernelError
	// probe is 1 + the index of the operation that adds the rule without
	// its target to the batch (probeRefused), 0 for none
	probe int
}

// probeRefused puts into the batch, for rule r of chain (kernel chain
// kname of table) that refuse left out because of its target, the rule
// without its target: the kernel takes a rule's expressions in order,
// so that iptables-nft's rule is refused for a match (a hook it is not
// allowed in, a protocol it needs) before the target's own check. A
// batch with probes is only checked, never committed: refusals reports
// the kernel's answer to a probe in place of the target's refusal.
func (bl *builder) probeRefused(table, kname, chain string, r *RuleState, kind kernel.OpKind) {
	if len(bl.refused) == 0 || r.Rule.Target == nil {
		return
	}
	p := *r.Rule
	p.Target = nil
	es, err := translate.ExprsIn(table, chain, &p)
	if err != nil {
		return
	}
	spec := kernel.RuleSpec{Exprs: es}
	if hasXtables(es) {
		spec.Compat = ruleCompat(&p)
	}
	idx := bl.b.AppendRule(bl.fam, kname, spec)
	bl.note(idx, chain, r.Line)
	bl.kindAs(idx, kind)
	bl.refused[len(bl.refused)-1].probe = idx + 1
}

// probed moves the kernel's answers in ce to probes (probeRefused) into
// the refusals of all they stand for, and returns the rest of ce (nil
// when none is left).
func (bl *builder) probed(ce *kernel.CommitError, all []refusal) *kernel.CommitError {
	return withoutOps(ce, func(oe *kernel.OpError) bool {
		taken := false
		for i := range all {
			if all[i].probe == oe.Index+1 {
				if _, ke, other := bl.opError(oe); other == nil && ke != nil {
					all[i].ke = ke
				}
				taken = true
			}
		}
		return taken
	})
}

// withoutOps is ce without the refusals drop takes; nil when nothing is
// left.
func withoutOps(ce *kernel.CommitError, drop func(*kernel.OpError) bool) *kernel.CommitError {
	rest := &kernel.CommitError{Lost: ce.Lost}
	for _, oe := range ce.Errors {
		if !drop(oe) {
			rest.Errors = append(rest.Errors, oe)
		}
	}
	if len(rest.Errors) == 0 && !rest.Lost {
		return nil
	}
	return rest
}

// probeSentinel names a chain that is never there (iptables chain names
// have no ':'), whose deletion the kernel refuses (see the command path
// of probeRefused).
const probeSentinel = "xdptables:probe-sentinel"

// withoutOp is err, a Check's answer, without the refusal of operation
// idx; nil when nothing else is refused or err is no refusal.
func withoutOp(err error, idx int) error {
	var ce *kernel.CommitError
	if !errors.As(err, &ce) {
		return nil
	}
	if rest := withoutOps(ce, func(oe *kernel.OpError) bool { return oe.Index == idx }); rest != nil {
		return rest
	}
	return nil
}

// hasProbes says whether the batch holds probes (probeRefused).
func (bl *builder) hasProbes() bool {
	for _, r := range bl.refused {
		if r.probe != 0 {
			return true
		}
	}
	return false
}

// refusals gives the error for the rules left out of the batch (refuse)
// and, when the batch was sent, the kernel's refusals (err from Commit
// or Check): as commitError and restoreCommitError do.
func (bl *builder) refusals(err error, sections []*compat.RestoreTable) error {
	all := slices.Clone(bl.refused)
	var ce *kernel.CommitError
	if err != nil {
		if !errors.As(err, &ce) {
			return bl.commitError(err)
		}
		if ce = bl.probed(ce, all); ce != nil {
			got, other := bl.restoreRefusals(ce, sections)
			if other != nil {
				return other
			}
			all = append(all, got...)
		}
	}
	if len(all) == 0 {
		return bl.commitError(err)
	}
	if len(all) == 1 || sections == nil {
		r := all[0]
		if r.line > 0 {
			return &compat.RestoreError{Line: r.line, Err: r.ke.AsCompat()}
		}
		return r.ke.AsCompat()
	}
	return refusalsIn(all, sections)
}

// opsFrom returns the operations of restore lines from line on.
func (bl *builder) opsFrom(line int) map[int]bool {
	drop := map[int]bool{}
	for idx := 0; idx < bl.b.Len() && idx < len(bl.opLine); idx++ {
		if int(bl.opLine[idx]) >= line {
			drop[idx] = true
		}
	}
	return drop
}

// refusalsBefore lists the kernel's refusals (err from Check, and the
// rules left out of the batch) at lines before line.
func (bl *builder) refusalsBefore(err error, line int) []refusal {
	var all []refusal
	for _, r := range bl.refused {
		if r.line > 0 && r.line < line {
			all = append(all, r)
		}
	}
	var ce *kernel.CommitError
	if errors.As(err, &ce) {
		for _, oe := range ce.Errors {
			l, ke, other := bl.opError(oe)
			if other == nil && l > 0 && l < line {
				all = append(all, refusal{line: l, ke: ke})
			}
		}
	}
	return all
}

// commitError turns a refused batch into iptables' message: that of its
// first refused operation.
func (bl *builder) commitError(err error) error {
	var oe *kernel.OpError
	if !errors.As(err, &oe) {
		return compat.Errorf(compat.StatusResource, "%v", err)
	}
	line, ke, other := bl.opError(oe)
	if other != nil {
		return lineErr(line, other)
	}
	if line > 0 {
		return &compat.RestoreError{Line: line, Err: ke.AsCompat()}
	}
	return ke.AsCompat()
}

// restoreCommitError turns a refused restore batch into iptables-nft-restore's
// message. iptables-nft-restore commits each table section at its COMMIT and
// stops at the first section the kernel refuses, naming every line of it the
// kernel refused, one per line after the program's name, in file order:
//
//	iptables-restore v1.8.9 (nf_tables):
//	line 4: RULE_APPEND failed (Invalid argument): rule in chain INPUT
//	line 6: RULE_APPEND failed (Invalid argument): rule in chain INPUT
//
// The whole file is one batch here, so the kernel reports the refusals of
// all sections: those of the first section with one are reported.
func (bl *builder) restoreCommitError(err error, sections []*compat.RestoreTable) error {
	var ce *kernel.CommitError
	if !errors.As(err, &ce) || len(ce.Errors) < 2 {
		return bl.commitError(err)
	}
	all, other := bl.restoreRefusals(ce, sections)
	if other != nil {
		return other
	}
	if len(all) == 0 {
		return bl.commitError(err)
	}
	return refusalsIn(all, sections)
}

// restoreRefusals are the kernel's refusals in ce of operations with a
// restore line, as the reference lists them (see cascade), or other
// (the error to report instead) when one is not a refusal with an errno,
// or has no line outside a restore (sections nil). In a restore, the
// operations without a line (the rule index) have no counterpart in the
// reference and are left out.
func (bl *builder) restoreRefusals(ce *kernel.CommitError, sections []*compat.RestoreTable) (all []refusal, other error) {
	return bl.restoreRefusalsWithout(ce, sections, nil, 0)
}

// maxRechecks bounds the batches restoreRefusalsWithout sends again; the
// refusals of a section fill iptables-nft's 1024-byte buffer at about a
// dozen lines anyway.
const maxRechecks = 16

// restoreRefusalsWithout is restoreRefusals of a batch sent again
// (rechecks times) without the operations in dropped (refused ones: see
// cascade).
func (bl *builder) restoreRefusalsWithout(ce *kernel.CommitError, sections []*compat.RestoreTable, dropped map[int]bool, rechecks int) (all []refusal, other error) {
	firstOp := -1
	for _, oe := range ce.Errors {
		line, ke, o := bl.opError(oe)
		if o != nil || line <= 0 && sections == nil {
			return nil, bl.commitError(&kernel.CommitError{Errors: []*kernel.OpError{oe}})
		}
		if line <= 0 {
			continue
		}
		if firstOp < 0 {
			firstOp = oe.Index
		}
		all = append(all, refusal{line: line, ke: ke})
	}
	if len(all) == 0 || sections == nil {
		return all, nil
	}
	sec := sectionOf(sections, all[0].line)
	if sec < 0 {
		return all, nil
	}
	lines, alone := bl.cascade(ce.Errors, firstOp, all[0].line, sections[sec])
	if lines == nil {
		return all, nil
	}
	// the reference adds the rules in file order: the refused rule and
	// every rule of its section after it
	var errno unix.Errno
	for _, oe := range ce.Errors {
		if oe.Index == firstOp {
			errno = oe.Errno
		}
	}
	all = all[:0]
	for _, idx := range lines {
		line, ke, o := bl.opError(&kernel.OpError{Index: idx, Op: bl.b.Op(idx), Errno: errno})
		if o == nil && ke != nil {
			all = append(all, refusal{line: line, ke: ke})
		}
	}
	if !alone || bl.check == nil || rechecks >= maxRechecks {
		return all, nil
	}
	// The reference refused that line's rules alone and goes on adding
	// the section's rules: which of them it refuses on their own, the
	// kernel tells for the batch without the refused ones.
	dropped = maps.Clone(dropped)
	if dropped == nil {
		dropped = make(map[int]bool, len(lines))
	}
	for _, idx := range lines {
		dropped[idx] = true
	}
	rest := bl.b.Without(dropped)
	err := bl.check(rest)
	rest.Release()
	var ce2 *kernel.CommitError
	if !errors.As(err, &ce2) {
		return all, nil
	}
	more, o := bl.restoreRefusalsWithout(ce2, sections, dropped, rechecks+1)
	if o != nil {
		return all, nil
	}
	for _, r := range more {
		if sectionOf(sections, r.line) == sec {
			all = append(all, r)
		}
	}
	return all, nil
}

// sectionOf is the index of the section of sections (in file order) that
// line is in, -1 before the first.
func sectionOf(sections []*compat.RestoreTable, line int) int {
	return sort.Search(len(sections), func(i int) bool { return sections[i].Line > line }) - 1
}

// cascade tells a refusal by the kernel's validation of the table (a
// hook-restricted match or target in a chain that a hook it does not
// allow reaches) from one by the rule's own checks: after the former the
// kernel refuses every rule added to the table, so every rule operation
// of the batch after the first refused one, firstOp, is refused too (at
// least one). Then the reference, adding the rules of the section in file
// order, refuses the rule of line and every rule of the section after it,
// whatever order our batch had them in: cascade returns those operations
// (rule operations of the section's table from line on). When the first
// refused rule is in a built-in chain, the reference refused it alone
// (see below): cascade returns only line's operations, and alone. It
// returns nil for any other refusal.
func (bl *builder) cascade(errs []*kernel.OpError, firstOp, line int, sec *compat.RestoreTable) (ops []int, alone bool) {
	if bl.b == nil || firstOp < 0 {
		return nil, false
	}
	refused := make(map[int]bool, len(errs))
	for _, oe := range errs {
		refused[oe.Index] = true
		if oe.Index == firstOp && oe.Errno != unix.EINVAL && oe.Errno != unix.EOPNOTSUPP {
			return nil, false
		}
	}
	isRule := func(op kernel.Op) bool {
		switch op.Kind {
		case kernel.OpRuleAppend, kernel.OpRuleInsert, kernel.OpRuleReplace:
			return true
		}
		return false
	}
	later := 0
	for idx := firstOp + 1; idx < bl.b.Len(); idx++ {
		if !isRule(bl.b.Op(idx)) {
			continue
		}
		if !refused[idx] {
			return nil, false
		}
		later++
	}
	if later == 0 {
		return nil, false
	}
	// The reference's targets and matches restricted to some hooks are
	// xtables extensions, which the kernel checks against the chain's hook
	// when the rule is added to a built-in chain: there it refuses that
	// rule alone and adds the section's later rules. Ours (native nat)
	// are checked by the table's validation wherever they are. A rule
	// that jumps to a user chain holding such an extension is refused by
	// the validation for the reference too: the rest of its section with
	// it.
	last := sec.CommitLine
	if t, c, ok := translate.SplitChainName(bl.b.Op(firstOp).Chain); ok && compat.IsBuiltin(t, c) && !bl.isJump(firstOp) {
		last, alone = line, true
	}
	for idx := 0; idx < bl.b.Len() && idx < len(bl.opLine); idx++ {
		op := bl.b.Op(idx)
		l := int(bl.opLine[idx])
		if !isRule(op) || l < line || l > last && last != 0 {
			continue
		}
		if t, _, ok := translate.SplitChainName(op.Chain); !ok || t != sec.Name {
			continue
		}
		ops = append(ops, idx)
	}
	return ops, alone
}

// nftErrmsgSize is the size of iptables-nft's buffer for the refusals of
// one batch (char errmsg[1024] in nft_action).
const nftErrmsgSize = 1024

// refusalsIn reports the refusals of the first section that has one.
func refusalsIn(all []refusal, sections []*compat.RestoreTable) error {
	first := sectionOf(sections, all[0].line)
	for _, r := range all[1:] {
		first = min(first, sectionOf(sections, r.line))
	}
	var mine []refusal
	for _, r := range all {
		if sectionOf(sections, r.line) == first {
			mine = append(mine, r)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].line < mine[j].line })
	// Each refusal is "\nline N: OP failed (ERR): OBJECT", appended to a
	// buffer of nftErrmsgSize bytes the C way: one that does not fit is
	// written truncated and the next one overwrites it.
	var buf []byte
	pos, room := 0, nftErrmsgSize
	var head *KernelError // the first refusal of the line
	for i, r := range mine {
		if i == 0 || r.line != mine[i-1].line {
			head = r.ke
		} else if r.ke.Op != head.Op || r.ke.Object != head.Object {
			// what goes with the line's rule (a chain or rule of ours
			// elsewhere), which the reference does not have; a line's
			// rules (-s A,B) are each listed, as the reference does
			continue
		}
		if room == 0 {
			break // snprintf into no room writes nothing
		}
		msg := fmt.Sprintf("\nline %d: %s", r.line, r.ke.Error())
		// snprintf(errmsg + pos, room, ...) writes at most room-1 bytes
		// and a NUL; pos moves on only when it returned at most room
		buf = append(buf[:pos], msg[:min(len(msg), room-1)]...)
		if len(msg) <= room {
			pos += len(msg)
			room -= len(msg)
		}
	}
	return &compat.RestoreError{Line: mine[0].line, Err: compat.Errorf(compat.StatusResource, "%s", buf)}
}

// opError gives the line and iptables' error for a refused operation, or
// other for one the batch could not encode.
func (bl *builder) opError(oe *kernel.OpError) (line int, ke *KernelError, other error) {
	var chain string
	if oe.Index >= 0 && oe.Index < len(bl.opLine) {
		chain, line = bl.chainOf(oe.Index), int(bl.opLine[oe.Index])
	}
	kind := oe.Op.Kind
	if k, ok := bl.opKindAs[oe.Index]; ok {
		kind = k
	}
	object := "chain " + chain
	if strings.HasPrefix(kind.String(), "RULE_") {
		object = "rule in chain " + chain
	}
	if oe.Errno == 0 {
		return line, nil, compat.Errorf(compat.StatusResource, "%v", oe.Err)
	}
	errno := oe.Errno
	if errno == unix.EOPNOTSUPP && strings.HasPrefix(kind.String(), "RULE_") {
		// A native expression in a hook that does not allow it (nat,
		// masq, redir, fib, reject, ct zone set ...): the kernel answers
		// EOPNOTSUPP where, for iptables-nft's xtables extension, it
		// answers EINVAL ("RULE_APPEND failed (Invalid argument)").
		errno = unix.EINVAL
	}
	return line, &KernelError{Op: kind.String(), Errno: kernel.Strerror(errno), Object: object, Line: line}, nil
}

// String describes a view briefly (for debugging).
func (v *View) String() string {
	return fmt.Sprintf("view %s %d chains", v.Table, len(v.Chains))
}
