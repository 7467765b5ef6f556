package main

import (
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/ruleset"
	"github.com/xdptables/xdptables/setengine"
	"github.com/xdptables/xdptables/xdp"
)

// The XDP fast path follows every committed change of raw PREROUTING
// and of mirrored sets, and adds its counters to listings. Each hook
// first checks, with one stat, whether anything is attached in this
// namespace: without XDP, commands pay nothing more.
func init() {
	ruleset.AfterCommit = xdpAfterCommit
	ruleset.BeforeCommit = xdpBeforeCommit
	ruleset.XDPCounters = xdpCounters
	setengine.AfterCommit = xdpAfterSets
	setengine.Watching = xdp.Active
}

// xdpInput reads a generation's input back from the kernel, through
// conn (the command's own socket: one more, closed right after a commit
// that deleted something, would wait in close(2) for the kernel to free
// that; see kernel.Release): raw PREROUTING of both families and, only
// if some rule asks, the ipset sets (sets, if not nil, is the current
// state already in hand).
func xdpInput(conn *kernel.Conn, sets *ipset.State) (*xdp.Input, error) {
	in := &xdp.Input{}
	for _, f := range []compat.Family{compat.IPv4, compat.IPv6} {
		eng := &ruleset.Engine{Conn: conn, Family: f}
		rules, handles, err := eng.RawPrerouting()
		if err != nil {
			return nil, err
		}
		if f == compat.IPv4 {
			in.V4, in.Keys4 = rules, xdp.HandleKeys(f, handles)
		} else {
			in.V6, in.Keys6 = rules, xdp.HandleKeys(f, handles)
		}
	}
	loaded := sets != nil
	in.Sets = func(name string) *ipset.Set {
		if !loaded {
			loaded = true
			sets, _ = (&setengine.Engine{Conn: conn}).Load()
		}
		if sets == nil {
			return nil
		}
		return sets.Find(name)
	}
	return in, nil
}

// xdpUpdate recompiles the fast path from the kernel's rules, read
// through conn. If that
// fails, the attached programs are replaced by ones that pass every
// packet (an outdated classifier must not drop what the new rules
// accept) and the user is told; nftables keeps enforcing every rule.
func xdpUpdate(conn *kernel.Conn, sets *ipset.State, zeroed map[string]bool) {
	m, err := xdp.Open()
	if err != nil {
		errorf("xdptables: warning: XDP fast path not updated: %v; the rules stay enforced by nftables\n", err)
		return
	}
	defer m.Close()
	in, err := xdpInput(conn, sets)
	if err == nil {
		in.Zero = zeroed
		err = m.Update(in)
	}
	if err != nil {
		derr := m.Disable()
		if derr != nil {
			errorf("xdptables: warning: XDP fast path not updated (%v) and could not be disabled: %v\n", err, derr)
			return
		}
		errorf("xdptables: warning: XDP fast path not updated: %v; it now passes every packet and the rules stay enforced by nftables (run `xdptables xdp sync` to retry)\n", err)
	}
}

// xdpBeforeCommit pauses the fast path (every packet passes to nftables)
// before a change of raw PREROUTING commits; xdpAfterCommit resumes it
// with the new rules. A command killed in between leaves XDP passing,
// never dropping for rules that nftables no longer has.
func xdpBeforeCommit(e *ruleset.Engine, from int) {
	if !xdp.Active() {
		return
	}
	m, err := xdp.Open()
	if err != nil {
		errorf("xdptables: warning: XDP fast path not paused for the update: %v\n", err)
		return
	}
	defer m.Close()
	if err := m.Pause(e.Family, from); err != nil {
		errorf("xdptables: warning: XDP fast path not paused for the update: %v\n", err)
	}
}

func xdpAfterCommit(e *ruleset.Engine, zeroed []uint64) {
	if !xdp.Active() {
		return
	}
	var zero map[string]bool
	if len(zeroed) > 0 {
		zero = map[string]bool{}
		for _, k := range xdp.HandleKeys(e.Family, zeroed) {
			zero[k] = true
		}
	}
	xdpUpdate(e.Conn, nil, zero)
}

func xdpCounters(fam compat.Family, handles []uint64) []compat.Counters {
	if !xdp.Active() {
		return nil
	}
	m, err := xdp.Open()
	if err != nil {
		return nil
	}
	defer m.Close()
	c, err := m.Counters(xdp.HandleKeys(fam, handles))
	if err != nil {
		errorf("xdptables: warning: XDP counters unavailable: %v\n", err)
		return nil
	}
	return c
}

// xdpAfterSets carries an ipset change to the mirrored sets: one element
// in place, anything bigger by an atomic rebuild.
func xdpAfterSets(e *setengine.Engine, old, cur *ipset.State) {
	if !xdp.Active() {
		return
	}
	m, err := xdp.Open()
	if err != nil {
		errorf("xdptables: warning: XDP fast path not updated: %v; the rules stay enforced by nftables\n", err)
		return
	}
	rebuild := false
	st, err := m.State()
	if err != nil {
		rebuild = true
	} else {
		for _, name := range st.Sets {
			if ok, err := m.SetChanged(name, old.Find(name), cur.Find(name)); err != nil || !ok {
				rebuild = true
				break
			}
		}
	}
	m.Close()
	if rebuild {
		xdpUpdate(e.Conn, cur, nil)
	}
}
