package ipset

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/google/nftables"
)

// Bulk is a set that a restore creates, filled without the in-memory
// model: each entry is its key in the nftables set that keeps the
// entries (fixed size per set: 8 bytes for an IPv4 hash:net entry) and a
// few attribute bytes, found again through an open-addressing index.
// Add has exactly the semantics and errors of State.Exec for add; the
// nftables elements (the entries, and for hash:net the flattened pieces
// of the lookup set) are produced one at a time from the keys. A
// million entries take about 30 MB instead of about 1 KB each.
type Bulk struct {
	Set     *Set // header only
	w       int  // key width
	keys    []byte
	attrs   []bulkAttr
	index   []uint32 // record number + 1; 0: empty
	seed    maphash.Seed
	texts   []byte   // comments
	nomatch int      // entries with the nomatch flag
	key     []byte   // scratch
	order   []uint32 // records by address and prefix length (Pieces)
	order4  []uint64 // the same for IPv4: address<<32 | bits<<26 | record
	parts   []Part   // scratch
	elems   []Elem   // scratch
	// loaded records [0, loaded) were read from the kernel (Load); orig
	// holds their attributes before Add replaced them.
	loaded int
	orig   map[uint32]bulkAttr
	pbuf   []byte // scratch of pieceElems
	// shardRecs holds the record numbers grouped by shard (sharded
	// sets), shard i's from shardAt[i] to shardAt[i+1].
	shardRecs []uint32
	shardAt   []int
}

type bulkAttr struct {
	timeout uint32
	cOff    uint32
	cLen    uint8
	nomatch bool
}

// BulkSupported reports whether a restore may fill s as a Bulk: hash
// types (their keys have a fixed size); of the net types only hash:net,
// whose pieces are flattened straight from the sorted keys.
func BulkSupported(s *Set) bool {
	if s.Type.Bitmap || s.Type.List {
		return false
	}
	return !s.Type.Net() || len(s.Type.Dims) == 1
}

// NewBulk returns an empty Bulk for the header s (BulkSupported).
func NewBulk(s *Set) *Bulk {
	b := &Bulk{Set: s.HeaderOnly(), seed: maphash.MakeSeed()}
	alen := 4
	if s.Family == Inet6 {
		alen = 16
	}
	for _, d := range s.Type.Dims {
		switch d {
		case DimIP, DimNet:
			b.w += alen
		case DimPort:
			b.w += 8
		case DimMAC:
			b.w += 8
			if len(s.Type.Dims) == 1 {
				b.w = 6 // ether_addr alone: 6 bytes, unpadded (Set.key)
			}
		case DimIface:
			b.w += 16
		case DimMark:
			b.w += 4
		}
	}
	if s.Type.Net() {
		b.w += 4
	}
	b.index = make([]uint32, 1024)
	return b
}

// Len is the number of entries.
func (b *Bulk) Len() int { return len(b.attrs) }

// HasNomatch reports whether any entry is a nomatch entry.
func (b *Bulk) HasNomatch() bool { return b.nomatch > 0 }

// appendKey appends the key of e in the entries set, with the nomatch
// flag clear (s.EntryKey, without allocating). ok is false for elements
// whose key would not have the set's fixed size or would not identify
// them (an IPv4-mapped address in an inet set, a NUL in a name).
func (b *Bulk) appendKey(dst []byte, e Elem) ([]byte, bool) {
	s := b.Set
	var meta uint32
	shift := 0
	for i, d := range s.Type.Dims {
		p := e[i]
		switch d {
		case DimIP, DimNet:
			if s.Family == Inet6 {
				if !p.Addr.Is6() || p.Addr.Is4In6() {
					return dst, false
				}
				a := p.Addr.As16()
				dst = append(dst, a[:]...)
			} else {
				if !p.Addr.Is4() {
					return dst, false
				}
				a := p.Addr.As4()
				dst = append(dst, a[:]...)
			}
			if d == DimNet {
				meta |= uint32(p.Bits) << shift
				shift += 8
			}
		case DimPort:
			dst = append(dst, p.Proto, 0, 0, 0, byte(p.Port>>8), byte(p.Port), 0, 0)
		case DimIface:
			if len(p.Iface) > 15 || strings.IndexByte(p.Iface, 0) >= 0 {
				return dst, false
			}
			var n [16]byte
			copy(n[:], p.Iface)
			dst = append(dst, n[:]...)
			if p.Physdev {
				meta |= 1 << 24
			}
		case DimMAC:
			dst = append(dst, p.MAC[:]...)
			if len(s.Type.Dims) > 1 {
				dst = append(dst, 0, 0)
			}
		case DimMark:
			dst = binary.NativeEndian.AppendUint32(dst, p.Mark)
		default:
			return dst, false
		}
	}
	if s.Type.Net() {
		dst = binary.NativeEndian.AppendUint32(dst, meta)
	}
	return dst, true
}

