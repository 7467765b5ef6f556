package compat

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// SetMatch is -m set --match-set NAME DIRS (revision 4). Whether the set
// exists is checked when the rule is built against the kernel.
type SetMatch struct {
	SetName string
	// Dirs holds "src"/"dst" per dimension.
	Dirs          []string
	Invert        bool
	ReturnNomatch bool
	NoCounters    bool // ! --update-counters
	NoSubCounters bool // ! --update-subcounters
	Packets       setCounterTest
	Bytes         setCounterTest
}

// setCounterTest is --packets-eq/lt/gt or --bytes-eq/lt/gt.
type setCounterTest struct {
	Op     string // "", "eq", "lt", "gt"
	Value  uint64
	Invert bool
}

const (
	setOptMatchSet = iota
	setOptSet
	setOptReturnNomatch
	setOptUpdateCounters
	setOptUpdateSubcounters
	setOptPacketsEq
	setOptPacketsLt
	setOptPacketsGt
	setOptBytesEq
	setOptBytesLt
	setOptBytesGt
)

var setMatchSpec = ExtSpec{
	Name: "set",
	Options: []OptDef{
		{Name: "match-set", Arg: RequiredArg, ID: setOptMatchSet},
		{Name: "set", Arg: RequiredArg, ID: setOptSet},
		{Name: "return-nomatch", Arg: NoArg, ID: setOptReturnNomatch},
		{Name: "update-counters", Arg: NoArg, ID: setOptUpdateCounters},
		{Name: "update-subcounters", Arg: NoArg, ID: setOptUpdateSubcounters},
		{Name: "packets-eq", Arg: RequiredArg, ID: setOptPacketsEq},
		{Name: "packets-lt", Arg: RequiredArg, ID: setOptPacketsLt},
		{Name: "packets-gt", Arg: RequiredArg, ID: setOptPacketsGt},
		{Name: "bytes-eq", Arg: RequiredArg, ID: setOptBytesEq},
		{Name: "bytes-lt", Arg: RequiredArg, ID: setOptBytesLt},
		{Name: "bytes-gt", Arg: RequiredArg, ID: setOptBytesGt},
	},
	NewMatch: func(Family) MatchExt { return &SetMatch{} },
}

var _ = RegisterMatch(&setMatchSpec)

func (m *SetMatch) Name() string { return "set" }

func (m *SetMatch) Parse(p *OptArg) error {
	switch id := p.Def.ID; id {
	case setOptMatchSet, setOptSet:
		if id == setOptSet {
			// libxt_set warns as it reads the old spelling, then
			// handles it as --match-set
			p.Warn("--set option deprecated, please use --match-set\n")
		}
		if m.SetName != "" {
			return Paramf("--match-set can be specified only once")
		}
		m.Invert = p.Invert
		dirs, ok := p.NextArg()
		if !ok {
			return Paramf("--match-set requires two args.")
		}
		if len(p.Arg) > 31 {
			return Paramf("setname `%s' too long, max %d characters.", p.Arg, 31)
		}
		if err := p.needSet(p.Arg); err != nil {
			return err
		}
		m.SetName = p.Arg
		m.Dirs = nil
		rest, more := dirs, true
		for more && len(m.Dirs) < 6 {
			var tok string
			tok, rest, more = strings.Cut(rest, ",")
			switch {
			case strings.HasPrefix(tok, "src"):
				m.Dirs = append(m.Dirs, "src")
			case strings.HasPrefix(tok, "dst"):
				m.Dirs = append(m.Dirs, "dst")
			default:
				return Paramf("You must spefify (the comma separated list of) 'src' or 'dst'.")
			}
		}
		if more {
			return Paramf("Can't be more src/dst options than %d.", 6)
		}
	case setOptReturnNomatch:
		if p.Invert {
			return Paramf("--return-nomatch flag cannot be inverted")
		}
		m.ReturnNomatch = true
	case setOptUpdateCounters:
		m.NoCounters = p.Invert
	case setOptUpdateSubcounters:
		m.NoSubCounters = p.Invert
	default:
		t, what := &m.Packets, "packets"
		if id >= setOptBytesEq {
			t, what = &m.Bytes, "bytes"
		}
		op := [...]string{"eq", "lt", "gt"}[(id-setOptPacketsEq)%3]
		if t.Op != "" {
			return Paramf("only one of the --%s-[eq|lt|gt] is allowed", what)
		}
		if p.Invert && op != "eq" {
			return Paramf("--%s-%s option cannot be inverted", what, op)
		}
		v, rest, ok, erange := cStrtoull(p.Arg, 0)
		if !ok || erange || rest != "" || strings.Contains(p.Arg, "-") {
			return Paramf("Cannot parse %s as a counter value", p.Arg)
		}
		*t = setCounterTest{Op: op, Value: v, Invert: p.Invert}
	}
	return nil
}

