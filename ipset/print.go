package ipset

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// orderForListing puts list:set sets after all others, as ipset does.
func orderForListing(sets []*Set) []*Set {
	var out, lists []*Set
	for _, s := range sets {
		if s.Type.List {
			lists = append(lists, s)
		} else {
			out = append(out, s)
		}
	}
	return append(out, lists...)
}

// shownHeader holds the header values ipset's kernel reports from a
// set's members: the hashsize its table grew to, "Size in memory", and
// the bucket size (tuned up by hash:net,iface).
type shownHeader struct {
	hashsize, bucketsize uint32
	mem                  int
}

// ShowFootprint makes the next header printed for s show the values f
// gives (a streamed listing counts the members before it prints the
// header: s.Entries does not hold them).
func (s *Set) ShowFootprint(f *Footprint) {
	h, m, b := f.Result()
	s.shown = &shownHeader{hashsize: h, mem: m, bucketsize: b}
}

// header returns the header values to print for s: those ShowFootprint
// gave, else those of its entries.
func (s *Set) header() *shownHeader {
	if s.shown != nil {
		return s.shown
	}
	f := s.NewFootprint()
	for _, en := range s.Entries {
		f.AddEntry(en)
	}
	h, m, b := f.Result()
	return &shownHeader{hashsize: h, mem: m, bucketsize: b}
}

// StringWriter is what the printers write to (strings.Builder,
// bufio.Writer).
type StringWriter interface {
	WriteString(string) (int, error)
}

// OutputMode is the output mode of a list or save command.
func OutputMode(c *Command) string {
	if c.Opts.Output != "" {
		return c.Opts.Output
	}
	if c.Op == OpSave {
		return OutputSave
	}
	return OutputPlain
}

// Write prints the sets selected by c (list or save) from st.
func (st *State) Write(b StringWriter, c *Command, sets []*Set) {
	WriteStart(b, c)
	for i, s := range sets {
		entries := s.Entries
		if s.Type.Bitmap {
			// Bitmaps list their members in order.
			entries = s.Sorted()
		}
		if !st.WriteSetHead(b, c, s, i, len(entries)) {
			continue
		}
		if c.Opts.Sorted && !s.Type.Bitmap && !s.Type.List {
			writeSortedMembers(b, c, s, entries)
		} else {
			for _, en := range s.ListOrder(entries) {
				WriteMember(b, c, s, en)
			}
		}
		WriteSetEnd(b, c)
	}
	WriteEnd(b, c)
}

// HeldBack reports whether entry en of s is listed after the others
// (ListOrder): a wildcard entry of a hash:net,iface.
func (s *Set) HeldBack(en *Entry) bool {
	d := slices.Index(s.Type.Dims, DimIface)
	return d >= 0 && !s.Type.List && en.Elem[d].Wildcard
}

// ListOrder returns entries in the order list and save print them
// unsorted: as they are, but the wildcard entries of a hash:net,iface
// last, the longest names first. ipset lists the entries of one network
// in the order they were added (the slots of their bucket), and refuses
// an add that a stored wildcard entry holds (Find), so a save restores
// only where each wildcard entry comes after the names it holds; the
// kernel's dump order here is not the order of the adds.
func (s *Set) ListOrder(entries []*Entry) []*Entry {
	if !slices.ContainsFunc(entries, s.HeldBack) {
		return entries
	}
	out := make([]*Entry, 0, len(entries))
	var held []*Entry
	for _, en := range entries {
		if s.HeldBack(en) {
			held = append(held, en)
		} else {
			out = append(out, en)
		}
	}
	return append(out, SortHeldBack(s, held)...)
}

// SortHeldBack orders held-back entries (HeldBack) as ListOrder prints
// them, in place: the longest names first.
func SortHeldBack(s *Set, held []*Entry) []*Entry {
	d := slices.Index(s.Type.Dims, DimIface)
	slices.SortStableFunc(held, func(a, b *Entry) int { return len(b.Elem[d].Iface) - len(a.Elem[d].Iface) })
	return held
}

