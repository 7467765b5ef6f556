package ipset

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Family is the address family of a set.
type Family uint8

// Families.
const (
	Inet  Family = 4
	Inet6 Family = 6
)

func (f Family) String() string {
	if f == Inet6 {
		return "inet6"
	}
	return "inet"
}

// Set is an ipset set: its header and its entries in insertion order.
type Set struct {
	Name     string
	Type     *Type
	Family   Family
	HashSize uint32
	MaxElem  uint32
	Netmask  int // 0: none
	// Bitmask: hash:ip and hash:ip,port created with bitmask keep
	// addresses ANDed with it (invalid: none; netmask excludes it).
	Bitmask netip.Addr
	// MarkMask: hash:ip,mark keeps marks ANDed with it (0: all ones,
	// the default).
	MarkMask   uint32
	HasTimeout bool
	Timeout    uint32
	Counters   bool
	Comment    bool
	SkbInfo    bool
	ForceAdd   bool
	BucketSize uint32
	InitVal    uint32
	RangeLo    netip.Addr // bitmap:ip, bitmap:ip,mac
	RangeHi    netip.Addr
	PortLo     uint16 // bitmap:port
	PortHi     uint16
	Size       uint32 // list:set
	// ReadAt is when the kernel was asked for the entries, whose
	// timeouts are the seconds left then (CLOCK_MONOTONIC, see
	// Monotime; 0: not known): the XDP mirror's expiries count from it,
	// so that the time the mirror takes to build makes them early, never
	// late.
	ReadAt time.Duration

	// References counts kernel users other than list:set members (rules),
	// filled in by the backend.
	References int

	// Slot is the set's place in listings, 1-based (0: not known, for
	// sets stored without it): ipset lists sets in the order of their
	// kernel index, where create takes the first free slot, and rename
	// and swap keep each name in its slot.
	Slot int

	// Shards is the number of nftables sets that hold the entries of a
	// net type (0: one set, EntriesSetName; see ShardSetName), or a
	// copy of the lookup set's elements of a plain hash type
	// (ShardCopies; 0: none). A new set's follows from its type and
	// options; a stored set keeps its own.
	Shards int
	// shardGone marks the shards known not to exist in the kernel (nil:
	// not known, each may). A shard is made when it first gets an
	// entry (NftSet.Lazy): a set of a large maxelem with few entries is
	// a few nftables sets, not Shards+2, and the kernel looks a set up
	// by name through all the sets of the table.
	shardGone []bool

	// TopLayout: the lookup set of this hash:net holds one interval per
	// top-level entry, the whole range of its prefix tree, whose start
	// element's comment counts the entries nested in it (TopComment),
	// instead of one piece per most specific entry; a tree holding a
	// nomatch entry keeps its pieces. A new set gets it when its
	// entries have nothing a piece must carry (TopEligible); stored
	// sets keep their own (sets stored without it: pieces).
	TopLayout bool
	// NestedSet: a set of the top-level layout whose counts of nested
	// entries are kept in a set of their own (NestedSetName, one
	// element per tree that has nested entries) instead of in the
	// comments of the lookup set's start elements: an add or del of a
	// nested entry then leaves the lookup set alone, whose every
	// change the kernel pays for with a rebuild of its lookup array
	// from the whole set (O(set size) per commit). New sets of a large
	// maxelem (sharded) get it (nestedEligible); stored sets keep their
	// own.
	NestedSet bool
	// nested says whether the set of nested counts exists in the
	// kernel (NestedSet): like a shard, it is made with its first
	// element (a large set of disjoint networks needs none).
	nested madeState

	Entries   []*Entry
	countBias int
	shown     *shownHeader // see ShowFootprint
	index     map[string]int
	// wild: an entry may have the wildcard flag (kept with index), else
	// Find needs no look at the prefixes of a name
	wild bool
}

// Entry is an element with its options.
type Entry struct {
	Elem     Elem
	Timeout  uint32 // remaining seconds, when the set has timeouts
	Nomatch  bool
	Packets  uint64
	Bytes    uint64
	Comment  string
	SkbMark  uint32
	SkbMask  uint32
	HasMark  bool
	SkbPrio  uint32
	HasPrio  bool
	SkbQueue uint16
	HasQueue bool
	// GotPackets, GotBytes: add gave the counter (add -exist keeps
	// the ones it does not give).
	GotPackets, GotBytes bool
}

// NewSet returns a set with ipset's defaults for t.
func NewSet(name string, t *Type) *Set {
	return &Set{Name: name, Type: t, Family: Inet, HashSize: 1024, MaxElem: 65536, BucketSize: 12,
		InitVal: defaultInitval(name), Size: 8}
}

// Key identifies an element within its set (options aside).
// bitmap:ip,mac holds one entry per address.
func (s *Set) Key(e Elem) string {
	if s.Type.OptionalMAC {
		return e[0].Addr.String()
	}
	return s.FormatElem(e)
}