func (m *SetMatch) Final(*Rule, OptSet) error {
	if m.SetName == "" {
		return Paramf("You must specify `--match-set' with proper arguments")
	}
	return nil
}

func (m *SetMatch) write(b *strings.Builder, dashes string) { m.writeName(b, dashes, m.SetName) }

func (m *SetMatch) writeName(b *strings.Builder, dashes, name string) {
	b.WriteString(bang(m.Invert) + " " + dashes + "match-set " + name + " " + strings.Join(m.Dirs, ","))
	if m.ReturnNomatch {
		b.WriteString(" " + dashes + "return-nomatch")
	}
	if m.NoCounters {
		b.WriteString(" ! " + dashes + "update-counters")
	}
	if m.NoSubCounters {
		b.WriteString(" ! " + dashes + "update-subcounters")
	}
	for _, c := range []struct {
		what string
		t    setCounterTest
	}{{"packets", m.Packets}, {"bytes", m.Bytes}} {
		if c.t.Op != "" {
			b.WriteString(bang(c.t.Invert) + " " + dashes + c.what + "-" + c.t.Op + " " + strconv.FormatUint(c.t.Value, 10))
		}
	}
}

func (m *SetMatch) Save(b *strings.Builder, _ *Rule) { m.write(b, "--") }

// SaveExact quotes a set name with a space or a quote (-S prints it as
// is), so that the rule's kept text reads back as the same rule.
func (m *SetMatch) SaveExact(b *strings.Builder, _ *Rule) {
	m.writeName(b, "--", exactWord(m.SetName))
}

// ExactIsSave: the set's name needs no quotes.
func (m *SetMatch) ExactIsSave() bool { return !ifaceNeedsQuote(m.SetName) }

func (m *SetMatch) List(b *strings.Builder, _ *Rule, _ bool) { m.write(b, "") }

// SetDim is the kind of one dimension of an ipset set's key, as -m set
// needs it to build the lookup key from the packet.
type SetDim uint8

// Key dimensions of ipset sets.
const (
	SetDimAddr     SetDim = iota + 1 // address (ip or net dimension)
	SetDimPort                       // protocol and port
	SetDimIface                      // interface name
	SetDimMAC                        // ethernet address
	SetDimMark                       // packet mark
	SetDimPortOnly                   // port only (bitmap:port)
)

