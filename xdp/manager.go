package xdp

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/compat"
)

// Where the fast path keeps its state. bpffs is not per network
// namespace, so both paths carry the namespace's inode.
var (
	BPFFS    = "/sys/fs/bpf"
	StateDir = "/run/xdptables"
)

const maxSlots = 65536

// Mode is an XDP attach mode.
type Mode string

const (
	ModeNative  Mode = "native"
	ModeGeneric Mode = "generic"
	ModeAuto    Mode = "auto"
)

// Attachment is one interface the classifier runs on.
type Attachment struct {
	Ifindex uint32 `json:"ifindex"`
	Name    string `json:"name"`
	Mode    Mode   `json:"mode"`
	// Link is the ID of the bpf_link, for a command that sees another
	// bpffs than the one holding the pin (a private mount namespace
	// with /sys/fs/bpf mounted, or the host's where `ip netns exec`
	// children use BPFFSFallback); 0 in states of earlier builds.
	Link uint32 `json:"link,omitempty"`
}

// StateRule is one iptables rule of the compiled run.
type StateRule struct {
	Key    string        `json:"key"`
	Family compat.Family `json:"family"`
	Pos    int           `json:"pos"`
	Slot   uint32        `json:"slot"`
	Drop   bool          `json:"drop"`
	Spec   string        `json:"spec"`
}

// State is what the short-lived CLI keeps between invocations beside
// the pinned objects.
type State struct {
	Links []Attachment `json:"links"`
	Rules []StateRule  `json:"rules"`
	Stop4 *Stop        `json:"stop4,omitempty"`
	Stop6 *Stop        `json:"stop6,omitempty"`
	Run4  int          `json:"run4"`
	Run6  int          `json:"run6"`
	// Sets are the ipset sets mirrored into BPF maps, pinned as
	// set_HEX(NAME) beside the program's links.
	Sets []string `json:"sets,omitempty"`
	// NextSlot is where the search for a free counter slot starts: a
	// slot is reused only after every other one, long after packets of
	// the generation that last used it are gone.
	NextSlot uint32 `json:"next_slot"`
	// Netns is the cookie of the network namespace the state belongs to
	// (SO_NETNS_COOKIE, never reused; 0 where the kernel has none). State
	// and pins are kept per namespace inode, and a namespace deleted with
	// XDP still attached leaves them behind: a later namespace that gets
	// the same inode must not take them for its own.
	Netns uint64 `json:"netns,omitempty"`
	// Paused is set while a command changes the rules: XDP passes every
	// packet to nftables from before the command commits until it has
	// compiled the new rules. A command killed in between leaves it
	// paused (safe: nftables alone decides) until the next update.
	Paused bool `json:"paused,omitempty"`
	// Pausers are the commands that paused and have not updated yet.
	Pausers []Pauser `json:"pausers,omitempty"`
}

// Input is what a generation is compiled from: the raw PREROUTING rules
// of both families, their identities (Keys: the kernel rule handles,
// so that counters follow the nftables rule), the sets -m set looks
// up, and the rules whose counters start again at zero (-Z).
type Input struct {
	V4, V6       []*compat.Rule
	Keys4, Keys6 []string
	Sets         SetSource
	Zero         map[string]bool
}

func (in *Input) keys(fam compat.Family) []string {
	if fam == compat.IPv6 {
		if in.Keys6 != nil {
			return in.Keys6
		}
		return RuleKeys(fam, in.V6)
	}
	if in.Keys4 != nil {
		return in.Keys4
	}
	return RuleKeys(fam, in.V4)
}

// HandleKeys names rules by their nftables handle.
func HandleKeys(fam compat.Family, handles []uint64) []string {
	out := make([]string, len(handles))
	for i, h := range handles {
		out[i] = fmt.Sprintf("%d|h%d", fam, h)
	}
	return out
}

// Manager owns the fast path of the current network namespace.
type Manager struct {
	pinDir, stateFile string
	lock              *os.File
	counters          *ebpf.Map
	cookie            uint64 // of the namespace (see State.Netns)
}

// NetnsID is the inode of the calling process's network namespace.
func NetnsID() (uint64, error) {
	fi, err := os.Stat("/proc/self/ns/net")
	if err != nil {
		return 0, err
	}
	return fi.Sys().(*syscall.Stat_t).Ino, nil
}

