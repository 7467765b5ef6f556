package xdp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
)

func famIndex(f compat.Family) int {
	if f == compat.IPv6 {
		return 1
	}
	return 0
}

// setSlots assigns the -m set lookups of the run to the program's set
// slots: one per set and packet-field combination.
type setSlots struct {
	src  SetSource
	list []SetLookup
}

// lookup returns the slot of -m set match m in a rule of family fam, or
// says why XDP cannot evaluate it exactly.
func (ss *setSlots) lookup(fam compat.Family, m *compat.SetMatch) (int, error) {
	if ss.src == nil {
		return 0, fmt.Errorf("-m set is not evaluated in XDP")
	}
	if m.Packets.Op != "" || m.Bytes.Op != "" {
		return 0, fmt.Errorf("-m set with counter tests")
	}
	s := ss.src(m.SetName)
	if s == nil {
		return 0, fmt.Errorf("set %s not found", m.SetName)
	}
	if m.ReturnNomatch && s.Type.Net() {
		// (types without nomatch entries ignore the flag: a plain lookup)
		return 0, fmt.Errorf("-m set with --return-nomatch on a type with nomatch entries")
	}
	if err := Mirrorable(s); err != nil {
		return 0, err
	}
	if (s.Family == ipset.Inet6) != (fam == compat.IPv6) {
		return 0, fmt.Errorf("set %s is of the other family", s.Name)
	}
	dims := len(s.Type.Dims)
	if len(m.Dirs) < dims {
		return 0, fmt.Errorf("-m set %s with fewer directions than dimensions", s.Name)
	}
	var cfg uint32
	if m.Dirs[0] == "dst" {
		cfg |= setAddrDst
	}
	if dims == 2 {
		if m.Dirs[1] == "dst" {
			cfg |= setPortDst
		} else {
			cfg |= setPortSrc
		}
	}
	if s.Family == ipset.Inet6 {
		cfg |= setV6
	}
	for i, l := range ss.list {
		if l.Set == s.Name && l.Cfg == cfg {
			return i, nil
		}
	}
	if len(ss.list) == MaxSets {
		return 0, fmt.Errorf("more than %d set lookups in XDP", MaxSets)
	}
	ss.list = append(ss.list, SetLookup{Set: s.Name, Cfg: cfg})
	return len(ss.list) - 1, nil
}

// Mirrorable says whether XDP can hold set s exactly: hash:ip, hash:net,
// hash:ip,port and hash:net,port without per-element counters, with
// ports of TCP, UDP, SCTP or UDPLite only.
func Mirrorable(s *ipset.Set) error {
	switch s.Type.Name {
	case "hash:ip", "hash:net", "hash:ip,port", "hash:net,port":
	default:
		return fmt.Errorf("set %s of type %s is not mirrored in XDP", s.Name, s.Type.Name)
	}
	if s.AddrMask() != nil {
		// (entries a range added are kept unmasked, which a prefix
		// of the masked address would match)
		return fmt.Errorf("set %s masks addresses with a bitmask", s.Name)
	}
	if s.Counters {
		return fmt.Errorf("set %s has element counters", s.Name)
	}
	if len(s.Type.Dims) == 2 {
		for _, en := range s.Entries {
			switch en.Elem[1].Proto {
			case 6, 17, 132, 136:
			default:
				return fmt.Errorf("set %s has entries of protocol %d", s.Name, en.Elem[1].Proto)
			}
		}
	}
	return nil
}

// setKey is the LPM-trie key of bpf/classifier.c struct setkey.
type setKey [4 + 3 + 16]byte

// setVal is struct setval.
type setVal [16]byte

// readAt is the time s's entries were listed at (ipset.Set.ReadAt),
// or now when that is not known: expiries count from it.
func readAt(s *ipset.Set) time.Duration {
	if s.ReadAt != 0 {
		return s.ReadAt
	}
	return ipset.Monotime()
}

// expShift is the unit of a per-length table's expiries, 2^expShift ns
// (bpf/classifier.c EXP_SHIFT): 31 bits of them span 18 years.
const expShift = 28

// expiryMargin is how much earlier than the kernel's element the mirror
// of an entry with a timeout stops matching (its packets then go to
// nftables, which still has the element): the kernel lists whole
// seconds left, 1 in the last second (ipset.RemainingTimeout), so an
// element listed with r left expires within (r-1, r+1) s of the
// listing; the program's coarse clock lags by up to a tick (τ, 10 ms at
// HZ=100); tables round the expiry down to 2^expShift ns (U, 0.27 s).
// With 8 units (2.15 s) taken off, the mirror stops matching at most
// 1 + 2.15 + U = 3.42 s and at least 2.15 - 1 - τ = 1.14 s before the
// element expires, since expiries count from when the kernel was asked
// for the listing (ipset.Set.ReadAt): the time the dump and the mirror's
// build take only makes them earlier. A set whose listing time is not
// known counts from the mirror's write, never late while the listing
// took less than 1.1 s.
const expiryMargin = 8 << expShift

