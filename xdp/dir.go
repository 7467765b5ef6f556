package xdp

import (
	"encoding/binary"
	"sort"
)

// An IPv4 address field can be looked up in a DIR-16-8-8 table instead
// of an LPM trie: BPF array lookups are inlined by the verifier to a few
// instructions, where a trie lookup is a helper call that walks nodes
// (~12-15 ns on the benchmark VM, the largest part of a packet's cost).
//
// The first level has one entry per /16; an entry is either the class
// of every address in it or, with dirChunk set, the number of a chunk
// of 256 entries, one per next byte of the address; a chunk entry is a
// class or the number of a further chunk (for the last byte). Chunk c's
// entry b is at index c<<8|b of the chunk map (bpf/classifier.c
// dir_lookup). A chunk whose entries are all the same class is not
// kept: its parent holds the class.
const (
	dirChunk   = uint32(1) << 31
	dirL1Slots = 1 << 16
)

// dirBudget is how many chunks (1 KiB each) an address field's table may
// use; with more (a million random /32s), the field keeps its LPM trie.
// Tests lower it to exercise the fallback.
var dirBudget = 16384

// dirTable is the DIR-16-8-8 form of an address field.
type dirTable struct {
	l1     []uint32 // dirL1Slots entries
	chunks []uint32 // 256 entries per chunk
}

func (t *dirTable) nchunks() int { return len(t.chunks) / 256 }

// lookup is what the BPF program computes, for tests.
func (t *dirTable) lookup(a [4]byte) uint32 {
	v := t.l1[int(a[0])<<8|int(a[1])]
	for i := 2; i < 4 && v&dirChunk != 0; i++ {
		v = t.chunks[int(v&^dirChunk)<<8|int(a[i])]
	}
	return v
}

// buildDir4 builds the table giving each address the class of the
// longest prefix of ps that holds it (ps holds 0/0, as every compiled
// address field does). It returns nil when the table needs more than
// budget chunks.
func buildDir4(ps []PrefixClass, budget int) *dirTable {
	sorted := make([]PrefixClass, len(ps))
	copy(sorted, ps)
	// shorter prefixes first: a longer one paints over them
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Prefix.Bits() < sorted[j].Prefix.Bits() })
	t := &dirTable{l1: make([]uint32, dirL1Slots)}
	var deeper []PrefixClass
	for _, p := range sorted {
		if !p.Prefix.Addr().Is4() {
			continue
		}
		bits := p.Prefix.Bits()
		if bits > 16 {
			deeper = append(deeper, p)
			continue
		}
		paint(t.l1, addr4(p)>>16, bits, 16, p.Class)
	}
	// prefixes longer than /16 by their /16, each group still ordered by
	// length
	groups := map[uint32][]PrefixClass{}
	var keys []uint32
	for _, p := range deeper {
		hi := addr4(p) >> 16
		if groups[hi] == nil {
			keys = append(keys, hi)
		}
		groups[hi] = append(groups[hi], p)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, hi := range keys {
		var l2 [256]uint32
		fillChunk(&l2, t.l1[hi])
		var last []PrefixClass
		for _, p := range groups[hi] {
			if p.Prefix.Bits() <= 24 {
				paint(l2[:], addr4(p)>>8&0xff, p.Prefix.Bits()-16, 8, p.Class)
			} else {
				last = append(last, p)
			}
		}
		// the last byte, by /24 (runs, since last is ordered by length
		// only: group again)
		sub := map[uint32][]PrefixClass{}
		var subKeys []uint32
		for _, p := range last {
			b := addr4(p) >> 8 & 0xff
			if sub[b] == nil {
				subKeys = append(subKeys, b)
			}
			sub[b] = append(sub[b], p)
		}
		sort.Slice(subKeys, func(i, j int) bool { return subKeys[i] < subKeys[j] })
		for _, b := range subKeys {
			var l3 [256]uint32
			fillChunk(&l3, l2[b])
			for _, p := range sub[b] {
				paint(l3[:], addr4(p)&0xff, p.Prefix.Bits()-24, 8, p.Class)
			}
			if v, ok := uniform(&l3); ok {
				l2[b] = v
				continue
			}
			if t.nchunks() == budget {
				return nil
			}
			l2[b] = dirChunk | uint32(t.nchunks())
			t.chunks = append(t.chunks, l3[:]...)
		}
		if v, ok := uniform(&l2); ok && v&dirChunk == 0 {
			t.l1[hi] = v
			continue
		}
		if t.nchunks() == budget {
			return nil
		}
		t.l1[hi] = dirChunk | uint32(t.nchunks())
		t.chunks = append(t.chunks, l2[:]...)
	}
	return t
}

func addr4(p PrefixClass) uint32 {
	a := p.Prefix.Addr().As4()
	return binary.BigEndian.Uint32(a[:])
}

// paint sets the entries of a table of width-bit indexes that the
// prefix of the bits leading bits of idx covers.
func paint(tab []uint32, idx uint32, bits, width int, v uint32) {
	n := uint32(1) << (width - bits)
	lo := idx &^ (n - 1)
	for i := lo; i < lo+n; i++ {
		tab[i] = v
	}
}

func fillChunk(c *[256]uint32, v uint32) {
	for i := range c {
		c[i] = v
	}
}

func uniform(c *[256]uint32) (uint32, bool) {
	for _, x := range c[1:] {
		if x != c[0] {
			return 0, false
		}
	}
	return c[0], true
}