// Open locks the fast path of this namespace, mounting bpffs if needed.
// Close releases it.
func Open() (*Manager, error) {
	ino, err := NetnsID()
	if err != nil {
		return nil, fmt.Errorf("xdp: network namespace: %w", err)
	}
	root, err := pinRoot()
	if err != nil {
		return nil, err
	}
	id := strconv.FormatUint(ino, 10)
	m := &Manager{
		pinDir:    filepath.Join(root, "xdptables", id),
		stateFile: filepath.Join(StateDir, id, "state.json"),
	}
	if err := os.MkdirAll(filepath.Dir(m.stateFile), 0o700); err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(filepath.Dir(m.stateFile), "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("xdp: lock: %w", err)
	}
	m.lock = f
	m.cookie = netnsCookie()
	if err := m.dropStale(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// netnsCookie returns the cookie of the calling thread's network
// namespace, or 0 where the kernel does not tell it (before 5.14).
func netnsCookie() uint64 {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var c uint64
	l := uint32(8)
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_NETNS_COOKIE,
		uintptr(unsafe.Pointer(&c)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return 0
	}
	return c
}

// dropStale removes the state and pins of another namespace that had
// this one's inode (see State.Netns).
func (m *Manager) dropStale() error {
	st, err := m.State()
	if err != nil || st.Netns == 0 || m.cookie == 0 || st.Netns == m.cookie {
		return nil // unreadable state is reported where it is used
	}
	if err := os.RemoveAll(m.pinDir); err != nil {
		return fmt.Errorf("xdp: stale pins of a deleted namespace: %w", err)
	}
	return os.Remove(m.stateFile)
}

// Close unlocks; it does not detach anything.
func (m *Manager) Close() {
	if m.counters != nil {
		m.counters.Close()
	}
	if _, err := os.Stat(m.stateFile); errors.Is(err, os.ErrNotExist) {
		_ = os.RemoveAll(filepath.Dir(m.stateFile)) // nothing attached here
	}
	m.lock.Close()
}

// BPFFSFallback is where the pins live when /sys/fs/bpf is not a bpffs:
// `ip netns exec` mounts a fresh /sys, hiding the host's /sys/fs/bpf, and
// a bpffs mounted from inside it vanishes with the process.
var BPFFSFallback = "/run/xdptables/bpffs"

func isBPFFS(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.BPF_FS_MAGIC
}

// pinRoot finds a bpffs, mounting one on /sys/fs/bpf when that lasts.
func pinRoot() (string, error) {
	for _, d := range []string{BPFFS, BPFFSFallback} {
		if isBPFFS(d) {
			return d, nil
		}
	}
	self, err1 := os.Readlink("/proc/self/ns/mnt")
	host, err2 := os.Readlink("/proc/1/ns/mnt")
	if err1 != nil || err2 != nil || self != host {
		return "", fmt.Errorf("xdp: no bpffs at %s or %s, and one mounted from this private mount namespace would not outlive the command; mount one first: mount -t bpf bpf %s", BPFFS, BPFFSFallback, BPFFSFallback)
	}
	if err := os.MkdirAll(BPFFS, 0o700); err != nil {
		return "", fmt.Errorf("xdp: %w", err)
	}
	if err := unix.Mount("bpf", BPFFS, "bpf", 0, "mode=0700"); err != nil {
		return "", fmt.Errorf("xdp: mounting bpffs on %s: %w", BPFFS, err)
	}
	return BPFFS, nil
}

// State reads the saved state; a namespace without one has none.
func (m *Manager) State() (*State, error) {
	st := &State{}
	b, err := os.ReadFile(m.stateFile)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("xdp: %s: %w", m.stateFile, err)
	}
	return st, nil
}

func (m *Manager) save(st *State) error {
	st.Netns = m.cookie
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := m.stateFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("xdp: %w", err)
	}
	return os.Rename(tmp, m.stateFile)
}

