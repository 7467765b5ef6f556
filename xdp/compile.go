package xdp

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
)

// MaxRules is the most compiled rules one classifier holds (the BPF
// program's bit vectors are at most 256 words).
const MaxRules = 256 * 64

// maxAlternatives bounds how many compiled rules one iptables rule may
// become (a multiport --ports match is "sport in L or dport in L").
const maxAlternatives = 16

// Iface is an interface the program runs on, as the classifier needs it:
// -i is decided per ingress ifindex from the name it had at compile time.
type Iface struct {
	Index uint32
	Name  string
	MAC   net.HardwareAddr
}

// Stop says which rule ended the XDP run of a family, and why.
type Stop struct {
	Family compat.Family
	Pos    int // 0-based position in raw PREROUTING
	Rule   string
	Reason string
}

func (s *Stop) String() string {
	return fmt.Sprintf("%s rule %d (%s): %s", s.Family.Prog(), s.Pos+1, s.Rule, s.Reason)
}

// RuleRef names the iptables rule a compiled rule stands for.
type RuleRef struct {
	Family compat.Family
	Pos    int
	Drop   bool
}

// PrefixClass is one LPM-trie entry of an address field.
type PrefixClass struct {
	Prefix netip.Prefix
	Class  uint32
}

// ValueClass is one LPM-trie entry of a 16-bit field (ports, length):
// Present false is the entry for packets that have no such field.
type ValueClass struct {
	Present bool
	Value   uint16
	Bits    int // prefix length within the 16-bit value
	Class   uint32
}

// IfaceClass is the -i class of one attached interface.
type IfaceClass struct {
	Index uint32
	MAC   [6]byte
	Class uint32
}

// Classifier is the compiled leading run of raw PREROUTING of both
// families: which rules it holds and the contents of every BPF map.
type Classifier struct {
	Run4, Run6   int   // rules of each family that XDP evaluates
	Stop4, Stop6 *Stop // the rule that ended each run; nil if none did
	Rules        []RuleRef

	Words, Summary int
	// Vecs holds, per class, Summary summary words then Words rule words.
	Vecs                   [][]uint64
	Src4, Dst4, Src6, Dst6 []PrefixClass
	Sports, Dports, Length []ValueClass
	Protos                 [256]uint32
	Flags                  [257]uint32
	Ifaces                 []IfaceClass

	// Fields says which header fields some rule of the run looks at
	// (F* bits); the program skips the others. Fams has bit 0 when
	// IPv4 rules are in the run, bit 1 for IPv6; FamCls are the
	// classes of each family's rules.
	Fields, Fams uint32
	FamCls       [2]uint32
	// Sets are the mirrored set lookups, SetCls[2*i+m] the class for
	// lookup i not matching (m 0) or matching (m 1).
	Sets   []SetLookup
	SetCls [2 * MaxSets]uint32
	// Single is set when the search ANDs one vector only: one field or
	// one set lookup (plus the family's vector when no address field
	// is looked up and both families have rules), or nothing but the
	// family's vector. First then gives, per class, its first rule
	// (NoRule: none), and the program reads no vector.
	Single bool
	First  []uint32
	// NVec is how many vectors the search ANDs.
	NVec int
}

// NoRule is First's value for a class without rules.
const NoRule = ^uint32(0)

// Field bits of Classifier.Fields (as in bpf/classifier.c).
const (
	FSrc uint32 = 1 << iota
	FDst
	FProto
	FFlags
	FSport
	FDport
	FLen
	FIface
)

// MaxSets is how many -m set lookups one classifier holds.
const MaxSets = 4

// Set lookup configuration bits (bpf/classifier.c SET_*).
const (
	setAddrDst uint32 = 1 << iota
	setPortSrc
	setPortDst
	setV6
	setDir  // set by the loader: the set's map is a table (dir.go)
	setHash // set by the loader: the table has a hash of /32s (sethash.go)
	setLen  // set by the loader: the set is a per-length table (lenhash.go)
)

