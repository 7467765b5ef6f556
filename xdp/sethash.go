package xdp

import (
	"fmt"
	"math/bits"
	"net/netip"
	"sort"

	"github.com/cilium/ebpf"

	"github.com/xdptables/xdptables/ipset"
)

// A mirrored set whose table is over budget (a blocklist of a million
// addresses: a /32 alone in its /16 takes two chunks, 2 KiB; 50 000
// networks of /17-/24 in as many /16s take a chunk each) is split by
// prefix length instead of falling back to its LPM trie (a helper call
// that walks ~20 nodes): its /32 entries that match go in a hash, its
// entries of /24 or shorter in a bitmap of the 2^24 /24s (2 MiB), and
// the others (/25-/31, nomatch /32s, 0.0.0.0/32) in the table, whose
// addresses no such prefix holds have the class setBitmap: look at the
// bitmap. The program looks the address up in the hash first (a /32 is
// the longest prefix, so a hit is the answer), then in the table, then,
// for setBitmap, in the bitmap.
//
// The hash has 2^bits buckets of hashWays addresses (one 32-byte read
// each); an address is in one of its two buckets (hashBuckets), the
// empty slot is 0. It is built at most half full, and kept so by
// ipset add/del in place: an add takes a free slot of the less full
// bucket, a del clears its slot; when both buckets are full, the set's
// map is rebuilt (errDirFull).
//
// The map (named hashSetName) holds the table as setLayout lays it out,
// then the bitmap (bitmapWords words: bit b%32 of word b/32 for the /24
// b), then the hash, then bits.
const (
	hashWays    = 8
	hashK1      = 0x9e3779b1
	hashK2      = 0x85ebca77
	hashSetName = "xdpt_setsplit"
	// maxHashBits bounds the hash at 2^22 buckets (128 MiB): eight
	// million addresses, half full
	maxHashBits = 22
	bitmapWords = 1 << 24 / 32
	// setBitmap is the class of the table's addresses that the bitmap
	// decides (bpf/classifier.c SET_BITMAP)
	setBitmap = 2
)

// hashBuckets are the indexes (from the hash's start) of the two
// buckets of host-order address a in a hash of 2^bits buckets
// (bpf/classifier.c set_value).
func hashBuckets(a uint32, bits uint32) (uint32, uint32) {
	return (a * hashK1) >> (32 - bits) * hashWays, (a * hashK2) >> (32 - bits) * hashWays
}

// hashLayout says where the bitmap and the hash of a set's table are:
// the bitmap from bitmap, the hash from base, 2^bits buckets; bits 0:
// the table has neither.
type hashLayout struct{ bitmap, base, bits uint32 }

// splitHashed splits a set's table input ps (dirSetPrefixes) into the
// addresses of the /32 entries that match, but 0.0.0.0 (the empty
// slot); the entries of /24 or shorter, for the bitmap (with ps' /0);
// and the others, for the table (with a /0 of class setBitmap).
func splitHashed(ps []PrefixClass) (hashed []uint32, short, long []PrefixClass) {
	long = []PrefixClass{{Prefix: netip.PrefixFrom(netip.IPv4Unspecified(), 0), Class: setBitmap}}
	for _, p := range ps {
		switch a, bits := addr4(p), p.Prefix.Bits(); {
		case bits == 32 && p.Class == 1 && a != 0:
			hashed = append(hashed, a)
		case bits <= 24:
			short = append(short, p)
		default:
			long = append(long, p)
		}
	}
	return hashed, short, long
}