// counterMap opens (or creates and pins) the per-CPU counters shared by
// every generation of the program.
func (m *Manager) counterMap() (*ebpf.Map, error) {
	if m.counters != nil {
		return m.counters, nil
	}
	path := filepath.Join(m.pinDir, "counters")
	if cm, err := ebpf.LoadPinnedMap(path, nil); err == nil {
		m.counters = cm
		return cm, nil
	}
	if err := os.MkdirAll(m.pinDir, 0o700); err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	spec, err := loadClassifier()
	if err != nil {
		return nil, err
	}
	cm, err := ebpf.NewMap(spec.Maps["counters"])
	if err != nil {
		return nil, fmt.Errorf("xdp: creating counters: %w", err)
	}
	if err := cm.Pin(path); err != nil {
		cm.Close()
		return nil, fmt.Errorf("xdp: pinning counters: %w", err)
	}
	m.counters = cm
	return cm, nil
}

// RuleKeys names each rule by family, exact specification and
// occurrence, so that a rule that survives an edit keeps its counters.
func RuleKeys(fam compat.Family, rules []*compat.Rule) []string {
	seen := map[string]int{}
	out := make([]string, len(rules))
	for i, r := range rules {
		spec := strings.TrimSpace(compat.ExactSpec(r))
		seen[spec]++
		out[i] = fmt.Sprintf("%d|%s|%d", fam, spec, seen[spec])
	}
	return out
}

func ifaces(st *State) []Iface {
	var out []Iface
	for _, l := range st.Links {
		ifc, err := net.InterfaceByIndex(int(l.Ifindex))
		if err != nil {
			continue // gone: the kernel detached it
		}
		out = append(out, Iface{Index: uint32(ifc.Index), Name: ifc.Name, MAC: ifc.HardwareAddr})
	}
	return out
}

// Update compiles the raw PREROUTING rules of both families and swaps the
// result into every attached interface, each in one step.
func (m *Manager) Update(in *Input) error {
	st, err := m.State()
	if err != nil {
		return err
	}
	// Interfaces that went away took their XDP program with them.
	live := st.Links[:0]
	for _, l := range st.Links {
		if _, err := net.InterfaceByIndex(int(l.Ifindex)); err != nil {
			if m.releaseLink(l) != nil {
				_ = os.Remove(m.linkPath(l.Ifindex))
			}
			continue
		}
		live = append(live, l)
	}
	st.Links = live
	if len(st.Links) == 0 {
		return m.Reset()
	}
	if others := otherPausers(st, time.Now()); len(others) > 0 {
		return m.deferUpdate(st, in, others)
	}
	p, err := m.build(st, in)
	if err != nil {
		return err
	}
	defer p.Close()
	for _, l := range st.Links {
		missing, err := m.replaceProgram(l, p.prog)
		if missing {
			return fmt.Errorf("xdp: link of %s: %w", l.Name, err)
		}
		if err != nil {
			return fmt.Errorf("xdp: replacing the program on %s: %w", l.Name, err)
		}
	}
	st.Paused, st.Pausers = false, nil
	return m.save(st)
}