func (s *Set) reindex() {
	s.index = make(map[string]int, len(s.Entries))
	s.wild = false
	for i, en := range s.Entries {
		s.index[s.Key(en.Elem)] = i
		s.wild = s.wild || s.HeldBack(en)
	}
}

// Lookup returns the entry for e, or nil.
func (s *Set) Lookup(e Elem) *Entry {
	if s.index == nil {
		s.reindex()
	}
	if i, ok := s.index[s.Key(e)]; ok {
		return s.Entries[i]
	}
	return nil
}

// Find returns the entry that ipset's kernel takes for element e in an
// add, del or test of an element (nil: none): the entry with e's key,
// else in a hash:net,iface an entry of the same network whose
// interface is a wildcard name that e's name starts with (the kernel
// compares the stored entry's name as a prefix when the stored entry
// has the flag, whatever e's). Of several, the kernel takes the first
// in its bucket, the earliest added; that is the one with the longest
// name, since an add that a stored entry covers is refused: of two
// entries that cover one name, the later one has the shorter name.
// (A del frees a bucket slot that a later add may take: ipset then
// finds that entry first; here the longest name still decides.)
func (s *Set) Find(e Elem) *Entry {
	if en := s.Lookup(e); en != nil {
		return en
	}
	d := slices.Index(s.Type.Dims, DimIface)
	if d < 0 || s.Type.List || !s.wild {
		return nil
	}
	k := slices.Clone(e)
	for n := len(e[d].Iface) - 1; n >= 0; n-- {
		k[d].Iface = e[d].Iface[:n]
		if en := s.Lookup(k); en != nil && en.Elem[d].Wildcard {
			return en
		}
	}
	return nil
}

// Insert adds or replaces an entry without any check (used when loading).
func (s *Set) Insert(en *Entry) {
	if s.index == nil {
		s.reindex()
	}
	k := s.Key(en.Elem)
	s.wild = s.wild || s.HeldBack(en)
	if i, ok := s.index[k]; ok {
		s.Entries[i] = en
		return
	}
	s.index[k] = len(s.Entries)
	s.Entries = append(s.Entries, en)
}

func (s *Set) remove(e Elem) bool {
	if s.index == nil {
		s.reindex()
	}
	k := s.Key(e)
	i, ok := s.index[k]
	if !ok {
		return false
	}
	s.Entries = append(s.Entries[:i], s.Entries[i+1:]...)
	s.reindex()
	return true
}

// OptionName is an option word of a command as ipset matches it
// against the option names: two leading dashes are skipped
// ("--hashsize" is hashsize, "--timeout" timeout: the spelling of
// ipset 4's scripts), one or three are not.
func OptionName(word string) string {
	if strings.HasPrefix(word, "--") {
		return word[2:]
	}
	return word
}

// ignoredOptions are the create options of ipset 4 that ipset 7 still
// takes on the types that had them, ignores and warns of.
var ignoredOptions = map[string][]string{
	"hash:ip":          {"probes", "resize", "gc"},
	"hash:net":         {"probes", "resize"},
	"hash:ip,port":     {"probes", "resize", "from", "to", "network"},
	"hash:ip,port,ip":  {"probes", "resize", "from", "to", "network"},
	"hash:ip,port,net": {"probes", "resize", "from", "to", "network"},
	"hash:ip,mark":     {"probes", "resize", "from", "to", "network"},
}

// createOption says whether name is a create option of the type of s,
// and whether it takes a value.
func createOption(s *Set, name string) (known, hasArg bool) {
	hash := !s.Type.Bitmap && !s.Type.List
	switch name {
	case "-4", "-6":
		return hash && !s.Type.Neutral, false
	case "family":
		return hash && !s.Type.Neutral, true
	case "hashsize", "maxelem", "bucketsize", "initval":
		return hash, true
	case "netmask":
		return s.Type.Name == "hash:ip" || s.Type.Name == "bitmap:ip" || s.Type.Name == "hash:ip,port", true
	case "bitmask":
		return s.Type.Name == "hash:ip" || s.Type.Name == "hash:ip,port", true
	case "markmask":
		return slices.Contains(s.Type.Dims, DimMark), true
	case "timeout":
		return true, true
	case "counters", "comment", "skbinfo":
		return true, false
	case "forceadd":
		return hash, false
	case "size":
		return s.Type.List, true
	case "range", "from", "to":
		return s.Type.Bitmap || slices.Contains(ignoredOptions[s.Type.Name], name), true
	case "network":
		return s.Type.Bitmap && s.Type.Dims[0] != DimPort || slices.Contains(ignoredOptions[s.Type.Name], name), true
	}
	return slices.Contains(ignoredOptions[s.Type.Name], name), true
}

