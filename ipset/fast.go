package ipset

import (
	"cmp"
	"hash/fnv"
	"net/netip"
	"slices"
	"strings"
)

// Helpers for setengine's targeted commands: they work on one set's
// header, with the kernel answering membership questions, instead of
// the whole set in memory.

// NomatchPrefix names the nomatch set of a net type (NomatchNftSet):
// it holds the pieces owned by nomatch entries, which rules with
// -m set --return-nomatch look up, and exists while the set holds
// nomatch entries or a rule looks it up. Without it, the kernel's
// interval overlap checks answer every question about overlapping
// entries.
const NomatchPrefix = "ipset-nomatch."

// NomatchSetName is the nomatch set of set name.
func NomatchSetName(name string) string { return NomatchPrefix + NftNamePart(name) }

// NomatchSetOf is the ipset name whose nomatch set nftables set nftName
// is, and whether it is one.
func NomatchSetOf(nftName string) (string, bool) {
	part, ok := strings.CutPrefix(nftName, NomatchPrefix)
	return nameFromNftPart(part), ok
}

// HasNomatch reports whether any entry of s is a nomatch entry.
func (s *Set) HasNomatch() bool {
	for _, en := range s.Entries {
		if en.Nomatch {
			return true
		}
	}
	return false
}

// EntriesNftSet is the nftables set whose elements are the entries of s
// as written: the entries set of a net type, the lookup set otherwise.
func (s *Set) EntriesNftSet() string {
	if s.Type.Net() {
		return EntriesSetName(s.Name)
	}
	return LookupSetName(s.Name)
}

// HasIface reports whether elements of s have an interface dimension.
func (s *Set) HasIface() bool {
	for _, d := range s.Type.Dims {
		if d == DimIface {
			return true
		}
	}
	return false
}

// NetDims counts the prefix dimensions of s.
func (s *Set) NetDims() int {
	n := 0
	for _, d := range s.Type.Dims {
		if d == DimNet {
			n++
		}
	}
	return n
}

// Concat reports whether the lookup key of s is a concatenation.
func (s *Set) Concat() bool { return len(s.fieldTypes()) > 1 }

// EntryKey is the key of en in the set EntriesNftSet names.
func (s *Set) EntryKey(en *Entry) []byte {
	if s.Type.Net() {
		return append(s.key(en.Elem, false), s.meta(en)...)
	}
	return s.key(en.Elem, false)
}

// LookupKey is the key of a host element e in the lookup set (a point:
// start and end are the same for concatenated interval sets).
func (s *Set) LookupKey(e Elem) []byte { return s.key(e, false) }

// HostKey reports whether every net dimension of e is a host address.
func HostKey(s *Set, e Elem) bool { return hostKey(s, e) }

// PrefixBounds returns the first and last address of net dimension i of
// e.
func PrefixBounds(e Elem, i int) (netip.Addr, netip.Addr) {
	p := netip.PrefixFrom(e[i].Addr, e[i].Bits)
	return p.Masked().Addr(), lastAddr(p)
}

// NewEntry is a detached entry of e (used to build keys).
func NewEntry(e Elem, nomatch bool) *Entry { return &Entry{Elem: e, Nomatch: nomatch} }

// HeaderOnly returns a copy of s without entries.
func (s *Set) HeaderOnly() *Set {
	c := *s
	c.Entries, c.index = nil, nil
	return &c
}

// defaultInitval is the initval a set gets when create names none. ipset
// draws it at random; here it follows from the name, so that the stored
// header does not need it and two sets created alike have the same
// header (swap then only moves elements).
func defaultInitval(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32() | 1
}

// ClearEntries drops all entries of s.
func (s *Set) ClearEntries() { s.Entries, s.index = nil, nil }

// AppendLoaded appends an entry read from the kernel (where keys are
// unique) without checking for an existing one.
func (s *Set) AppendLoaded(en *Entry) {
	s.Entries = append(s.Entries, en)
	s.index = nil
}

// listCommentSep separates a list:set member's name from its comment in
// the element comment.
const listCommentSep = "\x1f"

// SortLoaded puts the members of a list:set read from the kernel back in
// their stored order.
func (s *Set) SortLoaded() {
	if !s.Type.List {
		return
	}
	slices.SortFunc(s.Entries, func(a, b *Entry) int { return cmp.Compare(a.Elem[0].pos, b.Elem[0].pos) })
	s.index = nil
}