func (b *Bulk) keyOf(i int) []byte { return b.keys[i*b.w : (i+1)*b.w] }

// find returns the slot of key in the index and the record there (-1:
// none, the slot is free).
func (b *Bulk) find(key []byte) (slot, rec int) {
	mask := len(b.index) - 1
	slot = int(maphash.Bytes(b.seed, key)) & mask
	for {
		v := b.index[slot]
		if v == 0 {
			return slot, -1
		}
		if bytes.Equal(b.keyOf(int(v-1)), key) {
			return slot, int(v - 1)
		}
		slot = (slot + 1) & mask
	}
}

func (b *Bulk) grow() {
	old := b.index
	b.index = make([]uint32, 2*len(old))
	mask := len(b.index) - 1
	for _, v := range old {
		if v == 0 {
			continue
		}
		slot := int(maphash.Bytes(b.seed, b.keyOf(int(v-1)))) & mask
		for b.index[slot] != 0 {
			slot = (slot + 1) & mask
		}
		b.index[slot] = v
	}
}

// Add runs "add NAME ELEM OPTIONS..." (args without the command) as
// State.Exec does on a set holding the entries added so far: the same
// parsing, defaults and errors. ok is false (and nothing is added) when
// the element needs the in-memory model (see appendKey).
func (b *Bulk) Add(args []string, exist bool) (err *Error, ok bool) {
	s := b.Set
	var elems []Elem
	if d := s.Type.Dims; len(d) == 1 && (d[0] == DimIP || d[0] == DimNet) {
		// ParseElem for one address dimension, without its copies.
		if strings.IndexByte(args[1], ',') >= 0 {
			err = separatorErr(s, args[1], len(elemFields(args[1]))-1)
		}
		switch {
		case err != nil:
		case d[0] == DimIP:
			b.parts, err = appendIPDim(b.parts[:0], s, args[1], true)
		default:
			b.parts, err = appendNetDim(b.parts[:0], s, args[1])
		}
		if err == nil {
			b.elems = b.elems[:0]
			for i := range b.parts {
				b.elems = append(b.elems, Elem(b.parts[i:i+1:i+1]))
			}
			elems = b.elems
			err = nullKeyErr(s, elems)
		}
	} else {
		elems, err = ParseElemFor(s, args[1], OpAdd)
	}
	// (as Exec: the kernel's refusal of the element comes after the
	// options' parse errors and the options the set lacks)
	elemErr := err
	if elemErr != nil && ParseError(elemErr) {
		return elemErr, true
	}
	var tmpl Entry
	herr := HostPrefixErr(s, args[1], OpAdd)
	if _, err := parseEntryOptions(s, &tmpl, args[2:]); err != nil {
		if herr != nil && !ParseError(err) {
			return herr, true // (before the kernel's refusal of an option)
		}
		if elemErr != nil && (elemErr.Checked || elemErr.BeforeExt) && !ParseError(err) {
			return elemErr, true
		}
		return err, true
	}
	if herr != nil {
		return herr, true
	}
	if elemErr != nil {
		return elemErr, true
	}
	if tmpl.GotPackets || tmpl.GotBytes || tmpl.HasMark || tmpl.HasPrio || tmpl.HasQueue {
		return nil, false // counters and skbinfo values: the general path keeps them
	}
	at := bulkAttr{timeout: tmpl.Timeout, nomatch: tmpl.Nomatch}
	if c := tmpl.Comment; s.Comment && c != "" {
		if len(c) > maxElemComment {
			c = c[:maxElemComment] // as Set.attrs cuts it: the kernel's limit
		}
		at.cOff, at.cLen = uint32(len(b.texts)), uint8(len(c))
		b.texts = append(b.texts, c...)
	}
	for _, e := range elems {
		var kok bool
		b.key, kok = b.appendKey(b.key[:0], e)
		if !kok {
			return nil, false
		}
		slot, rec := b.find(b.key)
		if rec >= 0 {
			if !exist {
				return errorf(MsgElemExists), true
			}
			if b.attrs[rec].nomatch {
				b.nomatch--
			}
			if rec < b.loaded {
				if _, ok := b.orig[uint32(rec)]; !ok {
					if b.orig == nil {
						b.orig = map[uint32]bulkAttr{}
					}
					b.orig[uint32(rec)] = b.attrs[rec]
				}
			}
			b.attrs[rec] = at
		} else {
			if uint32(len(b.attrs)) >= s.MaxElem {
				// forceadd replaces a member: the model picks it
				return errorf(MsgFull), !s.ForceAdd
			}
			b.keys = append(b.keys, b.key...)
			b.attrs = append(b.attrs, at)
			b.index[slot] = uint32(len(b.attrs))
			if 2*len(b.attrs) > len(b.index) {
				b.grow()
			}
		}
		if at.nomatch {
			b.nomatch++
		}
	}
	return nil, true
}