// expiry is when the mirror of entry en of a set with timeouts stops
// matching, in ns of CLOCK_MONOTONIC, the entry read at now: 0 for an
// entry without a timeout (timeout 0: RemainingTimeout never lists 0
// for one that has one).
func expiry(en *ipset.Entry, now time.Duration) uint64 {
	if en.Timeout == 0 {
		return 0
	}
	return uint64(max(now+time.Duration(en.Timeout)*time.Second-expiryMargin, 1))
}

// entryKV is the map key and value of set entry en of s.
func entryKV(s *ipset.Set, en *ipset.Entry, now time.Duration) (setKey, setVal) {
	var k setKey
	var v setVal
	pfx := entryPrefix(s, en)
	bits := pfx.Bits()
	if len(s.Type.Dims) == 2 {
		k[4] = en.Elem[1].Proto
		binary.BigEndian.PutUint16(k[5:], en.Elem[1].Port)
	}
	copy(k[7:], pfx.Addr().AsSlice())
	binary.NativeEndian.PutUint32(k[:4], uint32(24+bits))
	if s.HasTimeout {
		binary.NativeEndian.PutUint64(v[:8], expiry(en, now))
	}
	if en.Nomatch {
		binary.NativeEndian.PutUint32(v[8:], 1)
	}
	return k, v
}

// entryPrefix is the addresses set entry en of s holds.
func entryPrefix(s *ipset.Set, en *ipset.Entry) netip.Prefix {
	a := en.Elem[0].Addr
	bits := a.BitLen()
	if s.Type.Dims[0] == ipset.DimNet {
		bits = en.Elem[0].Bits
	} else if s.Netmask > 0 && s.Netmask < bits {
		bits = s.Netmask
	}
	pfx, _ := a.Prefix(bits)
	return pfx
}

// dirSet says whether set s is mirrored as a DIR-16-8-8 table (dir.go):
// IPv4 address-only sets without timeouts.
func dirSet(s *ipset.Set) bool {
	return s.Family == ipset.Inet && len(s.Type.Dims) == 1 && !s.HasTimeout
}

// dirSetPrefixes is the table's input for set s: each entry's prefix,
// class 1 (in the set) or 0 (a nomatch entry).
func dirSetPrefixes(s *ipset.Set) []PrefixClass {
	ps := make([]PrefixClass, 0, len(s.Entries)+1)
	ps = append(ps, PrefixClass{Prefix: netip.PrefixFrom(netip.IPv4Unspecified(), 0)})
	for _, en := range s.Entries {
		p := entryPrefix(s, en)
		if !p.Addr().Is4() || p.Bits() == 0 {
			continue
		}
		c := uint32(1)
		if en.Nomatch {
			c = 0
		}
		ps = append(ps, PrefixClass{Prefix: p, Class: c})
	}
	return ps
}

// newDirSetMap creates the map holding set s as a table, filled: an
// array map of one memory-mappable value, the table (the program reads
// it in place: bpf/classifier.c set0_tab); nil when the table is over
// budget.
func newDirSetMap(s *ipset.Set) (*ebpf.Map, error) {
	t := buildDir4(dirSetPrefixes(s), dirBudget)
	if t == nil {
		return nil, nil
	}
	room := t.nchunks() + dirSetHeadroom(t.nchunks())
	vals := t.setLayout(room)
	m, a, err := newTableMap("xdpt_setdir", s.Name, len(vals))
	if err != nil {
		return nil, err
	}
	defer a.close()
	// the chunks not yet in use stay zero
	n := dirSetBase*256 + len(t.chunks)
	if err := a.put(0, vals[:n]); err != nil {
		m.Close()
		return nil, err
	}
	if err := a.put(uint32(len(vals)-1), vals[len(vals)-1:]); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// newTableMap creates the empty table of n 32-bit entries of set name,
// an array map (named mapName) of one memory-mappable value, mapped.
func newTableMap(mapName, name string, n int) (*ebpf.Map, *tableArray, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: mapName, Type: ebpf.Array, KeySize: 4,
		ValueSize: uint32(4 * n), MaxEntries: 1, Flags: unix.BPF_F_MMAPABLE})
	if err != nil {
		return nil, nil, fmt.Errorf("xdp: creating the map of set %s: %w", name, err)
	}
	a, err := mapTable(m)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, a, nil
}

// tableArray is a set's table (an array map of one value) mapped into
// memory, as dirSetUpdate sees it. Single entries are read and written
// with atomic 32-bit operations: packets read the table meanwhile.
type tableArray struct{ mem []byte }