// build compiles, assigns counter slots (keeping those of surviving
// rules) and loads a new generation; st is updated to describe it.
func (m *Manager) build(st *State, in *Input) (*program, error) {
	c, err := CompileSets(in.V4, in.V6, ifaces(st), in.Sets)
	if err != nil {
		return nil, err
	}
	cm, err := m.counterMap()
	if err != nil {
		return nil, err
	}
	old := map[string]uint32{}
	used := map[uint32]bool{}
	for _, r := range st.Rules {
		old[r.Key] = r.Slot
	}
	keys := map[compat.Family][]string{compat.IPv4: in.keys(compat.IPv4), compat.IPv6: in.keys(compat.IPv6)}
	src := map[compat.Family][]*compat.Rule{compat.IPv4: in.V4, compat.IPv6: in.V6}
	var rules []StateRule
	slotOf := map[string]uint32{}
	for _, ref := range c.Rules {
		k := keys[ref.Family][ref.Pos]
		if _, ok := slotOf[k]; ok || in.Zero[k] {
			continue
		}
		if s, ok := old[k]; ok {
			slotOf[k], used[s] = s, true
		}
	}
	next := st.NextSlot % maxSlots
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	zero := make([]classifierCounter, ncpu)
	slots := make([]uint32, len(c.Rules))
	for i, ref := range c.Rules {
		k := keys[ref.Family][ref.Pos]
		s, ok := slotOf[k]
		if !ok {
			for n := 0; used[next]; n++ {
				if n == maxSlots {
					return nil, fmt.Errorf("xdp: out of counter slots")
				}
				next = (next + 1) % maxSlots
			}
			s, used[next] = next, true
			next = (next + 1) % maxSlots
			if err := cm.Put(s, zero); err != nil {
				return nil, fmt.Errorf("xdp: zeroing counters: %w", err)
			}
			slotOf[k] = s
		}
		if len(rules) == 0 || rules[len(rules)-1].Key != k {
			rules = append(rules, StateRule{Key: k, Family: ref.Family, Pos: ref.Pos, Slot: s, Drop: ref.Drop,
				Spec: strings.TrimSpace(compat.ExactSpec(src[ref.Family][ref.Pos]))})
		}
		slots[i] = s
	}
	setMaps := map[string]*ebpf.Map{}
	defer func() {
		for _, sm := range setMaps {
			sm.Close()
		}
	}()
	var setNames []string
	for _, l := range c.Sets {
		if setMaps[l.Set] != nil {
			continue
		}
		sm, err := newSetMap(in.Sets(l.Set))
		if err != nil {
			return nil, err
		}
		setMaps[l.Set] = sm
		setNames = append(setNames, l.Set)
	}
	p, err := load(c, slots, cm, setMaps)
	if err != nil {
		return nil, err
	}
	// The set maps are pinned under their names once the program using
	// them is loaded; ipset add/del update them in place.
	for _, name := range setNames {
		if err := m.pinSet(name, setMaps[name]); err != nil {
			p.Close()
			return nil, err
		}
	}
	for _, name := range st.Sets {
		if setMaps[name] == nil {
			_ = os.Remove(m.setPath(name))
		}
	}
	st.Rules, st.Run4, st.Run6, st.Stop4, st.Stop6 = rules, c.Run4, c.Run6, c.Stop4, c.Stop6
	st.Sets, st.NextSlot = setNames, next
	return p, nil
}

func (m *Manager) setPath(name string) string {
	// bpffs refuses '.' in names, which set names may hold
	return filepath.Join(m.pinDir, "set_"+hex.EncodeToString([]byte(name)))
}

// pinSet pins sm as the map of set name, replacing the previous one.
func (m *Manager) pinSet(name string, sm *ebpf.Map) error {
	tmp := m.setPath(name) + "_new"
	_ = os.Remove(tmp)
	if err := sm.Pin(tmp); err != nil {
		return fmt.Errorf("xdp: pinning set %s: %w", name, err)
	}
	if err := os.Rename(tmp, m.setPath(name)); err != nil {
		return fmt.Errorf("xdp: pinning set %s: %w", name, err)
	}
	return nil
}

func (m *Manager) linkPath(ifindex uint32) string {
	return linkPin(m.pinDir, ifindex)
}

func linkPin(pinDir string, ifindex uint32) string {
	return filepath.Join(pinDir, fmt.Sprintf("link_%d", ifindex))
}

