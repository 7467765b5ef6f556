package xdp

import (
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/ipset"
)

// A mirrored set whose table is over budget because of its /32 entries
// (a blocklist of a million addresses: a /32 alone in its /16 takes two
// chunks, 2 KiB) keeps those that match in a hash after the table,
// where it would otherwise fall back to its LPM trie (a helper call
// that walks ~20 nodes): the program looks the address up in the hash
// first, and in the table of the other entries (shorter prefixes,
// nomatch entries, 0.0.0.0) when it is not there. A /32 is the longest
// prefix, so a hit is the answer.
//
// The hash has 2^bits buckets of hashWays addresses (one 32-byte read
// each); an address is in one of its two buckets (hashBuckets), the
// empty slot is 0. It is built at most half full, and kept so by
// ipset add/del in place: an add takes a free slot of the less full
// bucket, a del clears its slot; when both buckets are full, the set's
// map is rebuilt (errDirFull).
//
// The map (named hashSetName) holds the table as setLayout lays it out,
// then the hash, then bits.
const (
	hashWays    = 8
	hashK1      = 0x9e3779b1
	hashK2      = 0x85ebca77
	hashSetName = "xdpt_sethash"
	// maxHashBits bounds the hash at 2^22 buckets (128 MiB): eight
	// million addresses, half full
	maxHashBits = 22
)

// hashBuckets are the indexes (from the hash's start) of the two
// buckets of host-order address a in a hash of 2^bits buckets
// (bpf/classifier.c hash_has).
func hashBuckets(a uint32, bits uint32) (uint32, uint32) {
	return (a * hashK1) >> (32 - bits) * hashWays, (a * hashK2) >> (32 - bits) * hashWays
}

// hashLayout says where the hash of a set's table is: from base, 2^bits
// buckets; bits 0: the table has none.
type hashLayout struct{ base, bits uint32 }

// splitHashed splits a set's table input ps (dirSetPrefixes) into the
// addresses of the /32 entries that match, but 0.0.0.0 (the empty
// slot), and the other entries.
func splitHashed(ps []PrefixClass) (hashed []uint32, rest []PrefixClass) {
	rest = make([]PrefixClass, 0, len(ps))
	for _, p := range ps {
		if a := addr4(p); p.Prefix.Bits() == 32 && p.Class == 1 && a != 0 {
			hashed = append(hashed, a)
			continue
		}
		rest = append(rest, p)
	}
	return hashed, rest
}

// buildHash lays out the hash of addrs, at most half full: its entries
// and bits (nil when it would need more than maxHashBits).
func buildHash(addrs []uint32) ([]uint32, uint32) {
	bits := uint32(1)
	for hashWays<<bits < 2*len(addrs) {
		bits++
	}
next:
	for ; bits <= maxHashBits; bits++ {
		h := make([]uint32, hashWays<<bits)
		for _, a := range addrs {
			if hashInsert(sliceHash(h), 0, bits, a) != nil {
				continue next
			}
		}
		return h, bits
	}
	return nil, 0
}

// sliceHash is a hash under construction, as dirArray.
type sliceHash []uint32

func (s sliceHash) get(i uint32) (uint32, error) { return s[i], nil }
func (s sliceHash) put(i uint32, vs []uint32) error {
	copy(s[i:], vs)
	return nil
}
func (s sliceHash) size() uint32 { return uint32(len(s)) }

// hashInsert puts address a (not 0) in a free slot of the less full of
// its buckets in the hash at base of 2^bits buckets in a, unless it is
// there; errDirFull when both are full.
func hashInsert(a dirArray, base, bits, addr uint32) error {
	b1, b2 := hashBuckets(addr, bits)
	free := [2]int{}
	slot := [2]uint32{}
	for k, b := range []uint32{b1, b2} {
		for j := uint32(0); j < hashWays; j++ {
			v, err := a.get(base + b + j)
			if err != nil {
				return err
			}
			if v == addr {
				return nil
			}
			if v == 0 {
				if free[k] == 0 {
					slot[k] = base + b + j
				}
				free[k]++
			}
		}
	}
	switch {
	case free[0] == 0 && free[1] == 0:
		return errDirFull
	case free[0] >= free[1]:
		return a.put(slot[0], []uint32{addr})
	default:
		return a.put(slot[1], []uint32{addr})
	}
}

// hashRemove clears address a's slot in the hash, if it is there.
func hashRemove(a dirArray, base, bits, addr uint32) error {
	b1, b2 := hashBuckets(addr, bits)
	for _, b := range []uint32{b1, b2} {
		for j := uint32(0); j < hashWays; j++ {
			v, err := a.get(base + b + j)
			if err != nil {
				return err
			}
			if v == addr {
				return a.put(base+b+j, []uint32{0})
			}
		}
	}
	return nil
}