// parseCreateOptions parses the options after "create NAME TYPE".
func parseCreateOptions(s *Set, args []string) *Error {
	_, err := parseCreateOptionsWarn(s, args)
	return err
}

// parseCreateOptionsWarn is parseCreateOptions that also returns what
// ipset warns of ("Option '--probes 8' is ignored. ...", one line per
// ignored option, each option once), for a create that parses.
func parseCreateOptionsWarn(s *Set, args []string) (warn string, _ *Error) {
	seen := map[string]bool{}
	var warnings []string
	// A bitmap's range: "range", or ipset 4's "from" and "to" (single
	// addresses or ports) and "network" (a prefix). ipset keeps what
	// they give as the first address (range, from, network), the last
	// (a range's end, to) and a prefix length (range, network): each
	// of the three may be given once, a last address wins over a prefix.
	var rg bitmapRange
	familyAny, hashTooBig := false, false
	// ipset first checks that every word is an option of the type (it
	// picks the kernel's type revision from them) and that each option
	// that takes a value has one, and parses the family options; then
	// it parses the others in order: an unknown word, a missing value
	// or the family's error is the answer before any other value's.
	for i := 0; i < len(args); i++ {
		name := OptionName(args[i])
		known, hasArg := createOption(s, name)
		if !known {
			return "", usagef("Unknown argument: `%s'", args[i])
		}
		if hasArg && i+1 >= len(args) {
			return "", usagef("Missing mandatory argument of option `%s'", name)
		}
		if name == "family" || name == "-4" || name == "-6" {
			if seen["family"] {
				return "", syntaxf("%s already specified", name)
			}
			seen["family"] = true
			switch {
			case name != "family":
				s.Family = map[string]Family{"-4": Inet, "-6": Inet6}[name]
			case args[i+1] == "inet" || args[i+1] == "ipv4" || args[i+1] == "-4":
				s.Family = Inet
			case args[i+1] == "inet6" || args[i+1] == "ipv6" || args[i+1] == "-6":
				s.Family = Inet6
			case args[i+1] == "any" || args[i+1] == "unspec":
				// ipset takes it, then finds no type revision for it
				// once every option is parsed
				familyAny = true
			default:
				return "", syntaxf("unknown inet family %s", args[i+1])
			}
		}
		if hasArg {
			i++
		}
	}
	for i := 0; i < len(args); i++ {
		opt := args[i]
		name := OptionName(opt)
		if name == "family" || name == "-4" || name == "-6" {
			if name == "family" {
				i++
			}
			continue // (parsed above)
		}
		key := name
		switch key {
		case "hashsize", "maxelem", "bucketsize", "initval", "netmask", "bitmask", "markmask", "timeout", "size":
			// Options with a value may come once.
			if seen[key] {
				return "", syntaxf("%s already specified", name)
			}
			seen[key] = true
			if seen["netmask"] && seen["bitmask"] {
				return "", syntaxf("bitmask and netmask are mutually exclusive, provide only one")
			}
		}
		if s.Type.Bitmap {
			// (checked before the value is read, as ipset does)
			var dup bool
			switch {
			case key == "range" || key == "network" && s.Type.Dims[0] != DimPort:
				dup = rg.first
			case key == "from":
				dup = rg.first
			case key == "to":
				dup = rg.last
			}
			if dup {
				return "", syntaxf("%s already specified", name)
			}
		}
		arg := func() (string, *Error) {
			if i+1 >= len(args) {
				return "", usagef("Missing mandatory argument of option `%s'", name)
			}
			i++
			return args[i], nil
		}
		num := func(max uint64) (uint64, *Error) {
			a, err := arg()
			if err != nil {
				return 0, err
			}
			return parseUint(a, max)
		}
		var err *Error
		var v uint64
		switch opt := name; {
		case slices.Contains(ignoredOptions[s.Type.Name], opt):
			// (network gave the first address, as from: ipset names
			// it so and warns of the two once)
			w := opt
			if w == "network" {
				w = "from"
			}
			var a string
			if a, err = arg(); err == nil && !seen["ignored "+w] {
				seen["ignored "+w] = true
				warnings = append(warnings, fmt.Sprintf("Option '--%s %s' is ignored. Please upgrade your syntax.", w, a))
			}
		case opt == "hashsize" && !s.Type.Bitmap && !s.Type.List:
			if v, err = num(0xffffffff); err == nil {
				v = max(v, 64)
				if bits.OnesCount64(v) != 1 {
					v = 1 << bits.Len64(v)
				}
				// The kernel cannot allocate 2 GiB of buckets (it says so
				// after ipset parsed every option).
				hashTooBig = v > 1<<27
				s.HashSize = uint32(min(v, 1<<31))
			}
		case opt == "maxelem" && !s.Type.Bitmap && !s.Type.List:
			if v, err = num(0xffffffff); err == nil {
				s.MaxElem = uint32(v)
			}
		case opt == "bucketsize" && !s.Type.Bitmap && !s.Type.List:
			if v, err = num(255); err == nil {
				s.BucketSize = uint32(min(max(v, 2), 12))
				s.BucketSize += s.BucketSize & 1
			}
		case opt == "initval" && !s.Type.Bitmap && !s.Type.List:
			if v, err = num(0xffffffff); err == nil {
				s.InitVal = uint32(v)
			}
		case opt == "netmask" && (s.Type.Name == "hash:ip" || s.Type.Name == "bitmap:ip" || s.Type.Name == "hash:ip,port"):
			// (the family is known: the first pass parsed it)
			var a string
			if a, err = arg(); err == nil {
				if v, err = parseNetmask(s, a); err == nil {
					if s.Netmask = int(v); s.Netmask == s.maxBits() {
						s.Netmask = 0 // a host mask is no mask
					}
				}
			}
		case opt == "bitmask" && (s.Type.Name == "hash:ip" || s.Type.Name == "hash:ip,port"):
			var a string
			if a, err = arg(); err == nil {
				err = parseBitmask(s, a)
			}
		case opt == "markmask" && slices.Contains(s.Type.Dims, DimMark):
			if v, err = num(0xffffffff); err == nil {
				if v == 0 {
					// (the kernel's answer)
					err = errorf("The value of the markmask parameter is invalid")
				}
				s.MarkMask = uint32(v)
			}
		case opt == "timeout":
			if v, err = num(2147483); err == nil {
				s.HasTimeout, s.Timeout = true, uint32(v)
			}
		case opt == "counters":
			s.Counters = true
		case opt == "comment":
			s.Comment = true
		case opt == "skbinfo":
			s.SkbInfo = true
		case opt == "forceadd" && !s.Type.Bitmap && !s.Type.List:
			s.ForceAdd = true
		case opt == "size" && s.Type.List:
			if v, err = num(0xffffffff); err == nil {
				s.Size = uint32(max(v, 4))
			}
		case opt == "range" && s.Type.Bitmap:
			var a string
			if a, err = arg(); err == nil {
				err = parseRange(s, a, &rg)
			}
		case (opt == "from" || opt == "to") && s.Type.Bitmap:
			var a string
			if a, err = arg(); err != nil {
				break
			}
			var ip netip.Addr
			var port uint16
			if s.Type.Dims[0] == DimPort {
				port, err = portNumber(a, "tcp")
			} else if _, _, isRange := cutRange(a); isRange || hasCIDR(a) {
				err = syntaxf("plain IP address must be supplied: %s", a)
			} else {
				ip, err = parseAddr(s, a)
			}
			if opt == "from" {
				rg.first, rg.lo, rg.plo = true, ip, port
			} else {
				rg.last, rg.hi, rg.phi = true, ip, port
			}
		case opt == "network" && s.Type.Bitmap && s.Type.Dims[0] != DimPort:
			var a string
			if a, err = arg(); err != nil {
				break
			}
			if _, _, isRange := cutRange(a); isRange || !hasCIDR(a) {
				err = syntaxf("IP/netblock must be supplied: %s", a)
				break
			}
			var bits int
			if rg.lo, bits, _, err = parseCIDR(s, a); err == nil {
				rg.net = netip.PrefixFrom(rg.lo, bits).Masked()
			}
			rg.first, rg.prefix = true, true
		default:
			return "", usagef("Unknown argument: `%s'", args[i])
		}
		if err != nil {
			return "", err
		}
	}
	if familyAny {
		return "", errorf("Protocol family not supported by the set type")
	}
	if s.Type.Bitmap {
		switch {
		case !rg.first:
			return "", usagef("Mandatory option `range' is missing")
		case !rg.last && !rg.prefix:
			return "", usagef("Mandatory option `to' is missing")
		case s.Type.Dims[0] == DimPort:
			s.PortLo, s.PortHi = min(rg.plo, rg.phi), max(rg.plo, rg.phi)
		case rg.last:
			// the kernel takes the ends in either order
			if rg.hi.Less(rg.lo) {
				rg.lo, rg.hi = rg.hi, rg.lo
			}
			s.RangeLo, s.RangeHi = rg.lo, rg.hi
		default:
			s.RangeLo, s.RangeHi = rg.net.Addr(), lastAddr(rg.net)
		}
	}
	if hashTooBig {
		return "", errorf("Kernel error received: Cannot allocate memory")
	}
	if err := checkBitmapRange(s); err != nil {
		return "", err
	}
	return strings.Join(warnings, "\n"), nil
}

