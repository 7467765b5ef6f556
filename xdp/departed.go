package xdp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// CollectDeparted removes the state and pins that namespaces deleted with
// XDP still attached left behind. bpffs is shared by all namespaces, so
// a pinned link keeps its program, and with it every set map and
// counter, after the namespace and its interfaces are gone; the kernel
// only marks such a link defunct (its interface index reads 0). A
// namespace whose recorded links are all defunct or missing has nothing
// attached any more, gone or not: its next update would reset it just
// the same. Namespaces busy with a command (their lock is held) are left
// for later. It returns how many it removed.
func (m *Manager) CollectDeparted() int {
	root := filepath.Dir(m.pinDir)
	own := filepath.Base(m.pinDir)
	ents, err := os.ReadDir(StateDir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		id := e.Name()
		if _, err := strconv.ParseUint(id, 10, 64); err != nil || id == own || !e.IsDir() {
			continue
		}
		if collect(filepath.Join(StateDir, id), filepath.Join(root, id)) {
			n++
		}
	}
	return n
}

// collect removes one namespace's state dir and pin dir if nothing of it
// is attached any more.
func collect(stateDir, pinDir string) bool {
	f, err := os.OpenFile(filepath.Join(stateDir, "lock"), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join(stateDir, "state.json"))
	if err != nil {
		return false
	}
	var st State
	if json.Unmarshal(b, &st) != nil {
		return false
	}
	_, dirErr := os.Stat(pinDir)
	for _, l := range st.Links {
		lk, err := link.LoadPinnedLink(linkPin(pinDir, l.Ifindex), nil)
		if err != nil {
			// Not pinned where this command sees the pins: the pins
			// may be in another bpffs (another mount namespace's),
			// so the link is looked for by its ID; a state of an
			// earlier build has none, and is kept unless its pin
			// directory is here without the link's pin.
			if l.Link != 0 {
				if lk, err = link.NewFromID(link.ID(l.Link)); err == nil && !ourXDPLink(lk, l.Ifindex) {
					lk.Close()
					err = errNoLink
				}
			} else if dirErr != nil {
				return false
			}
			if err != nil {
				continue // gone: nothing holds the program
			}
		}
		info, err := lk.Info()
		attached := err != nil || info.XDP() == nil || info.XDP().Ifindex != 0
		lk.Close()
		if attached {
			return false
		}
	}
	if os.RemoveAll(pinDir) != nil {
		return false
	}
	return os.RemoveAll(stateDir) == nil
}
