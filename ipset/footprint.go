package ipset

import (
	"encoding/binary"
	"math/bits"
)

// The header fields ipset takes from its kernel's hash table, which
// nftables does not have: the hashsize a hash set has grown to and
// "Size in memory". Footprint works them out from a set's members as
// ipset's kernel (ip_set_hash_gen.h) would hold them; see doc.go.

// Constants of the kernel's hash layout.
const (
	bucketStep   = 2  // AHASH_INIT_SIZE: slots a bucket grows by
	bucketHeader = 32 // struct hbucket: rcu head, used bitmap, size, pos
	regionSize   = 24 // struct ip_set_region: lock, ext_size, elements
	regionBits   = 10 // HTABLE_REGION_BITS: buckets per region lock
	maxTuned     = 64 // AHASH_MAX_TUNED: bucketsize tuned up to (hash:net,iface)
	commentHead  = 17 // struct ip_set_comment_rcu (16) and the text's NUL
	maxComment   = 255
	maxBits      = 27 // the largest table the kernel allocates (INT_MAX bytes of bucket pointers)
)

// kernelElem is how ipset's kernel lays out an element of a hash type:
// size and alignment of the element struct, and the size of the empty
// set (struct htype, struct htable and one region lock), measured with
// ipset 7.17 on Linux 6.18 where the kernel has the type (hash:ip,
// hash:net, hash:ip,port, hash:net,port, hash:ip,port,ip,
// hash:ip,port,net, hash:net,iface); the others (hash:net,net,
// hash:net,port,net, hash:ip,mark, hash:ip,mac, hash:mac) follow from
// the kernel's structs.
type kernelElem struct{ size, align, empty int }

var kernelElems = map[string][2]kernelElem{
	//                   inet               inet6
	"hash:ip":           {{4, 4, 216}, {16, 4, 224}},
	"hash:net":          {{8, 4, 456}, {20, 4, 1240}},
	"hash:ip,port":      {{8, 4, 216}, {20, 4, 232}},
	"hash:net,port":     {{8, 4, 456}, {20, 4, 1240}},
	"hash:ip,port,ip":   {{12, 4, 208}, {36, 4, 232}},
	"hash:ip,port,net":  {{12, 4, 464}, {36, 4, 1256}},
	"hash:net,iface":    {{28, 4, 488}, {40, 4, 1264}},
	"hash:net,net":      {{16, 8, 608}, {36, 4, 1784}},
	"hash:net,port,net": {{16, 8, 592}, {40, 4, 1768}},
	"hash:ip,mark":      {{8, 4, 200}, {20, 4, 216}},
	"hash:ip,mac":       {{12, 4, 208}, {24, 4, 216}},
	"hash:mac":          {{8, 4, 200}, {8, 4, 200}},
}

// Sizes of the bitmap and list:set structs (struct bitmap_ip,
// bitmap_port, bitmap_ipmac, list_set) and of their elements.
const (
	bitmapIPHead    = 88
	bitmapPortHead  = 72
	bitmapIPMACHead = 80
	bitmapIPMACElem = 8
	listSetHead     = 80
	listSetElem     = 48
)

