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

// afterCommand calls AfterCommit for a committed command of the raw
// table that can change raw PREROUTING or its counters.
func (e *Engine) afterCommand(cmd *compat.Command, v *View) {
	if AfterCommit == nil || cmd.Table != "raw" {
		return
	}
	switch cmd.Op {
	case compat.OpCheck:
		return
	case compat.OpList, compat.OpListRules:
		if !cmd.ZeroToo {
			return
		}
	}
	if cmd.Chain != "" && cmd.Chain != "PREROUTING" {
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
