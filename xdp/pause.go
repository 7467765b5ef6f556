package xdp

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xdptables/xdptables/compat"
)

// Pauser is a command that paused the fast path before committing a
// change of the rules and has not brought it back in step yet. While one
// is alive, no other command resumes XDP: a program compiled before that
// command's commit would go on running rules nftables is about to drop
// or reorder. The last pauser to update compiles from the kernel's state
// after every commit and resumes.
type Pauser struct {
	PID int `json:"pid"`
	// Start is the process's start time (clock ticks after boot, field 22
	// of /proc/PID/stat): a PID reused by another process is not the
	// pauser.
	Start uint64 `json:"start"`
	// Since is when it paused (Unix seconds). A pauser older than
	// pauseLimit no longer holds XDP paused, whatever its PID says
	// (e.g. a process of another PID namespace that shares this network
	// namespace, whose PID means something else here).
	Since int64 `json:"since"`
}

// pauseLimit bounds how long a live pauser keeps others from resuming;
// a commit of the largest restores takes seconds.
const pauseLimit = 120 * time.Second

// procStart reads the start time of process pid.
func procStart(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// the command name in parentheses may hold spaces: fields count from
	// the last ')', which ends it; start time is field 22, the 20th after it
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(f[19]), 10, 64)
	return v, err == nil
}

// self is the calling process as a pauser.
func self(now time.Time) Pauser {
	start, _ := procStart(os.Getpid())
	return Pauser{PID: os.Getpid(), Start: start, Since: now.Unix()}
}

func (p Pauser) alive(now time.Time) bool {
	if now.Sub(time.Unix(p.Since, 0)) > pauseLimit {
		return false
	}
	start, ok := procStart(p.PID)
	return ok && start == p.Start
}

// otherPausers returns the live pausers other than the calling process.
func otherPausers(st *State, now time.Time) []Pauser {
	me := os.Getpid()
	var out []Pauser
	for _, p := range st.Pausers {
		if p.PID != me && p.alive(now) {
			out = append(out, p)
		}
	}
	return out
}

// Pause makes every attached interface pass every packet until the next
// Update, before a command commits a change of the rules: should the
// command die between its commit and its Update, XDP must not go on
// dropping for rules that nftables no longer has. The compiled run and
// its counters stay as they are, for the Update to carry over. The
// command is recorded as a pauser until its Update (see Pauser).
//
// from is the first rule index of family fam that the command changes:
// when the compiled run ends before it, the run stays a prefix of the new
// rules, its verdicts stay right, and nothing is paused.
func (m *Manager) Pause(fam compat.Family, from int) error {
	st, err := m.State()
	if err != nil {
		return err
	}
	run := st.Run4
	if fam == compat.IPv6 {
		run = st.Run6
	}
	if len(st.Links) == 0 || from >= run {
		return nil
	}
	now := time.Now()
	if !st.Paused {
		if err := m.passAll(st); err != nil {
			return fmt.Errorf("xdp: pause: %w", err)
		}
	}
	// marked after the swap: a kill before the mark leaves XDP passing
	// with the state unmarked, which is safe; the reverse would claim a
	// pause that is not there
	st.Paused = true
	st.Pausers = append(otherPausers(st, now), self(now))
	return m.save(st)
}

// passAll swaps a program that passes every packet into every attached
// interface.
func (m *Manager) passAll(st *State) error {
	pass, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "xdptables_pass",
		Type:         ebpf.XDP,
		AttachType:   ebpf.AttachXDP, // a link takes only the attach type it was made with
		License:      "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
	})
	if err != nil {
		return err
	}
	defer pass.Close()
	for _, l := range st.Links {
		// a missing link went with its interface
		if missing, err := m.replaceProgram(l, pass); !missing && err != nil {
			return fmt.Errorf("on %s: %w", l.Name, err)
		}
	}
	return nil
}

// deferUpdate is Update while another command holds XDP paused: that
// command's own Update compiles from the rules after its commit, which
// include this one's. Until then XDP passes every packet, so the
// counters of rules this command zeroes are zeroed in place: nothing
// counts into them meanwhile.
func (m *Manager) deferUpdate(st *State, in *Input, others []Pauser) error {
	if !st.Paused {
		if err := m.passAll(st); err != nil {
			return fmt.Errorf("xdp: pause: %w", err)
		}
		st.Paused = true
	}
	if len(in.Zero) > 0 {
		cm, err := m.counterMap()
		if err != nil {
			return err
		}
		ncpu, err := ebpf.PossibleCPU()
		if err != nil {
			return err
		}
		zero := make([]classifierCounter, ncpu)
		for _, r := range st.Rules {
			if in.Zero[r.Key] {
				if err := cm.Put(r.Slot, zero); err != nil {
					return fmt.Errorf("xdp: zeroing counters: %w", err)
				}
			}
		}
	}
	st.Pausers = others
	return m.save(st)
}

// PausedBy returns the live commands that hold XDP paused (see Pauser).
func PausedBy(st *State) []Pauser {
	return otherPausers(st, time.Now())
}
