package ipset

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"golang.org/x/sys/unix"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// Names of the nftables sets that hold an ipset set.
const (
	LookupPrefix  = "ipset."         // the set rules look up
	EntriesPrefix = "ipset-entries." // the entries of net types, as written
	commentPrefix = "ipset "
)

// NftNamePart is set name as it is written in the names of its nftables
// sets. An ipset name may hold any character, but the kernel takes a '%'
// in the name of a new nftables set as the place of a number it picks
// itself ("x%dy" is created as "x0y", another '%' is refused with EINVAL),
// as it does for anonymous sets: a '%' is written as "\p", and so that
// names read back stay unambiguous, a backslash as "\\". Other names are
// written as they are.
func NftNamePart(name string) string {
	if !strings.ContainsAny(name, "%\\") {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '%':
			b.WriteString("\\p")
		case '\\':
			b.WriteString("\\\\")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// nameFromNftPart is the set name NftNamePart wrote as part.
func nameFromNftPart(part string) string {
	if !strings.Contains(part, "\\") {
		return part
	}
	var b strings.Builder
	for i := 0; i < len(part); i++ {
		c := part[i]
		if c == '\\' && i+1 < len(part) {
			switch part[i+1] {
			case 'p':
				b.WriteByte('%')
				i++
				continue
			case '\\':
				b.WriteByte('\\')
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// LookupSetName is the nftables set a rule matching set name looks up.
func LookupSetName(name string) string { return LookupPrefix + NftNamePart(name) }

// EntriesSetName is the nftables set that keeps the entries of a net type
// stored in one set (Shards 0).
func EntriesSetName(name string) string { return EntriesPrefix + NftNamePart(name) }

// Sharded entries: the entries of a net type with a large maxelem are
// kept in Shards sets, an entry's set chosen by a hash of its key, so
// that a dump reads several small sets. The kernel resumes a set dump by
// walking the set from its start for every 32 KiB datagram, skipping
// what it sent, which makes the dump of one large set quadratic in its
// size.
const (
	ShardPrefix = "ipset-shard." // "ipset-shard.NAME.I": entries of shard I
	CountPrefix = "ipset-count." // one element: how many entries there are
)

// ShardSetName is the nftables set that keeps shard i of the entries of
// set name. (An index follows the last dot: the names of two sets never
// collide.)
func ShardSetName(name string, i int) string {
	return ShardPrefix + NftNamePart(name) + "." + strconv.Itoa(i)
}

// CountSetName is the set whose one element counts the entries of a
// sharded set: the kernel's size limit holds per nftables set, so that
// maxelem is checked against this count instead.
func CountSetName(name string) string { return CountPrefix + NftNamePart(name) }

// NestedPrefix names the set of the counts of nested entries of a set
// of the top-level layout that keeps them apart (Set.NestedSet): one
// element per top-level interval that has nested entries, keyed by the
// interval's first address, its comment the count (TopComment).
const NestedPrefix = "ipset-nested."

// NestedSetName is the nftables set of the nested counts of set name
// (Set.NestedSet).
func NestedSetName(name string) string { return NestedPrefix + NftNamePart(name) }

// shardsWord introduces the shard count in the stored header.
const shardsWord = "shards"

// shardMinMaxElem: net types of a larger maxelem are sharded;
// plainShardMinMaxElem: the same for the other hash types (ShardCopies),
// whose shards are a second copy of the lookup set's elements that
// every change writes too: below it one set dumps fast enough, and a
// restore of 100k entries into a set of maxelem 262144 writes them once.
// shardTarget is about how many entries a shard holds when the set is
// full.
const (
	shardMinMaxElem      = 65536
	plainShardMinMaxElem = 262144
	shardTarget          = 8192
	shardMax             = 1024
)

// shardsFor is the number of entries sets a new set s (its type and
// create options) gets (0: one, the unsharded layout).
func shardsFor(s *Set) int {
	m := s.MaxElem
	switch {
	case s.Type.Net() && m > shardMinMaxElem:
	case ShardCopiesEligible(s) && m > plainShardMinMaxElem:
	default:
		return 0
	}
	k := 2
	for k < shardMax && uint32(k)*shardTarget < m {
		k *= 2
	}
	return k
}

// ShardCopiesEligible reports whether a set of a plain hash type (no net
// dimension) may keep a copy of its entries in shards (ShardCopies): the
// lookup set holds the entries of these types, and nothing but ipset
// commands may change it. Elements with timeouts expire in the lookup
// set and counters count packets there, so sets with either are never
// sharded; a -j SET rule that writes to a sharded set drops its shards
// (setengine).
func ShardCopiesEligible(s *Set) bool {
	return !s.Type.Net() && !s.Type.Bitmap && !s.Type.List && !s.Type.OptionalMAC && !s.HasTimeout && !s.Counters
}

// Sharded reports whether the entries of s are kept in shards.
func (s *Set) Sharded() bool { return s.Shards > 1 }

// ShardCopies reports whether s is a plain hash type whose entries the
// shards keep a copy of (the lookup set holds them too).
func (s *Set) ShardCopies() bool { return s.Sharded() && !s.Type.Net() }

// ShardSize is the size (the kernel's limit on its elements) that a
// shard of s created with n entries gets: room for half as many again.
// A shard without a size is a hash table that starts with four buckets
// and grows; a transaction that fills it grows it a dozen times, and
// since the kernel moves the elements to the larger table only after
// the transaction, each insert meanwhile looks its key up in every
// table of that chain (a fifth of the CPU time of a 100k restore). With a
// size the table is made large enough at once. A shard that fills up
// is re-created without a size (setengine, Engine.commitSized), so the
// size never limits the set: maxelem is checked against the count set.
// 0 (no size): empty shards, and sets with timeouts or counters, whose
// elements a re-creation could not carry over exactly.
func (s *Set) ShardSize(n int) uint32 {
	if !s.Sharded() || s.HasTimeout || s.Counters || n <= 0 {
		return 0
	}
	return uint32(n + n/2 + 256)
}

// ShardSetOf is the ipset name whose shard nftables set nftName is, and
// whether it is one.
func ShardSetOf(nftName string) (string, bool) {
	rest, ok := strings.CutPrefix(nftName, ShardPrefix)
	dot := strings.LastIndexByte(rest, '.')
	if !ok || dot < 0 {
		return "", false
	}
	if _, err := strconv.Atoi(rest[dot+1:]); err != nil {
		return "", false
	}
	return nameFromNftPart(rest[:dot]), true
}

// ShardOf returns the shard of an entries-set key: a hash of its
// dimensions (not of the prefix lengths and flags that end the key of a
// net type).
func (s *Set) ShardOf(key []byte) int {
	if !s.Type.Net() {
		return shardHash(key, s.Shards)
	}
	return shardHash(key[:max(len(key)-4, 0)], s.Shards)
}

// shardHash is FNV-1a of key modulo n.
func shardHash(key []byte, n int) int {
	h := uint32(2166136261)
	for _, c := range key {
		h = (h ^ uint32(c)) * 16777619
	}
	return int(h % uint32(n))
}

// CopySetNames names the sets that keep a copy of the entries of a set
// with shard copies (its shards and count set), which a -j SET rule on
// the set destroys: the set is then read as one lookup set.
func (s *Set) CopySetNames() []string {
	return append(s.EntriesSets(), CountSetName(s.Name))
}

// DropShardCopies makes s, whose shards were found gone (a -j SET rule
// dropped them: the count set is missing), a set of one lookup set.
// Its stored header still names the shards; Header no longer does.
func (s *Set) DropShardCopies() { s.Shards, s.shardGone = 0, nil }

// NoteShards records which shards of s exist in the kernel (exists: by
// nftables set name).
func (s *Set) NoteShards(exists func(nftName string) bool) {
	s.shardGone, s.nested = nil, madeUnknown
	if !s.Sharded() {
		return
	}
	if s.NestedSet {
		s.nested = madeNo
		if exists(NestedSetName(s.Name)) {
			s.nested = madeYes
		}
	}
	s.shardGone = make([]bool, s.Shards)
	for i := range s.shardGone {
		s.shardGone[i] = !exists(ShardSetName(s.Name, i))
	}
}

// noShardsMade records that none of the shards of s exist (a new set).
func (s *Set) noShardsMade() {
	s.NoteShards(func(string) bool { return false })
}

// madeState says whether an nftables set made with its first element
// exists in the kernel.
type madeState int8

const (
	madeUnknown madeState = iota // not known: it may
	madeYes
	madeNo
)

// NestedMade reports whether the set of nested counts of s (NestedSet)
// is known to exist.
func (s *Set) NestedMade() bool { return s.nested == madeYes }

// NestedMayExist reports whether the set of nested counts of s may
// exist in the kernel: it was seen, or it is not known.
func (s *Set) NestedMayExist() bool { return s.NestedSet && s.nested != madeNo }

// ShardMade reports whether shard i of s is known to exist.
func (s *Set) ShardMade(i int) bool {
	return s.shardGone != nil && i >= 0 && i < len(s.shardGone) && !s.shardGone[i]
}

// ShardMayExist reports whether shard i of s may exist in the kernel:
// it was seen, or it is not known.
func (s *Set) ShardMayExist(i int) bool {
	return s.shardGone == nil || i < 0 || i >= len(s.shardGone) || !s.shardGone[i]
}

// EntriesSets names the nftables sets that hold the entries of s as
// written, in the order a listing reads them (of the shards, those that
// may exist).
func (s *Set) EntriesSets() []string {
	if !s.Sharded() {
		return []string{s.EntriesNftSet()}
	}
	names := make([]string, 0, s.Shards)
	for i := range s.Shards {
		if s.ShardMayExist(i) {
			names = append(names, ShardSetName(s.Name, i))
		}
	}
	return names
}

// EntriesSetOf names the nftables set that holds the entry of key (as
// EntryKey gives it).
func (s *Set) EntriesSetOf(key []byte) string {
	if !s.Sharded() {
		return s.EntriesNftSet()
	}
	return ShardSetName(s.Name, s.ShardOf(key))
}

// ShardIndex returns the shard that nftables set name is of s.
func (s *Set) ShardIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, ShardPrefix+NftNamePart(s.Name)+".")
	if !ok || !s.Sharded() {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0 && i < s.Shards
}

// CountKey is the count element's key for n entries.
func CountKey(n int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// ParseCount reads a count element's key.
func ParseCount(key []byte) (int, bool) {
	if len(key) != 4 {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(key)), true
}

// SetCountBias sets what is added to the number of entries s holds to
// give the count a sharded set stores: for a set read in part (setengine's
// treeRun), what the entries not read add.
func (s *Set) SetCountBias(n int) { s.countBias = n }

// StoredCount is the count of entries stored for s.
func (s *Set) StoredCount() int { return len(s.Entries) + s.countBias }

// NftSetNames names every nftables set that holds s (the nomatch set
// aside: it exists only while needed, see NomatchSetName).
func (s *Set) NftSetNames() []string {
	names := []string{LookupSetName(s.Name)}
	if !s.Type.Net() && !s.Sharded() {
		return names
	}
	names = append(names, s.EntriesSets()...)
	if s.Sharded() {
		names = append(names, CountSetName(s.Name))
	}
	if s.NestedMayExist() {
		names = append(names, NestedSetName(s.Name))
	}
	return names
}

// NftSet is an nftables set with its logical elements: each logical
// element is one or two nftables elements (an interval's start and end).
type NftSet struct {
	Set   nftables.Set
	Elems []NftElem
	Role  Role
	// Lazy: a shard or the set of nested counts, made when it first
	// gets an element (an empty one is not created; see
	// Set.ShardMayExist, Set.NestedMayExist).
	Lazy bool
}

// Role says what an nftables set of an ipset set holds.
type Role int

const (
	RoleLookup  Role = iota // the set rules look up
	RoleEntries             // (a shard of) the entries of a net type
	RoleCount               // the entry count of a sharded set
	RoleNested              // the nested counts of the top-level intervals (Set.NestedSet)
)

// NftElem is one logical element; ID identifies it for diffs (key and
// attributes: an element whose timeout or comment changes is replaced).
type NftElem struct {
	ID    string
	Parts []nftables.SetElement
}

// Supported reports whether the kernel mapping covers s.
func (s *Set) Supported() error { return nil }

// fieldTypes returns the nftables types of the lookup key of s.
func (s *Set) fieldTypes() []nftables.SetDatatype {
	var ts []nftables.SetDatatype
	addr := nftables.TypeIPAddr
	if s.Family == Inet6 {
		addr = nftables.TypeIP6Addr
	}
	for _, d := range s.Type.Dims {
		switch d {
		case DimIP, DimNet:
			ts = append(ts, addr)
		case DimPort:
			if s.Type.Bitmap {
				ts = append(ts, nftables.TypeInetService)
			} else {
				ts = append(ts, nftables.TypeInetProto, nftables.TypeInetService)
			}
		case DimIface:
			ts = append(ts, nftables.TypeIFName)
		case DimMAC:
			ts = append(ts, nftables.TypeEtherAddr)
		case DimMark, DimSet:
			ts = append(ts, nftables.TypeMark)
		}
	}
	return ts
}

func keyType(ts []nftables.SetDatatype) nftables.SetDatatype {
	if len(ts) == 1 {
		return ts[0]
	}
	t, _ := nftables.ConcatSetType(ts...)
	return t
}

// Header is the text kept in the lookup set's comment: type and create
// options, from which save and list print the header.
func (s *Set) Header() string {
	h := commentPrefix + s.Type.Name + " " + strings.Join(s.headerOptions(false, nil), " ")
	if s.ForceAdd {
		// (ipset does not list it; kept as the create option it is)
		h += " forceadd"
	}
	if s.Sharded() {
		h += " " + shardsWord + " " + strconv.Itoa(s.Shards)
	}
	if s.TopLayout {
		h += " " + topWord
	}
	if s.NestedSet {
		h += " " + nestedWord
	}
	if s.Slot > 0 {
		h += " " + slotWord + " " + strconv.Itoa(s.Slot)
	}
	return h
}

// slotWord introduces the set's slot at the end of its stored header.
const slotWord = "slot"

// ParseHeader rebuilds a set (without entries) from a lookup set's name
// and comment. ok is false for sets that are not ours.
func ParseHeader(nftName, comment string) (*Set, bool) {
	part, ok := strings.CutPrefix(nftName, LookupPrefix)
	rest, ok2 := strings.CutPrefix(comment, commentPrefix)
	if !ok || !ok2 {
		return nil, false
	}
	name := nameFromNftPart(part)
	f := strings.Fields(rest)
	if len(f) == 0 {
		return nil, false
	}
	t := LookupType(f[0])
	if t == nil {
		return nil, false
	}
	s := NewSet(name, t)
	opts := f[1:]
	if n := len(opts); n >= 2 && opts[n-2] == slotWord {
		v, err := strconv.Atoi(opts[n-1])
		if err != nil || v <= 0 {
			return nil, false
		}
		s.Slot, opts = v, opts[:n-2]
	}
	if n := len(opts); n >= 1 && opts[n-1] == nestedWord {
		s.NestedSet, opts = true, opts[:n-1]
	}
	if n := len(opts); n >= 1 && opts[n-1] == topWord {
		if !TopEligible(s) {
			return nil, false
		}
		s.TopLayout, opts = true, opts[:n-1]
	}
	if n := len(opts); n >= 2 && opts[n-2] == shardsWord && (s.Type.Net() || ShardCopiesEligible(s)) {
		v, err := strconv.Atoi(opts[n-1])
		if err != nil || v < 2 || v > shardMax {
			return nil, false
		}
		s.Shards, opts = v, opts[:n-2]
	}
	if err := parseCreateOptions(s, opts); err != nil {
		return nil, false
	}
	if s.ShardCopies() && !ShardCopiesEligible(s) {
		return nil, false // (timeout or counters: never written so)
	}
	if s.TopLayout && !TopEligible(s) || s.NestedSet && !s.TopLayout {
		return nil, false
	}
	return s, true
}

// topWord marks a set of the top-level layout (Set.TopLayout) in its
// stored header, between the shard count and the slot.
const topWord = "top"

// nestedWord follows topWord in the stored header of a set that keeps
// its nested counts apart (Set.NestedSet).
const nestedWord = "nested"

// nestedEligible reports whether a new set s keeps its nested counts
// apart (Set.NestedSet): a set of the top-level layout large enough to
// be sharded. (A small set's lookup set is rebuilt fast; it keeps the
// counts in its start elements, one nftables set fewer.)
func nestedEligible(s *Set) bool { return s.TopLayout && s.Sharded() }

// TopEligible reports whether the lookup set of s can hold one interval
// per top-level entry: a hash:net of one dimension whose entries carry
// no timeout, counters, comment or skbinfo (a piece would have to).
func TopEligible(s *Set) bool {
	return s.Type.Net() && len(s.Type.Dims) == 1 && !s.HasTimeout && !s.Counters && !s.Comment && !s.SkbInfo
}

// TopComment is the comment of the start element of a top-level
// interval holding n nested entries ("" for none).
func TopComment(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// TopCount reads TopComment.
func TopCount(comment string) (int, bool) {
	if comment == "" {
		return 0, true
	}
	n, err := strconv.Atoi(comment)
	return n, err == nil && n > 0
}

// pad4 appends b padded to a multiple of 4 bytes (concatenation layout).
func pad4(dst, b []byte) []byte {
	dst = append(dst, b...)
	for len(b)%4 != 0 {
		dst = append(dst, 0)
		b = append(b, 0)
	}
	return dst
}

// keyParts encodes e as key bytes; lo/hi: for net dimensions the first or
// last address of the prefix.
func (s *Set) key(e Elem, last bool) []byte {
	var k []byte
	if s.Type.List {
		return binary.BigEndian.AppendUint32(nil, e[0].pos) // see nftSets
	}
	if len(s.fieldTypes()) == 1 && s.Type.Bitmap && s.Type.Dims[0] == DimPort {
		return binary.BigEndian.AppendUint16(nil, e[0].Port)
	}
	if len(s.fieldTypes()) == 1 && s.Type.Dims[0] == DimMAC {
		return append([]byte(nil), e[0].MAC[:]...) // ether_addr: 6 bytes, unpadded
	}
	for i, d := range s.Type.Dims {
		p := e[i]
		switch d {
		case DimIP:
			k = pad4(k, p.Addr.AsSlice())
		case DimNet:
			a := p.Addr
			if last {
				a = lastAddr(netip.PrefixFrom(a, p.Bits))
			}
			k = pad4(k, a.AsSlice())
		case DimPort:
			if !s.Type.Bitmap {
				k = pad4(k, []byte{p.Proto})
			}
			k = pad4(k, binary.BigEndian.AppendUint16(nil, p.Port))
		case DimIface:
			var n [16]byte
			copy(n[:], p.Iface)
			k = append(k, n[:]...)
		case DimMAC:
			k = pad4(k, p.MAC[:])
		case DimMark:
			k = binary.NativeEndian.AppendUint32(k, p.Mark)
		}
	}
	return k
}

// meta packs the prefix lengths and nomatch flag of an entry of a net
// type into the extra field of the entries set's key.
func (s *Set) meta(en *Entry) []byte {
	var v uint32
	shift := 0
	for i, d := range s.Type.Dims {
		if d == DimNet {
			v |= uint32(en.Elem[i].Bits) << shift
			shift += 8
		}
		if d == DimIface && en.Elem[i].Physdev {
			v |= 1 << 24
		}
		if d == DimIface && en.Elem[i].Wildcard {
			v |= 1 << 25
		}
	}
	if en.Nomatch {
		v |= 1 << 16
	}
	return binary.NativeEndian.AppendUint32(nil, v)
}

func (s *Set) base(name string, ts []nftables.SetDatatype, interval bool) nftables.Set {
	return nftables.Set{
		Name:          name,
		KeyType:       keyType(ts),
		Concatenation: len(ts) > 1,
		Interval:      interval,
		HasTimeout:    s.HasTimeout,
		Counter:       s.Counters,
		// Rules add and delete elements of plain (non-interval) sets
		// (-j SET): that needs a backend the packet path can update.
		Dynamic: !interval && !s.Type.Net(),
	}
}

func (s *Set) attrs(en *Entry, e *nftables.SetElement, id bool) string {
	if s.HasTimeout && en.Timeout > 0 {
		e.Timeout = time.Duration(en.Timeout) * time.Second
	}
	c := ""
	if s.Comment {
		c = en.Comment
	}
	if s.Type.List {
		// A list:set's member is its element's comment (the key is
		// the position), followed by the entry's own comment.
		c = en.Elem[0].Name
		if s.Comment && en.Comment != "" {
			c += listCommentSep + en.Comment
		}
	}
	e.Comment = s.entryMeta(en) + c
	if len(e.Comment) > maxElemComment {
		// Element userdata holds at most 256 bytes.
		e.Comment = e.Comment[:maxElemComment]
	}
	if s.Counters && (en.Packets != 0 || en.Bytes != 0) {
		e.Counter = &expr.Counter{Packets: en.Packets, Bytes: en.Bytes}
	}
	if !id {
		return ""
	}
	if en.Timeout == 0 && e.Comment == "" && e.Counter == nil {
		return "/0/"
	}
	return fmt.Sprintf("/%d/%q/%d/%d", en.Timeout, e.Comment, en.Packets, en.Bytes)
}

// maxElemComment is the longest comment an element's userdata holds
// (its userdata, with type, length and NUL, stays below 255 bytes, which
// the kernel takes in every set).
const maxElemComment = 251

// metaSep encloses what an element's comment holds besides the
// comment: skbinfo values and the missing MAC of a bitmap:ip,mac entry.
const metaSep = "\x1e"

// entryMeta is the prefix of an element's comment that keeps the
// entry's options nftables has no place for.
func (s *Set) entryMeta(en *Entry) string {
	var f []string
	if s.Type.OptionalMAC && len(en.Elem) > 1 && !en.Elem[1].HasMAC {
		f = append(f, "nomac")
	}
	if s.SkbInfo {
		if en.HasMark {
			f = append(f, fmt.Sprintf("mark=%x/%x", en.SkbMark, en.SkbMask))
		}
		if en.HasPrio {
			f = append(f, fmt.Sprintf("prio=%x", en.SkbPrio))
		}
		if en.HasQueue {
			f = append(f, fmt.Sprintf("queue=%d", en.SkbQueue))
		}
	}
	if len(f) == 0 {
		return ""
	}
	return metaSep + strings.Join(f, " ") + metaSep
}

// splitMeta separates an element comment into entryMeta's fields and
// the rest, and applies the fields to en.
func splitMeta(comment string, en *Entry) (rest string, nomac bool) {
	body, ok := strings.CutPrefix(comment, metaSep)
	if !ok {
		return comment, false
	}
	meta, rest, ok := strings.Cut(body, metaSep)
	if !ok {
		return comment, false
	}
	for _, f := range strings.Fields(meta) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "nomac":
			nomac = true
		case "mark":
			m, mask, _ := strings.Cut(v, "/")
			a, _ := strconv.ParseUint(m, 16, 32)
			b, _ := strconv.ParseUint(mask, 16, 32)
			en.SkbMark, en.SkbMask, en.HasMark = uint32(a), uint32(b), true
		case "prio":
			a, _ := strconv.ParseUint(v, 16, 32)
			en.SkbPrio, en.HasPrio = uint32(a), true
		case "queue":
			a, _ := strconv.ParseUint(v, 10, 16)
			en.SkbQueue, en.HasQueue = uint16(a), true
		}
	}
	return rest, nomac
}

// NftSets returns the nftables sets that hold s: the lookup set, and for
// net types the entries set.
func (s *Set) NftSets() []NftSet { return s.nftSets(true) }

// NftSetsNoIDs is NftSets without the elements' IDs (for sets created
// whole, which need no diff).
func (s *Set) NftSetsNoIDs() []NftSet { return s.nftSets(false) }

func (s *Set) nftSets(ids bool) []NftSet {
	ts := s.fieldTypes()
	if !s.Type.Net() {
		look := NftSet{Set: s.base(LookupSetName(s.Name), ts, false)}
		look.Set.Comment = s.Header()
		if !s.Type.Bitmap && !s.Type.List {
			look.Set.Size = s.MaxElem
		}
		look.Elems = make([]NftElem, 0, len(s.Entries))
		for i, en := range s.Entries {
			el := nftables.SetElement{Key: s.key(en.Elem, false)}
			if s.Type.List {
				el.Key = binary.BigEndian.AppendUint32(nil, uint32(i)) // the position
			}
			id := s.attrs(en, &el, ids)
			if ids {
				id = hex.EncodeToString(el.Key) + id
			}
			look.Elems = append(look.Elems, NftElem{ID: id, Parts: []nftables.SetElement{el}})
		}
		if !s.Sharded() {
			return []NftSet{look}
		}
		// ShardCopies: the same elements again, each in its shard.
		shards := make([]NftSet, s.Shards)
		for i := range shards {
			set := look.Set
			set.Name, set.Size, set.Comment, set.Dynamic = ShardSetName(s.Name, i), 0, "", false
			shards[i] = NftSet{Set: set, Role: RoleEntries, Lazy: true}
		}
		for _, x := range look.Elems {
			sh := &shards[s.ShardOf(x.Parts[0].Key)]
			sh.Elems = append(sh.Elems, x)
		}
		return append(append([]NftSet{look}, shards...), s.countSet())
	}
	eset := s.base(EntriesSetName(s.Name), append(ts[:len(ts):len(ts)], nftables.TypeMark), false)
	// The entries set keeps counters given at add (packets count in
	// the lookup set's pieces).
	eset.Counter = s.Counters
	eset.Size = s.MaxElem
	// A set with a size and without timeouts would get the kernel's
	// fixed-size hash, its buckets allocated for maxelem entries at once
	// (1 MiB at the default 65536, whatever the set holds) and walked
	// whole by every dump: a thousand small sets took seconds to restore
	// and to list. The resizable hash starts small; the size stays the
	// limit ("Hash is full" at maxelem).
	eset.Dynamic = true
	shards := make([]NftSet, max(s.Shards, 1))
	for i := range shards {
		shards[i] = NftSet{Set: eset, Role: RoleEntries}
		if s.Sharded() {
			// Sized after its elements (ShardSize); maxelem is checked
			// against the count set.
			shards[i].Set.Name, shards[i].Set.Size, shards[i].Set.Dynamic = ShardSetName(s.Name, i), 0, false
			shards[i].Lazy = true
		} else {
			shards[i].Elems = make([]NftElem, 0, len(s.Entries))
		}
	}
	for _, en := range s.Entries {
		el := nftables.SetElement{Key: append(s.key(en.Elem, false), s.meta(en)...)}
		id := s.attrs(en, &el, ids)
		if ids {
			id = hex.EncodeToString(el.Key) + id
		}
		sh := &shards[0]
		if s.Sharded() {
			sh = &shards[s.ShardOf(el.Key)]
		}
		sh.Elems = append(sh.Elems, NftElem{ID: id, Parts: []nftables.SetElement{el}})
	}
	if s.Sharded() {
		for i := range shards {
			shards[i].Set.Size = s.ShardSize(len(shards[i].Elems))
		}
	}
	look := NftSet{Set: s.base(LookupSetName(s.Name), ts, true)}
	look.Set.Comment = s.Header()
	var nested *[]NftElem
	if s.NestedSet {
		nested = new([]NftElem)
	}
	look.Elems = s.piecesOf(ids, false, nested)
	out := append([]NftSet{look}, shards...)
	if s.Sharded() {
		out = append(out, s.countSet())
	}
	if s.NestedSet {
		out = append(out, NftSet{Set: s.NestedNftSet(), Elems: *nested, Role: RoleNested, Lazy: true})
	}
	return out
}

// NestedNftSet is the definition of the set of nested counts
// (Set.NestedSet): a hash set keyed by address, resizable (no size: one
// element per tree at most, bounded by the entries' maxelem).
func (s *Set) NestedNftSet() nftables.Set {
	n := s.base(NestedSetName(s.Name), s.fieldTypes(), false)
	n.Counter, n.HasTimeout, n.Dynamic = false, false, true
	return n
}

// countSet is the count set of a sharded set with its one element.
func (s *Set) countSet() NftSet {
	k := CountKey(s.StoredCount())
	return NftSet{Set: nftables.Set{Name: CountSetName(s.Name), KeyType: nftables.TypeMark}, Role: RoleCount,
		Elems: []NftElem{{ID: hex.EncodeToString(k), Parts: []nftables.SetElement{{Key: k}}}}}
}

// LongGC reports whether nftables set n of an ipset set is to be created
// with the timeout flag and the longest garbage collection interval
// although its elements have no timeouts (kernel.Batch.AddSetLongGC):
// the lookup set of a net type (an interval set) of a set without
// timeouts. The kernel scans an interval set for expired elements in
// the first commit that changes it after each GC interval (one second
// by default), a walk of the whole set for a single add or del. The
// nomatch set keeps the definition rules create it with.
func LongGC(n nftables.Set) bool {
	return strings.HasPrefix(n.Name, LookupPrefix) && n.Interval && !n.HasTimeout
}

// NomatchNftSet is the definition of the nomatch set of a net type (see
// NomatchSetName): an interval set keyed like the lookup set, without
// counters. Rules that look it up (-m set --return-nomatch) create it
// with this definition when it does not exist, so every creator must
// use it unchanged (the kernel refuses a second definition).
func (s *Set) NomatchNftSet() nftables.Set {
	n := s.base(NomatchSetName(s.Name), s.fieldTypes(), true)
	n.Counter = false
	return n
}

// Nomatch returns the nomatch set of a net type with its elements: the
// pieces of the flattened entries whose owner is a nomatch entry, the
// addresses for which ipset's lookup finds a nomatch entry.
func (s *Set) Nomatch(ids bool) NftSet {
	return NftSet{Set: s.NomatchNftSet(), Elems: s.piecesOf(ids, true, nil)}
}

// piecesOf flattens the entries of a net type into disjoint intervals that
// give ipset's answer for every packet: within each group of entries that
// agree on the non-net dimensions, an address belongs to the most specific
// prefix covering it, and is in the set unless that prefix is nomatch.
// Each piece carries the timeout and comment of the entry that owns it.
// nomatch false returns the pieces of the lookup set (owned by plain
// entries), true those of the nomatch set (owned by nomatch entries).
//
// nested (Set.NestedSet) gets the elements of the set of nested counts;
// the start elements of the top-level intervals then carry no count.
func (s *Set) piecesOf(ids, nomatch bool, nested *[]NftElem) []NftElem {
	netDim, net2 := -1, -1
	for i, d := range s.Type.Dims {
		if d == DimNet {
			if netDim < 0 {
				netDim = i
			} else {
				net2 = i
			}
		}
	}
	shared := s.Type.IfaceShared()
	ifDim := -1
	if shared {
		ifDim = slices.Index(s.Type.Dims, DimIface)
	}
	// A run of entries with one first prefix is a node of the tree when
	// their other dimensions differ within a group: the interfaces of a
	// shared tree, the second prefixes of a type with two.
	runs := shared || net2 >= 0
	groups := map[string][]*Entry{}
	var order []string
	if len(s.Type.Dims) == 1 {
		// One dimension: one group. (The group is sorted in place.)
		order = []string{""}
		groups[""] = append(make([]*Entry, 0, len(s.Entries)), s.Entries...)
	}
	for _, en := range s.Entries {
		if len(s.Type.Dims) == 1 {
			break
		}
		if shared && slices.ContainsFunc(en.Elem, func(p Part) bool { return p.Physdev }) {
			// ipset looks up a packet's interface without the
			// physdev flag (iptables has no way to ask for it):
			// such an entry matches no packet, and the entries
			// with it form a tree of their own.
			continue
		}
		g := make(Elem, len(en.Elem))
		copy(g, en.Elem)
		g[netDim] = Part{}
		for i, d := range s.Type.Dims {
			if d == DimIface {
				// The interfaces share one tree (IfaceShared).
				g[i] = Part{}
			}
		}
		if net2 >= 0 {
			// The second prefixes share the tree of the first: ipset
			// decides by the most specific first prefix, then the
			// most specific second (see boxes).
			g[net2] = Part{}
		}
		k := s.Key(g)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], en)
	}
	concat := len(s.fieldTypes()) > 1
	var out []NftElem
	for _, k := range order {
		ens := groups[k]
		// Keys are unique within a group: no two entries compare
		// equal, but the entries of a shared tree's node (one network
		// of several interfaces) are a run with the same prefix.
		slices.SortFunc(ens, func(x, y *Entry) int {
			a, b := x.Elem[netDim], y.Elem[netDim]
			if c := a.Addr.Compare(b.Addr); c != 0 {
				return c
			}
			if c := a.Bits - b.Bits; c != 0 || !runs {
				return c
			}
			return cmpElem(s, x.Elem, y.Elem)
		})
		prefixAt := func(i int) netip.Prefix {
			return netip.PrefixFrom(ens[i].Elem[netDim].Addr, ens[i].Elem[netDim].Bits)
		}
		// Walk the prefix tree (prefixes nest or are disjoint); a
		// node is the run of entries ens[i:e] with one prefix.
		type span struct {
			lo, hi netip.Addr
			owners []*Entry
			nested int // TopLayout: entries in owner's tree (owner aside)
			// chain: with two prefixes, the nodes holding the span,
			// the least specific first (owners last)
			chain [][]*Entry
		}
		spans := make([]span, 0, len(ens)+len(ens)/4)
		var anc [][]*Entry
		chain := func() [][]*Entry {
			if net2 < 0 {
				return nil
			}
			return slices.Clone(anc)
		}
		var walk func(i int) int
		walk = func(i int) int {
			p := prefixAt(i)
			e := i + 1
			for e < len(ens) && prefixAt(e) == p {
				e++
			}
			owners := ens[i:e:e]
			anc = append(anc, owners)
			defer func() { anc = anc[:len(anc)-1] }()
			cur := p.Addr()
			j := e
			for j < len(ens) && p.Contains(ens[j].Elem[netDim].Addr) {
				child := prefixAt(j)
				if cur.Less(child.Addr()) {
					spans = append(spans, span{cur, child.Addr().Prev(), owners, 0, chain()})
				}
				j = walk(j)
				cur = lastAddr(child).Next()
			}
			if cur.IsValid() && !lastAddr(p).Less(cur) {
				spans = append(spans, span{cur, lastAddr(p), owners, 0, chain()})
			}
			return j
		}
		for i := 0; i < len(ens); {
			at := len(spans)
			j := walk(i)
			if s.TopLayout && !slices.ContainsFunc(ens[i:j], func(en *Entry) bool { return en.Nomatch }) {
				// One interval for the tree.
				p := prefixAt(i)
				spans = append(spans[:at], span{p.Addr(), lastAddr(p), ens[i : i+1], j - i - 1, nil})
			}
			i = j
		}
		if out == nil {
			out = make([]NftElem, 0, len(spans))
		}
		// Parts of all pieces come from one array.
		partsBuf := make([]nftables.SetElement, 0, 2*len(spans))
		for _, sp := range spans {
			if net2 >= 0 {
				for _, b := range boxes(sp.chain, net2) {
					if b.owner.Nomatch == nomatch {
						out = s.appendPiece(out, &partsBuf, b.owner, 0, nil, concat, ids,
							addrSpan{netDim, sp.lo, sp.hi}, addrSpan{net2, b.lo, b.hi})
					}
				}
				continue
			}
			if ifDim >= 0 && slices.ContainsFunc(sp.owners, func(en *Entry) bool { return en.Elem[ifDim].Wildcard }) {
				// Wildcard names are ranges of names, which nest.
				for _, nr := range s.nameRanges(sp.owners, ifDim) {
					if nr.owner.Nomatch == nomatch {
						out = s.appendPiece(out, &partsBuf, nr.owner, 0, &nr, concat, ids, addrSpan{netDim, sp.lo, sp.hi})
					}
				}
				continue
			}
			for _, owner := range sp.owners {
				if owner.Nomatch == nomatch {
					n := sp.nested
					if nested != nil && n > 0 {
						*nested = append(*nested, nestedElem(sp.lo, n, ids))
						n = 0
					}
					out = s.appendPiece(out, &partsBuf, owner, n, nil, concat, ids, addrSpan{netDim, sp.lo, sp.hi})
				}
			}
		}
	}
	return out
}

// nestedElem is the element of the set of nested counts for the
// top-level interval starting at lo that holds n nested entries.
func nestedElem(lo netip.Addr, n int, ids bool) NftElem {
	el := nftables.SetElement{Key: lo.AsSlice(), Comment: TopComment(n)}
	id := ""
	if ids {
		id = hex.EncodeToString(el.Key) + "/" + el.Comment
	}
	return NftElem{ID: id, Parts: []nftables.SetElement{el}}
}

// addrSpan is the range lo-hi of the address in dimension dim.
type addrSpan struct {
	dim    int
	lo, hi netip.Addr
}

// box is a range of second addresses and the entry that decides there.
type box struct {
	lo, hi netip.Addr
	owner  *Entry
}

// boxes splits the second addresses of a span of the first (held by
// the nodes of chain, the least specific first) by the entry that
// decides, as ipset: the most specific first prefix that has an entry
// holding the second address, and of its entries the most specific
// second prefix holding it. The ranges are in address order. The
// second prefixes nest or are disjoint: one sweep over them, sorted,
// with the deciding entry of each open prefix and those around it.
func boxes(chain [][]*Entry, net2 int) []box {
	type cand struct {
		lo, hi netip.Addr
		level  int // index in chain: higher is more specific
		en     *Entry
	}
	var cands []cand
	for l, node := range chain {
		for _, en := range node {
			p := netip.PrefixFrom(en.Elem[net2].Addr, en.Elem[net2].Bits)
			cands = append(cands, cand{p.Addr(), lastAddr(p), l, en})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := a.lo.Compare(b.lo); c != 0 {
			return c
		}
		return b.hi.Compare(a.hi) // the wider first
	})
	better := func(a, b *cand) bool {
		return a.level > b.level || a.level == b.level && a.en.Elem[net2].Bits > b.en.Elem[net2].Bits
	}
	var out []box
	emit := func(lo, hi netip.Addr, c *cand) {
		if n := len(out); n > 0 && out[n-1].owner == c.en && out[n-1].hi.Next() == lo {
			out[n-1].hi = hi
			return
		}
		out = append(out, box{lo, hi, c.en})
	}
	type open struct{ c, best *cand }
	var stack []open
	var cur netip.Addr
	for i := 0; i < len(cands) || len(stack) > 0; {
		if len(stack) == 0 || i < len(cands) && !stack[len(stack)-1].c.hi.Less(cands[i].lo) {
			c := &cands[i]
			i++
			if len(stack) > 0 && cur.Less(c.lo) {
				emit(cur, c.lo.Prev(), stack[len(stack)-1].best)
			}
			best := c
			if len(stack) > 0 && better(stack[len(stack)-1].best, c) {
				best = stack[len(stack)-1].best
			}
			stack = append(stack, open{c, best})
			cur = c.lo
			continue
		}
		top := stack[len(stack)-1]
		if !top.c.hi.Less(cur) {
			emit(cur, top.c.hi, top.best)
		}
		stack = stack[:len(stack)-1]
		if cur = top.c.hi.Next(); !cur.IsValid() {
			// (the end of the address space: what is open ends
			// here, and every prefix was opened)
			stack = stack[:0]
		}
	}
	return out
}

// nameRange is a range of interface names (as the kernel compares
// them: 16 bytes, NUL padded) and the entry that decides there.
type nameRange struct {
	dim    int
	lo, hi [ifnameLen]byte
	owner  *Entry
}

const ifnameLen = 16 // IFNAMSIZ, the key of nftables' ifname type

// nameRanges splits the interface names held by owners, the entries of
// one network of a hash:net,iface, by the entry that decides: with the
// wildcard flag, every name that starts with the entry's (the name
// padded with 0x00 to the name padded with 0xff: meta iifname loads the
// name NUL padded), else the name itself. Such ranges nest or are
// disjoint, and a nested one has the longer name, which decides
// (Set.ifaceRank): one sweep over them, sorted, the innermost open one
// owning what it holds. The ranges are in order.
//
// A name alone is taken as the range of keys that start with it and its
// NUL (the name padded with 0x00, then 0xff), which holds no other
// name, and given back as the one name. The ranges of a wildcard around
// it then end and start on such bounds ("eth" without eth1: up to
// "eth0" padded with 0xff, and from "eth1\x01" padded with 0x00), which
// a few prefixes cover: the kernel's concatenated interval sets
// (pipapo) store a range as the prefixes that cover it, up to two per
// bit of the field for a range whose bounds are the name's own key
// plus or minus one. An entry nested in one whose pieces are alike (both
// nomatch or neither, both permanent, the same comment, skbinfo and
// counters) leaves it whole: its names get the same answer there.
func (s *Set) nameRanges(owners []*Entry, dim int) []nameRange {
	cands := make([]nameRange, len(owners))
	for i, en := range owners {
		p := en.Elem[dim]
		c := nameRange{dim: dim, owner: en}
		copy(c.lo[:], p.Iface)
		c.hi = c.lo
		from := len(p.Iface) + 1 // (the name's NUL stays)
		if p.Wildcard {
			from = len(p.Iface)
		}
		for j := from; j < ifnameLen; j++ {
			c.hi[j] = 0xff
		}
		cands[i] = c
	}
	slices.SortFunc(cands, func(a, b nameRange) int {
		if c := bytes.Compare(a.lo[:], b.lo[:]); c != 0 {
			return c
		}
		return bytes.Compare(b.hi[:], a.hi[:]) // the wider first
	})
	var out []nameRange
	emit := func(lo, hi [ifnameLen]byte, owner *Entry) {
		if bytes.Compare(lo[:], hi[:]) > 0 {
			return
		}
		if p := owner.Elem[dim]; !p.Wildcard {
			// (nothing nests in a name's range: this is all of it)
			lo = [ifnameLen]byte{}
			copy(lo[:], p.Iface)
			hi = lo
		}
		out = append(out, nameRange{dim, lo, hi, owner})
	}
	var stack []*nameRange
	var cur [ifnameLen]byte // the first name not yet given
	done := false           // every name is given
	pop := func() {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if done || bytes.Compare(cur[:], top.hi[:]) > 0 {
			return
		}
		emit(cur, top.hi, top.owner)
		cur = top.hi
		done = !incName(&cur)
	}
	alike := func(a, b *Entry) bool {
		var x, y nftables.SetElement
		// (equal seconds left are not one expiry: only permanent
		// entries' pieces are alike in time)
		return a.Nomatch == b.Nomatch && a.Timeout == 0 && b.Timeout == 0 &&
			s.attrs(a, &x, true) == s.attrs(b, &y, true) && x.Comment == y.Comment
	}
	for i := range cands {
		c := &cands[i]
		for len(stack) > 0 && bytes.Compare(stack[len(stack)-1].hi[:], c.lo[:]) < 0 {
			pop()
		}
		if len(stack) > 0 && alike(stack[len(stack)-1].owner, c.owner) {
			continue
		}
		if len(stack) > 0 && bytes.Compare(cur[:], c.lo[:]) < 0 {
			before := c.lo
			decName(&before)
			emit(cur, before, stack[len(stack)-1].owner)
		}
		stack = append(stack, c)
		cur = c.lo
	}
	for len(stack) > 0 {
		pop()
	}
	return out
}

// incName and decName step a name key by one, as a big-endian number;
// incName reports false where it wraps past the last name.
func incName(n *[ifnameLen]byte) bool {
	for i := ifnameLen - 1; i >= 0; i-- {
		if n[i]++; n[i] != 0 {
			return true
		}
	}
	return false
}

func decName(n *[ifnameLen]byte) {
	for i := ifnameLen - 1; i >= 0; i-- {
		if n[i]--; n[i] != 0xff {
			return
		}
	}
}

// appendPiece appends to out the piece of entry owner whose address
// dimensions span the given ranges and, where names is not nil, whose
// interface is in that range of names (nested: the entries nested in
// it, for a top-level interval), its parts taken from partsBuf.
func (s *Set) appendPiece(out []NftElem, partsBuf *[]nftables.SetElement, owner *Entry, nested int, names *nameRange, concat, ids bool, spans ...addrSpan) []NftElem {
	var kl, kh []byte
	if concat {
		e := owner.Elem
		l, h := make(Elem, len(e)), make(Elem, len(e))
		copy(l, e)
		copy(h, e)
		for _, sp := range spans {
			l[sp.dim] = Part{Addr: sp.lo, Bits: s.maxBits()}
			h[sp.dim] = Part{Addr: sp.hi, Bits: s.maxBits()}
		}
		if names != nil {
			// (key copies the name's 16 bytes as they are)
			l[names.dim] = Part{Iface: string(names.lo[:])}
			h[names.dim] = Part{Iface: string(names.hi[:])}
		}
		kl, kh = s.key(l, false), s.key(h, true)
	} else {
		kl, kh = spans[0].lo.AsSlice(), spans[0].hi.AsSlice()
	}
	hi := spans[0].hi
	start := nftables.SetElement{Key: kl}
	id := s.attrs(owner, &start, ids)
	if nested > 0 {
		start.Comment = TopComment(nested)
		id += "/top/" + start.Comment
	}
	if ids {
		id = hex.EncodeToString(kl) + "-" + hex.EncodeToString(kh) + id
	}
	if concat {
		start.KeyEnd = kh
	}
	at := len(*partsBuf)
	*partsBuf = append(*partsBuf, start)
	if next := hi.Next(); !concat && next.IsValid() {
		*partsBuf = append(*partsBuf, nftables.SetElement{Key: next.AsSlice(), IntervalEnd: true})
	}
	return append(out, NftElem{ID: id, Parts: (*partsBuf)[at:len(*partsBuf):len(*partsBuf)]})
}

// Monotime is CLOCK_MONOTONIC, the clock of the XDP program's
// bpf_ktime_get_coarse_ns (nftables' timeouts count jiffies, which also
// stop in suspend).
func Monotime() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// RemainingTimeout is the timeout an element that expires in d has, as
// ipset lists it: whole seconds, but 1 in its last second (the kernel's
// ip_set_timeout_get: 0 would say the element is permanent).
func RemainingTimeout(d time.Duration) uint32 {
	if d < time.Second {
		return 1
	}
	return uint32(d / time.Second)
}

// DecodeEntry rebuilds an entry of s from an element of the set that
// holds its entries (the lookup set for plain types, the entries set for
// net types).
func (s *Set) DecodeEntry(el nftables.SetElement) (*Entry, bool) {
	k := el.Key
	en := &Entry{}
	comment, nomac := splitMeta(el.Comment, en)
	take := func(n int) []byte {
		if len(k) < n {
			return nil
		}
		b := k[:n]
		k = k[min((n+3)&^3, len(k)):]
		return b
	}
	alen := 4
	if s.Family == Inet6 {
		alen = 16
	}
	for _, d := range s.Type.Dims {
		var p Part
		switch d {
		case DimIP, DimNet:
			b := take(alen)
			if b == nil {
				return nil, false
			}
			p.Addr, _ = netip.AddrFromSlice(b)
			p.Bits = s.maxBits()
		case DimPort:
			if !s.Type.Bitmap {
				b := take(1)
				if b == nil {
					return nil, false
				}
				p.Proto = b[0]
			}
			b := take(2)
			if b == nil {
				return nil, false
			}
			p.Port = binary.BigEndian.Uint16(b)
		case DimIface:
			b := take(16)
			if b == nil {
				return nil, false
			}
			p.Iface = strings.TrimRight(string(b), "\x00")
		case DimMAC:
			b := take(6)
			if b == nil {
				return nil, false
			}
			copy(p.MAC[:], b)
			p.HasMAC = !nomac
		case DimMark:
			b := take(4)
			if b == nil {
				return nil, false
			}
			p.Mark = binary.NativeEndian.Uint32(b)
		case DimSet:
			b := take(4)
			if b == nil {
				return nil, false
			}
			p.pos = binary.BigEndian.Uint32(b)
			p.Name, en.Comment, _ = strings.Cut(comment, listCommentSep)
		}
		en.Elem = append(en.Elem, p)
	}
	if s.Type.Net() {
		b := take(4)
		if b == nil {
			return nil, false
		}
		v := binary.NativeEndian.Uint32(b)
		shift := 0
		for i, d := range s.Type.Dims {
			if d == DimNet {
				en.Elem[i].Bits = int(v>>shift) & 0xff
				shift += 8
			}
			if d == DimIface {
				en.Elem[i].Physdev = v&(1<<24) != 0
				en.Elem[i].Wildcard = v&(1<<25) != 0
			}
		}
		en.Nomatch = v&(1<<16) != 0
	}
	if s.HasTimeout && el.Timeout > 0 {
		if el.Expires <= 0 {
			return nil, false // expired, not yet collected
		}
		en.Timeout = RemainingTimeout(el.Expires)
	}
	if !s.Type.List {
		en.Comment = comment
	}
	if el.Counter != nil {
		en.Packets, en.Bytes = el.Counter.Packets, el.Counter.Bytes
	}
	return en, true
}
