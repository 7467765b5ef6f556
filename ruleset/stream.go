package ruleset

import (
	"bufio"
	"bytes"
	"errors"
	"hash/maphash"
	"io"
	"maps"
	"strings"
	"sync"
	"unsafe"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/translate"
	"golang.org/x/sys/unix"
)

// RestoreSource is the text of a restore file, readable more than once:
// a restore that meets a concurrent change reads it again.
type RestoreSource interface {
	Open() (io.Reader, error)
}

// BytesSource is a restore file held in memory.
type BytesSource []byte

// Open returns a reader of the file's bytes.
func (b BytesSource) Open() (io.Reader, error) { return bytes.NewReader(b), nil }

// RestoreInput applies a restore file as one transaction. Sections in
// the shape iptables-save writes (flush mode, chain declarations, -A and
// -N only, each table once) are streamed: every rule is translated into
// the batch as soon as it is parsed and not kept, so memory stays near the
// size of the batch itself. Other sections go through the View as single
// commands do.
func (e *Engine) RestoreInput(src RestoreSource, o RestoreOptions, ro compat.RestoreOptions) (err error) {
	paused := false // XDP passes everything from before the commit
	defer func() {
		if err != nil {
			e.resume(paused)
		}
	}()
	r, err := src.Open()
	if err != nil {
		return err
	}
	scan, err := streamableSections(r, o)
	if err != nil {
		return err
	}
	streamable := scan.tables
	// The batch lives outside the heap (kernel.Batch.Grow), so the heap is
	// the operations and each rule's short-lived garbage: collecting when
	// a few MB of it piled up keeps the peak close to the batch.
	gc := newGCPacer(scan.size)
	defer gc.done()
	// comment lines and listings go out once, whatever the number of
	// attempts
	var echoed strings.Builder
	print := o.Print
	if ro.Echo != nil {
		print = ro.Echo
		ro.Echo = func(s string) { echoed.WriteString(s) }
	}
	if print != nil {
		defer func() { print(echoed.String()) }()
	}
	for attempt := 0; ; attempt++ {
		echoed.Reset()
		gen, err := e.Conn.GenID()
		if err != nil {
			return kernelReadError(err)
		}
		info, err := e.readIndex(gen)
		if err != nil {
			return kernelReadError(err)
		}
		h := &restoreHandler{e: e, o: o, echo: ro.Echo, streamable: streamable, prepared: maps.Clone(streamable), rules: scan.rules, views: map[string]*View{}, viewAdded: map[string]bool{}, gc: gc,
			bl: &builder{b: kernel.NewBatch(), fam: e.kfam(), family: e.Family, ix: newIndexWriter(info, e.lookupFunc(nil)), check: e.checkBatch}}
		h.out = &echoed
		h.echoLen, h.echoAt = echoed.Len, map[int]int{}
		// a rule line becomes about five times its size in the batch
		// (and the index and flushes add a few operations to the lines)
		h.bl.b.Grow(int(scan.size)*6, scan.lines+1024)
		h.bl.opLine = make([]int32, 0, scan.lines+1024)
		h.bl.opChain = make([]int32, 0, scan.lines+1024)
		in, err := src.Open()
		if err != nil {
			return err
		}
		if err := parseAhead(in, ro, h); err != nil {
			return h.earlierRefusals(err)
		}
		for _, t := range compat.Tables {
			if v := h.views[t]; v != nil {
				h.viewAdded[t] = true // (in part, on an error)
				if err := h.bl.add(v); err != nil {
					return h.earlierRefusals(err)
				}
			}
		}
		if len(h.bl.refused) > 0 {
			// the rest of the batch as the kernel would take it, for
			// its own refusals in the same section
			err := h.earlierRefusals(h.bl.refusals(e.checkBatch(h.bl.b), h.sections))
			h.bl.b.Release()
			return err
		}
		if gen, err = e.finishIndex(h.bl, gen); err != nil {
			h.bl.b.Release()
			if errors.Is(err, kernel.ErrGenerationChanged) && attempt < MaxRetries {
				continue
			}
			return kernelReadError(err)
		}
		for _, t := range h.sections {
			if t.Name == "raw" {
				e.beforeCommit(&paused, 0)
			}
		}
		err = e.Conn.Commit(h.bl.b, gen)
		if err != nil && !errors.Is(err, kernel.ErrGenerationChanged) {
			err = h.earlierRefusals(h.bl.restoreCommitError(err, h.sections))
			h.cutEcho(err, &echoed)
		}
		if err == nil {
			e.repairHints(h.bl, gen)
		}
		h.bl.b.Release()
		if errors.Is(err, kernel.ErrGenerationChanged) {
			if attempt >= MaxRetries {
				return compat.Errorf(compat.StatusResource, "ruleset changed %d times while restoring; giving up", attempt)
			}
			continue
		}
		if err != nil {
			return err
		}
		e.afterRestore(h.sections)
		return nil
	}
}