// SetLookup is one mirrored -m set --match-set: the set and which
// packet fields its dimensions take.
type SetLookup struct {
	Set string
	Cfg uint32
}

// SetSource gives the kernel's ipset set called name, or nil.
type SetSource func(name string) *ipset.Set

type addrCond struct {
	prefixes []netip.Prefix
	inv      bool
}

type rangeCond struct {
	ranges []compat.PortRange // Invert of the elements is ignored
	inv    bool
}

type flagCond struct {
	mask, cmp uint8
	inv       bool
}

// crule is one compiled rule: a conjunction of per-field conditions.
type crule struct {
	ref                RuleRef
	src, dst           []addrCond
	sport, dport       []rangeCond
	length             []rangeCond
	proto              *[256]bool // nil: any
	flags              []flagCond
	iface              string
	ifaceInv, hasIface bool
	sets               []setCond
}

type setCond struct {
	slot int
	inv  bool
}

// Compile turns the rules of raw PREROUTING (v4 and v6, in order) into a
// classifier for the interfaces ifaces. It stops each family's run at
// the first rule XDP cannot evaluate exactly.
func Compile(v4, v6 []*compat.Rule, ifaces []Iface) (*Classifier, error) {
	return CompileSets(v4, v6, ifaces, nil)
}

// CompileSets is Compile with -m set lookups of the sets sets gives
// evaluated in XDP (nil: none).
func CompileSets(v4, v6 []*compat.Rule, ifaces []Iface, sets SetSource) (*Classifier, error) {
	c := &Classifier{}
	var rules []*crule
	slots := &setSlots{src: sets}
	for _, fam := range []compat.Family{compat.IPv4, compat.IPv6} {
		in, run, stop := v4, &c.Run4, &c.Stop4
		if fam == compat.IPv6 {
			in, run, stop = v6, &c.Run6, &c.Stop6
		}
		for i, r := range in {
			mark := len(slots.list)
			alts, err := lower(fam, i, r, slots)
			if err == nil && len(rules)+len(alts) > MaxRules {
				err = fmt.Errorf("more than %d rules in XDP", MaxRules)
			}
			if err != nil {
				*stop = &Stop{Family: fam, Pos: i, Rule: strings.TrimSpace(compat.ExactSpec(r)), Reason: err.Error()}
				slots.list = slots.list[:mark]
				break
			}
			rules = append(rules, alts...)
			*run = i + 1
		}
	}
	for _, r := range rules {
		c.Rules = append(c.Rules, r.ref)
		used := func(f uint32, b bool) {
			if b {
				c.Fields |= f
			}
		}
		used(FSrc, len(r.src) > 0)
		used(FDst, len(r.dst) > 0)
		used(FProto, r.proto != nil)
		used(FFlags, len(r.flags) > 0)
		used(FSport, len(r.sport) > 0)
		used(FDport, len(r.dport) > 0)
		used(FLen, len(r.length) > 0)
		used(FIface, r.hasIface)
		c.Fams |= 1 << famIndex(r.ref.Family)
	}
	c.Sets = slots.list
	n := len(rules)
	if n == 0 {
		n = 1
	}
	c.Words = (n + 63) / 64
	c.Summary = (c.Words + 63) / 64
	b := &builder{c: c, rules: rules, classes: map[string]uint32{}}
	b.addrs(compat.IPv4, func(r *crule) []addrCond { return r.src }, &c.Src4)
	b.addrs(compat.IPv4, func(r *crule) []addrCond { return r.dst }, &c.Dst4)
	b.addrs(compat.IPv6, func(r *crule) []addrCond { return r.src }, &c.Src6)
	b.addrs(compat.IPv6, func(r *crule) []addrCond { return r.dst }, &c.Dst6)
	b.values(func(r *crule) []rangeCond { return r.sport }, true, &c.Sports)
	b.values(func(r *crule) []rangeCond { return r.dport }, true, &c.Dports)
	b.values(func(r *crule) []rangeCond { return r.length }, false, &c.Length)
	for p := 0; p < 256; p++ {
		c.Protos[p] = b.class(func(r *crule) bool { return r.proto == nil || r.proto[p] })
	}
	for f := 0; f < 257; f++ {
		c.Flags[f] = b.class(func(r *crule) bool {
			for _, fc := range r.flags {
				if f == 256 || ((uint8(f)&fc.mask) == fc.cmp) == fc.inv {
					return false
				}
			}
			return true
		})
	}
	for f := range c.FamCls {
		fam := compat.IPv4
		if f == 1 {
			fam = compat.IPv6
		}
		c.FamCls[f] = b.class(func(r *crule) bool { return r.ref.Family == fam })
	}
	for i := range c.Sets {
		for m := 0; m < 2; m++ {
			c.SetCls[2*i+m] = b.class(func(r *crule) bool {
				for _, sc := range r.sets {
					if sc.slot == i && (m == 1) == sc.inv {
						return false
					}
				}
				return true
			})
		}
	}
	for _, ifc := range ifaces {
		ic := IfaceClass{Index: ifc.Index}
		copy(ic.MAC[:], ifc.MAC)
		ic.Class = b.class(func(r *crule) bool {
			return !r.hasIface || ifaceMatch(r.iface, ifc.Name) != r.ifaceInv
		})
		c.Ifaces = append(c.Ifaces, ic)
	}
	nvec := bits.OnesCount32(c.Fields) + len(c.Sets)
	if c.Fields&(FSrc|FDst) == 0 && c.Fams == 3 {
		nvec++ // the family's vector
	}
	c.NVec, c.Single = nvec, nvec == 1
	c.First = make([]uint32, len(c.Vecs))
	for i, v := range c.Vecs {
		c.First[i] = NoRule
		for w, x := range v[c.Summary:] {
			if x != 0 {
				c.First[i] = uint32(w*64 + bits.TrailingZeros64(x))
				break
			}
		}
	}
	return c, nil
}

