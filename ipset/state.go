package ipset

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// State is every set of a network namespace, in creation order.
//
// Sets is read freely; sets come and go through Add, Remove and Exec,
// which keep the name index (Find) and the slots in use (FreeSlot): with
// thousands of sets (Calico, kube-router, per-country blocklists) a
// restore that looked through every set for each line took time
// quadratic in their number.
type State struct {
	Sets []*Set
	// Reserved are the slots of sets that exist but were not read.
	Reserved []int

	idx *stateIndex // built when first needed
}

// stateIndex is what Find and FreeSlot keep of a State.
type stateIndex struct {
	byName map[string]*Set
	held   map[int]int32 // sets (and reservations) per slot
	free   int           // every slot below is held
	sets   int           // len(Sets) and len(Reserved) it was built for
	res    int
	// members: the list:set entries naming each set (nil: not counted
	// since the last change)
	members map[string]int
}

// index returns st's index, built afresh when st.Sets or st.Reserved
// were changed without Add and Remove (a State literal, an append).
func (st *State) index() *stateIndex {
	x := st.idx
	if x != nil && x.sets == len(st.Sets) && x.res == len(st.Reserved) {
		return x
	}
	x = &stateIndex{byName: make(map[string]*Set, len(st.Sets)), held: make(map[int]int32, len(st.Sets)+len(st.Reserved)), free: 1}
	for _, s := range st.Sets {
		x.byName[s.Name] = s
		x.hold(s.Slot, 1)
	}
	for _, n := range st.Reserved {
		x.hold(n, 1)
	}
	x.sets, x.res = len(st.Sets), len(st.Reserved)
	st.idx = x
	return x
}

func (x *stateIndex) hold(slot int, d int32) {
	if slot <= 0 {
		return
	}
	if x.held[slot] += d; x.held[slot] <= 0 {
		delete(x.held, slot)
		x.free = min(x.free, slot)
	}
}

// Add appends s to the sets (its name is not taken: see Find).
func (st *State) Add(s *Set) {
	x := st.index()
	st.Sets = append(st.Sets, s)
	x.byName[s.Name] = s
	x.hold(s.Slot, 1)
	x.sets++
	x.members = nil
}

// Reserve marks slot as held by a set that was not read.
func (st *State) Reserve(slot int) {
	x := st.index()
	st.Reserved = append(st.Reserved, slot)
	x.hold(slot, 1)
	x.res++
}

// Remove takes the set called name out of the sets; it reports whether
// there was one.
func (st *State) Remove(name string) bool {
	x := st.index()
	s := x.byName[name]
	if s == nil {
		return false
	}
	for i, o := range st.Sets {
		if o == s {
			st.Sets = append(st.Sets[:i], st.Sets[i+1:]...)
			break
		}
	}
	delete(x.byName, name)
	x.hold(s.Slot, -1)
	x.sets--
	x.members = nil
	return true
}

// FreeSlot is the first slot no set holds, as ipset's create takes the
// first free kernel index. Every path that creates sets gives each new
// set one (Exec's create does); a set without one lists after the rest.
func (st *State) FreeSlot() int {
	x := st.index()
	for x.held[x.free] > 0 {
		x.free++
	}
	return x.free
}

// SortBySlot puts sets in listing order: by slot, sets without one
// last (in their order).
func (st *State) SortBySlot() { sortBySlot(st.Sets) }

func sortBySlot(sets []*Set) {
	sort.SliceStable(sets, func(i, j int) bool {
		a, b := sets[i].Slot, sets[j].Slot
		return a > 0 && (b == 0 || a < b)
	})
}

// Find returns the set called name, or nil.
func (st *State) Find(name string) *Set {
	if len(st.Sets) < 8 && st.idx == nil {
		// (the one or two sets of a single command: no index)
		for _, s := range st.Sets {
			if s.Name == name {
				return s
			}
		}
		return nil
	}
	return st.index().byName[name]
}