// Load adds an entry read from the kernel, before any Add: key is its
// element's key in the set EntriesNftSet names, comment its comment,
// timeout its remaining seconds (DecodeEntry's reading). Such entries
// are what the kernel holds: EntryChanges and PieceChanges give what
// turns the kernel's sets into the Bulk's. ok is false when the key is
// not one a Bulk holds (the caller reads the set with DecodeEntry).
func (b *Bulk) Load(key []byte, comment string, timeout uint32) bool {
	s := b.Set
	if len(key) != b.w || len(comment) > 255 || b.loaded != len(b.attrs) {
		return false
	}
	b.key = append(b.key[:0], key...)
	var at bulkAttr
	if s.Type.Net() {
		meta := binary.NativeEndian.Uint32(b.key[b.w-4:])
		at.nomatch = meta&(1<<16) != 0
		binary.NativeEndian.PutUint32(b.key[b.w-4:], meta&^(1<<16))
	}
	if s.HasTimeout {
		at.timeout = timeout
	}
	if comment != "" {
		at.cOff, at.cLen = uint32(len(b.texts)), uint8(len(comment))
		b.texts = append(b.texts, comment...)
	}
	slot, rec := b.find(b.key)
	if rec >= 0 {
		return false
	}
	b.keys = append(b.keys, b.key...)
	b.attrs = append(b.attrs, at)
	b.loaded = len(b.attrs)
	b.index[slot] = uint32(len(b.attrs))
	if 2*len(b.attrs) > len(b.index) {
		b.grow()
	}
	if at.nomatch {
		b.nomatch++
	}
	return true
}

// sameAttr reports whether two attributes give the same nftables
// elements (the general path's element IDs).
func (b *Bulk) sameAttr(x, y bulkAttr) bool {
	return x.timeout == y.timeout && x.nomatch == y.nomatch &&
		string(b.texts[x.cOff:x.cOff+uint32(x.cLen)]) == string(b.texts[y.cOff:y.cOff+uint32(y.cLen)])
}

// entry sets el to record i's element in the entries set with
// attributes at.
func (b *Bulk) entry(i int, at bulkAttr, el *nftables.SetElement, key []byte) {
	copy(key, b.keyOf(i))
	if at.nomatch {
		nm := binary.NativeEndian.Uint32(key[b.w-4:]) | 1<<16
		binary.NativeEndian.PutUint32(key[b.w-4:], nm)
	}
	el.Key = key
	b.setAttrs(at, el)
}