// WriteStart begins the output of a list or save command.
func WriteStart(b StringWriter, c *Command) {
	if OutputMode(c) == OutputXML {
		b.WriteString("<ipsets>\n")
	}
}

// WriteEnd ends the output of a list or save command.
func WriteEnd(b StringWriter, c *Command) {
	if OutputMode(c) == OutputXML {
		b.WriteString("</ipsets>\n")
	}
}

// MembersNeedCount reports whether the header WriteSetHead prints
// needs the number of entries (it comes before the members).
func MembersNeedCount(c *Command) bool {
	return OutputMode(c) != OutputSave && !c.Opts.Names
}

// WantMembers reports whether c prints members at all (save mode
// prints them whatever -name and -terse say; the save command, whose
// request to the kernel has no -terse, prints them with -terse in
// every mode).
func WantMembers(c *Command) bool {
	return OutputMode(c) == OutputSave || !c.Opts.Names && (!c.Opts.Terse || c.Op == OpSave)
}

// WriteSetHead prints what comes before the members of the i-th set
// printed, which has n entries. It reports whether members follow
// (then WriteMember for each and WriteSetEnd).
func (st *State) WriteSetHead(b StringWriter, c *Command, s *Set, i, n int) bool {
	mode := OutputMode(c)
	if mode != OutputSave && c.Opts.Names {
		// The name alone. (-name and -terse change nothing in save
		// mode.)
		s.shown = nil
		if mode == OutputPlain {
			b.WriteString(s.Name + "\n")
		} else {
			b.WriteString("<ipset name=\"" + s.Name + "\"/>\n")
		}
		return false
	}
	shown := s.header()
	s.shown = nil
	opts := s.headerOptions(true, shown)
	switch mode {
	case OutputSave:
		b.WriteString("create " + s.Name + " " + s.Type.Name + " " + strings.Join(opts, " ") + "\n")
		return true
	case OutputPlain:
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("Name: " + s.Name + "\nType: " + s.Type.Name + "\nRevision: " + strconv.Itoa(s.Type.Revision) +
			"\nHeader: " + strings.Join(opts, " ") + "\nSize in memory: " + strconv.Itoa(shown.mem) +
			"\nReferences: " + strconv.Itoa(st.refs(s)) + "\nNumber of entries: " + strconv.Itoa(n) + "\n")
		if c.Opts.Terse {
			// (save's members follow without their heading)
			return c.Op == OpSave
		}
		b.WriteString("Members:\n")
		return true
	default: // OutputXML
		b.WriteString("<ipset name=\"" + s.Name + "\">\n<type>" + s.Type.Name + "</type>\n<revision>" +
			strconv.Itoa(s.Type.Revision) + "</revision>\n<header>" + xmlOptions(opts) +
			"\n<memsize>" + strconv.Itoa(shown.mem) + "</memsize>\n<references>" + strconv.Itoa(st.refs(s)) +
			"</references>\n<numentries>" + strconv.Itoa(n) + "</numentries>\n</header>\n")
		if c.Opts.Terse {
			if c.Op == OpSave {
				return true // (members without <members>)
			}
			b.WriteString("</ipset>\n")
			return false
		}
		b.WriteString("<members>\n")
		return true
	}
}

// WriteMember prints one member of s.
func WriteMember(b StringWriter, c *Command, s *Set, en *Entry) {
	elem := s.formatElem(en.Elem, c.Opts.Resolve)
	switch OutputMode(c) {
	case OutputSave:
		b.WriteString("add " + s.Name + " " + elem)
		if o := s.EntryOptions(en); len(o) > 0 {
			b.WriteString(" " + strings.Join(o, " "))
		}
		b.WriteString("\n")
	case OutputPlain:
		b.WriteString(elem)
		if o := s.EntryOptions(en); len(o) > 0 {
			b.WriteString(" " + strings.Join(o, " "))
		}
		b.WriteString("\n")
	default:
		b.WriteString("<member><elem>" + elem + "</elem>" + xmlOptions(s.EntryOptions(en)) + "</member>\n")
	}
}