// SetInfo describes an ipset set for -m set and -j SET.
type SetInfo struct {
	NftName string // the nftables set to look up
	Family  Family
	Dims    []SetDim
	// Updatable: rules can add and delete elements (-j SET): a plain
	// set, not the interval set of a net type.
	Updatable  bool
	HasTimeout bool
	Timeout    uint32 // the set's default timeout, seconds
	Counters   bool
	// ElemData: elements carry a comment or skbinfo values (kept in
	// the element's userdata), which an element that a rule adds
	// cannot have.
	ElemData bool
	// Netmask: hash:ip and bitmap:ip created with a netmask hold
	// addresses masked to this many bits (0: none), and ipset masks the
	// packet's address alike.
	Netmask int
	// AddrMask: a set created with bitmask (hash:ip, hash:ip,port), or a
	// hash:ip,port with a netmask, holds addresses ANDed with this mask
	// (nil: none; it overrides Netmask), and ipset ANDs the packet's
	// address alike.
	AddrMask []byte
	// MarkMask: hash:ip,mark holds marks ANDed with this mask (0 or all
	// ones: none), and ipset ANDs the packet's mark alike.
	MarkMask uint32
	// RangeLo, RangeHi: a bitmap type's range of its first key field
	// (address or port, big-endian; nil for other types): ipset adds
	// nothing from a packet outside it.
	RangeLo, RangeHi []byte
	// List is a list:set: its members are looked up one by one, which
	// one nftables rule cannot express (see ipset/doc.go and
	// NftListExprs).
	List bool
	// Members are a list:set's member sets in list order, when the
	// caller knows them (MembersKnown); without them -m set on the list
	// is refused.
	Members      []SetInfo
	MembersKnown bool
	// Nomatch is the set a lookup with --return-nomatch uses, for types
	// with nomatch entries (net types): the addresses whose most
	// specific entry is a nomatch entry. The rule creates it when it
	// does not exist. Nil for other types, where ipset ignores
	// --return-nomatch.
	Nomatch *nftables.Set
	// Copies names the sets that keep a copy of the set's entries
	// (ipset's shard copies of a large plain hash set): a rule that
	// changes the set from the packet path (-j SET) destroys them in
	// its own transaction, as they would go stale.
	Copies []string
}

// familyError is libxt_set's refusal of a set whose addresses are of
// the other family (ip6tables -m set on a family inet set). Sets without
// an address dimension (hash:mac, bitmap:port, list:set) have no family
// in ipset and serve both.
func (info SetInfo) familyError(name string, f Family) error {
	for _, d := range info.Dims {
		if d == SetDimAddr && info.Family != f {
			fam := "IPv4"
			if info.Family == IPv6 {
				fam = "IPv6"
			}
			// the message ends with a newline, as libxt_set's does
			return Errorf(StatusParameter, "The protocol family of set %s is %s, which is not applicable.\n", name, fam)
		}
	}
	return nil
}

// NomatchLookup is the lookup of --return-nomatch: in a set the rule
// creates when it does not exist yet (kernel.EnsuredLookup).
type NomatchLookup struct {
	*expr.Lookup
	Set *nftables.Set
}

// EnsuredSet returns the lookup and the set's definition.
func (l *NomatchLookup) EnsuredSet() (*expr.Lookup, *nftables.Set) { return l.Lookup, l.Set }

// LookupIPSet tells what -m set needs to know about an ipset set; the
// command that has the kernel state installs it (cmd/xdptables). It
// returns ok false when the set does not exist. When nil, -m set has no
// native translation.
var LookupIPSet func(name string) (info SetInfo, ok bool)