// parseNetmask parses netmask's value: a number (ipset reads it as a
// byte, then checks the prefix length), with ipset's two messages.
func parseNetmask(s *Set, a string) (uint64, *Error) {
	v, err := parseUint(a, 255)
	if err == nil && (v < 1 || v > uint64(s.maxBits())) {
		err = syntaxf("'%s' is out of range 1-%d", a, s.maxBits())
	}
	if err != nil {
		err.Msg += fmt.Sprintf("\nSyntax error: netmask is out of the inclusive range of 1-%d", s.maxBits())
	}
	return v, err
}

// parseBitmask parses bitmask's value, an address of the set's family
// (a prefix length after it is ignored), into s.Bitmask: all ones is no
// mask, none is refused by the kernel.
func parseBitmask(s *Set, a string) *Error {
	if ip, _, ok := cutCIDR(a); ok {
		a = ip
	}
	m, err := parseAddr(s, a)
	if err != nil {
		err.Msg += "\nSyntax error: bitmask is not valid for family = " + s.Family.String()
		return err
	}
	switch {
	case m.IsUnspecified():
		return errorf("The value of the netmask parameter is invalid")
	case m == lastAddr(netip.PrefixFrom(m, 0)):
		s.Bitmask = netip.Addr{} // a host mask is no mask
	default:
		s.Bitmask = m
	}
	return nil
}

