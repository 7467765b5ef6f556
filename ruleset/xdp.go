package ruleset

import (
	"github.com/xdptables/xdptables/compat"
)

// Hooks of the XDP fast path (package xdp), set by cmd/xdptables so
// that ruleset does not depend on it. Both are nil when nothing is
// wired; callers pay nothing then.
var (
	// AfterCommit runs after every committed command or restore that
	// may have changed raw PREROUTING of family fam. zeroed holds the
	// handles of raw PREROUTING rules whose counters the command reset
	// (-Z), so that their XDP counters restart too.
	AfterCommit func(e *Engine, zeroed []uint64)
	// BeforeCommit runs before a command or restore commits a change of
	// the rules of raw PREROUTING of e's family from rule index from on
	// (0-based; rules before it stay as they are); AfterCommit follows it
	// whether the commit succeeded or not.
	BeforeCommit func(e *Engine, from int)
	// XDPCounters returns what XDP counted for the raw PREROUTING rules
	// of family fam with the given handles (nil: nothing).
	XDPCounters func(fam compat.Family, handles []uint64) []compat.Counters
)

// RawPrerouting reads raw PREROUTING back from the kernel: its rules and
// their handles, without XDP counters added. A table without the chain
// has no rules.
func (e *Engine) RawPrerouting() ([]*compat.Rule, []uint64, error) {
	v, err := e.load("raw", need{rulesOf: []string{"PREROUTING"}, chains: []string{"PREROUTING"}})
	if err != nil {
		return nil, nil, err
	}
	c := v.existing("PREROUTING")
	if c == nil {
		return nil, nil, nil
	}
	rules := make([]*compat.Rule, len(c.Rules))
	handles := make([]uint64, len(c.Rules))
	for i, r := range c.Rules {
		rules[i], handles[i] = r.Rule, r.Handle
	}
	return rules, handles, nil
}

// touchesRaw says whether cmd can change raw PREROUTING or its counters.
func touchesRaw(cmd *compat.Command) bool {
	if cmd.Table != "raw" || (cmd.Chain != "" && cmd.Chain != "PREROUTING") {
		return false
	}
	switch cmd.Op {
	case compat.OpCheck:
		return false
	case compat.OpList, compat.OpListRules:
		return cmd.ZeroToo
	}
	return true
}

// rawChangeFrom returns the index of the first raw PREROUTING rule that
// cmd can change, or -1 when it changes none (counters, policy, chains,
// a rule appended after all others).
func rawChangeFrom(cmd *compat.Command) int {
	if !touchesRaw(cmd) {
		return -1
	}
	switch cmd.Op {
	case compat.OpInsert, compat.OpReplace, compat.OpDeleteNum:
		return max(cmd.RuleNum, 1) - 1
	case compat.OpDelete, compat.OpFlush:
		return 0
	}
	return -1
}

// beforeCommit calls BeforeCommit once for a command or restore that is
// about to commit a change of raw PREROUTING from rule index from on.
func (e *Engine) beforeCommit(paused *bool, from int) {
	if BeforeCommit != nil && !*paused && from >= 0 {
		BeforeCommit(e, from)
		*paused = true
	}
}

// resume brings XDP back in step after BeforeCommit when the command or
// restore did not get to AfterCommit (it failed).
func (e *Engine) resume(paused bool) {
	if paused && AfterCommit != nil {
		AfterCommit(e, nil)
	}
}

// afterCommand calls AfterCommit for a committed command of the raw
// table that can change raw PREROUTING or its counters.
func (e *Engine) afterCommand(cmd *compat.Command, v *View) {
	if AfterCommit == nil || !touchesRaw(cmd) {
		return
	}
	var zeroed []uint64
	if c := v.existing("PREROUTING"); c != nil {
		switch {
		case cmd.Op == compat.OpZeroNum:
			if cmd.RuleNum >= 1 && cmd.RuleNum <= len(c.Rules) {
				zeroed = append(zeroed, c.Rules[cmd.RuleNum-1].Handle)
			}
		case cmd.Op == compat.OpZero || cmd.ZeroToo:
			for _, r := range c.Rules {
				zeroed = append(zeroed, r.Handle)
			}
		}
	}
	AfterCommit(e, zeroed)
}

// afterRestore calls AfterCommit for a committed restore with a raw
// section.
func (e *Engine) afterRestore(tables []*compat.RestoreTable) {
	if AfterCommit == nil {
		return
	}
	for _, t := range tables {
		if t.Name == "raw" {
			AfterCommit(e, nil)
			return
		}
	}
}

// addXDPCounters adds the XDP counters to the rules of raw PREROUTING
// for listing: every packet is counted once, by XDP when it dropped the
// packet, by nftables otherwise.
func (v *View) addXDPCounters() {
	if XDPCounters == nil || v.Table != "raw" {
		return
	}
	c := v.existing("PREROUTING")
	if c == nil || len(c.Rules) == 0 {
		return
	}
	handles := make([]uint64, len(c.Rules))
	for i, r := range c.Rules {
		handles[i] = r.Handle
	}
	xc := XDPCounters(v.Family, handles)
	for i, r := range c.Rules {
		if i >= len(xc) || r.Handle == 0 || (xc[i].Packets == 0 && xc[i].Bytes == 0) {
			continue
		}
		if r.Rule.Counters == nil {
			r.Rule.Counters = &compat.Counters{}
		}
		r.Rule.Counters.Packets += xc[i].Packets
		r.Rule.Counters.Bytes += xc[i].Bytes
	}
}