// ifaceMatch is iptables' -i test: a trailing + matches any suffix.
func ifaceMatch(pattern, name string) bool {
	if p, ok := strings.CutSuffix(pattern, "+"); ok {
		return strings.HasPrefix(name, p)
	}
	return pattern == name
}

// lower turns one iptables rule into compiled rules (more than one only
// for multiport --ports), or says why XDP cannot evaluate it exactly.
func lower(fam compat.Family, pos int, r *compat.Rule, slots *setSlots) ([]*crule, error) {
	t, ok := r.Target.(*compat.ChainTarget)
	if !ok || t.Goto || (t.Chain != compat.VerdictDrop && t.Chain != compat.VerdictAccept) {
		name := "no target"
		if r.Target != nil {
			name = r.Target.Name()
		}
		return nil, fmt.Errorf("target %s is not DROP or ACCEPT", name)
	}
	if r.OutIface != "" {
		return nil, fmt.Errorf("-o has no meaning in PREROUTING")
	}
	base := &crule{ref: RuleRef{Family: fam, Pos: pos, Drop: t.Chain == compat.VerdictDrop}}
	for _, f := range []struct {
		n   compat.Net
		inv bool
		dst *[]addrCond
	}{{r.Src, r.SrcInv, &base.src}, {r.Dst, r.DstInv, &base.dst}} {
		if f.n.IsAny() {
			if f.inv {
				base.proto = &[256]bool{} // ! -s 0/0 matches nothing
			}
			continue
		}
		p, ok := f.n.Prefix()
		if !ok {
			return nil, fmt.Errorf("non-contiguous address mask %s", f.n)
		}
		*f.dst = append(*f.dst, addrCond{prefixes: []netip.Prefix{p.Masked()}, inv: f.inv})
	}
	if r.InIface != "" {
		base.iface, base.ifaceInv, base.hasIface = r.InIface, r.InInv, true
	}
	if r.ProtoSet && r.Proto != 0 {
		var set [256]bool
		for i := range set {
			set[i] = (uint8(i) == r.Proto) != r.ProtoInv
		}
		base.andProto(&set)
	} else if r.ProtoSet && r.ProtoInv {
		return nil, fmt.Errorf("! -p all")
	}
	switch r.Frag {
	case compat.FragOnly:
		// XDP passes every fragment, so among the packets it classifies
		// -f matches none.
		base.andProto(&[256]bool{})
	case compat.FragNone:
	}
	alts := []*crule{base}
	needProto := func(name string, protos ...uint8) error {
		if !r.ProtoSet || r.ProtoInv {
			return fmt.Errorf("-m %s without -p", name)
		}
		for _, p := range protos {
			if r.Proto == p {
				return nil
			}
		}
		return fmt.Errorf("-m %s with -p %d", name, r.Proto)
	}
	for _, m := range r.Matches {
		switch m := m.(type) {
		case *compat.CommentMatch:
		case *compat.TCPMatch:
			if err := needProto("tcp", 6); err != nil {
				return nil, err
			}
			if m.HasOption {
				return nil, fmt.Errorf("--tcp-option")
			}
			for _, a := range alts {
				addPorts(a, m.Src, m.Dst)
				if m.HasFlags {
					a.flags = append(a.flags, flagCond{mask: m.FlagMask, cmp: m.FlagCmp, inv: m.FlagsInv})
				}
			}
		case *compat.UDPMatch:
			if err := needProto("udp", 17); err != nil {
				return nil, err
			}
			for _, a := range alts {
				addPorts(a, m.Src, m.Dst)
			}
		case *compat.MultiportMatch:
			if err := needProto("multiport", 6, 17, 33, 132, 136); err != nil {
				return nil, err
			}
			rc := rangeCond{ranges: m.Ports, inv: m.Invert}
			switch {
			case m.Dir == "sports":
				for _, a := range alts {
					a.sport = append(a.sport, rc)
				}
			case m.Dir == "dports":
				for _, a := range alts {
					a.dport = append(a.dport, rc)
				}
			case m.Invert: // neither port in the list
				for _, a := range alts {
					a.sport = append(a.sport, rc)
					a.dport = append(a.dport, rc)
				}
			default: // either port in the list: two rules, one counter
				var next []*crule
				for _, a := range alts {
					b := a.clone()
					a.sport = append(a.sport, rc)
					b.dport = append(b.dport, rc)
					next = append(next, a, b)
				}
				if len(next) > maxAlternatives {
					return nil, fmt.Errorf("too many -m multiport --ports matches")
				}
				alts = next
			}
		case *compat.IPRangeMatch:
			for _, f := range []struct {
				has    bool
				lo, hi netip.Addr
				inv    bool
				src    bool
			}{{m.HasSrc, m.SrcMin, m.SrcMax, m.SrcInv, true}, {m.HasDst, m.DstMin, m.DstMax, m.DstInv, false}} {
				if !f.has {
					continue
				}
				ps, err := rangePrefixes(f.lo, f.hi)
				if err != nil {
					return nil, err
				}
				if f.lo.Is4() != (fam == compat.IPv4) {
					return nil, fmt.Errorf("-m iprange of the other family")
				}
				for _, a := range alts {
					if f.src {
						a.src = append(a.src, addrCond{prefixes: ps, inv: f.inv})
					} else {
						a.dst = append(a.dst, addrCond{prefixes: ps, inv: f.inv})
					}
				}
			}
		case *compat.SetMatch:
			slot, err := slots.lookup(fam, m)
			if err != nil {
				return nil, err
			}
			for _, a := range alts {
				a.sets = append(a.sets, setCond{slot: slot, inv: m.Invert})
			}
		case *compat.LengthMatch:
			for _, a := range alts {
				a.length = append(a.length, rangeCond{ranges: []compat.PortRange{{Min: m.Min, Max: m.Max}}, inv: m.Invert})
			}
		default:
			return nil, fmt.Errorf("-m %s is not evaluated in XDP", m.Name())
		}
	}
	return alts, nil
}