// MarkMaskValue is the mask marks of s are ANDed with.
func (s *Set) MarkMaskValue() uint32 {
	if s.MarkMask == 0 {
		return 0xffffffff
	}
	return s.MarkMask
}

// AddrMask is what the address of an entry of s is ANDed with (nil:
// nothing): the bitmask, or the netmask of a hash:ip,port.
func (s *Set) AddrMask() []byte {
	if s.Bitmask.IsValid() {
		return s.Bitmask.AsSlice()
	}
	if s.Netmask > 0 && s.Type.Name == "hash:ip,port" {
		m := make([]byte, s.maxBits()/8)
		for b := 0; b < s.Netmask; b++ {
			m[b/8] |= 0x80 >> (b % 8)
		}
		return m
	}
	return nil
}

// bitmapRange is what a bitmap's create options give of its range (see
// parseCreateOptionsWarn): the first address (or port) as given, the
// last, and a prefix.
type bitmapRange struct {
	first, last, prefix bool
	lo, hi              netip.Addr
	plo, phi            uint16
	net                 netip.Prefix // masked
}

// parseRange parses a bitmap's range option into rg (a single port
// gives the first port only).
func parseRange(s *Set, a string, rg *bitmapRange) *Error {
	if s.Type.Dims[0] == DimPort {
		if i := strings.LastIndex(a, ":"); i >= 0 {
			a = a[i+1:] // a protocol is taken and ignored
		}
		lo, hi, ok := strings.Cut(a, "-")
		if !ok {
			p, err := portNumber(a, "tcp")
			if err != nil {
				return err
			}
			rg.first, rg.plo = true, p
			return nil
		}
		if lo == "" || hi == "" {
			_, err := portNumber(a, "tcp")
			return err
		}
		// ipset parses both ends; the last error is the one reported.
		l, lerr := portNumber(lo, "tcp")
		h, err := portNumber(hi, "tcp")
		if err != nil {
			return err
		}
		if lerr != nil {
			return lerr
		}
		rg.first, rg.last, rg.plo, rg.phi = true, true, l, h
		return nil
	}
	if lo, hi, ok := strings.Cut(a, "-"); ok {
		l, err := parseAddr(s, lo)
		if err != nil {
			return err
		}
		h, err := parseAddr(s, hi)
		if err != nil {
			return err
		}
		rg.first, rg.last, rg.lo, rg.hi = true, true, l, h
		return nil
	}
	_, bits, has := strings.Cut(a, "/")
	if !has {
		// (whatever the word is: ipset looks for the separator first)
		return syntaxf("IP/cidr or IP-IP range must be specified: %s", a)
	}
	if _, err := parseUintRange(bits, 0, 32); err != nil {
		return err
	}
	addr, n, _, err := parseCIDR(s, a)
	if err != nil {
		return err
	}
	rg.first, rg.prefix, rg.lo, rg.net = true, true, addr, netip.PrefixFrom(addr, n).Masked()
	return nil
}

// checkBitmapRange applies the netmask to a bitmap:ip range and checks
// its size as the kernel does at create.
func checkBitmapRange(s *Set) *Error {
	if !s.Type.Bitmap || s.Type.Dims[0] == DimPort {
		return nil
	}
	first := binary.BigEndian.Uint32(s.RangeLo.AsSlice())
	last := binary.BigEndian.Uint32(s.RangeHi.AsSlice())
	var elements uint64
	if s.Netmask == 0 || s.Netmask == 32 {
		elements = uint64(last) - uint64(first) + 1
	} else {
		hostmask := ^uint32(0) << (32 - s.Netmask)
		first &= hostmask
		last |= ^hostmask
		mask, bits := uint32(0xfffffffe), 32
		for {
			bits--
			if bits <= 0 || mask == 0 || last&mask == first {
				break
			}
			mask <<= 1
		}
		if (mask == 0 && (first != 0 || last != 0xffffffff)) || s.Netmask <= bits {
			return errorf(MsgOutOfRange)
		}
		elements = 2 << (s.Netmask - bits - 1)
		s.RangeLo = netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, first)))
		s.RangeHi = netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, last)))
	}
	if elements > 65536 {
		return errorf("The range you specified exceeds the size limit of the set type")
	}
	return nil
}