// NftExprs builds the set's key from the packet, one field per
// dimension in the direction --match-set gives, into consecutive 32-bit
// registers, and looks it up in the nftables set that holds the ipset.
// With --return-nomatch the match is true where ipset finds a nomatch
// entry (the most specific entry holding the key is one): the key is
// looked up in the set's nomatch set instead; types without nomatch
// entries ignore the flag, as ipset does. Counter tests have no native
// form and are only exact (and accepted) for a set without counters,
// where ipset ignores them. ! --update-counters is accepted for every
// set although an nftables lookup always counts the packet in the
// element's counter: firehol writes it on every -m set rule, and
// refusing it refused the whole firewall; only the element counters of
// a set with counters differ from ipset's (docs/extensions.md).
// ! --update-subcounters concerns list:set members only.
func (m *SetMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if LookupIPSet == nil {
		return nil, ErrNoNative
	}
	info, ok := LookupIPSet(m.SetName)
	if !ok {
		// ipset's libxt_set message ends with a newline: xtables prints
		// an empty line before the Try line.
		return nil, Errorf(StatusParameter, "Set %s doesn't exist.\n", m.SetName)
	}
	if err := info.familyError(m.SetName, ctx.Family); err != nil {
		return nil, err
	}
	// The sets live in nftables, not in the kernel's ipset, so the xt
	// "set" match cannot stand in: what has no native form is refused.
	// Counter tests would need the element's counter in a register; on
	// a set without counters ipset ignores them (ip_set_match_extensions
	// tests them only for a set with counters), and so does the lookup.
	if (m.Packets.Op != "" || m.Bytes.Op != "") && info.Counters {
		return nil, Errorf(StatusParameter, "--packets-*/--bytes-* are not supported by the nftables backend for a set with counters.")
	}
	if info.List {
		// a list the caller knows the members of is NftListExprs' (the
		// rule is built around it); here it is refused
		return nil, listRefusal(m.SetName)
	}
	if info.Family != ctx.Family || len(m.Dirs) < len(info.Dims) {
		// ipset matches nothing for too few directions. A set without
		// addresses (bitmap:port, hash:mac) lives in the table of the
		// family it was created in only: the other family's rules match
		// nothing (a limitation, see ipset/doc.go).
		return []expr.Any{&expr.Verdict{Kind: expr.VerdictBreak}}, nil
	}
	var out []expr.Any
	if !m.Invert {
		out = portOnlyGuard(info)
	}
	out = append(out, setKeyExprs(ctx, info, func(i int) bool { return m.Dirs[i] == "src" })...)
	if m.ReturnNomatch && info.Nomatch != nil {
		l := &expr.Lookup{SourceRegister: KernelReg(8), SetName: info.Nomatch.Name, Invert: m.Invert}
		return append(out, &NomatchLookup{Lookup: l, Set: info.Nomatch}), nil
	}
	return append(out, &expr.Lookup{SourceRegister: KernelReg(8), SetName: info.NftName, Invert: m.Invert}), nil
}

func listRefusal(name string) error {
	return Errorf(StatusParameter, "Set %s is a list:set: the nftables backend cannot match it yet.", name)
}