// refs counts the users of s: rules (s.References) and list:set
// entries.
func (st *State) refs(s *Set) int {
	x := st.index()
	if x.members == nil {
		x.members = map[string]int{}
		for _, l := range st.Sets {
			if !l.Type.List {
				continue
			}
			for _, en := range l.Entries {
				x.members[en.Elem[0].Name]++
			}
		}
	}
	return s.References + x.members[s.Name]
}

// Exec runs a state-changing or querying command (not list, save,
// restore, version, help) against st. out is a warning ipset prints on
// stderr after a command that succeeded: test's when the element is in
// the set, create's of ignored ipset 4 options. ipset ends a restore
// after a line that warns (with status 0): the lines after it are not
// run.
func (st *State) Exec(c *Command) (out string, err *Error) {
	if c.Err != nil {
		e := *c.Err
		return "", &e
	}
	if st.idx != nil {
		st.idx.members = nil // (list:set entries may change)
	}
	exist := c.Opts.Exist
	a := c.Args
	switch c.Op {
	case OpCreate:
		t := LookupType(a[1])
		if t == nil {
			return "", syntaxf("typename '%s' is unknown", a[1])
		}
		s := NewSet(a[0], t)
		warn, err := parseCreateOptionsWarn(s, a[2:])
		if err != nil {
			return "", err
		}
		if warn != "" {
			// ipset prints a warning after the command succeeded (an
			// error replaces it); a restore ends there (IsWarning)
			out = "Warning: " + warn + "\n"
		}
		if old := st.Find(a[0]); old != nil {
			if exist && sameSet(old, s) {
				return out, nil
			}
			return "", errorf(MsgExists)
		}
		s.Slot = st.FreeSlot()
		s.Shards = shardsFor(s)
		s.TopLayout = TopEligible(s)
		s.NestedSet = nestedEligible(s)
		s.noShardsMade()
		st.Add(s)
	case OpAdd, OpDel, OpTest:
		s := st.Find(a[0])
		if s == nil {
			return "", errorf(MsgNoSet)
		}
		if s.Type.List {
			return st.execList(c, s)
		}
		// ipset parses the element and every option before the kernel
		// checks them: the kernel's refusal of the element (a null
		// element, a /0, outside a bitmap) comes after the parse
		// errors of the options and the kernel's own refusal of options
		// the set lacks.
		elems, elemErr := ParseElemFor(s, a[1], c.Op)
		if elemErr != nil && ParseError(elemErr) {
			return "", elemErr
		}
		var tmpl Entry
		// test NAME ELEM nomatch (net types): true where ipset's lookup
		// finds a nomatch entry, as -m set --return-nomatch
		returnNomatch := false
		wildcard := false
		if c.Op == OpAdd {
			var err *Error
			if wildcard, err = parseEntryOptions(s, &tmpl, a[2:]); err != nil {
				if herr := HostPrefixErr(s, a[1], c.Op); herr != nil && !ParseError(err) {
					return "", herr // (before the kernel's refusal of an option)
				}
				if elemErr != nil && (elemErr.Checked || elemErr.BeforeExt) && !ParseError(err) {
					return "", elemErr
				}
				return "", err
			}
		} else {
			for _, o := range a[2:] {
				if c.Op != OpTest || OptionName(o) != "nomatch" || !s.Type.Net() {
					return "", usagef("Unknown argument: `%s'", o)
				}
				returnNomatch = true
			}
		}
		if elemErr != nil && elemErr.Mandatory {
			return "", elemErr
		}
		if err := HostPrefixErr(s, a[1], c.Op); err != nil {
			return "", err
		}
		if c.Op == OpTest {
			// (ipset's parser refuses a range in test)
			if err := TestRangeErr(s, a[1]); err != nil {
				return "", err
			}
		}
		if elemErr != nil {
			if c.Op == OpTest && !elemErr.Checked {
				// the kernel answers a test it refuses (out of a
				// bitmap's range, a null element, a /0) with "not in
				// the set"
				return "", NotInSet(s, a[1])
			}
			return "", elemErr
		}
		switch c.Op {
		case OpAdd:
			for _, e := range elems {
				if d := slices.Index(s.Type.Dims, DimIface); wildcard && d >= 0 {
					e[d].Wildcard = true
				}
				old := s.Find(e)
				if old != nil {
					// A bitmap:ip,mac entry without MAC takes one.
					fill := s.Type.OptionalMAC && !old.Elem[1].HasMAC && e[1].HasMAC
					if !exist && !fill && !s.unfilledExpired(old) {
						return "", errorf(MsgElemExists)
					}
				} else if uint32(len(s.Entries)) >= s.MaxElem && !s.Type.Bitmap {
					v := s.forceAddVictim(e)
					if v == nil {
						return "", errorf(MsgFull)
					}
					s.remove(v.Elem)
				}
				en := tmpl
				en.Elem = e
				if old != nil && s.HasIface() {
					// The kernel keeps the stored element (its name and
					// wildcard flag) and sets nomatch and the extensions.
					en.Elem = old.Elem
				}
				if old != nil && s.Counters {
					// ipset keeps the counters add -exist does not give.
					if !en.GotPackets {
						en.Packets = old.Packets
					}
					if !en.GotBytes {
						en.Bytes = old.Bytes
					}
				}
				s.Insert(&en)
			}
		case OpDel:
			for _, e := range elems {
				old := s.Find(e)
				gone := old != nil && s.unfilledExpired(old)
				if old != nil {
					s.remove(old.Elem)
				}
				if (old == nil || gone) && !exist {
					return "", errorf(MsgElemMissing)
				}
			}
		case OpTest:
			// ipset tests the first element of a range or prefix.
			e := elems[0]
			in := false
			if s.Type.Net() && hostKey(s, e) {
				en := s.deciding(e)
				in = en != nil && en.Nomatch == returnNomatch
			} else if en := s.Find(e); en != nil {
				in = en.Nomatch == returnNomatch
				if s.Type.OptionalMAC && e[1].HasMAC && en.Elem[1].HasMAC && e[1].MAC != en.Elem[1].MAC {
					in = false
				}
			}
			if !in {
				return "", NotInSet(s, a[1])
			}
			return InSet(s, a[1]), nil
		}
	case OpFlush:
		for _, s := range st.targets(a) {
			if s == nil {
				return "", errorf(MsgNoSet)
			}
			s.Entries, s.index = nil, nil
		}
	case OpDestroy:
		ts := st.targets(a)
		for _, s := range ts {
			if s == nil && exist {
				// ipset 7's destroy -exist of a set that does not
				// exist succeeds
				return "", nil
			}
			if s == nil {
				return "", errorf(MsgNoSet)
			}
			if st.refs(s) > 0 {
				return "", errorf(MsgDestroyBusy)
			}
		}
		if len(a) == 0 {
			st.Sets, st.idx = nil, nil
			break
		}
		st.Remove(ts[0].Name)
	case OpRename:
		s := st.Find(a[0])
		if s == nil {
			return "", errorf(MsgNoSet)
		}
		if st.refs(s) > 0 {
			// (the kernel looks at the references first)
			return "", errorf(MsgRenameBusy)
		}
		if st.Find(a[1]) != nil {
			return "", errorf(MsgRenameExists)
		}
		x := st.index()
		delete(x.byName, s.Name)
		s.Name = a[1]
		x.byName[s.Name] = s
	case OpSwap:
		x, y := st.Find(a[0]), st.Find(a[1])
		if x == nil {
			return "", errorf(MsgNoSet)
		}
		if y == nil {
			return "", errorf("Sets cannot be swapped: the second set does not exist")
		}
		// The family is part of the kernel's set type.
		if !x.Type.SameFeatures(y.Type) || x.Family != y.Family {
			return "", errorf(MsgSwapType)
		}
		// The names stay where they are; everything else moves.
		xr, yr := x.References, y.References
		xs, ys := x.Slot, y.Slot
		xd, yd := x.InitVal == defaultInitval(x.Name), y.InitVal == defaultInitval(y.Name)
		xsh, ysh := x.Shards, y.Shards
		// (the kernel's sets stay with the names)
		xg, yg := x.shardGone, y.shardGone
		xn, yn := x.nested, y.nested
		*x, *y = *y, *x
		x.shardGone, y.shardGone = xg, yg
		x.nested, y.nested = xn, yn
		x.Name, y.Name = y.Name, x.Name
		x.References, y.References = xr, yr
		x.Slot, y.Slot = xs, ys
		if !x.Type.Net() {
			// Shard copies stay with the name (a name that a -j SET
			// rule writes to has none), where the set may have them.
			x.Shards, y.Shards = keepShards(x, xsh), keepShards(y, ysh)
		}
		// A drawn initval stays with the name: the header, which the
		// kernel keeps with the name, stays the same.
		if xd && yd {
			x.InitVal, y.InitVal = defaultInitval(x.Name), defaultInitval(y.Name)
		}
		x.reindex()
		y.reindex()
	default:
		return "", usagef("Command `%s' is invalid here", c.Op)
	}
	return out, nil
}

