package compat

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
)

// SaveRule returns the rule as iptables -S and iptables-save print it,
// "-A CHAIN ...". counters adds "-c P B" before the target (-S -v).
func SaveRule(chain string, r *Rule, counters bool) string {
	var b strings.Builder
	b.WriteString("-A ")
	b.WriteString(chain)
	WriteRuleSpec(&b, r, counters)
	return b.String()
}

// WriteRuleSpec appends the rule specification (everything after the
// chain name) with a leading space per option, as iptables -S prints it.
func WriteRuleSpec(b *strings.Builder, r *Rule, counters bool) {
	writeRuleSpec(b, r, counters, true)
}

// ExactSpec is the rule specification that parses back to exactly r:
// unlike the -S form it keeps "-i +" and adjacent tcp/udp matches apart
// (iptables-nft's read-back folds those, losing what was written).
func ExactSpec(r *Rule) string {
	var b strings.Builder
	b.Grow(192) // most rules: one allocation
	writeRuleSpec(&b, r, false, false)
	return b.String()
}

// ExactIsCanonical says whether ExactSpec(r) is, without printing it
// twice, also the -S text of r (WriteRuleSpec without counters): the two
// differ only where writeRuleSpec looks at canonical, so they are equal
// when no such place applies to r. false means they may differ.
func ExactIsCanonical(r *Rule) bool {
	if r.InIface == "+" && !r.InInv || r.OutIface == "+" && !r.OutInv {
		return false
	}
	if ifaceNeedsQuote(r.InIface) || ifaceNeedsQuote(r.OutIface) {
		return false
	}
	if r.ProtoSet && !protoParsesAs(ProtoName(r.Proto, false), r.Proto) {
		return false
	}
	for _, m := range r.Matches {
		if _, ok := m.(ExactSaver); ok {
			if c, ok := m.(exactAsSave); !ok || !c.ExactIsSave() {
				return false
			}
		}
	}
	if mergesAny(r.Matches) {
		return false
	}
	if _, ok := r.Target.(*ChainTarget); ok {
		return true // printed the same way in both forms
	}
	if _, ok := r.Target.(ExactSaver); ok {
		c, ok := r.Target.(exactAsSave)
		return ok && c.ExactIsSave()
	}
	return true
}

// writeIface writes an interface name: as is for -S (iptables-nft prints
// "-i eth 0" for the name "eth 0", which it takes with a warning), quoted
// in the exact form when it holds what splits or quotes a restore line, so
// that the rule's text reads back as the same rule.
func writeIface(b *strings.Builder, name string, canonical bool) {
	if canonical || !ifaceNeedsQuote(name) {
		b.WriteString(name)
		return
	}
	writeSaveQuote(b, name)
}

func ifaceNeedsQuote(name string) bool { return strings.ContainsAny(name, " \t\n\"'\\") }

// exactWord is a name (interface, set) as the exact text keeps it: quoted
// when it holds what splits or quotes a restore line, as is otherwise
// (where -S prints it as is either way).
func exactWord(name string) string {
	if !ifaceNeedsQuote(name) {
		return name
	}
	var b strings.Builder
	writeSaveQuote(&b, name)
	return b.String()
}

// exactAsSave is implemented by an ExactSaver (match or target) whose
// exact form differs from its -S form only for some instances:
// ExactIsSave says the two are the same for this one.
type exactAsSave interface {
	ExactIsSave() bool
}

func writeRuleSpec(b *strings.Builder, r *Rule, counters, canonical bool) {
	neg := func(inv bool) {
		if inv {
			b.WriteString(" !")
		}
	}
	if !r.Src.IsAny() {
		neg(r.SrcInv)
		b.WriteString(" -s ")
		writeNet(b, r.Src)
	}
	if !r.Dst.IsAny() {
		neg(r.DstInv)
		b.WriteString(" -d ")
		writeNet(b, r.Dst)
	}
	if r.InIface != "" && (r.InIface != "+" || r.InInv || !canonical) {
		neg(r.InInv)
		b.WriteString(" -i ")
		writeIface(b, r.InIface, canonical)
	}
	if r.OutIface != "" && (r.OutIface != "+" || r.OutInv || !canonical) {
		neg(r.OutInv)
		b.WriteString(" -o ")
		writeIface(b, r.OutIface, canonical)
	}
	if r.ProtoSet {
		neg(r.ProtoInv)
		b.WriteString(" -p ")
		if n := ProtoName(r.Proto, false); n != "" && (canonical || protoParsesAs(n, r.Proto)) {
			b.WriteString(n)
		} else {
			b.WriteString(strconv.Itoa(int(r.Proto)))
		}
	}
	switch r.Frag {
	case FragOnly:
		b.WriteString(" -f")
	case FragNone:
		b.WriteString(" ! -f")
	}
	ms := r.Matches
	if canonical {
		ms = mergeMatches(ms)
	}
	for _, m := range ms {
		b.WriteString(" -m ")
		b.WriteString(m.Name())
		if e, ok := m.(ExactSaver); ok && !canonical {
			e.SaveExact(b, r)
			continue
		}
		m.Save(b, r)
	}
	if counters {
		var c Counters
		if r.Counters != nil {
			c = *r.Counters
		}
		fmt.Fprintf(b, " -c %d %d", c.Packets, c.Bytes)
	}
	if r.Target != nil {
		if ct, ok := r.Target.(*ChainTarget); ok && ct.Goto {
			b.WriteString(" -g ")
			b.WriteString(ct.Chain)
			return
		}
		b.WriteString(" -j ")
		b.WriteString(r.Target.Name())
		if e, ok := r.Target.(ExactSaver); ok && !canonical {
			e.SaveExact(b, r)
			return
		}
		r.Target.Save(b, r)
	}
}