// earlierRefusals returns the kernel's refusals of the sections before
// the one that err (an error at a line of the file: a parse error, a rule
// with no translation, a refusal in the batch) is in, or err when it
// refuses none of them. iptables-nft-restore commits each section at its
// COMMIT, so a section the kernel refuses ends the restore before a later
// section is read: the kernel is asked about the sections before (Check,
// which applies nothing), as the builder has them. A refusal in the
// whole batch does not tell: a rule the kernel refuses as it is added
// fails the batch before the table is validated, and an earlier section
// the validation refuses (a target in a chain a hook it does not allow
// reaches) is refused only in a batch of its own.
func (h *restoreHandler) earlierRefusals(err error) error {
	var re *compat.RestoreError
	if !errors.As(err, &re) || re.Line <= 0 {
		return err
	}
	start := 0 // the first line of the section of the error
	for _, t := range h.sections {
		if t.Line <= re.Line {
			start = t.Line
		}
	}
	done := false
	for _, t := range h.sections {
		done = done || (t.Line < start && t.CommitLine > 0)
	}
	if !done {
		return err
	}
	skip := ""
	if h.section != nil && h.section.Line == start {
		skip = h.section.Name // the section of the error, which iptables-nft never sends
	}
	if refused := h.checkBefore(start, skip); refused != nil {
		return refused
	}
	return err
}

// checkBefore asks the kernel about the restore so far (the streamed
// sections' batch without the operations of lines from start on, and the
// views but that of table skip in a batch of their own, which stays out
// of the restore's) and returns its refusals
// of lines before start as restoreCommitError reports them; nil when it
// refuses none.
func (h *restoreHandler) checkBefore(start int, skip string) error {
	vb := &builder{b: kernel.NewBatch(), fam: h.bl.fam, family: h.bl.family}
	defer vb.b.Release()
	for _, t := range compat.Tables {
		if v := h.views[t]; v != nil && t != skip && !h.viewAdded[t] {
			if vb.add(v) != nil {
				return nil // the views' own errors come later, in order
			}
		}
	}
	// (Conn.Check, not checkBatch: a restore the kernel takes comes
	// here too, and must not see the ruleset change under it)
	before := h.bl.b
	if drop := h.bl.opsFrom(start); len(drop) > 0 {
		before = h.bl.b.Without(drop)
		defer before.Release()
	}
	all := h.bl.refusalsBefore(h.e.Conn.Check(before), start)
	all = append(all, vb.refusalsBefore(h.e.Conn.Check(vb.b), start)...)
	if len(all) == 0 {
		return nil
	}
	return refusalsIn(all, h.sections)
}

// cutEcho ends the --verbose output at the COMMIT of the section a
// refusal names: iptables-nft-restore prints as it reads and stops at the
// first section whose commit fails, so what follows that COMMIT line
// (later sections, comment lines) never shows.
func (h *restoreHandler) cutEcho(err error, echoed *strings.Builder) {
	var re *compat.RestoreError
	if h.echoLen == nil || !errors.As(err, &re) {
		return
	}
	for _, t := range h.sections {
		if re.Line > t.Line && re.Line <= t.CommitLine {
			if n, ok := h.echoAt[t.CommitLine]; ok && n < echoed.Len() {
				s := echoed.String()[:n]
				echoed.Reset()
				echoed.WriteString(s)
			}
			return
		}
	}
}