// NftListExprs is -m set on a list:set whose members the caller knows
// (SetInfo.Members); list is false for any other set (use NftExprs).
// ipset tries the members in list order, each with the rule's
// directions on its own dimensions, and the first that matches decides;
// a member of the other family or with more dimensions than directions
// does not match. A rule is a conjunction, so the match holds unless
// one of the conjunctions in unless holds: the caller puts the rest of
// the rule (its remaining matches, counter and target) into a chain
// bound to the rule, after the rules in count (no verdict: they count
// the first member that matches in its element counters, for members
// with counters) and one rule per conjunction in unless that returns.
// An empty unless matches every packet; an unless holding one empty
// conjunction matches none. Without !, the conjunctions say that no
// member matches; with !, each says that one does.
//
// A member matches as -m set matches it (NftExprs): --return-nomatch
// looks it up in its nomatch set, a bitmap:port member matches TCP and
// UDP packets only. Its negation is one inverted lookup, or for a
// bitmap:port member "not TCP or UDP, or the port not in it", an OR
// that takes one conjunction per choice. Counter tests concern the
// list's own counters, as for other sets.
func (m *SetMatch) NftListExprs(ctx *NftContext) (list bool, count, unless [][]expr.Any, err error) {
	if LookupIPSet == nil {
		return false, nil, nil, nil
	}
	info, ok := LookupIPSet(m.SetName)
	if !ok || !info.List {
		return false, nil, nil, nil
	}
	if !info.MembersKnown || info.HasTimeout {
		// (members that time out would need the rule rewritten as
		// they expire)
		return true, nil, nil, listRefusal(m.SetName)
	}
	if (m.Packets.Op != "" || m.Bytes.Op != "") && info.Counters {
		return true, nil, nil, Errorf(StatusParameter, "--packets-*/--bytes-* are not supported by the nftables backend for a set with counters.")
	}
	// Each applicable member's test (guard and lookup) and negation
	// (alternative conjunctions).
	var tests [][]expr.Any
	var negs [][][]expr.Any
	combos := 1
	listCounts := info.Counters && !m.NoCounters
	// listCount counts the packet in the list's own element of the
	// member at pos (its key is the position)
	listCount := func(pos int) []expr.Any {
		return []expr.Any{
			&expr.Immediate{Register: KernelReg(8), Data: binary.BigEndian.AppendUint32(nil, uint32(pos))},
			&expr.Lookup{SourceRegister: KernelReg(8), SetName: info.NftName},
		}
	}
	// counts[i]: what counts the i-th tested member where it is the
	// first that matches (nil: nothing)
	var counts [][]expr.Any
	for pos, mi := range info.Members {
		if mi.List || len(m.Dirs) < len(mi.Dims) || mi.Family != ctx.Family {
			// (a list:set holds no list:set; the others never match)
			continue
		}
		key := setKeyExprs(ctx, mi, func(i int) bool { return m.Dirs[i] == "src" })
		nomatch := m.ReturnNomatch && mi.Nomatch != nil
		lookup := func(inv bool) expr.Any {
			if nomatch {
				return &NomatchLookup{Lookup: &expr.Lookup{SourceRegister: KernelReg(8), SetName: mi.Nomatch.Name, Invert: inv}, Set: mi.Nomatch}
			}
			return &expr.Lookup{SourceRegister: KernelReg(8), SetName: mi.NftName, Invert: inv}
		}
		guard := portOnlyGuard(mi)
		test := append(append(append([]expr.Any(nil), guard...), key...), lookup(false))
		if listCounts {
			test = append(test, listCount(pos)...)
		}
		tests = append(tests, test)
		neg := [][]expr.Any{append(append([]expr.Any(nil), key...), lookup(true))}
		if guard != nil {
			notTCPUDP := &ValueMap{Lookup: &expr.Lookup{SourceRegister: 1, Invert: true}, KeyLen: 1, Keys: [][]byte{{unix.IPPROTO_TCP}, {unix.IPPROTO_UDP}}}
			neg = append([][]expr.Any{{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, notTCPUDP}}, neg...)
		}
		if combos *= len(neg); combos > maxListReturnRules {
			return true, nil, nil, Errorf(StatusParameter, "Set %s is a list:set with too many bitmap:port members for the nftables backend.", m.SetName)
		}
		negs = append(negs, neg)
		// ! --update-counters keeps ipset from counting the members
		// too. The member's lookup counts it when it has counters: with
		// ! --update-subcounters and the list's counters it is counted
		// (the kernel takes no chain bound in a bound chain, where its
		// negation could stand before the list's count).
		if mi.Counters && !m.NoSubCounters && !m.NoCounters || listCounts {
			counts = append(counts, test)
		} else {
			counts = append(counts, nil)
		}
	}
	if m.Invert {
		// (a lookup that finds the key counts it in the element's
		// counters: the first member that matches is counted, as
		// ipset counts it; ! --update-subcounters and !
		// --update-counters do not keep the members from counting)
		return true, nil, tests, nil
	}
	// unless no member matches: one conjunction per choice of each
	// member's alternative negations. An inverted lookup counts
	// nothing: a member with counters (or the list's element of it, for
	// a list with counters) is counted by a rule of its own where it is
	// the first member that matches.
	unless = [][]expr.Any{nil}
	for i, n := range negs {
		if counts[i] != nil {
			for _, c := range unless {
				count = append(count, append(append([]expr.Any(nil), c...), counts[i]...))
			}
		}
		var next [][]expr.Any
		for _, c := range unless {
			for _, alt := range n {
				next = append(next, append(append([]expr.Any(nil), c...), alt...))
			}
		}
		unless = next
	}
	return true, count, unless, nil
}

// maxListReturnRules bounds the return rules of a list:set match (each
// bitmap:port member doubles them).
const maxListReturnRules = 16