// HeaderOptions returns the create options as save and list print them.
// (hashsize and bucketsize as created; list and save print those of
// the kernel's table, see Footprint).
func (s *Set) HeaderOptions() []string { return s.headerOptions(true, nil) }

// headerOptions returns the create options; shown, when not nil, gives
// the hashsize and bucketsize to print.
func (s *Set) headerOptions(withInitval bool, shown *shownHeader) []string {
	hashsize, bucketsize := s.HashSize, s.BucketSize
	if shown != nil && shown.hashsize != 0 {
		hashsize, bucketsize = shown.hashsize, shown.bucketsize
	}
	var o []string
	switch {
	case s.Type.List:
		o = append(o, "size", strconv.Itoa(int(s.Size)))
	case s.Type.Bitmap && s.Type.Dims[0] == DimPort:
		o = append(o, "range", fmt.Sprintf("%d-%d", s.PortLo, s.PortHi))
	case s.Type.Bitmap:
		o = append(o, "range", s.RangeLo.String()+"-"+s.RangeHi.String())
	default:
		if !s.Type.Neutral {
			o = append(o, "family", s.Family.String())
		}
		if slices.Contains(s.Type.Dims, DimMark) {
			// (the kernel reports it always)
			o = append(o, "markmask", fmt.Sprintf("0x%08x", s.MarkMaskValue()))
		}
		o = append(o, "hashsize", strconv.Itoa(int(hashsize)), "maxelem", strconv.Itoa(int(s.MaxElem)))
	}
	// (hash:ip prints its mask here, hash:ip,port after initval)
	ipMask := s.Type.Name != "hash:ip,port"
	if s.Netmask > 0 && ipMask {
		o = append(o, "netmask", strconv.Itoa(s.Netmask))
	}
	if s.Bitmask.IsValid() && ipMask {
		o = append(o, "bitmask", s.Bitmask.String())
	}
	if s.HasTimeout {
		o = append(o, "timeout", strconv.Itoa(int(s.Timeout)))
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{s.Counters, "counters"}, {s.Comment, "comment"}, {s.SkbInfo, "skbinfo"}} {
		if f.on {
			o = append(o, f.name)
		}
	}
	if !s.Type.List && !s.Type.Bitmap {
		o = append(o, "bucketsize", strconv.Itoa(int(bucketsize)))
		if withInitval || s.InitVal != defaultInitval(s.Name) {
			o = append(o, "initval", fmt.Sprintf("0x%08x", s.InitVal))
		}
	}
	if s.Netmask > 0 && !ipMask {
		o = append(o, "netmask", strconv.Itoa(s.Netmask))
	}
	if s.Bitmask.IsValid() && !ipMask {
		o = append(o, "bitmask", s.Bitmask.String())
	}
	return o
}

// EntryOptions returns an entry's options in save order.
func (s *Set) EntryOptions(en *Entry) []string {
	var o []string
	if s.HasTimeout {
		o = append(o, "timeout", strconv.Itoa(int(en.Timeout)))
	}
	if en.Nomatch {
		o = append(o, "nomatch")
	}
	if slices.ContainsFunc(en.Elem, func(p Part) bool { return p.Wildcard }) {
		o = append(o, "wildcard")
	}
	if s.Counters {
		o = append(o, "packets", strconv.FormatUint(en.Packets, 10), "bytes", strconv.FormatUint(en.Bytes, 10))
	}
	if s.Comment && en.Comment != "" {
		o = append(o, "comment", "\""+en.Comment+"\"") // as is: ipset escapes nothing
	}
	if s.SkbInfo {
		// ipset prints what is not zero.
		if en.HasMark && (en.SkbMark != 0 || en.SkbMask != 0) {
			m := fmt.Sprintf("0x%x", en.SkbMark)
			if en.SkbMask != 0xffffffff {
				m += fmt.Sprintf("/0x%x", en.SkbMask)
			}
			o = append(o, "skbmark", m)
		}
		if en.HasPrio && en.SkbPrio != 0 {
			o = append(o, "skbprio", fmt.Sprintf("%x:%x", en.SkbPrio>>16, en.SkbPrio&0xffff))
		}
		if en.HasQueue && en.SkbQueue != 0 {
			o = append(o, "skbqueue", strconv.Itoa(int(en.SkbQueue)))
		}
	}
	return o
}