// unfilledExpired reports whether en is a bitmap:ip,mac entry without
// MAC that ipset's kernel takes for expired when a command looks for
// it: it keeps the timeout of such an entry as given (seconds, not a
// deadline, which it sets once a packet gives the MAC), so an add
// replaces it without -exist and a del removes it and answers that it
// was not there. A permanent one (timeout 0) is not expired.
func (s *Set) unfilledExpired(en *Entry) bool {
	return s.Type.OptionalMAC && s.HasTimeout && !en.Elem[1].HasMAC && en.Timeout != 0
}

// keepShards is the shard count of plain hash set s after a swap gave
// its name the entries and options of another set: the name's own
// count n, where s may have shard copies (ShardCopiesEligible).
func keepShards(s *Set, n int) int {
	if !ShardCopiesEligible(s) {
		return 0
	}
	return n
}

// NotInSet is test's error for an element arg not in s.
func NotInSet(s *Set, arg string) *Error {
	return &Error{Msg: fmt.Sprintf("%s is NOT in set %s.", EchoElem(s, arg), s.Name), Status: StatusError, NotInSet: true}
}

// InSet is test's message for an element arg in s.
func InSet(s *Set, arg string) string {
	return fmt.Sprintf("Warning: %s is in set %s.\n", EchoElem(s, arg), s.Name)
}

