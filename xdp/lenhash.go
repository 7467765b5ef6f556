package xdp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/xdptables/xdptables/ipset"
)

// Per-prefix-length hash tables (bpf/classifier.c htab_find): the
// prefixes of an IPv6 address field or of a mirrored set, each under
// its address masked to its length and a key word (the length; for sets
// with ports the protocol and port above it), in one open hash table.
// The program probes the lengths in use, longest first, masking the
// packet's address to each: the first hit is the longest stored prefix
// holding the address, which is what a trie lookup gives, at a cost
// that depends on the number of lengths, not of entries. With more than
// maxLens lengths the trie stays.
//
// The table has 2^bits buckets of htWays entries of three words: the
// masked address as two native-order words of its bytes (an IPv4
// address in the low half of the first), then the key word in the low
// half and the value in the high half of the third (key word 0: an
// empty entry). A key is in one of its two buckets (htBuckets); the
// table is built at most half full, each key in the less full of them.
const (
	maxLens   = 8
	htWays    = 4
	htEnt     = 3
	htBucket  = htWays * htEnt
	htMix1    = 0x9e3779b97f4a7c15
	htMix2    = 0xbf58476d1ce4e5b9
	htMix3    = 0x94d049bb133111eb
	maxHTBits = 21 // 2 Mi buckets, 192 MiB: 4 Mi entries at half full
)

// hentry is one entry of a per-length table.
type hentry struct {
	a0, a1  uint64
	kw, val uint32
}

// prefixEntry is the entry of prefix p (masked) with key word kw.
func prefixEntry(p netip.Prefix, kw, val uint32) hentry {
	var b [16]byte
	copy(b[:], p.Masked().Addr().AsSlice())
	return hentry{a0: binary.NativeEndian.Uint64(b[:8]), a1: binary.NativeEndian.Uint64(b[8:]), kw: kw, val: val}
}

// htBuckets are the word indexes (from the table's start) of the two
// buckets of key (a0, a1, kw) in a table of 2^bits buckets
// (bpf/classifier.c htab_find).
func htBuckets(a0, a1 uint64, kw uint32, bits uint32) (uint64, uint64) {
	h := a0*htMix1 + a1
	h ^= h >> 32
	h = (h + uint64(kw)) * htMix2
	h ^= h >> 29
	sh := (64 - bits) & 63
	return h >> sh * htBucket, (h * htMix3) >> sh * htBucket
}

// wordArray is a table of 64-bit words being built or updated in place.
type wordArray interface {
	get64(i uint64) (uint64, error)
	put64(i uint64, v uint64) error
}

// sliceWords is a table under construction.
type sliceWords []uint64

func (s sliceWords) get64(i uint64) (uint64, error) { return s[i], nil }
func (s sliceWords) put64(i uint64, v uint64) error {
	s[i] = v
	return nil
}

// htPut puts e into the table at word base of 2^bits buckets of a: over
// the entry of the same key, or in a free entry of the less full of its
// buckets; errDirFull when both are full. The key word is written last:
// a packet sees the entry whole or not at all.
func htPut(a wordArray, base uint64, bits uint32, e hentry) error {
	b1, b2 := htBuckets(e.a0, e.a1, e.kw, bits)
	free := [2]int{}
	slot := [2]uint64{}
	for k, b := range []uint64{b1, b2} {
		for j := uint64(0); j < htWays; j++ {
			at := base + b + j*htEnt
			w2, err := a.get64(at + 2)
			if err != nil {
				return err
			}
			if uint32(w2) == 0 {
				if free[k] == 0 {
					slot[k] = at
				}
				free[k]++
				continue
			}
			if uint32(w2) != e.kw {
				continue
			}
			w0, err := a.get64(at)
			if err != nil {
				return err
			}
			w1, err := a.get64(at + 1)
			if err != nil {
				return err
			}
			if w0 == e.a0 && w1 == e.a1 {
				return a.put64(at+2, uint64(e.val)<<32|uint64(e.kw))
			}
		}
	}
	at := slot[0]
	switch {
	case free[0] == 0 && free[1] == 0:
		return errDirFull
	case free[0] < free[1]:
		at = slot[1]
	}
	for i, w := range []uint64{e.a0, e.a1, uint64(e.val)<<32 | uint64(e.kw)} {
		if err := a.put64(at+uint64(i), w); err != nil {
			return err
		}
	}
	return nil
}