// parseEntryOptions parses element options (timeout, nomatch, ...).
// wildcard reports the flag that makes the interface of a hash:net,iface
// element a name prefix: it belongs to the element (Part.Wildcard),
// which the caller parsed apart.
func parseEntryOptions(s *Set, en *Entry, args []string) (wildcard bool, _ *Error) {
	if s.HasTimeout {
		en.Timeout = s.Timeout
	}
	seen := map[string]bool{}
	// The kernel refuses options the set lacks after userspace parsed
	// every argument, in the order of its extensions.
	var unsupported [4]bool // timeout, counters, comment, skbinfo
	for i := 0; i < len(args); i++ {
		opt := OptionName(args[i])
		switch opt {
		case "timeout", "packets", "bytes", "comment", "skbmark", "skbprio", "skbqueue":
			// ipset reads the argument before the kernel checks the
			// set supports the option, and before it looks whether
			// the option came already.
			if i+1 >= len(args) {
				return false, usagef("Missing mandatory argument of option `%s'", opt)
			}
			if seen[opt] {
				return false, syntaxf("%s already specified", opt)
			}
			seen[opt] = true
		}
		arg := func() (string, *Error) {
			if i+1 >= len(args) {
				return "", usagef("Missing mandatory argument of option `%s'", opt)
			}
			i++
			return args[i], nil
		}
		var err *Error
		var a string
		switch opt {
		case "timeout":
			unsupported[0] = unsupported[0] || !s.HasTimeout
			if a, err = arg(); err == nil {
				var v uint64
				if v, err = parseUint(a, 2147483); err == nil {
					en.Timeout = uint32(v)
				}
			}
		case "nomatch":
			if !s.Type.Net() {
				return false, usagef("Unknown argument: `%s'", args[i])
			}
			en.Nomatch = true
		case "wildcard":
			if !s.HasIface() {
				return false, usagef("Unknown argument: `%s'", args[i])
			}
			wildcard = true
		case "packets", "bytes":
			unsupported[1] = unsupported[1] || !s.Counters
			if a, err = arg(); err == nil {
				var v uint64
				if v, err = parseUint(a, ^uint64(0)-1); err == nil {
					if opt == "packets" {
						en.Packets, en.GotPackets = v, true
					} else {
						en.Bytes, en.GotBytes = v, true
					}
				}
			}
		case "comment":
			unsupported[2] = unsupported[2] || !s.Comment
			if a, err = arg(); err == nil {
				if strings.Contains(a, "\"") {
					return false, syntaxf("\" character is not permitted in comments")
				}
				if len(a) > 255 {
					return false, syntaxf("Comment is longer than the maximum allowed %d characters", 255)
				}
				en.Comment = a
			}
		case "skbmark", "skbprio", "skbqueue":
			unsupported[3] = unsupported[3] || !s.SkbInfo
			if a, err = arg(); err == nil {
				err = parseSkb(en, opt, a)
			}
		default:
			return false, usagef("Unknown argument: `%s'", args[i])
		}
		if err != nil {
			return false, err
		}
	}
	for i, msg := range [...]string{MsgNoTimeout, MsgNoCounters, MsgNoComment, MsgNoSkbinfo} {
		if unsupported[i] {
			return false, errorf("%s", msg)
		}
	}
	return wildcard, nil
}

func parseSkb(en *Entry, opt, a string) *Error {
	switch opt {
	case "skbmark":
		// ipset: sscanf "0x%x/0x%x", else "0x%x".
		mark, rest, ok := scanHex(a, true)
		mask := uint64(0xffffffff)
		if ok && strings.HasPrefix(rest, "/") {
			// Without "0x" the mask is not read (nor complained of).
			if m, _, ok2 := scanHex(rest[1:], true); ok2 {
				mask = m
			}
		}
		if !ok {
			return syntaxf("Invalid skbmark format, it should be:  MARK/MASK or MARK (see manpage)")
		}
		en.SkbMark, en.SkbMask, en.HasMark = uint32(mark), uint32(mask), true
	case "skbprio":
		// ipset: sscanf "%x:%x" into 16-bit halves.
		maj, rest, ok := scanHex(a, false)
		var min uint64
		if ok && strings.HasPrefix(rest, ":") {
			min, _, ok = scanHex(rest[1:], false)
		} else {
			ok = false
		}
		if !ok {
			return syntaxf("Invalid skbprio format, it should be:MAJOR:MINOR (see manpage)")
		}
		en.SkbPrio, en.HasPrio = uint32(maj&0xffff)<<16|uint32(min&0xffff), true
	case "skbqueue":
		v, err := parseUint(a, 0xffff)
		if err != nil {
			return err
		}
		en.SkbQueue, en.HasQueue = uint16(v), true
	}
	return nil
}