// TestRangeErr is ipset's refusal of a port range in test (a check of
// ipset's command parser: a restore reports it without the line).
func TestRangeErr(s *Set, arg string) *Error {
	err := testRangeErr(s, arg)
	if err != nil {
		err.NoLine = true
	}
	return err
}

func testRangeErr(s *Set, arg string) *Error {
	for i, f := range splitParts(arg, len(s.Type.Dims)) {
		if i == 0 && (s.Type.Dims[0] == DimNet || s.Type.Dims[0] == DimIP && (len(s.Type.Dims) > 1 || s.Type.Bitmap)) {
			// Of the first address only hash:ip tests a range or a
			// prefix (its first address); hash:net tests prefixes.
			// (In IPv6 only a "/128" parses to come here.)
			_, _, isRange := cutRange(f)
			switch {
			case isRange && !hasCIDR(f):
				return errorf("FROM-TO IP range is not allowed in command test with set type %s and family %s", s.Type.Name, s.Family)
			case hasCIDR(f) && s.Type.Dims[0] == DimIP:
				return errorf("IP/CIDR range is not allowed in command test with set type %s and family %s", s.Type.Name, s.Family)
			}
		}
		if i < len(s.Type.Dims) && s.Type.Dims[i] == DimPort && portRange(s, f) {
			{
				fam := s.Family.String()
				if s.Type.Bitmap {
					fam = "unspec"
				}
				return errorf("FROM-TO port range is not allowed in command test with set type %s and family %s", s.Type.Name, fam)
			}
		}
	}
	return nil
}