// mapTable maps the value of m, a set's table.
func mapTable(m *ebpf.Map) (*tableArray, error) {
	if m.Type() != ebpf.Array || m.MaxEntries() != 1 || m.ValueSize()%4 != 0 {
		return nil, fmt.Errorf("xdp: %s is not a set's table", m)
	}
	mem, err := unix.Mmap(m.FD(), 0, int(m.ValueSize()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("xdp: mapping %s: %w", m, err)
	}
	return &tableArray{mem: mem}, nil
}

func (a *tableArray) close() { unix.Munmap(a.mem) }

func (a *tableArray) entry(i uint32) *uint32 {
	return (*uint32)(unsafe.Pointer(&a.mem[4*i]))
}

func (a *tableArray) get(i uint32) (uint32, error) {
	if i >= a.size() {
		return 0, fmt.Errorf("xdp: table entry %d out of %d", i, a.size())
	}
	return atomic.LoadUint32(a.entry(i)), nil
}

func (a *tableArray) put(i uint32, vs []uint32) error {
	if uint64(i)+uint64(len(vs)) > uint64(a.size()) {
		return fmt.Errorf("xdp: table entries %d+%d out of %d", i, len(vs), a.size())
	}
	for k, v := range vs {
		atomic.StoreUint32(a.entry(i+uint32(k)), v)
	}
	return nil
}

func (a *tableArray) size() uint32 { return uint32(len(a.mem) / 4) }

// setContents is the map contents of s.
func setContents(s *ipset.Set) ([]setKey, []setVal) {
	now := readAt(s)
	ks := make([]setKey, len(s.Entries))
	vs := make([]setVal, len(s.Entries))
	for i, en := range s.Entries {
		ks[i], vs[i] = entryKV(s, en, now)
	}
	return ks, vs
}

// SetChanged carries an ipset command's change of set name (before:
// old, after: cur; nil when absent) to its mirror. It returns false
// when the mirror cannot be updated in place in one step (more than one
// element changed, the set was replaced or no longer fits): the caller
// then rebuilds the whole generation with Update, which swaps new maps
// in atomically. Sets that are not mirrored need nothing.
func (m *Manager) SetChanged(name string, old, cur *ipset.Set) (bool, error) {
	st, err := m.State()
	if err != nil {
		return false, err
	}
	mirrored := false
	for _, n := range st.Sets {
		mirrored = mirrored || n == name
	}
	if !mirrored || (old == nil && cur == nil) {
		// not mirrored, or not part of this command
		return true, nil
	}
	if old == nil || cur == nil || old.Header() != cur.Header() || Mirrorable(cur) != nil {
		return false, nil
	}
	// ops change what the set holds (one at most: more is rebuilt, so
	// that packets see them all at once); renew, the expiry of entries
	// whose timeout changed (re-added with another timeout, or their
	// seconds left counted down between the two listings): each is
	// written again, early or late, from the new listing.
	var ops, renew []setOp
	was := map[string]*ipset.Entry{}
	for _, en := range old.Entries {
		was[old.Key(en.Elem)] = en
	}
	for _, en := range cur.Entries {
		k := cur.Key(en.Elem)
		o := was[k]
		delete(was, k)
		switch {
		case o == nil || o.Nomatch != en.Nomatch:
			ops = append(ops, setOp{en: en})
		case en.Timeout != o.Timeout:
			renew = append(renew, setOp{en: en})
		}
	}
	for _, en := range was {
		ops = append(ops, setOp{del: true, en: en})
	}
	if len(ops)+len(renew) == 0 {
		return true, nil
	}
	if len(ops) > 1 || len(renew) > maxRenew {
		return false, nil
	}
	ops = append(ops, renew...)
	sm, err := ebpf.LoadPinnedMap(m.setPath(name), nil)
	if err != nil {
		return false, nil
	}
	defer sm.Close()
	now := readAt(cur)
	if sm.Type() == ebpf.Array {
		a, err := mapTable(sm)
		if err != nil {
			return false, nil
		}
		defer a.close()
		if l, err := lenSetOf(sm, a); err != nil || l.bits > 0 {
			// a per-length table: in place, unless a length is new
			if err != nil || !lenSetUpdate(a, l, cur, now, ops) {
				return false, nil
			}
			return true, nil
		}
		// a table: the part that the entry's addresses lie in
		if !dirSet(cur) || len(ops) > 1 {
			return false, nil
		}
		p := entryPrefix(cur, ops[0].en)
		h, err := setHashOf(sm)
		if err != nil {
			return false, nil
		}
		if err := setTableUpdate(a, h, dirSetPrefixes(cur), p); err != nil {
			return false, nil
		}
		return true, nil
	}
	for _, o := range ops {
		k, v := entryKV(cur, o.en, now)
		if o.del {
			err = sm.Delete(k)
		} else {
			err = sm.Put(k, v)
		}
		if err != nil {
			return false, nil
		}
	}
	return true, nil
}

// setOp is a change of a set's mirror: entry en added or changed, or
// deleted.
type setOp struct {
	del bool
	en  *ipset.Entry
}

// maxRenew bounds the entries whose expiry SetChanged writes in place.
const maxRenew = 4096