// elemLen is ip_set_elem_len: the element followed by the extensions
// the set has (counter, timeout, skbinfo, comment, in that order), each
// at its alignment, rounded up to the largest alignment.
func (s *Set) elemLen(size, align int) int {
	for _, x := range []struct {
		on          bool
		size, align int
	}{{s.Counters, 16, 8}, {s.HasTimeout, 8, 8}, {s.SkbInfo, 16, 4}, {s.Comment, 8, 8}} {
		if x.on {
			align = max(align, x.align)
			size = alignUp(size, x.align) + x.size
		}
	}
	return alignUp(size, max(align, 1))
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// commentSize is what an entry's comment adds to the set's memory.
func commentSize(c string) int {
	if c == "" {
		return 0
	}
	return commentHead + min(len(c), maxComment)
}

// Footprint collects, member by member, what the header's hashsize and
// "Size in memory" need: the kernel hash of each member of a hash type
// and the size of the comments.
type Footprint struct {
	s        *Set
	hashes   []uint32
	groups   []uint64 // hash:net,iface: the member's net (address and prefix length), hashed
	comments int
	n        int
	key      []byte
}

// NewFootprint starts the footprint of s with no members.
func (s *Set) NewFootprint() *Footprint { return &Footprint{s: s} }

// Reset forgets the members seen so far (a dump that starts again).
func (f *Footprint) Reset() {
	f.hashes, f.groups, f.comments, f.n = f.hashes[:0], f.groups[:0], 0, 0
}

// hashed reports whether the set is a hash type.
func (f *Footprint) hashed() bool { return !f.s.Type.Bitmap && !f.s.Type.List }

// AddEntry counts one member.
func (f *Footprint) AddEntry(en *Entry) {
	f.n++
	if f.s.Comment {
		f.comments += commentSize(en.Comment)
	}
	if !f.hashed() {
		return
	}
	f.key = f.s.kernelKey(f.key[:0], en.Elem)
	f.hashes = append(f.hashes, jhash2(f.key, f.s.InitVal))
	if f.s.Type.Name == "hash:net,iface" {
		// Members of one net share a bucket whatever their interface:
		// ipset tunes the bucket size up for them.
		net := append(f.key[:len(f.key)-4:len(f.key)-4], 0, f.key[len(f.key)-3], 0, 0)
		f.groups = append(f.groups, uint64(jhash2(net, 1))<<32|uint64(jhash2(net, 2)))
	}
}

// AddKey counts the member whose nftables key (see MemberKeyLen) is key,
// for a set FastMembers prints: one address dimension and nothing per
// entry but nomatch.
func (f *Footprint) AddKey(key []byte) {
	f.n++
	alen := 4
	if f.s.Family == Inet6 {
		alen = 16
	}
	f.key = append(f.key[:0], key[:alen]...)
	if f.s.Type.Dims[0] == DimNet {
		// hash:net: padding, nomatch (0 when hashed), prefix length
		v := binary.NativeEndian.Uint32(key[alen : alen+4])
		f.key = append(f.key, 0, 0, 0, byte(v))
	}
	f.hashes = append(f.hashes, jhash2(f.key, f.s.InitVal))
}

// forceAddVictim is the member ipset's kernel replaces when an add of e
// finds s full and s was created with forceadd: the first member of the
// bucket e falls in (in the table the members grew, hashed with s's
// initval); nil when s has no forceadd or the bucket is empty, where
// ipset refuses the add ("Hash is full"). ipset's man page calls the
// victim random: it follows from the initval, which ipset draws at
// random unless create names one. The first member of a bucket is the
// first of its members in the set's order here (ipset's is the one in
// the bucket's first slot, which follows the order of its adds and
// dels).
func (s *Set) forceAddVictim(e Elem) *Entry {
	if !s.ForceAdd || s.Type.Bitmap || s.Type.List {
		return nil
	}
	f := s.NewFootprint()
	for _, en := range s.Entries {
		f.AddEntry(en)
	}
	size, _, _ := f.Result()
	mask := size - 1
	b := jhash2(s.kernelKey(nil, e), s.InitVal) & mask
	for i, h := range f.hashes {
		if h&mask == b {
			return s.Entries[i]
		}
	}
	return nil
}

// Len is the number of members counted.
func (f *Footprint) Len() int { return f.n }

// Result is the hashsize and the "Size in memory" ipset prints for the
// set holding the members counted, had they been added in that order
// to a set created with s's header; bucketsize is the bucket size the
// kernel then has (it tunes hash:net,iface's up).
func (f *Footprint) Result() (hashsize uint32, memsize int, bucketsize uint32) {
	s := f.s
	switch {
	case s.Type.List:
		return 0, listSetHead + f.n*s.elemLen(listSetElem, 8) + f.comments, 0
	case s.Type.Bitmap:
		var head, elems, size int
		switch s.Type.Dims[0] {
		case DimPort:
			head, elems = bitmapPortHead, int(s.PortHi)-int(s.PortLo)+1
			size = s.elemLen(0, 1)
		default:
			head, elems = bitmapIPHead, s.bitmapElements()
			size = s.elemLen(0, 1)
			if s.Type.OptionalMAC {
				head, size = bitmapIPMACHead, s.elemLen(bitmapIPMACElem, 8)
			}
		}
		return 0, head + (elems+63)/64*8 + elems*size + f.comments, 0
	}
	ke := s.kernelElem()
	dsize := s.elemLen(ke.size, ke.align)
	hbits := bits.Len32(max(s.HashSize, 64) - 1)
	cap := int(min(max(s.BucketSize, bucketStep), 12))
	cap += cap & 1
	hbits, cap, counts := f.grow(hbits, cap)
	slots := 0
	for _, c := range counts {
		slots += (int(c) + bucketStep - 1) / bucketStep
	}
	locks := 1
	if hbits >= regionBits {
		locks = 1 << (hbits - regionBits)
	}
	mem := ke.empty + (locks-1)*regionSize + slots*(bucketHeader+bucketStep*dsize) + f.comments
	return 1 << hbits, mem, uint32(cap)
}

// grow adds the members one by one as ipset's kernel does: an add that
// finds its bucket full (its slots grown to the bucket size) doubles
// the table, moving every member there (again while one bucket would
// overflow), and is tried again. hash:net,iface first tunes the bucket
// size up when the full bucket's members all have the new member's
// net. It returns the table's bits, the bucket size and the number of
// members in each bucket.
func (f *Footprint) grow(hbits, cap int) (int, int, []uint16) {
	counts := make([]uint16, 1<<hbits)
	// resize moves the first upto members to a table twice as large,
	// or larger while a bucket would overflow; it fails (the table
	// stays) where none the kernel can allocate will do.
	resize := func(upto int) bool {
		for nb := hbits + 1; nb <= maxBits; nb++ {
			next := make([]uint16, 1<<nb)
			ok := true
			for _, h := range f.hashes[:upto] {
				b := h & (1<<nb - 1)
				if int(next[b]) >= cap {
					ok = false
					break
				}
				next[b]++
			}
			if ok {
				hbits, counts = nb, next
				return true
			}
		}
		return false
	}
	multi := f.groups != nil
	for i, h := range f.hashes {
		for {
			b := h & (1<<hbits - 1)
			c := int(counts[b])
			if multi && c > 0 && c%bucketStep == 0 {
				// A full bucket of hash:net,iface: past the largest
				// bucket size ipset refuses the member ("Hash is
				// full"; counted where it is), else the size grows
				// when all of the bucket's members have its net.
				if cap >= maxTuned {
					counts[b]++
					break
				}
				if c >= cap && f.sameNet(i, hbits) >= cap {
					cap += bucketStep
				}
			}
			if c < cap {
				counts[b]++
				break
			}
			if !resize(i) {
				// ipset refuses the member ("Hash is full"); it is
				// counted where it is.
				counts[b]++
				break
			}
		}
	}
	return hbits, cap, counts
}

// sameNet counts the members before the i-th in its bucket that have
// its net (hash:net,iface compares the net before the interface).
func (f *Footprint) sameNet(i, hbits int) int {
	mask := uint32(1<<hbits - 1)
	n := 0
	for j := 0; j < i; j++ {
		if f.hashes[j]&mask == f.hashes[i]&mask && f.groups[j] == f.groups[i] {
			n++
		}
	}
	return n
}

// kernelElem is the layout of s's elements in the kernel.
func (s *Set) kernelElem() kernelElem {
	l := kernelElems[s.Type.Name]
	if s.Family == Inet6 && !s.Type.Neutral {
		return l[1]
	}
	return l[0]
}

// bitmapElements is the number of elements of a bitmap:ip or
// bitmap:ip,mac set (addresses, or networks of the netmask).
func (s *Set) bitmapElements() int {
	lo, hi := s.RangeLo.As4(), s.RangeHi.As4()
	first, last := binary.BigEndian.Uint32(lo[:]), binary.BigEndian.Uint32(hi[:])
	if s.Netmask > 0 && s.Netmask < 32 {
		return int((last-first)>>(32-s.Netmask)) + 1
	}
	return int(last-first) + 1
}

// kernelKey appends the bytes ipset's kernel hashes for element e of a
// hash type: the type's element struct with the flags (nomatch) clear,
// as far as the type's hashed length.
func (s *Set) kernelKey(dst []byte, e Elem) []byte {
	v6 := s.Family == Inet6 && !s.Type.Neutral
	addr := func(p Part) []byte {
		if v6 {
			a := p.Addr.As16()
			return a[:]
		}
		a := p.Addr.As4()
		return a[:]
	}
	port := func(p Part) []byte { return []byte{byte(p.Port >> 8), byte(p.Port)} }
	switch s.Type.Name {
	case "hash:ip":
		return append(dst, addr(e[0])...)
	case "hash:net":
		dst = append(dst, addr(e[0])...)
		return append(dst, 0, 0, 0, byte(e[0].Bits))
	case "hash:ip,port":
		dst = append(dst, addr(e[0])...)
		dst = append(dst, port(e[1])...)
		return append(dst, e[1].Proto, 0)
	case "hash:net,port":
		dst = append(dst, addr(e[0])...)
		dst = append(dst, port(e[1])...)
		return append(dst, e[1].Proto, byte(e[0].Bits-1)&0x7f)
	case "hash:ip,port,ip":
		dst = append(dst, addr(e[0])...)
		dst = append(dst, addr(e[2])...)
		dst = append(dst, port(e[1])...)
		return append(dst, e[1].Proto, 0)
	case "hash:ip,port,net":
		dst = append(dst, addr(e[0])...)
		dst = append(dst, addr(e[2])...)
		dst = append(dst, port(e[1])...)
		return append(dst, byte(e[2].Bits-1)&0x7f, e[1].Proto)
	case "hash:net,iface":
		// Only the net is hashed: ip, physdev, cidr, nomatch, elem (1).
		dst = append(dst, addr(e[0])...)
		pd := byte(0)
		if e[1].Physdev {
			pd = 1
		}
		return append(dst, pd, byte(e[0].Bits), 0, 1)
	case "hash:net,net":
		dst = append(dst, addr(e[0])...)
		dst = append(dst, addr(e[1])...)
		dst = append(dst, 0, 0, byte(e[0].Bits), byte(e[1].Bits))
		if !v6 {
			dst = append(dst, 0, 0, 0, 0) // the struct's tail (8-byte aligned)
		}
		return dst
	case "hash:net,port,net":
		dst = append(dst, addr(e[0])...)
		dst = append(dst, addr(e[2])...)
		dst = append(dst, port(e[1])...)
		// port, prefix lengths, nomatch, protocol, the struct's tail
		return append(dst, byte(e[0].Bits), byte(e[2].Bits), 0, e[1].Proto, 0, 0)
	case "hash:ip,mark":
		dst = append(dst, addr(e[0])...)
		return binary.LittleEndian.AppendUint32(dst, e[1].Mark)
	case "hash:ip,mac":
		dst = append(dst, addr(e[0])...)
		return append(append(dst, e[1].MAC[:]...), 0, 0)
	case "hash:mac":
		return append(append(dst, e[0].MAC[:]...), 0, 0)
	}
	return dst
}

// jhash2 is the kernel's jhash2 over key read as 32-bit words in the
// byte order of the kernel's host (little endian: x86, arm64).
func jhash2(key []byte, initval uint32) uint32 {
	n := len(key) / 4
	a := 0xdeadbeef + uint32(n)<<2 + initval
	b, c := a, a
	w := func(i int) uint32 { return binary.LittleEndian.Uint32(key[4*i:]) }
	i := 0
	for ; n > 3; n, i = n-3, i+3 {
		a += w(i)
		b += w(i + 1)
		c += w(i + 2)
		a -= c
		a ^= bits.RotateLeft32(c, 4)
		c += b
		b -= a
		b ^= bits.RotateLeft32(a, 6)
		a += c
		c -= b
		c ^= bits.RotateLeft32(b, 8)
		b += a
		a -= c
		a ^= bits.RotateLeft32(c, 16)
		c += b
		b -= a
		b ^= bits.RotateLeft32(a, 19)
		a += c
		c -= b
		c ^= bits.RotateLeft32(b, 4)
		b += a
	}
	switch n {
	case 3:
		c += w(i + 2)
		fallthrough
	case 2:
		b += w(i + 1)
		fallthrough
	case 1:
		a += w(i)
		c ^= b
		c -= bits.RotateLeft32(b, 14)
		a ^= c
		a -= bits.RotateLeft32(c, 11)
		b ^= a
		b -= bits.RotateLeft32(a, 25)
		c ^= b
		c -= bits.RotateLeft32(b, 16)
		a ^= c
		a -= bits.RotateLeft32(c, 4)
		b ^= a
		b -= bits.RotateLeft32(a, 14)
		c ^= b
		c -= bits.RotateLeft32(b, 24)
	}
	return c
}