// Attach runs the classifier for rules v4, v6 on ifname. With ModeAuto it
// tries native mode first; the returned mode is the one in effect.
func (m *Manager) Attach(ifname string, mode Mode, in *Input) (Mode, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return "", fmt.Errorf("xdp: no interface %s in this network namespace", ifname)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", ifname, "master")); err == nil {
		// Frames of a bridge, bond or VRF port meet PREROUTING (if at
		// all) under another device's name.
		return "", fmt.Errorf("xdp: %s has a master device; attach to the master instead", ifname)
	}
	st, err := m.State()
	if err != nil {
		return "", err
	}
	for _, l := range st.Links {
		if l.Ifindex == uint32(ifc.Index) {
			return "", fmt.Errorf("xdp: already attached to %s (%s)", ifname, l.Mode)
		}
	}
	st.Links = append(st.Links, Attachment{Ifindex: uint32(ifc.Index), Name: ifname})
	p, err := m.build(st, in)
	if err != nil {
		return "", err
	}
	defer p.Close()
	tries := []Mode{mode}
	if mode == ModeAuto {
		tries = []Mode{ModeNative, ModeGeneric}
	}
	var lk link.Link
	var used Mode
	for _, t := range tries {
		flags := link.XDPDriverMode
		if t == ModeGeneric {
			flags = link.XDPGenericMode
		} else if t != ModeNative {
			return "", fmt.Errorf("xdp: unknown mode %q", t)
		}
		lk, err = link.AttachXDP(link.XDPOptions{Program: p.prog, Interface: ifc.Index, Flags: flags})
		if err == nil {
			used = t
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("xdp: attaching to %s: %w", ifname, err)
	}
	defer lk.Close()
	info, err := lk.Info()
	if err != nil {
		return "", fmt.Errorf("xdp: attaching to %s: %w", ifname, err)
	}
	// A pin already there is of a link that is gone (the kernel has
	// just let this one attach: one XDP program per interface), e.g.
	// detached by a command that saw another bpffs (Attachment.Link).
	_ = os.Remove(m.linkPath(uint32(ifc.Index)))
	if err := lk.Pin(m.linkPath(uint32(ifc.Index))); err != nil {
		return "", fmt.Errorf("xdp: pinning link: %w", err)
	}
	st.Links[len(st.Links)-1].Mode = used
	st.Links[len(st.Links)-1].Link = uint32(info.ID)
	if others := otherPausers(st, time.Now()); len(others) > 0 {
		// a command is still to commit a change: it resumes XDP after
		// (see Pauser)
		if err := m.passAll(st); err != nil {
			return "", fmt.Errorf("xdp: pause: %w", err)
		}
		st.Paused, st.Pausers = true, others
		return used, m.save(st)
	}
	for _, l := range st.Links[:len(st.Links)-1] {
		if missing, err := m.replaceProgram(l, p.prog); !missing && err != nil {
			return "", fmt.Errorf("xdp: updating %s: %w", l.Name, err)
		}
	}
	st.Paused, st.Pausers = false, nil
	return used, m.save(st)
}

// Detach removes the classifier from ifname. When no interface is left,
// the pinned counters and the state go too.
func (m *Manager) Detach(ifname string) error {
	st, err := m.State()
	if err != nil {
		return err
	}
	i := -1
	for j, l := range st.Links {
		if l.Name == ifname {
			i = j
		}
	}
	if i < 0 {
		if ifc, err := net.InterfaceByName(ifname); err == nil {
			for j, l := range st.Links {
				if l.Ifindex == uint32(ifc.Index) {
					i = j
				}
			}
		}
	}
	if i < 0 {
		return fmt.Errorf("xdp: not attached to %s", ifname)
	}
	if err := m.releaseLink(st.Links[i]); err != nil && !errors.Is(err, errNoLink) {
		return fmt.Errorf("xdp: detaching from %s: %w", ifname, err)
	}
	st.Links = append(st.Links[:i], st.Links[i+1:]...)
	if len(st.Links) == 0 {
		return m.Reset()
	}
	return m.save(st)
}

// Reset detaches everything and removes the pinned objects and state of
// this namespace.
func (m *Manager) Reset() error {
	st, err := m.State()
	if err != nil {
		return err
	}
	for _, l := range st.Links {
		_ = m.releaseLink(l) // what is left goes with the pins below
	}
	if m.counters != nil {
		m.counters.Close()
		m.counters = nil
	}
	if err := os.RemoveAll(m.pinDir); err != nil {
		return fmt.Errorf("xdp: %w", err)
	}
	_ = os.Remove(filepath.Dir(m.pinDir)) // only if empty
	return os.RemoveAll(filepath.Dir(m.stateFile))
}

// Counters returns, for each rule key, what XDP dropped for it (zero
// for rules outside the compiled run).
func (m *Manager) Counters(keys []string) ([]compat.Counters, error) {
	out := make([]compat.Counters, len(keys))
	st, err := m.State()
	if err != nil || len(st.Rules) == 0 {
		return out, err
	}
	cm, err := ebpf.LoadPinnedMap(filepath.Join(m.pinDir, "counters"), nil)
	if err != nil {
		return out, nil
	}
	defer cm.Close()
	slot := map[string]uint32{}
	for _, r := range st.Rules {
		slot[r.Key] = r.Slot
	}
	for i, k := range keys {
		s, ok := slot[k]
		if !ok {
			continue
		}
		var per []classifierCounter
		if err := cm.Lookup(s, &per); err != nil {
			return nil, fmt.Errorf("xdp: reading counters: %w", err)
		}
		for _, c := range per {
			out[i].Packets += c.Packets
			out[i].Bytes += c.Bytes
		}
	}
	return out, nil
}

