package xdp

import (
	"encoding/binary"
	"errors"
	"net/netip"
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
// class or the number of a further chunk (for the last byte). A chunk
// whose entries are all the same class is not kept: its parent holds
// the class. The program reads the table laid out as setLayout puts it
// (bpf/classifier.c dir_value).
const (
	dirChunk   = uint32(1) << 31
	dirL1Slots = 1 << 16
)

// dirFieldBudget is how many chunks (1 KiB each) an address field's
// table may use: two per compiled rule, so that a field of up to
// MaxRules prefixes always fits (a prefix longer than /16 lies in one
// /16 and, when longer than /24, in one /24: it needs at most one
// second-level and one third-level chunk), even /32s spread over as
// many /16s (32 MiB); with more prefixes (ranges, lists), the field
// keeps its LPM trie. dirBudget is the same for a mirrored set's table:
// with more (a million random /32s), the set keeps its LPM trie. Tests
// lower them to exercise the fallback.
var (
	dirFieldBudget = 2 * MaxRules
	dirBudget      = 16384
)

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

// A mirrored IPv4 address-only set (hash:ip, hash:net without timeouts)
// is one array map holding its DIR-16-8-8 table (values 1: in the set, 0:
// not, or a nomatch entry): the first level at indexes 0-65535, chunk c
// at c<<8 with chunk numbers from dirSetBase, and in the last entry how
// many chunks are in use, so that ipset add/del can add chunks in place.
const dirSetBase = 256

// dirSetSlots is the size of a set map holding n chunks.
func dirSetSlots(n int) int { return (dirSetBase+n)*256 + 1 }

// dirSetHeadroom is how many chunks a set map has room for beyond those
// its table uses when built, for adds in place.
func dirSetHeadroom(n int) int { return 256 + n/2 }

// setLayout is t as the program reads it, with room for room chunks
// (room >= t.nchunks()): the first level at 0-65535, chunk c at
// c<<8 with chunk numbers from dirSetBase, and the chunk count last.
// Address fields use it with no room to spare, set maps with room for
// adds in place.
func (t *dirTable) setLayout(room int) []uint32 {
	out := make([]uint32, dirSetSlots(room))
	rebase := func(v uint32) uint32 {
		if v&dirChunk != 0 {
			return v + dirSetBase
		}
		return v
	}
	for i, v := range t.l1 {
		out[i] = rebase(v)
	}
	for i, v := range t.chunks {
		out[dirSetBase*256+i] = rebase(v)
	}
	out[len(out)-1] = uint32(t.nchunks())
	return out
}

// dirArray is the part of an array map dirSetUpdate needs: ebpf.Map
// does, and tests use a slice.
type dirArray interface {
	get(i uint32) (uint32, error)
	put(i uint32, vs []uint32) error // vs at i, i+1…
	size() uint32
}

// dirSetUpdate rewrites, in the set map a, the part of the table that
// prefix p's addresses lie in after a change of p's entry (added,
// removed or changed); ps are the set's prefixes after the change. A
// packet sees the table before or after the change: new chunks are
// filled before the single entry that points to them is written, and
// entries in use are only ever overwritten one at a time. Chunks left
// unreferenced are not reused (a packet may still be reading them);
// when the map has no room for the new ones it returns errDirFull, and
// the caller rebuilds the set's map.
func dirSetUpdate(a dirArray, ps []PrefixClass, p netip.Prefix) error {
	last := a.size() - 1
	used, err := a.get(last)
	if err != nil {
		return err
	}
	room := (a.size()-1)/256 - dirSetBase
	addr, bits := addr4(PrefixClass{Prefix: p}), p.Bits()
	// the entries to rewrite: n entries from index at, each for a block
	// of 2^span addresses starting at block
	var at, n, span, block uint32
	var region netip.Prefix
	switch v1, err := a.get(addr >> 16); {
	case err != nil:
		return err
	case bits <= 16:
		at, n, span, block, region = addr>>16, 1<<(16-bits), 16, addr, p
	case v1&dirChunk == 0:
		at, n, span, block, region = addr>>16, 1, 16, addr&^0xffff, pfx4(addr, 16)
	default:
		c := v1 &^ dirChunk
		v2, err := a.get(c<<8 | addr>>8&0xff)
		switch {
		case err != nil:
			return err
		case bits <= 24:
			at, n, span, block, region = c<<8|addr>>8&0xff, 1<<(24-bits), 8, addr, p
		case v2&dirChunk == 0:
			at, n, span, block, region = c<<8|addr>>8&0xff, 1, 8, addr&^0xff, pfx4(addr, 24)
		default:
			d := v2 &^ dirChunk
			at, n, span, block, region = d<<8|addr&0xff, 1<<(32-bits), 0, addr, p
		}
	}
	block &^= 1<<(span+uint32(0)) - 1 // (span 0: one address)
	// the table of the prefixes that overlap the region is exact inside
	// it
	// (the class of addresses no other prefix holds: that of ps' /0)
	sub := []PrefixClass{{Prefix: netip.PrefixFrom(netip.IPv4Unspecified(), 0)}}
	for _, q := range ps {
		if q.Prefix.Bits() == 0 {
			sub[0].Class = q.Class
		} else if q.Prefix.Overlaps(region) {
			sub = append(sub, q)
		}
	}
	t := buildDir4(sub, 1<<30)
	// new values of the entries, and the chunks they need, numbered
	// from used
	var chunks []uint32
	copyChunk := func(rel uint32, remap func(uint32) uint32) uint32 {
		id := used + uint32(len(chunks)/256)
		src := t.chunks[rel<<8 : rel<<8+256]
		for _, v := range src {
			chunks = append(chunks, remap(v))
		}
		return dirChunk | (dirSetBase + id)
	}
	leaf := func(v uint32) uint32 { return v }
	vals := make([]uint32, n)
	for k := uint32(0); k < n; k++ {
		start := block + k<<span
		var v uint32
		switch span {
		case 16:
			v = t.l1[start>>16]
			if v&dirChunk != 0 {
				// its third-level chunks first, then the second
				rel := v &^ dirChunk
				l2 := make([]uint32, 256)
				for j, w := range t.chunks[rel<<8 : rel<<8+256] {
					if w&dirChunk != 0 {
						w = copyChunk(w&^dirChunk, leaf)
					}
					l2[j] = w
				}
				id := used + uint32(len(chunks)/256)
				chunks = append(chunks, l2...)
				v = dirChunk | (dirSetBase + id)
			}
		case 8:
			v = t.l1[start>>16]
			if v&dirChunk != 0 {
				v = t.chunks[(v&^dirChunk)<<8|start>>8&0xff]
			}
			if v&dirChunk != 0 {
				v = copyChunk(v&^dirChunk, leaf)
			}
		default:
			v = t.lookup([4]byte{byte(start >> 24), byte(start >> 16), byte(start >> 8), byte(start)})
		}
		vals[k] = v
	}
	if nc := uint32(len(chunks) / 256); nc > 0 {
		if used+nc > room {
			return errDirFull
		}
		if err := a.put((dirSetBase+used)<<8, chunks); err != nil {
			return err
		}
		if err := a.put(last, []uint32{used + nc}); err != nil {
			return err
		}
	}
	for k, v := range vals {
		if err := a.put(at+uint32(k), []uint32{v}); err != nil {
			return err
		}
	}
	return nil
}

var errDirFull = errors.New("xdp: no room for more chunks in the set's table")

func pfx4(a uint32, bits int) netip.Prefix {
	p, _ := netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}).Prefix(bits)
	return p
}