// dirView is the first n entries of a, as dirSetUpdate sees a table.
type dirView struct {
	a dirArray
	n uint32
}

func (v dirView) get(i uint32) (uint32, error) {
	if i >= v.n {
		return 0, fmt.Errorf("xdp: table entry %d out of %d", i, v.n)
	}
	return v.a.get(i)
}

func (v dirView) put(i uint32, vs []uint32) error {
	if uint64(i)+uint64(len(vs)) > uint64(v.n) {
		return fmt.Errorf("xdp: table entries %d+%d out of %d", i, len(vs), v.n)
	}
	return v.a.put(i, vs)
}

func (v dirView) size() uint32 { return v.n }

// setTableUpdate is dirSetUpdate for a set's table with a hash (h.bits
// > 0) or without: prefix p's entry changed, ps are the set's prefixes
// after the change. A packet sees the set before or after the change:
// a /32 that now matches goes into the hash before the table loses its
// entry; otherwise the table changes first, then the hash loses p.
func setTableUpdate(a dirArray, h hashLayout, ps []PrefixClass, p netip.Prefix) error {
	if h.bits == 0 {
		return dirSetUpdate(a, ps, p)
	}
	hashed, rest := splitHashed(ps)
	dir := dirView{a: a, n: h.base}
	addr := addr4(PrefixClass{Prefix: p})
	inHash := false
	if p.Bits() == 32 {
		for _, x := range hashed {
			inHash = inHash || x == addr
		}
	}
	if inHash {
		if err := hashInsert(a, h.base, h.bits, addr); err != nil {
			return err
		}
		return dirSetUpdate(dir, rest, p)
	}
	if err := dirSetUpdate(dir, rest, p); err != nil {
		return err
	}
	if p.Bits() == 32 && addr != 0 {
		return hashRemove(a, h.base, h.bits, addr)
	}
	return nil
}

// newHashSetMap creates the map holding set s as a table of its entries
// but the /32s that match, and a hash of those (bpf/classifier.c
// hash_has); nil when the table is still over budget or the hash over
// maxHashBits.
func newHashSetMap(s *ipset.Set) (*ebpf.Map, error) {
	hashed, rest := splitHashed(dirSetPrefixes(s))
	if len(hashed) == 0 {
		return nil, nil
	}
	t := buildDir4(rest, dirBudget)
	if t == nil {
		return nil, nil
	}
	h, bits := buildHash(hashed)
	if h == nil {
		return nil, nil
	}
	room := t.nchunks() + dirSetHeadroom(t.nchunks())
	vals := t.setLayout(room)
	size := len(vals) + len(h) + 1
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: hashSetName, Type: ebpf.Array, KeySize: 4,
		ValueSize: uint32(4 * size), MaxEntries: 1, Flags: unix.BPF_F_MMAPABLE})
	if err != nil {
		return nil, fmt.Errorf("xdp: creating the map of set %s: %w", s.Name, err)
	}
	a, err := mapTable(m)
	if err != nil {
		m.Close()
		return nil, err
	}
	defer a.close()
	// the chunks not yet in use stay zero
	n := dirSetBase*256 + len(t.chunks)
	for _, w := range []struct {
		at uint32
		vs []uint32
	}{{0, vals[:n]}, {uint32(len(vals) - 1), vals[len(vals)-1:]}, {uint32(len(vals)), h}, {uint32(size - 1), []uint32{bits}}} {
		if err := a.put(w.at, w.vs); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// setHashOf says where the hash of set map m (a table) is; bits 0 when
// it has none.
func setHashOf(m *ebpf.Map) (hashLayout, error) {
	info, err := m.Info()
	if err != nil {
		return hashLayout{}, fmt.Errorf("xdp: reading %s: %w", m, err)
	}
	if info.Name != hashSetName {
		return hashLayout{}, nil
	}
	a, err := mapTable(m)
	if err != nil {
		return hashLayout{}, err
	}
	defer a.close()
	bits, err := a.get(a.size() - 1)
	if err != nil {
		return hashLayout{}, err
	}
	if bits == 0 || bits > maxHashBits || hashWays<<bits+1 > a.size() {
		return hashLayout{}, fmt.Errorf("xdp: %s: not a set's table with a hash", m)
	}
	return hashLayout{base: a.size() - 1 - hashWays<<bits, bits: bits}, nil
}