// EntryChanges yields the elements of the entries set (EntriesNftSet)
// to delete (dels) or to add (!dels) to turn what Load read into the
// Bulk: entries added, and loaded entries whose options changed.
func (b *Bulk) EntryChanges(dels bool) iter.Seq[*nftables.SetElement] {
	return b.entryChanges(b.records(-1), dels)
}

// ShardEntryChanges is EntryChanges of the elements of shard i.
func (b *Bulk) ShardEntryChanges(i int, dels bool) iter.Seq[*nftables.SetElement] {
	return b.entryChanges(b.records(i), dels)
}

func (b *Bulk) entryChanges(recs iter.Seq[int], dels bool) iter.Seq[*nftables.SetElement] {
	b.index = nil
	return func(yield func(*nftables.SetElement) bool) {
		var el nftables.SetElement
		key := make([]byte, b.w)
		for i := range recs {
			at := b.attrs[i]
			if i < b.loaded {
				o, ok := b.orig[uint32(i)]
				if !ok || b.sameAttr(o, at) {
					continue
				}
				if dels {
					at = o
				}
			} else if dels {
				continue
			}
			b.entry(i, at, &el, key)
			if !yield(&el) {
				return
			}
		}
	}
}

// records yields the record numbers of shard i in order (-1: all).
func (b *Bulk) records(shard int) iter.Seq[int] {
	if shard < 0 {
		return func(yield func(int) bool) {
			for i := range b.attrs {
				if !yield(i) {
					return
				}
			}
		}
	}
	if b.shardAt == nil {
		// A counting sort of the records by shard, once.
		s := b.Set
		of := make([]uint16, len(b.attrs))
		b.shardAt = make([]int, s.Shards+1)
		for i := range b.attrs {
			of[i] = uint16(s.ShardOf(b.keyOf(i)))
			b.shardAt[of[i]+1]++
		}
		for i := 1; i <= s.Shards; i++ {
			b.shardAt[i] += b.shardAt[i-1]
		}
		next := append([]int(nil), b.shardAt[:s.Shards]...)
		b.shardRecs = make([]uint32, len(b.attrs))
		for i, sh := range of {
			b.shardRecs[next[sh]] = uint32(i)
			next[sh]++
		}
	}
	return func(yield func(int) bool) {
		for _, r := range b.shardRecs[b.shardAt[shard]:b.shardAt[shard+1]] {
			if !yield(int(r)) {
				return
			}
		}
	}
}

// ShardLen is the number of entries in shard i of a sharded set.
func (b *Bulk) ShardLen(i int) int {
	n := 0
	for range b.records(i) {
		n++
	}
	return n
}

// FillBound bounds the elements that nftables set name of the Bulk's set
// gets when it is filled whole (Entries, ShardEntries, Pieces,
// NomatchPieces, the count; not the changes of a loaded set): at most
// elems elements, with keys of keyLen bytes, whose comments take at most
// comments bytes in all. A batch is sized with it without producing the
// elements twice.
func (b *Bulk) FillBound(name string) (elems, keyLen, comments int) {
	s := b.Set
	n := len(b.attrs)
	if s.Sharded() && name == CountSetName(s.Name) {
		return 1, 4, 0
	}
	if s.NestedSet && name == NestedSetName(s.Name) {
		// at most one per entry (a tree's top entry holds the others)
		return n / 2, b.w - 4, n / 2 * len(TopComment(n))
	}
	if s.Type.Net() && (name == LookupSetName(s.Name) || name == NomatchSetName(s.Name)) {
		// Each entry splits the piece it falls in into at most three;
		// a piece is a start and an end element, the start with its
		// owner's comment or its tree's count (Set.TopLayout).
		pieces := 2*n + 1
		longest := len(TopComment(n))
		if s.Comment {
			for _, at := range b.attrs {
				longest = max(longest, int(at.cLen))
			}
		}
		return 2 * pieces, b.w - 4, pieces * longest
	}
	if i, ok := s.ShardIndex(name); ok {
		n = b.ShardLen(i)
	}
	return n, b.w, len(b.texts)
}