// portRange reports whether port dimension f parses as a range of TCP,
// UDP, SCTP or UDPLite ports (what ipset's parser stores as a port
// range, which test refuses): ICMP names hold dashes but are no range,
// and what does not parse is the parser's error, reported first.
func portRange(s *Set, f string) bool {
	if _, err := parsePortDim(s, f); err != nil && ParseError(err) {
		return false
	}
	port := f
	if j := strings.Index(f, ":"); j > 0 && !strings.HasSuffix(f, ":") { // (as parsePortDim)
		switch pn, _ := protoNumber(f[:j]); pn {
		case protoTCP, protoUDP, protoSCTP, protoUDPLite:
		default:
			return false
		}
		port = f[j+1:]
	}
	_, _, isRange := cutRange(port)
	return isRange
}

// sameSet is the kernel's test for create -exist: the same type and
// options (not the family; hash sizes aside, which resizing changes).
func sameSet(a, b *Set) bool {
	return a.Type == b.Type && a.HasTimeout == b.HasTimeout && a.Timeout == b.Timeout &&
		a.Counters == b.Counters && a.Comment == b.Comment && a.SkbInfo == b.SkbInfo && a.Netmask == b.Netmask && a.Bitmask == b.Bitmask && a.MarkMaskValue() == b.MarkMaskValue() &&
		(a.Type.Bitmap || a.Type.List || a.MaxElem == b.MaxElem) &&
		a.RangeLo == b.RangeLo && a.RangeHi == b.RangeHi && a.PortLo == b.PortLo && a.PortHi == b.PortHi &&
		(!a.Type.List || a.Size == b.Size)
}

// hostKey reports whether e gives host addresses in all net dimensions.
func hostKey(s *Set, e Elem) bool {
	for i, d := range s.Type.Dims {
		if d == DimNet && e[i].Bits != s.maxBits() {
			return false
		}
	}
	return true
}

func (st *State) targets(a []string) []*Set {
	if len(a) == 0 {
		return st.Sets
	}
	return []*Set{st.Find(a[0])}
}