// restoreScan is what one pass over a restore file tells before it is
// applied.
type restoreScan struct {
	// tables: the line numbers of the "*table" lines whose sections can
	// be streamed
	tables map[int]bool
	lines  int
	size   int64
	// rules counts the -A lines per table and chain (restoreHandler.indexed)
	rules *chainCounts
}

// chainCounts counts -A lines per table and chain, so that a streamed
// restore knows which chains the rule index covers (indexedMin) before
// their rules come. Chains are told apart by a hash of their names (no
// strings kept for 40k chains): two that share one share a count, which
// only changes which chains are indexed, the same way for all their
// rules.
type chainCounts struct {
	seed maphash.Seed
	n    map[uint64]int32
}

func newChainCounts() *chainCounts {
	return &chainCounts{seed: maphash.MakeSeed(), n: map[uint64]int32{}}
}

func (cc *chainCounts) key(table, chain string) uint64 {
	return maphash.String(cc.seed, table) ^ maphash.String(cc.seed, chain)*31
}

// add counts a line of chain in table.
func (cc *chainCounts) add(table, chain string) { cc.n[cc.key(table, chain)]++ }

// indexedRules returns an upper bound of the rules of indexed chains
// (see restoreHandler.indexed) in the whole file.
func (cc *chainCounts) indexedRules() int {
	n := 0
	for _, c := range cc.n {
		if c >= indexedMin {
			n += int(c)
		}
	}
	return n
}

// of returns the number of -A lines of chain in table's section.
func (cc *chainCounts) of(table, chain string) int { return int(cc.n[cc.key(table, chain)]) }

