package compat

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"
)

// Family is the address family of a rule: AF_INET or AF_INET6.
type Family uint8

const (
	IPv4 Family = 2
	IPv6 Family = 10
)

// Prog is the name iptables reports itself under for this family.
func (f Family) Prog() string {
	if f == IPv6 {
		return "ip6tables"
	}
	return "iptables"
}

// Net is an address with its mask (iptables allows non-contiguous
// masks). Addr is stored already masked. The zero Net means "any".
type Net struct {
	Addr netip.Addr
	Mask netip.Addr
}

// IsAny reports whether n matches every address (absent or /0).
func (n Net) IsAny() bool { return !n.Addr.IsValid() || n.Bits() == 0 }

// Bits returns the prefix length, or -1 for a non-contiguous mask.
func (n Net) Bits() int {
	if !n.Mask.IsValid() {
		return 0
	}
	if n.Mask.Is4() {
		a := n.Mask.As4()
		m := binary.BigEndian.Uint32(a[:])
		ones := bits.LeadingZeros32(^m)
		if ones < 32 && m<<ones != 0 {
			return -1
		}
		return ones
	}
	a := n.Mask.As16()
	hi, lo := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	if ones := bits.LeadingZeros64(^hi); ones < 64 {
		if hi<<ones != 0 || lo != 0 {
			return -1
		}
		return ones
	}
	ones := bits.LeadingZeros64(^lo)
	if ones < 64 && lo<<ones != 0 {
		return -1
	}
	return 64 + ones
}

// String prints n as iptables -S does: address and "/bits" or "/mask".
// writeNet writes n.String() to b.
func writeNet(b *strings.Builder, n Net) {
	if !n.Addr.IsValid() || n.Bits() < 0 && !n.Mask.IsValid() {
		b.WriteString(n.String())
		return
	}
	var buf [64]byte
	out := n.Addr.AppendTo(buf[:0])
	out = append(out, '/')
	if bits := n.Bits(); bits >= 0 {
		out = strconv.AppendInt(out, int64(bits), 10)
	} else {
		out = n.Mask.AppendTo(out)
	}
	b.Write(out)
}

func (n Net) String() string {
	if bits := n.Bits(); bits >= 0 {
		return n.Addr.String() + "/" + strconv.Itoa(bits)
	}
	return n.Addr.String() + "/" + n.Mask.String()
}

// Prefix converts n to a netip.Prefix; ok is false for non-contiguous masks.
func (n Net) Prefix() (netip.Prefix, bool) {
	bits := n.Bits()
	if bits < 0 || !n.Addr.IsValid() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(n.Addr, bits), true
}

// Frag is the -f fragment test.
type Frag int8

const (
	FragAny  Frag = 0
	FragOnly Frag = 1  // -f: non-first fragments only
	FragNone Frag = -1 // ! -f: unfragmented packets and first fragments
)

// Counters are packet and byte counters (-c P B, [P:B]).
type Counters struct {
	Packets, Bytes uint64
}

// Rule is one iptables rule: the fixed header fields, the matches in
// command-line order, and the target.
type Rule struct {
	Family   Family
	Src, Dst Net
	SrcInv   bool
	DstInv   bool
	InIface  string
	OutIface string
	InInv    bool
	OutInv   bool
	// Proto is the -p protocol number; 0 with ProtoSet false means any.
	Proto    uint8
	ProtoSet bool
	ProtoInv bool
	Frag     Frag
	Matches  []Match
	// Target is nil for a rule without -j/-g.
	Target Target
	// Counters holds -c / [p:b] values; nil when none were given.
	Counters *Counters
}

// Match is a parsed -m match (or the implicit protocol match).
type Match interface {
	// Name is the name printed after -m.
	Name() string
	// Save appends the options as iptables -S prints them, each with a
	// leading space.
	Save(b *strings.Builder, r *Rule)
	// List appends the -L description, starting with a space.
	List(b *strings.Builder, r *Rule, numeric bool)
}