// htDel removes the entry of e's key, if it is there (the key word
// first).
func htDel(a wordArray, base uint64, bits uint32, e hentry) error {
	b1, b2 := htBuckets(e.a0, e.a1, e.kw, bits)
	for _, b := range []uint64{b1, b2} {
		for j := uint64(0); j < htWays; j++ {
			at := base + b + j*htEnt
			var w [3]uint64
			for i := range w {
				v, err := a.get64(at + uint64(i))
				if err != nil {
					return err
				}
				w[i] = v
			}
			if uint32(w[2]) == e.kw && w[0] == e.a0 && w[1] == e.a1 {
				for _, i := range []uint64{2, 0, 1} {
					if err := a.put64(at+i, 0); err != nil {
						return err
					}
				}
				return nil
			}
		}
	}
	return nil
}

// htBits is the smallest number of bits of a table that holds n entries
// at most half full.
func htBits(n int) uint32 {
	bits := uint32(1)
	for htWays<<bits < 2*n {
		bits++
	}
	return bits
}

// buildHTable lays out the table of es from bits buckets on, growing it
// until every entry fits; nil over maxHTBits.
func buildHTable(es []hentry, bits uint32) ([]uint64, uint32) {
next:
	for ; bits <= maxHTBits; bits++ {
		t := make(sliceWords, htBucket<<bits)
		for _, e := range es {
			if htPut(t, 0, bits, e) != nil {
				continue next
			}
		}
		return t, bits
	}
	return nil, 0
}

// prefixLens are the distinct lengths of ps but 0, longest first; ok is
// false when there are more than limit.
func prefixLens(ps []netip.Prefix, limit int) (lens []uint32, ok bool) {
	seen := map[int]bool{}
	for _, p := range ps {
		if b := p.Bits(); b > 0 && !seen[b] {
			seen[b] = true
			lens = append(lens, uint32(b))
		}
	}
	sort.Slice(lens, func(i, j int) bool { return lens[i] > lens[j] })
	return lens, len(lens) <= limit
}

// lenMasks are the masks of lens as the program ANDs them with an
// address read as two native-order words.
func lenMasks(lens []uint32) (masks [maxLens][2]uint64) {
	for i, l := range lens {
		var m [16]byte
		for b := uint32(0); b < l; b++ {
			m[b/8] |= 0x80 >> (b % 8)
		}
		masks[i] = [2]uint64{binary.NativeEndian.Uint64(m[:8]), binary.NativeEndian.Uint64(m[8:])}
	}
	return masks
}

// fieldTable is an IPv6 address field's per-length table: its lengths
// and their masks, the table and its bits, and the class of the /0.
type fieldTable struct {
	lens  [maxLens]uint32
	n     uint32
	masks [maxLens][2]uint64
	words []uint64
	bits  uint32
	any   uint32
}

// buildFieldTable lays out the table of ps (which hold the /0); nil when
// ps have more than fieldLens lengths or the table would be too large.
func buildFieldTable(ps []PrefixClass) *fieldTable {
	pfx := make([]netip.Prefix, len(ps))
	for i, p := range ps {
		pfx[i] = p.Prefix
	}
	lens, ok := prefixLens(pfx, fieldLens)
	if !ok {
		return nil
	}
	t := &fieldTable{n: uint32(len(lens)), masks: lenMasks(lens)}
	copy(t.lens[:], lens)
	es := make([]hentry, 0, len(ps))
	for _, p := range ps {
		if p.Prefix.Bits() == 0 {
			t.any = p.Class
			continue
		}
		es = append(es, prefixEntry(p.Prefix, uint32(p.Prefix.Bits()), p.Class))
	}
	t.words, t.bits = buildHTable(es, htBits(len(es)))
	if t.words == nil {
		return nil
	}
	return t
}

// fieldLens bounds the lengths of an IPv6 address field's table (tests
// lower it to exercise the trie).
var fieldLens = maxLens

// A mirrored set that is not an IPv4 address-only set without timeouts
// (dirSet), or whose table and split are over budget, is a per-length
// table with a header: the map (named setLenName, one memory-mappable
// value) holds setHead words (bits, the number of lengths, the lengths
// longest first), then the buckets. An entry's key word is its length |
// protocol << 8 | port << 16, its value 1 (match) or 0 (nomatch) | the
// expiry << 1 in units of 2^expShift ns (0: none).
const (
	setLenName = "xdpt_setlen"
	setHead    = 16
)

// lenSet is where a set's per-length table is: bits 0 when the map is
// not one.
type lenSet struct {
	bits uint32
	lens []uint32
}

// setEntry is the table entry of entry en of s, read at now.
func setEntry(s *ipset.Set, en *ipset.Entry, now time.Duration) hentry {
	p := entryPrefix(s, en)
	kw := uint32(p.Bits())
	if len(s.Type.Dims) == 2 {
		kw |= uint32(en.Elem[1].Proto)<<8 | uint32(en.Elem[1].Port)<<16
	}
	val := uint32(1)
	if en.Nomatch {
		val = 0
	}
	if e := expiry(en, now); s.HasTimeout && e != 0 {
		val |= uint32(max(e>>expShift, 1)) << 1
	}
	return prefixEntry(p, kw, val)
}