// streamableSections reads a restore file once and finds the sections
// that can be streamed.
func streamableSections(r io.Reader, o RestoreOptions) (restoreScan, error) {
	out := restoreScan{tables: map[int]bool{}, rules: newChainCounts()}
	seen := map[string]int{}
	curName := ""
	br := bufio.NewReaderSize(r, 64<<10)
	n, cur := 0, 0
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// a line longer than the buffer: only its start matters here
			long := append([]byte(nil), b...)
			for err == bufio.ErrBufferFull {
				var more []byte
				more, err = br.ReadSlice('\n')
				out.size += int64(len(more))
			}
			b = long
		}
		if len(b) == 0 && err != nil {
			if err == io.EOF {
				err = nil
			}
			if o.Noflush || o.Verbose {
				out.tables = map[int]bool{}
			}
			return out, err
		}
		out.size += int64(len(b))
		n++
		out.lines++
		// the line is only looked at before the next read: no copy
		line := unsafe.String(unsafe.SliceData(b), len(b))
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch {
		case line == "" || line[0] == '#' || line[0] == ':':
		case line == "COMMIT":
			cur = 0
		case line[0] == '*' && cur == 0:
			cur = n
			name := strings.Clone(firstWord(line[1:]))
			curName = name
			if prev, ok := seen[name]; ok {
				delete(out.tables, prev) // a table given twice: the second replaces the first
				continue
			}
			seen[name] = n
			out.tables[n] = true
		case cur != 0:
			rest := line
			if rest[0] == '[' {
				if i := strings.IndexByte(rest, ']'); i >= 0 {
					rest = rest[i+1:]
				}
			}
			w := firstWord(rest)
			if w != "-A" && w != "--append" && w != "-N" && w != "--new-chain" || verboseWord(rest) {
				delete(out.tables, cur)
			} else if curName == "raw" && strings.Contains(rest, "--helper") {
				// CT --helper rules are mirrored from the whole chain
				// (builder.ctHelpers), which a View holds
				delete(out.tables, cur)
			} else if w[1] == 'A' || w == "--append" {
				after := strings.TrimLeft(rest, " \t\r\n\v\f")[len(w):]
				out.rules.add(curName, firstWord(after))
			}
		}
		if err == io.EOF {
			if o.Noflush || o.Verbose {
				out.tables = map[int]bool{}
			}
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// verboseWord says whether a restore line may have -v among its words:
// such a line prints, so its section is applied through a View (a word
// of a comment that looks like one costs only the streaming).
func verboseWord(line string) bool {
	return strings.Contains(line, " -v") || strings.Contains(line, "--verbose")
}

func firstWord(s string) string {
	s = strings.TrimLeft(s, " \t\r\n\v\f")
	if i := strings.IndexAny(s, " \t\r\n\v\f"); i >= 0 {
		return s[:i]
	}
	return s
}

// restoreHandler applies a restore file while it is parsed.
type restoreHandler struct {
	e          *Engine
	o          RestoreOptions
	echo       func(string)     // --verbose output, or nil
	out        *strings.Builder // what the restore prints (View.out)
	streamable map[int]bool
	// prepared: the sections whose -A lines are translated ahead
	// (prepare): the streamable ones as the scan of the file found
	// them, which the parse does not change (streamable does)
	prepared  map[int]bool
	rules     *chainCounts
	bl        *builder
	gc        *gcPacer         // nil: leave the collector alone
	views     map[string]*View // sections that go through a View
	viewAdded map[string]bool  // views the builder has added to the batch
	s         *streamState     // the section being streamed
	section   *compat.RestoreTable
	sections  []*compat.RestoreTable
	last      chainNamesOf // see chainNames
	// echoLen is the length of the output so far (--verbose, listings),
	// echoAt that length at each section's COMMIT line
	echoLen func() int
	echoAt  map[int]int
}

// chainNamesOf are the names chainNames shares for chain of section.
type chainNamesOf struct {
	section      *compat.RestoreTable
	chain, kname string
}

// streamState is what a streamed section needs to know: the chains as
// they will be after it, not its rules.
type streamState struct {
	// table is the table as read from the kernel, without its chains
	// (builder.table); names and kernel are its chains, in the kernel's
	// order and by name. A View of 40k chains would take about 14 MB
	// for the whole restore.
	table  *View
	names  []string
	kernel map[string]kernelChain
	// exists: the chains that exist after the section (declared, created
	// with -N, or built-ins that rules went into)
	exists map[string]bool
	err    error // first error of the section, reported at COMMIT
}

// kernelChain is what a streamed section knows of a chain in the kernel.
type kernelChain uint8

const (
	inKernel kernelChain = 1 << iota
	builtinInKernel
)

func (h *restoreHandler) Table(t *compat.RestoreTable) error {
	for _, done := range h.sections {
		if done.Name == t.Name {
			// iptables-nft-restore has committed the sections so far: a
			// refusal there ends it before this section (whose flush
			// would take the refused rules out of our one batch)
			if err := h.checkBefore(t.Line, ""); err != nil {
				return err
			}
			break
		}
	}
	h.section = t
	h.sections = append(h.sections, t)
	if t.Name == "raw" && h.streamable[t.Line] {
		// a raw table with CT --helper rules: their mirror goes away
		// with them (builder.ctHelpers), which a View does
		for _, c := range ctHelperChains {
			_, err := h.e.Conn.Chain(h.e.kfam(), translate.CTHelperChain(c))
			if err == nil {
				h.streamable[t.Line] = false
			} else if !errors.Is(err, unix.ENOENT) {
				return kernelReadError(err)
			}
		}
	}
	if !h.streamable[t.Line] {
		h.s = nil
		return nil
	}
	v, err := h.e.load(t.Name, need{})
	if err != nil {
		var fe *foreignError
		if errors.As(err, &fe) {
			return compat.Errorf(compat.StatusOther, "table `%s' is incompatible, use 'nft' tool.", t.Name)
		}
		return kernelReadError(err)
	}
	s := &streamState{table: NewView(v.Family, v.Table), names: v.names, kernel: make(map[string]kernelChain, len(v.names)), exists: map[string]bool{}}
	s.table.marked = v.marked
	for _, n := range v.names {
		if c := v.Chains[n]; c != nil && c.InKernel {
			k := inKernel
			if c.Builtin {
				k |= builtinInKernel
			}
			s.kernel[n] = k
		}
	}
	h.s = s
	h.bl.ix.rebuild(t.Name, true)
	h.bl.ix.reserve(t.Name, h.rules.indexedRules())
	// flush mode: every chain of the table is emptied first; base chains
	// iptables does not show go away (see View.hidden)
	for _, n := range v.names {
		h.bl.note(h.bl.b.FlushChain(h.bl.fam, t.Name+"."+n), n, t.Line)
	}
	for _, kname := range v.hidden {
		h.bl.note(h.bl.b.FlushChain(h.bl.fam, kname), kname, t.Line)
		h.bl.note(h.bl.b.DelChain(h.bl.fam, kname), kname, t.Line)
	}
	return nil
}

func (h *restoreHandler) Chain(t *compat.RestoreTable, d compat.ChainDecl) error {
	if h.s == nil {
		t.Chains = append(t.Chains, d)
		return nil
	}
	s := h.s
	if compat.IsBuiltin(t.Name, d.Name) {
		if d.Policy == "-" {
			d.Policy = compat.VerdictAccept
		}
		if d.Policy != compat.VerdictAccept && d.Policy != compat.VerdictDrop {
			s.fail(&compat.RestoreError{Line: d.Line, Err: compat.ErrBadPolicy})
			return nil
		}
		cnt := compat.Counters{}
		if h.o.Counters {
			cnt = d.Counters
		}
		h.builtin(d.Name, d.Policy, cnt, d.Line)
		return nil
	}
	h.userChain(d.Name, d.Line)
	return nil
}

// builtin creates a built-in chain or sets its policy and counters.
func (h *restoreHandler) builtin(name, policy string, cnt compat.Counters, line int) {
	s, t := h.s, h.section
	if h.indexed(t.Name, name) {
		h.bl.ix.addedChain(t.Name, name)
	}
	h.bl.table(s.table)
	kname := t.Name + "." + name
	if s.kernel[name]&inKernel != 0 || s.exists[name] {
		h.bl.note(h.bl.b.SetPolicy(h.bl.fam, kname, *policyOf(policy), toKernelCounters(&cnt)), name, line)
	} else {
		base, _ := kernel.BuiltinChain(t.Name, name)
		h.bl.note(h.bl.b.AddChain(h.bl.fam, kname, kernel.ChainSpec{Base: &base, Policy: policyOf(policy), Counters: toKernelCounters(&cnt)}), name, line)
	}
	s.exists[name] = true
}

// userChain makes sure a user chain exists (it was flushed if it did).
func (h *restoreHandler) userChain(name string, line int) {
	s := h.s
	if s.exists[name] {
		return
	}
	if h.indexed(h.section.Name, name) {
		h.bl.ix.addedChain(h.section.Name, name)
	}
	if k := s.kernel[name]; k&inKernel == 0 || k&builtinInKernel != 0 {
		h.bl.table(s.table)
		h.bl.note(h.bl.b.AddChain(h.bl.fam, h.section.Name+"."+name, kernel.ChainSpec{Exclusive: true}), name, line)
	}
	s.exists[name] = true
}

func (s *streamState) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (h *restoreHandler) Command(t *compat.RestoreTable, rc compat.RestoreCmd) error {
	return h.preparedCommand(t, rc, nil)
}

// preparedRule is a rule of an -A line as prepare translates it ahead.
type preparedRule struct {
	exact string // compat.ExactSpec
	spec  kernel.RuleSpec
	err   error
	buf   *[]byte // from encodedBufs, holding spec.Encoded
}

// prepare translates the rules of an -A line of a streamed section, as
// appendRule would, off the handler's goroutine (see parseAhead). It
// reads only the line and h.prepared.
func (h *restoreHandler) prepare(ev *parseEvent) {
	cmd := ev.rc.Cmd
	if cmd.Op != compat.OpAppend || !h.prepared[ev.t.Line] {
		return
	}
	ev.pre = prepareRules(ev.t.Name, cmd, ev.rc.Line, ev.preOne[:0])
}

// prepareRules translates the rules of cmd, a line of table, into room
// when it has enough (or new room).
func prepareRules(table string, cmd *compat.Command, line int, room []preparedRule) []preparedRule {
	pre := room[:0]
	if cap(pre) < len(cmd.Rules) {
		pre = make([]preparedRule, 0, len(cmd.Rules))
	}
	pre = pre[:len(cmd.Rules)]
	for i, r := range cmd.Rules {
		p := &pre[i]
		r = compat.Kept(r)
		p.exact = compat.ExactSpec(r)
		buf := encodedBufs.Get().(*[]byte)
		p.spec, p.err = ruleSpecEncoded(table, cmd.Chain, &RuleState{Rule: r, Line: line}, p.exact, (*buf)[:0])
		if p.spec.Encoded != nil {
			*buf, p.buf = p.spec.Encoded, buf // (grown, maybe)
		} else {
			encodedBufs.Put(buf)
		}
	}
	return pre
}

// encodedBufs are the buffers prepareRules encodes rules into: each goes
// back once the handler has copied its rule into the batch (put), so that
// a restore's rules do not leave their encodings to the collector.
var encodedBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// putEncoded gives pre's encoding buffer back to encodedBufs.
func (pre *preparedRule) putEncoded() {
	if pre.buf != nil && cap(*pre.buf) <= 64<<10 {
		*pre.buf = (*pre.buf)[:0]
		encodedBufs.Put(pre.buf)
	}
	pre.buf, pre.spec.Encoded = nil, nil
}

// preparedCommand is Command with the line's rules translated ahead
// (pre, nil if they were not).
func (h *restoreHandler) preparedCommand(t *compat.RestoreTable, rc compat.RestoreCmd, pre []preparedRule) error {
	if h.gc != nil {
		h.gc.rule()
	}
	if h.s == nil {
		t.Cmds = append(t.Cmds, rc)
		return nil
	}
	s, cmd := h.s, rc.Cmd
	if s.err != nil {
		return nil // only parse errors can still come before it
	}
	if cmd.Op == compat.OpNewChain {
		if s.exists[cmd.Chain] || compat.IsBuiltin(t.Name, cmd.Chain) {
			s.fail(&compat.RestoreError{Line: rc.Line, Err: compat.ErrChainExists})
			return nil
		}
		h.userChain(cmd.Chain, rc.Line)
		return nil
	}
	// -A; iptables-restore builds the rule, and so checks its jump,
	// before it looks for the chain
	if j := cmd.JumpChain; j != "" && compat.IsBuiltin(t.Name, j) {
		// the kernel refuses the jump to a base chain (ENOENT when the
		// section has not made it), as it refuses iptables-nft's
		errno := "No such file or directory"
		if s.exists[j] {
			errno = "Operation not supported"
		}
		ke := &KernelError{Op: "RULE_APPEND", Errno: errno, Object: "rule in chain " + cmd.Chain, Line: rc.Line}
		s.fail(&compat.RestoreError{Line: rc.Line, Err: ke.AsCompat()})
		return nil
	}
	if j := cmd.JumpChain; j != "" && !s.exists[j] {
		s.fail(jumpError(j))
		return nil
	}
	if !s.exists[cmd.Chain] {
		if !compat.IsBuiltin(t.Name, cmd.Chain) {
			s.fail(&compat.RestoreError{Line: rc.Line, Err: compat.ErrNoChain})
			return nil
		}
		// an undeclared built-in comes back as a fresh chain
		h.builtin(cmd.Chain, compat.VerdictAccept, compat.Counters{}, rc.Line)
	}
	if len(pre) != len(cmd.Rules) {
		pre = prepareRules(t.Name, cmd, rc.Line, nil)
	}
	for i, r := range cmd.Rules {
		rs := &RuleState{Rule: compat.Kept(r), Line: rc.Line}
		if err := h.appendRule(cmd.Chain, rs, &pre[i]); err != nil {
			return err
		}
	}
	return nil
}

// appendRule adds rule rs of chain, translated as pre.
func (h *restoreHandler) appendRule(chain string, rs *RuleState, pre *preparedRule) error {
	exact, rspec, err := pre.exact, pre.spec, pre.err
	if h.bl.refuse(err, rs, chain, kernel.OpRuleAppend) {
		c, kname := h.chainNames(chain)
		h.bl.probeRefused(h.section.Name, kname, c, rs, kernel.OpRuleAppend)
		return nil
	}
	if err != nil {
		return err
	}
	chain, kname := h.chainNames(chain)
	idx := h.bl.b.AppendRule(h.bl.fam, kname, rspec)
	h.bl.note(idx, chain, rs.Line)
	h.bl.noteJump(idx, rs.Rule)
	pre.putEncoded()
	if t := h.section.Name; h.bl.ix.rebuilding(t) && h.indexed(t, chain) {
		h.bl.ix.added(t, chain, indexKey(chain, ruleKeyTextExact(rs.Rule, exact)), 0, h.bl.b.Handles())
	}
	return nil
}

// chainNames returns a copy of the chain name and its nft name, shared by
// consecutive rules of the same chain (restore files group rules by
// chain): the batch's operations keep both for error messages, and a name
// cut from its rule line would keep the whole line alive.
func (h *restoreHandler) chainNames(chain string) (string, string) {
	if h.last.section != h.section || h.last.chain != chain {
		c := strings.Clone(chain)
		h.last = chainNamesOf{section: h.section, chain: c, kname: h.section.Name + "." + c}
	}
	return h.last.chain, h.last.kname
}

func (h *restoreHandler) Commit(t *compat.RestoreTable) error {
	err := h.commit(t)
	if h.echoLen != nil {
		h.echoAt[t.CommitLine] = h.echoLen()
	}
	return err
}

func (h *restoreHandler) commit(t *compat.RestoreTable) error {
	if h.s == nil {
		v := h.views[t.Name]
		if v == nil {
			n := need{}
			if h.o.Noflush {
				var err error
				if n, err = h.noflushNeed(t); err != nil {
					return kernelReadError(err)
				}
			}
			var err error
			if v, err = h.e.load(t.Name, n); err != nil {
				var fe *foreignError
				if errors.As(err, &fe) {
					return compat.Errorf(compat.StatusOther, "table `%s' is incompatible, use 'nft' tool.", t.Name)
				}
				return kernelReadError(err)
			}
			h.views[t.Name] = v
		} else if h.o.Noflush {
			n, err := h.noflushNeed(t)
			if err == nil {
				err = h.e.extendView(v, n)
			}
			if err != nil {
				return kernelReadError(err)
			}
		}
		v.out = h.out
		all := h.o.Verbose && !h.o.Noflush
		if all && h.echo != nil || !all && anyVerbose(t) {
			// printed as the lines are read: the text is built before
			// the section changes the view, and cut where a line failed
			v.parseFailed = 0
			head := ""
			if all {
				head = v.verboseFlush()
			}
			var before *verboseBefore
			if h.o.Noflush {
				before = &verboseBefore{kept: map[string]bool{}}
				for _, c := range v.Sorted() {
					if !c.InKernel {
						continue
					}
					before.present = append(before.present, c.Name)
					if c.Builtin && (len(c.Rules) > 0 || c.Policy != compat.VerdictAccept) {
						before.kept[c.Name] = true
					}
				}
			}
			err := v.restoreSection(t, h.o)
			text := head + verboseCommands(t, v.parseFailed, all, before)
			if all {
				h.echo(text)
			} else if v.out != nil {
				v.out.WriteString(text)
			}
			return err
		}
		return v.restoreSection(t, h.o)
	}
	s := h.s
	h.s = nil
	if s.err != nil {
		return atCommit(s.err, t)
	}
	// chains the section does not declare go away
	for _, n := range s.names {
		if s.kernel[n]&inKernel != 0 && !s.exists[n] {
			h.bl.note(h.bl.b.DelChain(h.bl.fam, t.Name+"."+n), n, t.CommitLine)
		}
	}
	if len(s.exists) == 0 {
		// and a table left without chains (see View.sectionReplaced)
		s.table.sectionReplaced = true
		h.bl.dropEmptyTable(s.table)
	}
	return nil
}

// noflushNeed is what section t of a --noflush restore reads (see
// noflushNeed and, for raw, Engine.ctNeed).
func (h *restoreHandler) noflushNeed(t *compat.RestoreTable) (need, error) {
	n := noflushNeed([]*compat.RestoreTable{t}, t.Name)
	if t.Name != "raw" {
		return n, nil
	}
	helper := false
	for _, rc := range t.Cmds {
		helper = helper || hasCTHelper(rc.Cmd.Rules)
	}
	return h.e.ctNeed(n, helper)
}

// indexed says whether the rule index covers chain of a streamed
// section: chains without rules and large ones (see indexedMin).
func (h *restoreHandler) indexed(table, chain string) bool {
	n := h.rules.of(table, chain)
	return n == 0 || n >= indexedMin
}