// CountChanges yields the element of the count set of a sharded set: the
// count it holds after the restore, or (dels) the one Load found; none
// when they are the same.
func (b *Bulk) CountChanges(changes, dels bool) iter.Seq[*nftables.SetElement] {
	return func(yield func(*nftables.SetElement) bool) {
		if changes && b.loaded == len(b.attrs) {
			return
		}
		n := len(b.attrs)
		if dels {
			n = b.loaded
		}
		yield(&nftables.SetElement{Key: CountKey(n)})
	}
}

// setAttrs sets the timeout and comment of a on el, as Set.attrs.
func (b *Bulk) setAttrs(a bulkAttr, el *nftables.SetElement) {
	el.Timeout, el.Comment = 0, ""
	if b.Set.HasTimeout && a.timeout > 0 {
		el.Timeout = time.Duration(a.timeout) * time.Second
	}
	if b.Set.Comment && a.cLen > 0 {
		el.Comment = string(b.texts[a.cOff : a.cOff+uint32(a.cLen)])
	}
}

// Entries yields the elements of the set EntriesNftSet names, in the
// order the entries were first added (the element is reused). It frees
// the index: nothing can be added afterwards.
func (b *Bulk) Entries() iter.Seq[*nftables.SetElement] { return b.entries(b.records(-1)) }

// ShardEntries is Entries of the elements of shard i.
func (b *Bulk) ShardEntries(i int) iter.Seq[*nftables.SetElement] { return b.entries(b.records(i)) }

func (b *Bulk) entries(recs iter.Seq[int]) iter.Seq[*nftables.SetElement] {
	b.index = nil
	return func(yield func(*nftables.SetElement) bool) {
		var el nftables.SetElement
		key := make([]byte, b.w)
		for i := range recs {
			b.entry(i, b.attrs[i], &el, key)
			if !yield(&el) {
				return
			}
		}
	}
}

// u128 is an address as a number (IPv4 in lo).
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// Pieces yields the elements of the lookup set of a hash:net: the
// pieces Set.pieces flattens the entries into, the same elements in the
// same order, computed from the keys sorted by address and prefix
// length (once). It frees the index: nothing can be added afterwards.
func (b *Bulk) Pieces() iter.Seq[*nftables.SetElement] { return b.pieces(false) }

// NomatchPieces yields the elements of the nomatch set of a hash:net
// (Set.Nomatch), as Pieces those of the lookup set.
func (b *Bulk) NomatchPieces() iter.Seq[*nftables.SetElement] { return b.pieces(true) }

func (b *Bulk) pieces(nomatch bool) iter.Seq[*nftables.SetElement] {
	b.index = nil
	return func(yield func(*nftables.SetElement) bool) {
		var el nftables.SetElement
		for sp := range b.spans(false, nomatch) {
			if !b.pieceElems(sp, &el, yield) {
				return
			}
		}
	}
}

// span is a piece: [lo, hi], with the attributes of its owner.
type span struct {
	lo, hi u128
	at     bulkAttr
	end    bool // hi is not the last address: the piece has an end element
	nested int  // Set.TopLayout: the entries nested in the owner's tree
}

// pieceElems yields the start and end elements of piece sp.
func (b *Bulk) pieceElems(sp span, el *nftables.SetElement, yield func(*nftables.SetElement) bool) bool {
	alen := b.w - 4
	if len(b.pbuf) < 2*alen {
		b.pbuf = make([]byte, 2*alen)
	}
	k0, k1 := b.pbuf[:alen:alen], b.pbuf[alen:2*alen]
	put := func(a u128) []byte {
		k := k0
		k0 = k1
		if alen == 4 {
			binary.BigEndian.PutUint32(k, uint32(a.lo))
		} else {
			binary.BigEndian.PutUint64(k, a.hi)
			binary.BigEndian.PutUint64(k[8:], a.lo)
		}
		return k
	}
	*el = nftables.SetElement{Key: put(sp.lo)}
	b.setAttrs(sp.at, el)
	if sp.nested > 0 && !b.Set.NestedSet {
		el.Comment = TopComment(sp.nested)
	}
	if !yield(el) {
		return false
	}
	if sp.end {
		nx := sp.hi
		if nx.lo++; nx.lo == 0 {
			nx.hi++
		}
		*el = nftables.SetElement{Key: put(nx), IntervalEnd: true}
		return yield(el)
	}
	return true
}