// ListFormat holds the -L formatting switches.
type ListFormat struct {
	Verbose     bool // -v: counters and interfaces
	Numeric     bool // -n
	Exact       bool // -x
	LineNumbers bool // --line-numbers
}

// FormatNum prints a counter as xtables_print_num does. notable drops
// the column padding (used in chain headers).
func (f ListFormat) FormatNum(n uint64, notable bool) string {
	if f.Exact {
		if notable {
			return strconv.FormatUint(n, 10) + " "
		}
		return fmt.Sprintf("%8d ", n)
	}
	if n <= 99999 {
		if notable {
			return strconv.FormatUint(n, 10) + " "
		}
		return fmt.Sprintf("%5d ", n)
	}
	for _, suffix := range []string{"K", "M", "G"} {
		n = (n + 500) / 1000
		if n <= 9999 {
			if notable {
				return strconv.FormatUint(n, 10) + suffix + " "
			}
			return fmt.Sprintf("%4d%s ", n, suffix)
		}
	}
	n = (n + 500) / 1000
	if notable {
		return strconv.FormatUint(n, 10) + "T "
	}
	return fmt.Sprintf("%4dT ", n)
}

// ChainHeader prints the "Chain X (...)" line and the column titles.
// policy is "" for a user chain (then refs is shown).
func (f ListFormat) ChainHeader(name, policy string, c Counters, refs int) string {
	var b strings.Builder
	b.WriteString("Chain ")
	b.WriteString(name)
	if policy != "" {
		b.WriteString(" (policy ")
		b.WriteString(policy)
		if f.Verbose {
			b.WriteByte(' ')
			b.WriteString(f.FormatNum(c.Packets, true))
			b.WriteString("packets, ")
			b.WriteString(f.FormatNum(c.Bytes, true))
			b.WriteString("bytes")
		}
		b.WriteString(")\n")
	} else {
		fmt.Fprintf(&b, " (%d references)\n", refs)
	}
	if f.LineNumbers {
		b.WriteString("num  ")
	}
	if f.Verbose {
		if f.Exact {
			fmt.Fprintf(&b, "%8s %10s ", "pkts", "bytes")
		} else {
			fmt.Fprintf(&b, "%5s %5s ", "pkts", "bytes")
		}
	}
	fmt.Fprintf(&b, "%-9s ", "target")
	b.WriteString(" prot opt")
	if f.Verbose {
		fmt.Fprintf(&b, " %-6s %-6s ", "in", "out")
	}
	fmt.Fprintf(&b, " %-19s  %-19s \n", "source", "destination")
	return b.String()
}

// ListNamer is implemented by targets whose -L target column differs
// from the name -S prints after -j (NOTRACK lists as CT).
type ListNamer interface {
	ListName() string
}

// ListRule prints one rule row of -L; num is its 1-based position.
func (f ListFormat) ListRule(r *Rule, num int) string {
	var b strings.Builder
	f.WriteListRule(&b, r, num)
	return b.String()
}