// bitmapOf sets, in bm (the bitmap from its word at), the bits of the
// /24s from /24 number lo, n of them (a power of 2, lo a multiple of
// it), to the longest-prefix answer of ps (prefixes of /24 or shorter,
// with a /0) for each.
func bitmapOf(bm dirArray, at uint32, ps []PrefixClass, lo, n uint32) error {
	region := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(lo >> 16), byte(lo >> 8), byte(lo), 0}), 24-bits.TrailingZeros32(n))
	sub := make([]PrefixClass, 0, len(ps))
	for _, q := range ps {
		if q.Prefix.Overlaps(region) {
			sub = append(sub, q)
		}
	}
	// shorter prefixes first: a longer one paints over them
	sort.SliceStable(sub, func(i, j int) bool { return sub[i].Prefix.Bits() < sub[j].Prefix.Bits() })
	w0, w1 := lo/32, (lo+n+31)/32
	words := make([]uint32, w1-w0)
	for i := range words {
		v, err := bm.get(at + w0 + uint32(i))
		if err != nil {
			return err
		}
		words[i] = v
	}
	old := append([]uint32(nil), words...)
	for _, q := range sub {
		// q's /24s within the region
		first, end := addr4(q)>>8, addr4(q)>>8+1<<(24-q.Prefix.Bits())
		first, end = max(first, lo), min(end, lo+n)
		for k := first; k < end; {
			w, b := k/32-w0, k%32
			if b == 0 && k+32 <= end {
				words[w] = -(q.Class & 1) // all 32 bits
				k += 32
				continue
			}
			words[w] = words[w]&^(1<<b) | (q.Class&1)<<b
			k++
		}
	}
	// word by word: a packet sees each /24 before or after
	for i, v := range words {
		if v != old[i] {
			if err := bm.put(at+w0+uint32(i), []uint32{v}); err != nil {
				return err
			}
		}
	}
	return nil
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

// setTableUpdate is dirSetUpdate for a set's table split with a bitmap
// and a hash (h.bits > 0) or not: prefix p's entry changed, ps are the
// set's prefixes after the change. A packet sees the set before or
// after the change: a /32 that now matches goes into the hash before
// the table loses its entry; otherwise the table or bitmap changes
// first, then the hash loses p.
func setTableUpdate(a dirArray, h hashLayout, ps []PrefixClass, p netip.Prefix) error {
	if h.bits == 0 {
		return dirSetUpdate(a, ps, p)
	}
	hashed, short, long := splitHashed(ps)
	dir := dirView{a: a, n: h.bitmap}
	addr := addr4(PrefixClass{Prefix: p})
	inHash := false
	if p.Bits() == 32 {
		for _, x := range hashed {
			inHash = inHash || x == addr
		}
	}
	update := func() error {
		if p.Bits() <= 24 {
			return bitmapOf(a, h.bitmap, short, addr>>8, 1<<(24-p.Bits()))
		}
		return dirSetUpdate(dir, long, p)
	}
	if inHash {
		if err := hashInsert(a, h.base, h.bits, addr); err != nil {
			return err
		}
		return update()
	}
	if err := update(); err != nil {
		return err
	}
	if p.Bits() == 32 && addr != 0 {
		return hashRemove(a, h.base, h.bits, addr)
	}
	return nil
}

// newHashSetMap creates the map holding set s split: a table of its
// /25-/31 and other entries, the bitmap of its entries of /24 or
// shorter and the hash of its /32s that match (bpf/classifier.c
// set_value); nil when the table is still over budget or the hash over
// maxHashBits.
func newHashSetMap(s *ipset.Set) (*ebpf.Map, error) {
	if !splitSets {
		return nil, nil
	}
	hashed, short, long := splitHashed(dirSetPrefixes(s))
	t := buildDir4(long, dirBudget)
	if t == nil {
		return nil, nil
	}
	h, hbits := buildHash(hashed)
	if h == nil {
		return nil, nil
	}
	room := t.nchunks() + dirSetHeadroom(t.nchunks())
	vals := t.setLayout(room)
	size := len(vals) + bitmapWords + len(h) + 1
	m, a, err := newTableMap(hashSetName, s.Name, size)
	if err != nil {
		return nil, err
	}
	defer a.close()
	// the chunks not yet in use stay zero
	n := dirSetBase*256 + len(t.chunks)
	for _, w := range []struct {
		at uint32
		vs []uint32
	}{{0, vals[:n]}, {uint32(len(vals) - 1), vals[len(vals)-1:]}, {uint32(len(vals) + bitmapWords), h}, {uint32(size - 1), []uint32{hbits}}} {
		if err := a.put(w.at, w.vs); err != nil {
			m.Close()
			return nil, err
		}
	}
	if err := bitmapOf(a, uint32(len(vals)), short, 0, 1<<24); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// splitSets says whether a set over budget is split (tests turn it off
// to exercise the trie).
var splitSets = true

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
	if bits == 0 || bits > maxHashBits || hashWays<<bits+bitmapWords+1 > a.size() {
		return hashLayout{}, fmt.Errorf("xdp: %s: not a set's table split with a hash", m)
	}
	base := a.size() - 1 - hashWays<<bits
	return hashLayout{bitmap: base - bitmapWords, base: base, bits: bits}, nil
}