// spans yields the pieces of the entries (old: of the loaded entries
// with their loaded attributes), in address order: those owned by plain
// entries, or (nomatch) those owned by nomatch entries.
func (b *Bulk) spans(old, nomatch bool) iter.Seq[span] {
	return func(yield func(span) bool) {
		alen := b.w - 4
		addrOf := func(i int) u128 {
			k := b.keyOf(i)
			if alen == 4 {
				return u128{lo: uint64(binary.BigEndian.Uint32(k))}
			}
			return u128{binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:])}
		}
		bitsOf := func(i int) int { return int(b.keyOf(i)[alen]) } // meta's low byte (native order: little-endian hosts)
		if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
			bitsOf = func(i int) int { return int(binary.NativeEndian.Uint32(b.keyOf(i)[alen:]) & 0xff) }
		}
		if b.order == nil && b.order4 == nil {
			b.sort(addrOf, bitsOf)
		}
		// the k-th record in sorted order, its address and prefix length
		n := len(b.attrs)
		at := func(k int) (int, u128, int) {
			i := int(b.order[k])
			return i, addrOf(i), bitsOf(i)
		}
		if b.order4 != nil {
			at = func(k int) (int, u128, int) {
				v := b.order4[k]
				return int(v & (1<<26 - 1)), u128{lo: v >> 32}, int(v>>26) & 63
			}
		}
		width := uint(alen * 8)
		last := func(a u128, bits int) u128 {
			h := width - uint(bits) // host bits
			switch {
			case h == 0:
			case h >= 64:
				a.lo = ^uint64(0)
				a.hi |= ^uint64(0) >> (128 - h)
			default:
				a.lo |= ^uint64(0) >> (64 - h)
			}
			return a
		}
		max := last(u128{}, 0)
		next := func(a u128) (u128, bool) {
			if a == max {
				return a, false
			}
			if a.lo++; a.lo == 0 {
				a.hi++
			}
			return a, true
		}
		prev := func(a u128) u128 {
			if a.lo--; a.lo == ^uint64(0) {
				a.hi--
			}
			return a
		}
		attr := func(i int) bulkAttr {
			if old {
				if o, ok := b.orig[uint32(i)]; ok {
					return o
				}
			}
			return b.attrs[i]
		}
		// emit yields the piece [lo, hi] owned by record owner.
		emit := func(lo, hi u128, owner int) bool {
			at := attr(owner)
			if at.nomatch != nomatch {
				return true
			}
			return yield(span{lo: lo, hi: hi, at: at, end: hi != max})
		}
		// A stack of the open prefixes, outermost first; cur is the
		// first address of each not yet given to a piece (valid false:
		// none left).
		type open struct {
			rec       int
			cur, last u128
			valid     bool
		}
		var stack []open
		pop := func() bool {
			t := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if t.valid && !t.last.less(t.cur) {
				if !emit(t.cur, t.last, t.rec) {
					return false
				}
			}
			if len(stack) > 0 {
				p := &stack[len(stack)-1]
				p.cur, p.valid = next(t.last)
			}
			return true
		}
		// general yields the pieces of the records in sorted places
		// [k0, k1), whole trees.
		general := func(k0, k1 int) bool {
			for k := k0; k < k1; k++ {
				i, lo, bits := at(k)
				if old && i >= b.loaded {
					continue
				}
				for len(stack) > 0 && stack[len(stack)-1].last.less(lo) {
					if !pop() {
						return false
					}
				}
				if len(stack) > 0 {
					p := &stack[len(stack)-1]
					if p.valid && p.cur.less(lo) {
						if !emit(p.cur, prev(lo), p.rec) {
							return false
						}
					}
				}
				stack = append(stack, open{rec: i, cur: lo, last: last(lo, bits), valid: true})
			}
			for len(stack) > 0 {
				if !pop() {
					return false
				}
			}
			return true
		}
		if !b.Set.TopLayout {
			general(0, n)
			return
		}
		// Set.TopLayout: one span per tree without nomatch entries, the
		// pieces of the others.
		k0, top, nested, hasNomatch := -1, 0, 0, false
		var tlo, tlast u128
		flush := func(k1 int) bool {
			switch {
			case k0 < 0:
				return true
			case hasNomatch:
				return general(k0, k1)
			case nomatch:
				return true
			}
			return yield(span{lo: tlo, hi: tlast, at: attr(top), end: tlast != max, nested: nested})
		}
		for k := range n {
			i, lo, bits := at(k)
			if old && i >= b.loaded {
				continue
			}
			if k0 >= 0 && !tlast.less(lo) {
				nested++
				hasNomatch = hasNomatch || attr(i).nomatch
				continue
			}
			if !flush(k) {
				return
			}
			k0, top, nested, hasNomatch = k, i, 0, attr(i).nomatch
			tlo, tlast = lo, last(lo, bits)
		}
		flush(n)
	}
}