// execList handles add/del/test on a list:set.
func (st *State) execList(c *Command, s *Set) (string, *Error) {
	a := c.Args
	if len(elemFields(a[1])) > 1 {
		// NAME,before|after,REF is the element with its position (a
		// comma at either end separates nothing).
		p := strings.SplitN(a[1], ",", 3)
		if len(p) != 3 || (p[1] != "before" && p[1] != "after") {
			err := errorf("you must specify elements as setname,[before|after],setname")
			err.Parser = true // (ipset's parser's, before a later line's)
			return "", err
		}
		for _, w := range a[2:] {
			if w := OptionName(w); w == "before" || w == "after" {
				return "", syntaxf("%s already specified", w)
			}
		}
		a = append([]string{a[0], p[0], p[1], p[2]}, a[2:]...)
	}
	// ipset parses every word before it asks the kernel: the names
	// first, then a word that is no option is refused
	if err := checkSetName(a[1]); err != nil {
		return "", err
	}
	rest := a[2:]
	if len(rest) >= 2 && (OptionName(rest[0]) == "before" || OptionName(rest[0]) == "after") {
		if err := checkSetName(rest[1]); err != nil {
			return "", err
		}
		rest = rest[2:]
	}
	if c.Op == OpAdd {
		// (the kernel refuses options the list lacks before it looks
		// the member up)
		var en Entry
		if _, err := parseEntryOptions(s, &en, rest); err != nil {
			return "", err
		}
	} else if len(rest) > 0 {
		return "", usagef("Unknown argument: `%s'", rest[0])
	}
	member := st.Find(a[1])
	notIn := func() *Error {
		return &Error{Msg: fmt.Sprintf("%s is NOT in set %s.", listEcho(a[1:]), s.Name), Status: StatusError, NotInSet: true}
	}
	switch {
	case member == nil && c.Op == OpTest:
		return "", notIn()
	case member == nil:
		return "", errorf("Set to be added/deleted/tested as element does not exist.")
	case member.Type.List && c.Op != OpTest: // (del too)
		return "", errorf("Sets with list:set type cannot be added to the set.")
	}
	e := Elem{{Name: a[1]}}
	var tmpl Entry
	pos, ref := "", ""
	rest = a[2:]
	if len(rest) >= 2 && (OptionName(rest[0]) == "before" || OptionName(rest[0]) == "after") {
		pos, ref = OptionName(rest[0]), rest[1]
		rest = rest[2:]
		if st.Find(ref) == nil {
			if c.Op == OpTest {
				return "", notIn()
			}
			return "", errorf("The set to which you referred with 'before' or 'after' does not exist.")
		}
	}
	if c.Op == OpAdd {
		if _, err := parseEntryOptions(s, &tmpl, rest); err != nil {
			return "", err
		}
	}
	idx := func(name string) int {
		for i, en := range s.Entries {
			if en.Elem[0].Name == name {
				return i
			}
		}
		return -1
	}
	notAdded := errorf("The set to which you referred with 'before' or 'after' is not added to the set.")
	// at reports whether the member is right before or after ref.
	at := func() bool {
		i, r := idx(a[1]), idx(ref)
		if i < 0 || r < 0 {
			return false
		}
		if pos == "before" {
			return i+1 == r
		}
		return i == r+1
	}
	switch c.Op {
	case OpAdd:
		if pos != "" && (idx(ref) < 0 || ref == a[1]) {
			// the kernel looks for the set referred to first (among
			// the members other than the one added)
			return "", notAdded
		}
		if i := idx(a[1]); i >= 0 {
			if !c.Opts.Exist {
				return "", errorf(MsgElemExists)
			}
			// the kernel sets the member's timeout, comment and
			// skbinfo again (where it is: a position given is only
			// checked), and its counters where given
			old := s.Entries[i]
			en := tmpl
			en.Elem = old.Elem
			if !en.GotPackets {
				en.Packets = old.Packets
			}
			if !en.GotBytes {
				en.Bytes = old.Bytes
			}
			s.Entries[i] = &en
			s.reindex()
			return "", nil
		}
		en := tmpl
		en.Elem = e
		where := len(s.Entries)
		if pos != "" {
			r := idx(ref)
			if r < 0 {
				return "", notAdded
			}
			where = r
			if pos == "after" {
				where = r + 1
			}
		}
		s.Entries = append(s.Entries[:where], append([]*Entry{&en}, s.Entries[where:]...)...)
		s.reindex()
	case OpDel:
		i := idx(a[1])
		if pos != "" && !at() {
			// (-exist ignores a missing member, not a position that
			// does not hold)
			return "", notAdded
		}
		if i < 0 {
			if c.Opts.Exist {
				return "", nil
			}
			return "", errorf(MsgElemMissing)
		}
		s.Entries = append(s.Entries[:i], s.Entries[i+1:]...)
		s.reindex()
	case OpTest:
		if idx(a[1]) < 0 || (pos != "" && !at()) {
			return "", notIn()
		}
		return fmt.Sprintf("Warning: %s is in set %s.\n", listEcho(a[1:]), s.Name), nil
	}
	return "", nil
}

// listEcho is a list:set element as ipset echoes it: "before" comes
// out as "after".
func listEcho(a []string) string {
	out := append([]string(nil), a...)
	if len(out) >= 3 && (OptionName(out[1]) == "before" || OptionName(out[1]) == "after") {
		out[1] = "after"
	}
	return strings.Join(out, " ")
}

// Clone returns a deep copy of st (entries are shared: they are replaced,
// never modified in place).
func (st *State) Clone() *State {
	c := &State{Reserved: st.Reserved}
	for _, s := range st.Sets {
		n := *s
		n.Entries = append([]*Entry(nil), s.Entries...)
		n.index = nil
		c.Sets = append(c.Sets, &n)
	}
	return c
}