// WriteListRule writes what ListRule prints to b: a listing of many
// rules writes them all into one text.
func (f ListFormat) WriteListRule(b *strings.Builder, r *Rule, num int) {
	if f.LineNumbers {
		padded(b, strconv.Itoa(num), 4)
	}
	if f.Verbose {
		var c Counters
		if r.Counters != nil {
			c = *r.Counters
		}
		b.WriteString(f.FormatNum(c.Packets, false))
		b.WriteString(f.FormatNum(c.Bytes, false))
	}
	target := ""
	goTo := false
	if r.Target != nil {
		target = r.Target.Name()
		if ln, ok := r.Target.(ListNamer); ok {
			target = ln.ListName()
		}
		if ct, ok := r.Target.(*ChainTarget); ok {
			goTo = ct.Goto
		}
	}
	padded(b, target, 9)
	if r.ProtoInv {
		b.WriteByte('!')
	} else {
		b.WriteByte(' ')
	}
	proto := uint8(0)
	if r.ProtoSet {
		proto = r.Proto
	}
	if n := ProtoName(proto, false); n != "" && !f.Numeric {
		padded(b, n, 4)
	} else {
		padded(b, strconv.Itoa(int(proto)), 4)
	}
	switch {
	case r.Frag == FragOnly:
		b.WriteString("-f ")
	case r.Frag == FragNone:
		b.WriteString("!f ")
	default:
		b.WriteString("-- ")
	}
	if f.Verbose {
		b.WriteByte(' ')
		padded(b, f.iface(r.InIface, r.InInv), 6)
		padded(b, f.iface(r.OutIface, r.OutInv), 6)
	}
	f.addr(b, r.Src, r.SrcInv, r.Family)
	f.addr(b, r.Dst, r.DstInv, r.Family)
	if goTo {
		b.WriteString("[goto] ")
	}
	for _, m := range mergeMatches(r.Matches) {
		m.List(b, r, f.Numeric)
	}
	if r.Target != nil {
		r.Target.List(b, r, f.Numeric)
	}
	b.WriteByte('\n')
}

// padded writes s left-aligned in width columns and a blank, as
// printf's "%-Ns " does (a longer s is not cut).
func padded(b *strings.Builder, s string, width int) {
	b.WriteString(s)
	for n := len(s); n < width; n++ {
		b.WriteByte(' ')
	}
	b.WriteByte(' ')
}

func (f ListFormat) iface(name string, inv bool) string {
	s := ""
	if inv {
		s = "!"
	}
	// "-i +" is no test at all: the kernel holds nothing to list
	if name != "" && (name != "+" || inv) {
		return s + name
	}
	if f.Numeric {
		return s + "*"
	}
	return s + "any"
}

func (f ListFormat) addr(b *strings.Builder, n Net, inv bool, fam Family) {
	if inv {
		b.WriteByte('!')
	} else {
		b.WriteByte(' ')
	}
	var s string
	switch {
	case n.IsAny() && !f.Numeric, fam == IPv6 && !f.Numeric && n.Addr.IsUnspecified():
		// ip6tables names the address :: "anywhere" whatever its mask
		s = "anywhere"
	case n.IsAny():
		if fam == IPv6 {
			s = "::/0"
		} else {
			s = "0.0.0.0/0"
		}
	default:
		if f.Numeric {
			s = n.Addr.String()
		} else {
			s = hostName(n.Addr)
		}
		s += listMask(n, fam)
	}
	padded(b, s, 19)
}

// listMask is the mask suffix of -L: nothing for a host, "/bits" or
// "/dotted".
func listMask(n Net, fam Family) string {
	bits := n.Bits()
	full := 32
	if fam == IPv6 {
		full = 128
	}
	switch {
	case bits == full:
		return ""
	case bits < 0:
		return "/" + n.Mask.String()
	}
	return "/" + strconv.Itoa(bits)
}

var (
	hostsOnce sync.Once
	hostsByIP map[netip.Addr]string
	netsByIP  map[uint32]string
)

// hostName resolves an address to a name as the non-numeric -L does
// (xtables_ipaddr_to_anyname): /etc/hosts, then, for IPv4, the network
// names of /etc/networks ("loopback" for 127.0.0.0, "default" for
// 0.0.0.0). It does not ask DNS.
func hostName(a netip.Addr) string {
	hostsOnce.Do(func() {
		hostsByIP = map[netip.Addr]string{}
		readNameDB("/etc/hosts", func(fields []string) {
			if ip, err := netip.ParseAddr(fields[0]); err == nil {
				if _, ok := hostsByIP[ip]; !ok {
					hostsByIP[ip] = fields[1]
				}
			}
		})
		netsByIP = map[uint32]string{}
		readNameDB("/etc/networks", func(fields []string) {
			if v, ok := inetNetwork(fields[1]); ok {
				if _, dup := netsByIP[v]; !dup {
					netsByIP[v] = fields[0]
				}
			}
		})
	})
	if n, ok := hostsByIP[a]; ok {
		return n
	}
	if a.Is4() {
		b := a.As4()
		if n, ok := netsByIP[uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3])]; ok {
			return n
		}
	}
	return a.String()
}

// inetNetwork reads a network number of /etc/networks as inet_network(3)
// does: up to four dot-separated numbers (decimal, 0x hex or 0 octal),
// the last in the low byte ("127" is 0.0.0.127, "127.0.0.0" is
// 127.0.0.0).
func inetNetwork(s string) (uint32, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return 0, false
	}
	var v uint32
	for _, p := range parts {
		n, err := strconv.ParseUint(p, 0, 32)
		if err != nil {
			return 0, false
		}
		v = v<<8 | uint32(n&0xff)
	}
	return v, true
}