func addPorts(a *crule, src, dst compat.PortRange) {
	if !src.IsAny() {
		a.sport = append(a.sport, rangeCond{ranges: []compat.PortRange{src}, inv: src.Invert})
	}
	if !dst.IsAny() {
		a.dport = append(a.dport, rangeCond{ranges: []compat.PortRange{dst}, inv: dst.Invert})
	}
}

func (r *crule) andProto(set *[256]bool) {
	if r.proto == nil {
		r.proto = set
		return
	}
	for i := range r.proto {
		r.proto[i] = r.proto[i] && set[i]
	}
}

func (r *crule) clone() *crule {
	c := *r
	c.src = append([]addrCond(nil), r.src...)
	c.dst = append([]addrCond(nil), r.dst...)
	c.sets = append([]setCond(nil), r.sets...)
	c.sport = append([]rangeCond(nil), r.sport...)
	c.dport = append([]rangeCond(nil), r.dport...)
	c.length = append([]rangeCond(nil), r.length...)
	c.flags = append([]flagCond(nil), r.flags...)
	if r.proto != nil {
		p := *r.proto
		c.proto = &p
	}
	return &c
}

// rangePrefixes splits the inclusive address range [lo, hi] into CIDR
// prefixes.
func rangePrefixes(lo, hi netip.Addr) ([]netip.Prefix, error) {
	if !lo.IsValid() || !hi.IsValid() || lo.Is4() != hi.Is4() {
		return nil, fmt.Errorf("bad -m iprange")
	}
	if hi.Less(lo) {
		return nil, nil // matches nothing
	}
	var out []netip.Prefix
	for {
		bits := lo.BitLen()
		// widen while the prefix starts at lo and stays within hi
		for bits > 0 {
			p, _ := lo.Prefix(bits - 1)
			if p.Addr() != lo || lastAddr(p).Compare(hi) > 0 {
				break
			}
			bits--
		}
		p := netip.PrefixFrom(lo, bits)
		out = append(out, p)
		last := lastAddr(p)
		if last.Compare(hi) >= 0 {
			return out, nil
		}
		lo = last.Next()
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

type builder struct {
	c       *Classifier
	rules   []*crule
	classes map[string]uint32
}

// class interns the bit vector of the rules for which in returns true.
func (b *builder) class(in func(*crule) bool) uint32 {
	v := make([]uint64, b.c.Summary+b.c.Words)
	for i, r := range b.rules {
		if in(r) {
			w := i / 64
			v[b.c.Summary+w] |= 1 << (i % 64)
			v[w/64] |= 1 << (w % 64)
		}
	}
	return b.intern(v)
}

// classWords interns the vector whose rule words are words (its summary
// is filled in here).
func (b *builder) classWords(words []uint64) uint32 {
	v := make([]uint64, b.c.Summary+b.c.Words)
	copy(v[b.c.Summary:], words)
	for w, x := range words {
		if x != 0 {
			v[w/64] |= 1 << (w % 64)
		}
	}
	return b.intern(v)
}

func (b *builder) intern(v []uint64) uint32 {
	kb := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(kb[8*i:], x)
	}
	k := string(kb)
	if id, ok := b.classes[k]; ok {
		return id
	}
	id := uint32(len(b.c.Vecs))
	b.c.Vecs = append(b.c.Vecs, v)
	b.classes[k] = id
	return id
}

// addrs fills one address trie. With every rule prefix stored, the
// longest stored prefix Q holding an address a lies inside a rule prefix
// P exactly when a does, so each rule's verdict on a depends on Q alone.
func (b *builder) addrs(fam compat.Family, conds func(*crule) []addrCond, out *[]PrefixClass) {
	type ref struct{ rule, cond int }
	owners := map[netip.Prefix][]ref{}
	var anyAll netip.Prefix
	if fam == compat.IPv4 {
		anyAll = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	} else {
		anyAll = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	}
	owners[anyAll] = nil
	for i, r := range b.rules {
		if r.ref.Family != fam {
			continue
		}
		for j, c := range conds(r) {
			for _, p := range c.prefixes {
				owners[p] = append(owners[p], ref{i, j})
			}
		}
	}
	keys := make([]netip.Prefix, 0, len(owners))
	for p := range owners {
		keys = append(keys, p)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c := keys[i].Addr().Compare(keys[j].Addr()); c != 0 {
			return c < 0
		}
		return keys[i].Bits() < keys[j].Bits()
	})
	// A rule of fam passes an address when all its positive conditions
	// on this field cover it and none of its inverted ones does. base:
	// the rules that pass an address no condition covers (those without
	// positive conditions); each key then only revisits the rules some
	// condition covering it belongs to.
	npos := make([]int, len(b.rules))
	base := make([]uint64, b.c.Words)
	for i, r := range b.rules {
		if r.ref.Family != fam {
			continue
		}
		for _, c := range conds(r) {
			if !c.inv {
				npos[i]++
			}
		}
		if npos[i] == 0 {
			base[i/64] |= 1 << (i % 64)
		}
	}
	words := make([]uint64, b.c.Words)
	type tally struct{ pos, neg int }
	for _, q := range keys {
		covered := map[ref]bool{}
		for bits := q.Bits(); bits >= 0; bits-- {
			p, _ := q.Addr().Prefix(bits)
			for _, o := range owners[p] {
				covered[o] = true
			}
		}
		t := map[int]*tally{}
		for o := range covered {
			tl := t[o.rule]
			if tl == nil {
				tl = &tally{}
				t[o.rule] = tl
			}
			if conds(b.rules[o.rule])[o.cond].inv {
				tl.neg++
			} else {
				tl.pos++
			}
		}
		copy(words, base)
		for i, tl := range t {
			if tl.neg == 0 && tl.pos == npos[i] {
				words[i/64] |= 1 << (i % 64)
			} else {
				words[i/64] &^= 1 << (i % 64)
			}
		}
		*out = append(*out, PrefixClass{Prefix: q, Class: b.classWords(words)})
	}
}