// setKeyExprs builds the key of set info from the packet, one field per
// dimension (src(i) tells the direction of dimension i), into
// consecutive 32-bit registers from NFT_REG32_00.
func setKeyExprs(ctx *NftContext, info SetInfo, src func(i int) bool) []expr.Any {
	var out []expr.Any
	reg := uint32(8) // NFT_REG32_00
	for i, d := range info.Dims {
		src := src(i)
		switch d {
		case SetDimAddr:
			off, n := uint32(16), uint32(4)
			if src {
				off = 12
			}
			if ctx.Family == IPv6 {
				off, n = 24, 16
				if src {
					off = 8
				}
			}
			out = append(out, &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: KernelReg(reg), Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n})
			if len(info.AddrMask) == int(n) {
				out = append(out, &expr.Bitwise{SourceRegister: KernelReg(reg), DestRegister: KernelReg(reg), Len: n, Mask: info.AddrMask, Xor: make([]byte, n)})
			} else if info.Netmask > 0 && int(n)*8 > info.Netmask {
				mask := make([]byte, n)
				for b := 0; b < info.Netmask; b++ {
					mask[b/8] |= 0x80 >> (b % 8)
				}
				out = append(out, &expr.Bitwise{SourceRegister: KernelReg(reg), DestRegister: KernelReg(reg), Len: n, Mask: mask, Xor: make([]byte, n)})
			}
			reg += n / 4
		case SetDimPort, SetDimPortOnly:
			if d == SetDimPort {
				out = append(out, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: KernelReg(reg)})
				reg++
			}
			off := uint32(2)
			if src {
				off = 0
			}
			out = append(out, &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: KernelReg(reg), Base: expr.PayloadBaseTransportHeader, Offset: off, Len: 2})
			reg++
		case SetDimIface:
			key := expr.MetaKeyOIFNAME
			if src {
				key = expr.MetaKeyIIFNAME
			}
			out = append(out, &expr.Meta{Key: key, Register: KernelReg(reg)})
			reg += 4
		case SetDimMAC:
			off := uint32(0)
			if src {
				off = 6
			}
			out = append(out, &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: KernelReg(reg), Base: expr.PayloadBaseLLHeader, Offset: off, Len: 6})
			reg += 2
		case SetDimMark:
			out = append(out, &expr.Meta{Key: expr.MetaKeyMARK, Register: KernelReg(reg)})
			if m := info.MarkMask; m != 0 && m != 0xffffffff {
				out = append(out, &expr.Bitwise{SourceRegister: KernelReg(reg), DestRegister: KernelReg(reg), Len: 4,
					Mask: binary.NativeEndian.AppendUint32(nil, m), Xor: make([]byte, 4)})
			}
			reg++
		}
	}
	return out
}

// portOnlyGuard: bitmap:port takes the port of TCP and UDP packets only
// (ip_set_get_ip_port); for others ipset neither matches nor adds nor
// deletes. A lookup of the protocol in an anonymous set of the two
// ends the rule for other protocols. Nil for other types. (For ! --match-set ipset
// matches such packets: there no guard can say so in the same rule, and
// the lookup takes the transport header's bytes as the port.)
func portOnlyGuard(info SetInfo) []expr.Any {
	if len(info.Dims) != 1 || info.Dims[0] != SetDimPortOnly {
		return nil
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&ValueMap{Lookup: &expr.Lookup{SourceRegister: 1}, KeyLen: 1, Keys: [][]byte{{unix.IPPROTO_TCP}, {unix.IPPROTO_UDP}}},
	}
}

// rangeGuard: the key's first field (in NFT_REG32_00 on) within a
// bitmap type's range, else the rule ends. Nil for other types.
func rangeGuard(info SetInfo) []expr.Any {
	if info.RangeLo == nil {
		return nil
	}
	return []expr.Any{
		&expr.Cmp{Op: expr.CmpOpGte, Register: KernelReg(8), Data: info.RangeLo},
		&expr.Cmp{Op: expr.CmpOpLte, Register: KernelReg(8), Data: info.RangeHi},
	}
}