// WriteSetEnd ends a set whose members were printed.
func WriteSetEnd(b StringWriter, c *Command) {
	if OutputMode(c) == OutputXML {
		if !c.Opts.Terse {
			b.WriteString("</members>\n")
		}
		b.WriteString("</ipset>\n")
	}
}

// flags are the options without a value.
var flags = map[string]bool{"counters": true, "comment": true, "skbinfo": true, "nomatch": true, "wildcard": true, "forceadd": true}

func xmlOptions(o []string) string {
	var b strings.Builder
	for i := 0; i < len(o); i++ {
		k := o[i]
		if flags[k] && (k != "comment" || i+1 >= len(o) || !strings.HasPrefix(o[i+1], "\"")) {
			b.WriteString("<" + k + "/>")
			continue
		}
		i++
		b.WriteString("<" + k + ">" + o[i] + "</" + k + ">")
	}
	return b.String()
}

// Select returns the sets a list/save command prints, in listing order.
func (st *State) Select(c *Command) ([]*Set, *Error) {
	if len(c.Args) > 0 {
		s := st.Find(c.Args[0])
		if s == nil {
			return nil, errorf(MsgNoSet)
		}
		return []*Set{s}, nil
	}
	// (a set created since st was read may hold a slot before others)
	sets := slices.Clone(st.Sets)
	sortBySlot(sets)
	return orderForListing(sets), nil
}

// FastMembers reports whether AppendMember can print the members of s
// for c: a set with one address dimension and no per-entry options but
// nomatch, listed unsorted.
func FastMembers(c *Command, s *Set) bool {
	return !c.Opts.Sorted && !c.Opts.Resolve && len(s.Type.Dims) == 1 && !s.Type.Bitmap &&
		(s.Type.Dims[0] == DimIP || s.Type.Dims[0] == DimNet) &&
		!s.HasTimeout && !s.Counters && !s.Comment && !s.SkbInfo
}

// AppendMember appends to dst what WriteMember prints for the entry
// DecodeEntry reads from key (the key of an element of the set
// EntriesNftSet names), without building the entry; FastMembers(c, s)
// must hold. ok is false where DecodeEntry finds no entry.
func AppendMember(dst []byte, c *Command, s *Set, key []byte) ([]byte, bool) {
	alen := 4
	if s.Family == Inet6 {
		alen = 16
	}
	net := s.Type.Dims[0] == DimNet
	if len(key) < alen || net && len(key) < alen+4 {
		return dst, false
	}
	var a netip.Addr
	if alen == 4 {
		a = netip.AddrFrom4([4]byte(key[:4]))
	} else {
		a = netip.AddrFrom16([16]byte(key[:16]))
	}
	bits, nomatch := s.maxBits(), false
	if net {
		v := binary.NativeEndian.Uint32(key[alen : alen+4])
		bits, nomatch = int(v&0xff), v&(1<<16) != 0
	}
	mode := OutputMode(c)
	switch mode {
	case OutputSave:
		dst = append(dst, "add "...)
		dst = append(dst, s.Name...)
		dst = append(dst, ' ')
	case OutputXML:
		dst = append(dst, "<member><elem>"...)
	}
	dst = a.AppendTo(dst)
	if bits != s.maxBits() {
		dst = append(dst, '/')
		dst = strconv.AppendInt(dst, int64(bits), 10)
	}
	if mode == OutputXML {
		dst = append(dst, "</elem>"...)
		if nomatch {
			dst = append(dst, "<nomatch/>"...)
		}
		return append(dst, "</member>\n"...), true
	}
	if nomatch {
		dst = append(dst, " nomatch"...)
	}
	return append(dst, '\n'), true
}

// MemberKeyLen is the number of bytes of an element's key AppendMember
// reads (FastMembers).
func MemberKeyLen(s *Set) int {
	n := 4
	if s.Family == Inet6 {
		n = 16
	}
	if s.Type.Net() {
		n += 4
	}
	return n
}