// ExactSaver is implemented by matches and targets whose -S form loses
// something (iptables 1.8.9 drops an inverted full range, prints an
// IDLETIMER label unquoted): SaveExact prints what parses back to
// exactly the same match or target.
type ExactSaver interface {
	SaveExact(b *strings.Builder, r *Rule)
}

// CompareKeyer is implemented by matches whose -S text leaves out or
// rounds fields of the xtables struct that iptables-nft compares when
// -C and -D look for a rule: CompareKey holds them, so that two rules
// with the same -S text but other structs are different rules.
type CompareKeyer interface {
	CompareKey() string
}

// Merger is implemented by matches that iptables-nft reads back merged
// with an earlier match of the same kind: the native payload tests of all
// tcp (udp) matches of a rule become one match, at the place of the first
// (its parser keeps that match in its context and adds every later port
// or flags test to it, whatever other matches stand between).
type Merger interface {
	// Merge returns the combination of m followed by next, or false when
	// the two stay separate.
	Merge(next Match) (Match, bool)
}

// Vanisher is implemented by matches that iptables-nft can turn into
// no expression at all (a native tcp/udp match whose tests all span
// everything): its read-back shows no trace of them, so neither do the
// listings, and -C/-D take the rule for one without the match. The
// rule's own expressions (and XDP) keep what the match tests.
type Vanisher interface {
	Vanishes() bool
}

func vanishes(m Match) bool {
	v, ok := m.(Vanisher)
	return ok && v.Vanishes()
}

// mergesAny says whether the read-back of ms differs from ms: a match of
// ms vanishes or merges into an earlier one (not only its neighbour:
// iptables-nft folds every tcp/udp test of a rule into its first tcp/udp
// match).
func mergesAny(ms []Match) bool {
	for i, m := range ms {
		if vanishes(m) {
			return true
		}
		for _, prev := range ms[:i] {
			if mg, ok := prev.(Merger); ok {
				if _, ok := mg.Merge(m); ok {
					return true
				}
			}
		}
	}
	return false
}

// mergeMatches is ms as iptables-nft reads it back: without the matches
// that vanish, the others merged.
func mergeMatches(ms []Match) []Match {
	if !mergesAny(ms) {
		return ms
	}
	var out []Match
next:
	for _, m := range ms {
		if vanishes(m) {
			continue
		}
		for j, prev := range out {
			if mg, ok := prev.(Merger); ok {
				if merged, ok := mg.Merge(m); ok {
					out[j] = merged
					continue next
				}
			}
		}
		out = append(out, m)
	}
	return out
}

// VerboseRule is the one-line form `iptables -v` prints for each rule it
// adds, deletes or checks: numeric, unpadded, "src -> dst".
func VerboseRule(r *Rule) string {
	var b strings.Builder
	target, goTo := "", false
	if r.Target != nil {
		target = r.Target.Name()
		if ln, ok := r.Target.(ListNamer); ok {
			target = ln.ListName() // -j NOTRACK prints as CT, as in -L
		}
		if ct, ok := r.Target.(*ChainTarget); ok {
			goTo = ct.Goto
		}
	}
	b.WriteString(target + " ")
	b.WriteByte(invChar(r.ProtoInv, ' '))
	proto := uint8(0)
	if r.ProtoSet {
		proto = r.Proto
	}
	if n := ProtoName(proto, true); n != "" {
		b.WriteString(n + " ")
	} else {
		b.WriteString(strconv.Itoa(int(proto)) + " ")
	}
	b.WriteString("opt ")
	b.WriteByte(invChar(r.Frag == FragNone, '-'))
	if r.Frag != FragAny {
		b.WriteString("f ")
	} else {
		b.WriteString("- ")
	}
	f := ListFormat{Numeric: true}
	b.WriteString("in " + f.iface(r.InIface, r.InInv) + " ")
	b.WriteString("out " + f.iface(r.OutIface, r.OutInv) + " ")
	addr := func(n Net) string {
		if n.IsAny() {
			if r.Family == IPv6 {
				return "::/0"
			}
			return "0.0.0.0/0"
		}
		return n.Addr.String() + listMask(n, r.Family)
	}
	b.WriteByte(invChar(r.SrcInv, ' '))
	b.WriteString(addr(r.Src) + " ")
	b.WriteByte(invChar(r.DstInv, ' '))
	b.WriteString("-> " + addr(r.Dst))
	b.WriteString("  ")
	if goTo {
		b.WriteString("[goto] ")
	}
	for _, m := range mergeMatches(r.Matches) {
		m.List(&b, r, true)
	}
	if r.Target != nil {
		r.Target.List(&b, r, true)
	}
	b.WriteByte('\n')
	return b.String()
}

func invChar(inv bool, otherwise byte) byte {
	if inv {
		return '!'
	}
	return otherwise
}