// SlotCounters sums the per-CPU counters of every slot in st.
func (m *Manager) SlotCounters(st *State) (map[uint32]compat.Counters, error) {
	out := map[uint32]compat.Counters{}
	cm, err := ebpf.LoadPinnedMap(filepath.Join(m.pinDir, "counters"), nil)
	if err != nil {
		return out, nil
	}
	defer cm.Close()
	for _, r := range st.Rules {
		var per []classifierCounter
		if err := cm.Lookup(r.Slot, &per); err != nil {
			return nil, err
		}
		var c compat.Counters
		for _, x := range per {
			c.Packets += x.Packets
			c.Bytes += x.Bytes
		}
		out[r.Slot] = c
	}
	return out, nil
}

// SortedLinks lists attachments by name.
func (st *State) SortedLinks() []Attachment {
	ls := append([]Attachment(nil), st.Links...)
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	return ls
}

// Active says, cheaply and without locking, whether the fast path is
// attached in this network namespace (its state file exists): commands
// check it before doing any XDP work.
func Active() bool {
	ino, err := NetnsID()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(StateDir, strconv.FormatUint(ino, 10), "state.json"))
	return err == nil
}

// replaceProgram swaps prog in on l's pinned link; missing says there is
// no such link (it went with its interface), err then says why.
func (m *Manager) replaceProgram(l Attachment, prog *ebpf.Program) (missing bool, err error) {
	lk, _, err := m.openLink(l)
	if err != nil {
		return true, err
	}
	defer lk.Close()
	return false, lk.Update(prog)
}

// Disable replaces the program on every attached interface by one that
// passes everything (nftables alone decides), for when an update failed:
// an outdated classifier must never drop what the new rules accept.
func (m *Manager) Disable() error {
	st, err := m.State()
	if err != nil {
		return err
	}
	p, err := m.build(st, &Input{})
	if err != nil {
		return m.Reset()
	}
	defer p.Close()
	for _, l := range st.Links {
		if missing, err := m.replaceProgram(l, p.prog); !missing && err != nil {
			return m.Reset()
		}
	}
	// a pass-all program is safe whoever else is still to update
	st.Paused, st.Pausers = false, otherPausers(st, time.Now())
	return m.save(st)
}

// errNoLink says that an attachment's link is neither pinned where this
// command sees the pins nor in the kernel under its ID.
var errNoLink = errors.New("no such XDP link")

// openLink opens l's link: by its pin, or, where this command sees
// another bpffs (see Attachment.Link), by its ID if that is still an
// XDP link of l's interface running one of our programs. pinned says
// which.
func (m *Manager) openLink(l Attachment) (lk link.Link, pinned bool, err error) {
	if lk, err := link.LoadPinnedLink(m.linkPath(l.Ifindex), nil); err == nil {
		return lk, true, nil
	}
	if l.Link == 0 {
		return nil, false, errNoLink
	}
	lk, err = link.NewFromID(link.ID(l.Link))
	if err != nil {
		return nil, false, errNoLink
	}
	if !ourXDPLink(lk, l.Ifindex) {
		lk.Close()
		return nil, false, errNoLink
	}
	return lk, false, nil
}

// ourXDPLink says whether lk is an XDP link on ifindex whose program is
// one of ours (a link ID is reused only after its link is gone).
func ourXDPLink(lk link.Link, ifindex uint32) bool {
	info, err := lk.Info()
	if err != nil || info.Type != link.XDPType || info.XDP() == nil || info.XDP().Ifindex != ifindex {
		return false
	}
	prog, err := ebpf.NewProgramFromID(info.Program)
	if err != nil {
		return false
	}
	defer prog.Close()
	pi, err := prog.Info()
	return err == nil && strings.HasPrefix(pi.Name, "xdptables")
}

// releaseLink takes l's program off its interface: it unpins a pinned
// link (the pin was its last reference) or detaches one found by ID.
func (m *Manager) releaseLink(l Attachment) error {
	lk, pinned, err := m.openLink(l)
	if err != nil {
		return err
	}
	defer lk.Close()
	if pinned {
		return lk.Unpin()
	}
	return lk.Detach()
}