// writeSortedMembers prints the members of a hash type in ipset's
// -sorted order, which ipset takes from the printed lines.
func writeSortedMembers(b StringWriter, c *Command, s *Set, entries []*Entry) {
	lines := make([]string, len(entries))
	for i, en := range entries {
		var sb strings.Builder
		WriteMember(&sb, c, s, en)
		lines[i] = sb.String()
	}
	skip := 0
	switch OutputMode(c) {
	case OutputSave:
		skip = len("add " + s.Name + " ")
	case OutputXML:
		skip = len("<member><elem>")
	}
	sort.SliceStable(lines, func(i, j int) bool {
		if c.Opts.Resolve {
			return lines[i] < lines[j]
		}
		return compareListed(lines[i][skip:], lines[j][skip:]) < 0
	})
	for _, l := range lines {
		b.WriteString(l)
	}
}

// compareListed orders two printed members as ipset's -sorted does: it
// walks both texts reading hexadecimal numbers (so addresses, ports and
// even names that start with hex digits compare by value), compares
// other words (protocols, interfaces, set names) by length, then bytes,
// orders a prefix length after its address with the longer prefix
// first, and puts "::" gaps of IPv6 addresses first.
func compareListed(x, y string) int {
	at := func(s string, i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	i, j := 0, 0
	sign := 1
	for at(x, i) != 0 && at(y, j) != 0 {
		n1, e1 := hexPrefix(x, i)
		n2, e2 := hexPrefix(y, j)
		if e1 == i || e2 == j {
			// A word: up to the next ':' or ','.
			w1 := wordLen(x[i:])
			w2 := wordLen(y[j:])
			if w1 == 0 && w2 == 0 {
				return strings.Compare(x[i:], y[j:])
			}
			if w1 != w2 {
				if w1 < w2 {
					return -1
				}
				return 1
			}
			if c := strings.Compare(x[i:i+w1], y[j:j+w2]); c != 0 {
				return c
			}
			i, j, sign = i+w1+1, j+w2+1, 1
			continue
		}
		if n1 != n2 {
			if n1 < n2 {
				return -sign
			}
			return sign
		}
		s1, s2 := at(x, e1), at(y, e2)
		if s1 == '/' || s2 == '/' {
			switch {
			case s1 == s2:
				sign = -1 // longer prefixes first
			case s1 == '/':
				return 1
			default:
				return -1
			}
		}
		i, j = e1+1, e2+1
		if c1, c2 := at(x, i), at(y, j); c1 == ':' || c2 == ':' {
			switch {
			case c1 == c2:
				i++
				j++
			case c1 == ':':
				return -1
			default:
				return 1
			}
		}
	}
	switch {
	case at(x, i) != 0:
		return 1
	case at(y, j) != 0:
		return -1
	}
	return 0
}

// hexPrefix reads a number at s[i:] as strtol(…, 16) does (blanks, a
// sign, an optional 0x) and returns it with the index after it, or i
// when there is no number.
func hexPrefix(s string, i int) (int64, int) {
	k := i
	for k < len(s) && (s[k] == ' ' || s[k]-'\t' <= '\r'-'\t') { // C's isspace
		k++
	}
	neg := false
	if k < len(s) && (s[k] == '+' || s[k] == '-') {
		neg = s[k] == '-'
		k++
	}
	if k+2 < len(s) && s[k] == '0' && (s[k+1] == 'x' || s[k+1] == 'X') && isHex(s[k+2]) {
		k += 2
	}
	start := k
	var v int64
	for k < len(s) && isHex(s[k]) {
		d := s[k]
		switch {
		case d >= 'a':
			d = d - 'a' + 10
		case d >= 'A':
			d = d - 'A' + 10
		default:
			d -= '0'
		}
		if v < 1<<58 {
			v = v<<4 | int64(d)
		}
		k++
	}
	if k == start {
		return 0, i
	}
	if neg {
		v = -v
	}
	return v, k
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// wordLen is the length of s up to its first ':' or ','.
func wordLen(s string) int {
	if k := strings.IndexAny(s, ":,"); k >= 0 {
		return k
	}
	return len(s)
}