// values fills one 16-bit field trie: the value space is cut into
// intervals on which every rule's verdict is constant, each interval
// split into prefixes.
func (b *builder) values(conds func(*crule) []rangeCond, absent bool, out *[]ValueClass) {
	cuts := map[int]bool{0: true}
	for _, r := range b.rules {
		for _, c := range conds(r) {
			for _, pr := range c.ranges {
				if pr.Min > pr.Max {
					continue
				}
				cuts[int(pr.Min)] = true
				cuts[int(pr.Max)+1] = true
			}
		}
	}
	var starts []int
	for s := range cuts {
		if s <= 0xffff {
			starts = append(starts, s)
		}
	}
	sort.Ints(starts)
	for i, lo := range starts {
		hi := 0xffff
		if i+1 < len(starts) {
			hi = starts[i+1] - 1
		}
		cls := b.class(func(r *crule) bool {
			for _, c := range conds(r) {
				in := false
				for _, pr := range c.ranges {
					if pr.Min <= uint16(lo) && uint16(lo) <= pr.Max {
						in = true
						break
					}
				}
				if in == c.inv {
					return false
				}
			}
			return true
		})
		for _, p := range valuePrefixes(lo, hi) {
			p.Present, p.Class = true, cls
			*out = append(*out, p)
		}
	}
	if absent {
		// Packets without ports: only rules with no port condition.
		cls := b.class(func(r *crule) bool { return len(conds(r)) == 0 })
		*out = append(*out, ValueClass{Present: false, Bits: 0, Class: cls})
	}
}

// valuePrefixes splits [lo, hi] of the 16-bit space into prefixes.
func valuePrefixes(lo, hi int) []ValueClass {
	var out []ValueClass
	for lo <= hi {
		size := 1
		bits := 16
		for bits > 0 && lo%(size*2) == 0 && lo+size*2-1 <= hi {
			size *= 2
			bits--
		}
		out = append(out, ValueClass{Value: uint16(lo), Bits: bits})
		lo += size
	}
	return out
}