// scanHex reads a hex number at the start of s as sscanf's %x does
// (after a literal "0x" when prefixed), returning the rest. Values wrap
// to 32 bits.
func scanHex(s string, prefixed bool) (v uint64, rest string, ok bool) {
	if prefixed {
		if !strings.HasPrefix(s, "0x") {
			return 0, s, false
		}
		s = s[2:]
	} else if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	i := 0
	for i < len(s) && strings.IndexByte("0123456789abcdefABCDEF", s[i]) >= 0 {
		d, _ := strconv.ParseUint(s[i:i+1], 16, 8)
		v = v<<4 | d
		i++
	}
	return v & 0xffffffff, s[i:], i > 0
}

// Match reports whether a packet key (host addresses in net dimensions)
// matches the set with hash:net semantics: the most specific matching
// entry decides, a nomatch entry excludes.
func (s *Set) Match(key Elem) bool {
	if !s.Type.Net() {
		en := s.Lookup(key)
		return en != nil
	}
	best := s.deciding(key)
	return best != nil && !best.Nomatch
}

// deciding returns the entry of a net type that decides about key: the
// most specific one that holds it (nil: none). In a hash:net,iface the
// most specific network that holds the address in an entry of any
// interface (with the key's physdev flag, which ipset hashes) decides:
// key is in the set only through an entry of that network.
func (s *Set) deciding(key Elem) *Entry {
	shared := s.Type.IfaceShared()
	var best *Entry
	bestBits := -1
	for _, en := range s.Entries {
		ok, b := true, 0
		for i, d := range s.Type.Dims {
			p, k := en.Elem[i], key[i]
			switch {
			case d == DimNet:
				if !netip.PrefixFrom(p.Addr, p.Bits).Contains(k.Addr) {
					ok = false
				}
				b = b*256 + p.Bits
			case d == DimIface && shared:
				if p.Physdev != k.Physdev {
					ok = false
				}
			default:
				if !samePart(d, p, k) {
					ok = false
				}
			}
		}
		if ok && (b > bestBits || shared && b == bestBits && s.ifaceRank(en.Elem, key) > s.ifaceRank(best.Elem, key)) {
			best, bestBits = en, b
		}
	}
	if shared && best != nil && s.ifaceRank(best.Elem, key) < 0 {
		return nil
	}
	return best
}

// ifaceRank says how an entry's element en holds the interface of key:
// -1 not at all, else the length of its name, which is the interface's
// or, for a wildcard entry, a prefix of it. Of the entries of one
// network that hold it, the one with the longest name decides (see
// Find: ipset takes the first of them in its bucket).
func (s *Set) ifaceRank(en, key Elem) int {
	rank := 0
	for i, d := range s.Type.Dims {
		if d != DimIface {
			continue
		}
		p, k := en[i], key[i]
		if p.Physdev != k.Physdev || p.Iface != k.Iface && !(p.Wildcard && strings.HasPrefix(k.Iface, p.Iface)) {
			return -1
		}
		rank = len(p.Iface)
	}
	return rank
}

func samePart(d Dim, a, b Part) bool {
	switch d {
	case DimIP:
		return a.Addr == b.Addr
	case DimPort:
		return a.Proto == b.Proto && a.Port == b.Port
	case DimIface:
		return a.Iface == b.Iface && a.Physdev == b.Physdev
	case DimMAC:
		return a.MAC == b.MAC
	case DimMark:
		return a.Mark == b.Mark
	}
	return a.Name == b.Name
}

// Sorted returns the entries in ipset's -sorted order.
func (s *Set) Sorted() []*Entry {
	out := append([]*Entry(nil), s.Entries...)
	sort.SliceStable(out, func(i, j int) bool { return cmpElem(s, out[i].Elem, out[j].Elem) < 0 })
	return out
}

func cmpElem(s *Set, a, b Elem) int {
	for i := range a {
		if i >= len(b) {
			return 1
		}
		pa, pb := a[i], b[i]
		var c int
		switch s.Type.Dims[i] {
		case DimIP, DimNet:
			if c = pa.Addr.Compare(pb.Addr); c == 0 {
				c = pa.Bits - pb.Bits
			}
		case DimPort:
			if c = int(pa.Port) - int(pb.Port); c == 0 {
				c = int(pa.Proto) - int(pb.Proto)
			}
		case DimIface:
			if c = strings.Compare(pa.Iface, pb.Iface); c == 0 && pa.Physdev != pb.Physdev {
				c = map[bool]int{true: 1, false: -1}[pa.Physdev]
			}
		case DimMAC:
			c = strings.Compare(string(pa.MAC[:]), string(pb.MAC[:]))
		case DimMark:
			c = int(int64(pa.Mark) - int64(pb.Mark))
		case DimSet:
			c = strings.Compare(pa.Name, pb.Name)
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// Members returns the names of a list:set's members in list order (nil
// for other types).
func (s *Set) Members() []string {
	if !s.Type.List {
		return nil
	}
	out := make([]string, 0, len(s.Entries))
	for _, en := range s.Entries {
		out = append(out, en.Elem[0].Name)
	}
	return out
}