// Target is what -j or -g names.
type Target interface {
	// Name is the name printed after -j.
	Name() string
	Save(b *strings.Builder, r *Rule)
	List(b *strings.Builder, r *Rule, numeric bool)
}

// Standard verdict names.
const (
	VerdictAccept = "ACCEPT"
	VerdictDrop   = "DROP"
	VerdictReturn = "RETURN"
	VerdictQueue  = "QUEUE"
)

// ChainTarget is a verdict (ACCEPT, DROP, RETURN, QUEUE) or a jump/goto
// to a user chain.
type ChainTarget struct {
	Chain string
	Goto  bool
}

func (t *ChainTarget) Name() string                             { return t.Chain }
func (t *ChainTarget) Save(*strings.Builder, *Rule)             {}
func (t *ChainTarget) List(b *strings.Builder, _ *Rule, _ bool) {}

// IsVerdict reports whether t is a standard verdict rather than a chain.
func (t *ChainTarget) IsVerdict() bool { return IsVerdict(t.Chain) }

// IsVerdict reports whether name is one of the standard verdicts.
func IsVerdict(name string) bool {
	switch name {
	case VerdictAccept, VerdictDrop, VerdictReturn, VerdictQueue:
		return true
	}
	return false
}

// Op is an iptables command.
type Op int

const (
	OpNone Op = iota
	OpAppend
	OpCheck
	OpDelete    // -D CHAIN rule-spec
	OpDeleteNum // -D CHAIN N
	OpInsert
	OpReplace
	OpList      // -L
	OpListRules // -S
	OpFlush     // -F
	OpZero      // -Z
	OpZeroNum   // -Z CHAIN N
	OpNewChain  // -N
	OpDeleteChain
	OpRenameChain
	OpPolicy
)

// Command is one parsed iptables invocation (or restore line).
type Command struct {
	Family Family
	Op     Op
	// ZeroToo is set for -L/-S combined with -Z.
	ZeroToo bool
	// ZeroNum is set when that -Z named a rule (-Z CHAIN N -L): only the
	// listed rule is zeroed.
	ZeroNum bool
	Table   string
	Chain   string
	// ChainGiven says that a chain was named, also as an empty word
	// (which names no chain: -F "" is not -F).
	ChainGiven bool
	// RuleNum is the 1-based rule number of -D N, -I N, -R N, -L C N,
	// -S C N, -Z C N; 0 when none was given.
	RuleNum int
	NewName string // -E
	Policy  string // -P
	// Rules holds the rule(s) of rule commands: several when -s/-d list
	// several addresses.
	Rules []*Rule
	// JumpChain names the user chain a rule jumps to when the target
	// is not an extension; its existence is checked against the kernel.
	JumpChain string

	Verbose     int
	Numeric     bool
	Exact       bool
	LineNumbers bool
	Wait        bool
	Counters    *Counters // -c given on the command line
	// HelpExts are the extensions whose options -h prints after the
	// general help (ExtHelp): the target given before -h, then the
	// matches in their order, or, without -m, the match of the -p
	// protocol as it was written.
	HelpExts []*ExtSpec
}

// BuiltinChains lists the built-in chains of each table in hook order.
var BuiltinChains = map[string][]string{
	"filter":   {"INPUT", "FORWARD", "OUTPUT"},
	"nat":      {"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"},
	"mangle":   {"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"},
	"raw":      {"PREROUTING", "OUTPUT"},
	"security": {"INPUT", "FORWARD", "OUTPUT"},
}

// Tables lists the iptables tables in iptables-save order.
var Tables = []string{"mangle", "security", "raw", "filter", "nat"}

// IsBuiltin reports whether chain is a built-in chain of table.
func IsBuiltin(table, chain string) bool {
	for _, c := range BuiltinChains[table] {
		if c == chain {
			return true
		}
	}
	return false
}