// PieceChanges yields the elements of the lookup set of a hash:net to
// delete (dels) or to add (!dels) to turn the pieces of what Load read
// into the Bulk's pieces: the pieces that differ, as the general path's
// diff finds them.
func (b *Bulk) PieceChanges(dels bool) iter.Seq[*nftables.SetElement] {
	return b.pieceChanges(dels, false)
}

// NomatchPieceChanges is PieceChanges for the nomatch set.
func (b *Bulk) NomatchPieceChanges(dels bool) iter.Seq[*nftables.SetElement] {
	return b.pieceChanges(dels, true)
}

func (b *Bulk) pieceChanges(dels, nomatch bool) iter.Seq[*nftables.SetElement] {
	b.index = nil
	differ := func(o, n span) bool {
		counted := o.nested != n.nested && !b.Set.NestedSet
		return o.hi != n.hi || counted || !b.sameAttr(o.at, n.at)
	}
	return func(yield func(*nftables.SetElement) bool) {
		var el nftables.SetElement
		changedSpans(b.spans(true, nomatch), b.spans(false, nomatch), dels, differ, func(sp span) bool {
			return b.pieceElems(sp, &el, yield)
		})
	}
}

// changedSpans merges the spans of what Load read (old) with the Bulk's
// (cur), both in address order, and passes on the ones that change: of
// old (dels) those that cur lacks or has otherwise (differ), of cur
// (!dels) those that old lacks or has otherwise. It stops when take
// returns false.
func changedSpans(old, cur iter.Seq[span], dels bool, differ func(o, n span) bool, take func(span) bool) {
	nextOld, stopOld := iter.Pull(old)
	defer stopOld()
	nextNew, stopNew := iter.Pull(cur)
	defer stopNew()
	o, okO := nextOld()
	n, okN := nextNew()
	for okO || okN {
		var sp span
		var pass bool
		switch {
		case okO && okN && o.lo == n.lo:
			sp, pass = n, !dels && differ(o, n)
			if dels {
				sp, pass = o, differ(o, n)
			}
			o, okO = nextOld()
			n, okN = nextNew()
		case okO && (!okN || o.lo.less(n.lo)):
			sp, pass = o, dels
			o, okO = nextOld()
		default:
			sp, pass = n, !dels
			n, okN = nextNew()
		}
		if pass && !take(sp) {
			return
		}
	}
}