// newLenSetMap creates the map holding set s as a per-length table,
// filled, with room for half as many entries again; nil when s has more
// than maxLens prefix lengths (or a /0) or the table would be too large.
func newLenSetMap(s *ipset.Set) (*ebpf.Map, error) {
	pfx := make([]netip.Prefix, len(s.Entries))
	now := readAt(s)
	es := make([]hentry, len(s.Entries))
	for i, en := range s.Entries {
		pfx[i] = entryPrefix(s, en)
		if pfx[i].Bits() == 0 {
			return nil, nil
		}
		es[i] = setEntry(s, en, now)
	}
	lens, ok := prefixLens(pfx, maxLens)
	if !ok {
		return nil, nil
	}
	words, bits := buildHTable(es, htBits(len(es)+len(es)/2+64))
	if words == nil {
		return nil, nil
	}
	m, a, err := newTableMap(setLenName, s.Name, 2*(setHead+len(words)))
	if err != nil {
		return nil, err
	}
	defer a.close()
	head := make([]uint64, setHead)
	head[0], head[1] = uint64(bits), uint64(len(lens))
	for i, l := range lens {
		head[2+i] = uint64(l)
	}
	for i, w := range append(head, words...) {
		if w != 0 {
			if err := a.put64(uint64(i), w); err != nil {
				m.Close()
				return nil, err
			}
		}
	}
	return m, nil
}

// lenSetOf reads the header of set map m (mapped as a), when it is a
// per-length table.
func lenSetOf(m *ebpf.Map, a *tableArray) (lenSet, error) {
	info, err := m.Info()
	if err != nil {
		return lenSet{}, fmt.Errorf("xdp: reading %s: %w", m, err)
	}
	if info.Name != setLenName {
		return lenSet{}, nil
	}
	var w [2 + maxLens]uint64
	for i := range w {
		if w[i], err = a.get64(uint64(i)); err != nil {
			return lenSet{}, err
		}
	}
	bits, n := uint32(w[0]), w[1]
	if bits == 0 || bits > maxHTBits || n > maxLens || uint64(setHead+htBucket<<bits) != a.words() {
		return lenSet{}, fmt.Errorf("xdp: %s: not a set's per-length table", m)
	}
	l := lenSet{bits: bits}
	for _, x := range w[2 : 2+n] {
		l.lens = append(l.lens, uint32(x))
	}
	return l, nil
}

// lenSetUpdate writes the entries of ops of set s into its table (a,
// with header l) in place; false when the table cannot take them (a
// length it has no probe for, or both buckets of a key full): the set
// is then rebuilt.
func lenSetUpdate(a *tableArray, l lenSet, s *ipset.Set, now time.Duration, ops []setOp) bool {
	for _, o := range ops {
		bits := uint32(entryPrefix(s, o.en).Bits())
		known := false
		for _, x := range l.lens {
			known = known || x == bits
		}
		if !known && !o.del {
			return false
		}
	}
	for _, o := range ops {
		e := setEntry(s, o.en, now)
		var err error
		if o.del {
			err = htDel(a, setHead, l.bits, e)
		} else {
			err = htPut(a, setHead, l.bits, e)
		}
		if err != nil {
			return false
		}
	}
	return true
}

// get64 and put64 read and write word i of a table of 64-bit words
// atomically (packets read it meanwhile).
func (a *tableArray) get64(i uint64) (uint64, error) {
	if i >= a.words() {
		return 0, fmt.Errorf("xdp: table word %d out of %d", i, a.words())
	}
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&a.mem[8*i]))), nil
}

func (a *tableArray) put64(i uint64, v uint64) error {
	if i >= a.words() {
		return fmt.Errorf("xdp: table word %d out of %d", i, a.words())
	}
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&a.mem[8*i])), v)
	return nil
}

func (a *tableArray) words() uint64 { return uint64(len(a.mem) / 8) }

// lenSetOfMap is lenSetOf for set map m, mapped here.
func lenSetOfMap(m *ebpf.Map) (lenSet, error) {
	if info, err := m.Info(); err != nil || info.Name != setLenName {
		return lenSet{}, err
	}
	a, err := mapTable(m)
	if err != nil {
		return lenSet{}, err
	}
	defer a.close()
	return lenSetOf(m, a)
}

// lenSets says whether sets are mirrored as per-length tables (tests
// turn it off to exercise the trie).
var lenSets = true