// NestedElems yields the elements of the set of nested counts of a set
// that keeps them apart (Set.NestedSet): one per top-level interval that
// has nested entries, as Set.NftSets makes them.
func (b *Bulk) NestedElems() iter.Seq[*nftables.SetElement] {
	b.index = nil
	return func(yield func(*nftables.SetElement) bool) {
		var el nftables.SetElement
		for sp := range b.spans(false, false) {
			if sp.nested > 0 && !b.nestedElem(sp, &el, yield) {
				return
			}
		}
	}
}

// NestedChanges is NestedElems' PieceChanges: the elements to delete
// (dels) or to add to turn the counts of what Load read into the Bulk's,
// in address order, as the general path's diff finds them.
func (b *Bulk) NestedChanges(dels bool) iter.Seq[*nftables.SetElement] {
	b.index = nil
	counted := func(old bool) iter.Seq[span] {
		return func(yield func(span) bool) {
			for sp := range b.spans(old, false) {
				if sp.nested > 0 && !yield(sp) {
					return
				}
			}
		}
	}
	return func(yield func(*nftables.SetElement) bool) {
		var el nftables.SetElement
		changedSpans(counted(true), counted(false), dels, func(o, n span) bool { return o.nested != n.nested }, func(sp span) bool {
			return b.nestedElem(sp, &el, yield)
		})
	}
}

// nestedElem yields the element of the set of nested counts of span sp.
func (b *Bulk) nestedElem(sp span, el *nftables.SetElement, yield func(*nftables.SetElement) bool) bool {
	alen := b.w - 4
	k := make([]byte, alen)
	if alen == 4 {
		binary.BigEndian.PutUint32(k, uint32(sp.lo.lo))
	} else {
		binary.BigEndian.PutUint64(k, sp.lo.hi)
		binary.BigEndian.PutUint64(k[8:], sp.lo.lo)
	}
	*el = nftables.SetElement{Key: k, Comment: TopComment(sp.nested)}
	return yield(el)
}

// sort sets b.order (b.order4 for IPv4): the records in the order of
// Set.pieces, by address, then prefix length.
func (b *Bulk) sort(addrOf func(int) u128, bitsOf func(int) int) {
	alen := b.w - 4
	n := len(b.attrs)
	if alen == 4 && n < 1<<26 {
		o := make([]uint64, n)
		for i := range o {
			o[i] = addrOf(i).lo<<32 | uint64(bitsOf(i))<<26 | uint64(i)
		}
		sortByTop14(o)
		b.order4 = o
		return
	}
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(x, y uint32) int {
		if c := bytes.Compare(b.keyOf(int(x))[:alen], b.keyOf(int(y))[:alen]); c != 0 {
			return c
		}
		return bitsOf(int(x)) - bitsOf(int(y))
	})
	b.order = order
}

// sortByTop14 sorts o ascending, as slices.Sort, in place: first by the
// top 14 bits (a counting pass and a permutation by cycles), then each
// run that shares them with slices.Sort. Keys spread over the address
// space leave short runs: about four times faster than sorting the
// whole slice at 100k keys, one and a half at 1M (the permutation's
// random accesses then miss the caches); keys that share their top
// bits cost one more pass than slices.Sort.
func sortByTop14(o []uint64) {
	const bits = 14
	if len(o) < 1<<12 || len(o) > 1<<31 {
		slices.Sort(o)
		return
	}
	next := make([]uint32, 1<<bits)
	end := make([]uint32, 1<<bits)
	for _, v := range o {
		end[v>>(64-bits)]++
	}
	at := uint32(0)
	for d := range end {
		next[d] = at
		at += end[d]
		end[d] = at
	}
	for d := range next {
		for next[d] < end[d] {
			v := o[next[d]]
			for t := int(v >> (64 - bits)); t != d; t = int(v >> (64 - bits)) {
				// v belongs to run t: put it there, carry on with
				// the value it displaces
				v, o[next[t]] = o[next[t]], v
				next[t]++
			}
			o[next[d]] = v
			next[d]++
		}
	}
	start := uint32(0)
	for d := range end {
		if end[d]-start > 1 {
			slices.Sort(o[start:end[d]])
		}
		start = end[d]
	}
}
