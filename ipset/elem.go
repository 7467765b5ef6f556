package ipset

import (
	"bufio"
	"cmp"
	"fmt"
	"math/big"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Part is one dimension of an element.
type Part struct {
	Addr    netip.Addr
	Bits    int // prefix length for DimNet
	Proto   uint8
	Port    uint16 // icmp: type<<8 | code
	Iface   string
	Physdev bool
	// Wildcard: Iface is a name prefix (the wildcard flag of
	// hash:net,iface entries, given as an option of add).
	Wildcard bool
	MAC      [6]byte
	HasMAC   bool
	Mark     uint32
	Name     string // DimSet
	pos      uint32 // DimSet: the member's position, as stored
}

// Elem is an element: one Part per dimension of the set's type.
type Elem []Part

// Protocol numbers with a meaning of their own in port dimensions.
const (
	protoICMP    = 1
	protoTCP     = 6
	protoUDP     = 17
	protoICMPv6  = 58
	protoSCTP    = 132
	protoUDPLite = 136
)

// ParseElem parses one element argument of set s. Address ranges, CIDRs
// in single-address dimensions and port ranges expand into several
// elements, as ipset does.
func ParseElem(s *Set, arg string) ([]Elem, *Error) {
	dims := s.Type.Dims
	fields := elemFields(arg)
	if err := separatorErr(s, arg, len(fields)-1); err != nil {
		return nil, err
	}
	if s.Type.List {
		fields = []string{arg}
	}
	if len(fields) < len(dims) && !(s.Type.OptionalMAC && len(fields) == 1) {
		which := [...]string{"", "Second", "Third"}[min(len(fields), 2)]
		return nil, syntaxf("%s element is missing from %s.", which, arg)
	}
	out := []Elem{nil}
	// The kernel's refusal of a dimension (a /0) waits for the parse of
	// the others: a syntax error in a later one is ipset's answer.
	var kernelErr *Error
	for i, f := range fields {
		var alts []Part
		var err *Error
		switch dims[i] {
		case DimIP:
			alts, err = parseIPDim(s, f, i == 0)
		case DimNet:
			alts, err = parseNetDim(s, f)
		case DimPort:
			alts, err = parsePortDim(s, f)
		case DimIface:
			p := Part{Iface: f}
			if n, ok := strings.CutPrefix(f, "physdev:"); ok {
				p = Part{Iface: n, Physdev: true}
			}
			if len(p.Iface) > 15 {
				return nil, syntaxf("interface name '%s' is longer than 15 characters", p.Iface)
			}
			// (an empty name is an element: "physdev:" alone, which no
			// packet's interface matches)
			alts = []Part{p}
		case DimMAC:
			m, ok := parseMAC(f)
			if !ok {
				return nil, syntaxf("cannot parse '%s' as ethernet address", f)
			}
			alts = []Part{{MAC: m, HasMAC: true}}
		case DimMark:
			v, e := parseUint(f, 0xffffffff)
			if e != nil {
				return nil, e
			}
			alts = []Part{{Mark: uint32(v) & s.MarkMaskValue()}}
		case DimSet:
			alts = []Part{{Name: f}}
		}
		if err != nil && !ParseError(err) && i+1 < len(fields) {
			if kernelErr == nil {
				kernelErr = err
			}
			continue
		}
		if err != nil && ParseError(err) {
			return nil, err
		}
		if err != nil {
			return nil, cmp.Or(kernelErr, err) // (the first dimension's)
		}
		if kernelErr != nil {
			continue
		}
		next := make([]Elem, 0, len(out)*len(alts))
		for _, e := range out {
			for _, a := range alts {
				next = append(next, append(append(Elem(nil), e...), a))
			}
		}
		out = next
	}
	if kernelErr != nil {
		return nil, kernelErr
	}
	if s.Type.OptionalMAC && len(fields) == 1 {
		// No MAC (ipset fills it in from the first packet).
		for i := range out {
			out[i] = append(out[i], Part{})
		}
	}
	return out, nil
}

// splitParts splits on element separators (elemFields) into at most n
// fields.
func splitParts(arg string, n int) []string {
	if n <= 1 {
		return []string{arg}
	}
	f := elemFields(arg)
	if len(f) > n {
		f = append(f[:n-1:n-1], strings.Join(f[n-1:], ","))
	}
	return f
}

// elemFields splits an element at its commas as ipset does: a comma
// that starts or ends what is left of the text separates nothing
// (",a" and "a," are one field, "a,,b" is "a" and ",b").
// separatorErr is ipset's refusal of n separators in element arg of s,
// more than its type has.
func separatorErr(s *Set, arg string, n int) *Error {
	dims := s.Type.Dims
	if len(dims) == 1 && !s.Type.List && n > 0 {
		return syntaxf("Elem separator in %s, but settype %s supports none.", arg, s.Type.Name)
	} else if len(dims) > 1 && n >= len(dims) {
		words := [...]string{"", "One", "Two", "Three", "Four"}
		return syntaxf("%s elem separators in %s, but settype %s supports %s.", words[min(n, 4)], arg, s.Type.Name, strings.ToLower(words[len(dims)-1]))
	}
	return nil
}

func elemFields(arg string) []string {
	var out []string
	rest := arg
	for {
		i := strings.IndexByte(rest, ',')
		if i < 0 || rest[0] == ',' || rest[len(rest)-1] == ',' {
			return append(out, rest)
		}
		out = append(out, rest[:i])
		rest = rest[i+1:]
	}
}

func parseAddr(s *Set, f string) (netip.Addr, *Error) {
	text := f
	if strings.HasPrefix(f, "[") {
		// ipset takes an address in brackets in either family
		// (ipset_parse_ip's escape), and names it without them
		if !strings.HasSuffix(f, "]") || len(f) < 2 {
			return netip.Addr{}, syntaxf("cannot find closing escape character ']' in %s", f)
		}
		text = f[1 : len(f)-1]
	}
	a, err := netip.ParseAddr(text)
	if err != nil && s.Family != Inet6 {
		// ipset resolves with getaddrinfo, which takes inet_aton's
		// short forms ("10.1" is 10.0.0.1).
		if v, ok := inetAton(text); ok {
			a, err = v, nil
		}
	}
	want := "IPv4"
	if s.Family == Inet6 {
		want = "IPv6"
	}
	if err != nil && LookupHost != nil {
		// a host name: ipset takes the first address the resolver
		// gives for the set's family
		if h, ok := LookupHost(text, s.Family == Inet6); ok {
			a, err = h, nil
		}
	}
	if err != nil || a.Zone() != "" || (s.Family == Inet6) != a.Is6() {
		return netip.Addr{}, syntaxf("cannot parse %s: resolving to %s address failed", text, want)
	}
	return a, nil
}

// Name resolution, installed by the command (this package does no I/O);
// nil: names do not resolve, addresses print as numbers.
var (
	// LookupHost returns the first address of host name in the family
	// (getaddrinfo's answer: /etc/hosts, then DNS).
	LookupHost func(name string, v6 bool) (netip.Addr, bool)
	// LookupName returns the name of an address (getnameinfo's answer),
	// for -resolve.
	LookupName func(a netip.Addr) (string, bool)
)

// addrText prints a, by name when resolve asks and a name is known.
func addrText(a netip.Addr, resolve bool) string {
	if resolve && LookupName != nil {
		if n, ok := LookupName(a); ok {
			return n
		}
	}
	return a.String()
}

func (s *Set) maxBits() int {
	if s.Family == Inet6 {
		return 128
	}
	return 32
}

// parseCIDR parses IP or IP/CIDR; ipset reads the prefix length before
// it resolves the address ("2001:db8::/64" in an inet set is "'64' is
// out of range 0-32").
func parseCIDR(s *Set, f string) (netip.Addr, int, bool, *Error) {
	ip, bits, has := cutCIDR(f)
	v := uint64(s.maxBits())
	if has {
		var perr *Error
		v, perr = parseUint(bits, 255) // read as a byte first
		if perr == nil {
			v, perr = parseUint(bits, uint64(s.maxBits()))
		}
		if perr != nil {
			return netip.Addr{}, 0, false, perr
		}
	}
	a, err := parseAddr(s, ip)
	if err != nil {
		return a, 0, false, err
	}
	return a, int(v), has, nil
}

// inetAton parses the IPv4 forms the resolver under ipset takes: a,
// a.b, a.b.c and a.b.c.d, each part decimal or octal (0...), the last
// filling the remaining bytes. (inet_aton also takes hex parts, 0x...;
// ipset 7.17 on glibc 2.36 refuses them.)
func inetAton(f string) (netip.Addr, bool) {
	parts := strings.Split(f, ".")
	if len(parts) > 4 || f == "" {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		v, neg, ok := strtoull(p)
		if !ok || neg || p == "" || p[0] == ' ' || p[0] == '+' || len(p) > 1 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var ip uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		ip |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if rest := 32 - 8*(len(vals)-1); last >= 1<<rest {
		return netip.Addr{}, false
	}
	ip |= last
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

// cutRange splits "A-B" at its first '-'; a '-' at either end is no
// range separator.
func cutRange(f string) (string, string, bool) {
	a, b, ok := strings.Cut(f, "-")
	if !ok || a == "" || b == "" {
		return f, "", false
	}
	return a, b, true
}

// cutCIDR splits "IP/CIDR" at its first '/'; as for ranges, a '/' at
// either end is no separator (ipset then resolves the whole text: "/32"
// and "10.0.0.1/" are names that do not resolve).
func cutCIDR(f string) (string, string, bool) {
	a, b, ok := strings.Cut(f, "/")
	if !ok || a == "" || b == "" {
		return f, "", false
	}
	return a, b, true
}

func hasCIDR(f string) bool {
	_, _, ok := cutCIDR(f)
	return ok
}

// parseIPDim parses a single-address dimension: IP, IP/CIDR or IP-IP
// (IPv4 only) expand into addresses; the set's netmask applies.
func parseIPDim(s *Set, f string, first bool) ([]Part, *Error) {
	return appendIPDim(nil, s, f, first)
}

// appendIPDim is parseIPDim appending to out.
func appendIPDim(out []Part, s *Set, f string, first bool) ([]Part, *Error) {
	start := len(out)
	var lo, hi netip.Addr
	if ip, bits, ok := cutCIDR(f); ok && first && s.Type.OptionalMAC && bits == "32" {
		if _, _, isRange := cutRange(f); !isRange {
			// a host prefix is a plain address to ipset's parser,
			// which refuses the prefix for the command after the
			// parse (HostPrefixErr)
			f = ip
		}
	}
	if _, _, isRange := cutRange(f); (!first || s.Type.OptionalMAC) && (isRange || hasCIDR(f)) {
		// Only the first address of a type takes a range or prefix
		// (not bitmap:ip,mac's).
		if ip, bits, ok := cutCIDR(f); ok && bits == strconv.Itoa(s.maxBits()) && !first {
			if _, err := parseAddr(s, ip); err == nil {
				err := errorf("There are not allowed options (28) but can't resolve them. It's a bug, please report the problem.")
				err.Checked = true
				err.NoLine = true // (a restore reports it without the line)
				return nil, err
			}
		}
		return nil, syntaxf("plain IP address must be supplied: %s", f)
	}
	if _, _, isRange := cutRange(f); s.Family == Inet6 && (isRange || hasCIDR(f)) {
		// IPv6 takes single addresses only, which ipset checks
		// before it resolves anything; a host prefix written "/128"
		// is a single address
		ip, bits, _ := cutCIDR(f)
		if isRange || bits != "128" {
			return nil, syntaxf("plain IP address must be supplied: %s", f)
		}
		f = ip
	}
	// the address as written first, and what follows it: the range's
	// end or the prefix length (-1: none)
	var written, to netip.Addr
	prefixBits := -1
	if a, b, ok := cutRange(f); ok && !hasCIDR(f) {
		var err *Error
		if lo, err = parseAddr(s, a); err != nil {
			return nil, err
		}
		if hi, err = parseAddr(s, b); err != nil {
			return nil, err
		}
		if s.Family == Inet6 {
			return nil, syntaxf("plain IP address must be supplied: %s", f)
		}
		written, to = lo, hi
		if hi.Less(lo) {
			lo, hi = hi, lo
		}
	} else {
		a, bits, has, err := parseCIDR(s, f)
		if err != nil {
			return nil, err
		}
		if has && s.Family == Inet6 {
			return nil, syntaxf("plain IP address must be supplied: %s", f)
		}
		if has && bits == 0 {
			// the kernel refuses a /0 of an address (a bitmap after it
			// checked the address against its range)
			if s.Type.Bitmap && (a.Less(s.RangeLo) || s.RangeHi.Less(a)) {
				return nil, errorf(MsgOutOfRange)
			}
			return nil, errorf(MsgCIDR)
		}
		p := netip.PrefixFrom(a, bits).Masked()
		lo, hi = p.Addr(), lastAddr(p)
		written = a
		if has {
			prefixBits = bits
		}
	}
	if s.Type.Bitmap && first {
		if lo.Less(s.RangeLo) || s.RangeHi.Less(hi) {
			return nil, errorf(MsgOutOfRange)
		}
	}
	if m := s.AddrMask(); m != nil && first {
		// The kernel ANDs the address written first with the mask, and
		// steps from there to the range's end, or through the prefix
		// of the masked address, one address at a time, each as it is.
		lo = andAddr(written, m)
		hi = lo
		switch {
		case to.IsValid():
			if hi = to; hi.Less(lo) {
				lo, hi = hi, lo
			}
		case prefixBits >= 0:
			p := netip.PrefixFrom(lo, prefixBits).Masked()
			lo, hi = p.Addr(), lastAddr(p)
		}
		for a := lo; ; a = a.Next() {
			out = append(out, Part{Addr: a, Bits: s.maxBits()})
			if len(out)-start > 1<<20 {
				return nil, errorf(MsgFull)
			}
			if a == hi {
				return out, nil
			}
		}
	}
	step, mask := 1, 0
	if s.Netmask > 0 && s.Netmask < s.maxBits() && first {
		// bitmap:ip steps from the first address as given and masks
		// each; hash:ip masks the range's ends first.
		mask = s.Netmask
		if s.Family != Inet6 {
			step = 1 << (32 - s.Netmask)
		}
		if !s.Type.Bitmap && s.Family != Inet6 {
			lo = netip.PrefixFrom(lo, mask).Masked().Addr()
			hi = lastAddr(netip.PrefixFrom(hi, mask))
		}
	}
	for a := lo; ; {
		p := Part{Addr: a, Bits: s.maxBits()}
		if mask > 0 {
			p.Addr = netip.PrefixFrom(a, mask).Masked().Addr()
		}
		out = append(out, p)
		if len(out)-start > 1<<20 {
			return nil, errorf(MsgFull)
		}
		n := addN(a, step)
		if !n.IsValid() || hi.Less(n) || n.Less(a) {
			break
		}
		a = n
	}
	return out, nil
}

// parseNetDim parses a prefix dimension: IP[/CIDR] or IP-IP (split into
// prefixes); host bits are cleared.
func parseNetDim(s *Set, f string) ([]Part, *Error) { return appendNetDim(nil, s, f) }

// appendNetDim is parseNetDim appending to out.
func appendNetDim(out []Part, s *Set, f string) ([]Part, *Error) {
	if a, b, ok := cutRange(f); ok && !hasCIDR(f) {
		if s.Family == Inet6 {
			return nil, syntaxf("IP address or IP/cidr must be specified: %s", f)
		}
		lo, err := parseAddr(s, a)
		if err != nil {
			return nil, err
		}
		hi, err := parseAddr(s, b)
		if err != nil {
			return nil, err
		}
		if hi.Less(lo) {
			lo, hi = hi, lo
		}
		for _, p := range RangePrefixes(lo, hi) {
			out = append(out, Part{Addr: p.Addr(), Bits: p.Bits()})
		}
		return out, nil
	}
	a, bits, _, err := parseCIDR(s, f)
	if err != nil {
		return nil, err
	}
	if bits == 0 && !s.HasIface() {
		return nil, errorf(MsgCIDR)
	}
	return append(out, Part{Addr: netip.PrefixFrom(a, bits).Masked().Addr(), Bits: bits}), nil
}

// RangePrefixes splits [lo, hi] into the fewest prefixes.
func RangePrefixes(lo, hi netip.Addr) []netip.Prefix {
	var out []netip.Prefix
	for {
		bits := lo.BitLen()
		for bits > 0 {
			p := netip.PrefixFrom(lo, bits-1).Masked()
			if p.Addr() != lo || hi.Less(lastAddr(p)) {
				break
			}
			bits--
		}
		p := netip.PrefixFrom(lo, bits)
		out = append(out, p)
		last := lastAddr(p)
		if last == hi || !last.Next().IsValid() {
			return out
		}
		lo = last.Next()
	}
}

// andAddr is a ANDed with mask (of a's length).
func andAddr(a netip.Addr, mask []byte) netip.Addr {
	b := a.AsSlice()
	for i := range b {
		b[i] &= mask[i]
	}
	r, _ := netip.AddrFromSlice(b)
	return r
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func addN(a netip.Addr, n int) netip.Addr {
	if n == 1 {
		return a.Next()
	}
	x := new(big.Int).SetBytes(a.AsSlice())
	x.Add(x, big.NewInt(int64(n)))
	b := x.Bytes()
	if len(b) > a.BitLen()/8 {
		return netip.Addr{}
	}
	buf := make([]byte, a.BitLen()/8)
	copy(buf[len(buf)-len(b):], b)
	r, _ := netip.AddrFromSlice(buf)
	return r
}

// parseUint parses a number as ipset does (strtoull with base 0: a
// leading sign, 0x for hex, 0 for octal): a negative or too large
// number is out of range, anything else that is not a number is
// invalid.
func parseUint(f string, max uint64) (uint64, *Error) {
	return parseUintRange(f, 0, max)
}

func parseUintRange(f string, lo, max uint64) (uint64, *Error) {
	v, neg, ok := strtoull(f)
	if !ok {
		return 0, syntaxf("'%s' is invalid as number", f)
	}
	if v > max || v < lo || (neg && v != 0) {
		return 0, syntaxf("'%s' is out of range %d-%d", f, lo, max)
	}
	return v, nil
}

// strtoull reads f as C's strtoull(f, &end, 0) with *end == 0 required:
// ok false when f is not a number; an overflow gives ^0 (out of any
// range).
func strtoull(f string) (v uint64, neg, ok bool) {
	t := f
	for len(t) > 0 && (t[0] == ' ' || t[0]-'\t' <= '\r'-'\t') {
		t = t[1:] // isspace, as strtoull skips it (strings.TrimLeft builds its set each call)
	}
	if t != "" && (t[0] == '-' || t[0] == '+') {
		neg = t[0] == '-'
		t = t[1:]
	}
	base := uint64(10)
	switch {
	case len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'):
		base, t = 16, t[2:]
	case len(t) > 1 && t[0] == '0':
		base, t = 8, t[1:]
	}
	if t == "" {
		return 0, false, false
	}
	over := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false, false
		}
		if d >= base {
			return 0, false, false
		}
		if v > (^uint64(0)-d)/base {
			over = true
		}
		v = v*base + d
	}
	if over {
		return ^uint64(0), neg, true
	}
	return v, neg, true
}

// parsePortDim parses [proto:]port[-port]; the bitmap:port type takes
// only numbers (an optional tcp:/udp: prefix is accepted and dropped).
// msgTCPUDPOnly is bitmap:port's refusal of other protocols.
const msgTCPUDPOnly = "Only protocols TCP and UDP are valid"

func parsePortDim(s *Set, f string) (parts []Part, err *Error) {
	proto, port, pname := uint8(protoTCP), f, "tcp"
	// ipset splits at the first ':', unless the text starts or ends
	// with one: then it is a port (of TCP) as a whole
	if i := strings.Index(f, ":"); i > 0 && !strings.HasSuffix(f, ":") {
		pn, ok := protoNumber(f[:i])
		if !ok {
			return nil, syntaxf("cannot parse '%s' as a protocol", f[:i])
		}
		if _, err := strconv.ParseUint(f[:i], 10, 8); pn == 0 && err != nil {
			// a name of protocol 0 ("ip"); the number 0 is the
			// kernel's to refuse
			return nil, syntaxf("Unsupported protocol '%s'", f[:i])
		}
		proto, port, pname = pn, f[i+1:], f[:i]
	}
	if s.Family == Inet6 && proto == protoICMP || s.Family != Inet6 && proto == protoICMPv6 {
		return nil, syntaxf("Protocol ICMP%s can be used with family %s only", map[bool]string{true: "v6", false: ""}[proto == protoICMPv6], map[bool]string{true: "inet6", false: "inet"}[proto == protoICMPv6])
	}
	switch proto {
	case protoICMP, protoICMPv6:
		v, ok := icmpCode(proto, port)
		if !ok {
			if err := icmpRangeErr(port); err != nil {
				return nil, err
			}
			kind := "ICMP"
			if proto == protoICMPv6 {
				kind = "ICMPv6"
			}
			err := errorf("Cannot parse %s as an %s type/code.", port, kind)
			err.Parser = true
			return nil, err
		}
		return []Part{{Proto: proto, Port: v}}, nil
	case protoTCP, protoUDP, protoSCTP, protoUDPLite:
	default:
		if v, err := parseUint(port, 0xffff); err != nil || v != 0 {
			return nil, syntaxf("Protocol %s can be used with pseudo port value 0 only.", pname)
		}
		if s.Type.Bitmap {
			return nil, syntaxf(msgTCPUDPOnly)
		}
		if proto == 0 {
			return nil, errorf("Invalid protocol specified")
		}
		return []Part{{Proto: proto}}, nil
	}
	if s.Type.Bitmap && proto != protoTCP && proto != protoUDP {
		// bitmap:port takes the ports of TCP and UDP (after the port
		// parses)
		defer func() {
			if err == nil {
				parts, err = nil, syntaxf(msgTCPUDPOnly)
			}
		}()
	}
	pname = protoName(proto)
	parse1 := func(t string) (uint16, *Error) { return portNumber(t, pname) }
	a, b, isRange := cutRange(port)
	lo, err := parse1(a)
	hi, first := lo, lo
	if isRange {
		// ipset parses both ends; the last error is the one reported.
		var herr *Error
		if hi, herr = parse1(b); herr != nil {
			return nil, herr
		}
		if hi < lo {
			lo, hi = hi, lo
		}
	}
	if err != nil {
		return nil, err
	}
	if s.Type.Bitmap && (lo < s.PortLo || hi > s.PortHi) {
		// The kernel checks the port as written first before the
		// options the set lacks, the end of a range after them.
		err := errorf(MsgOutOfRange)
		err.BeforeExt = first < s.PortLo || first > s.PortHi
		return nil, err
	}
	var out []Part
	for p := int(lo); p <= int(hi); p++ {
		out = append(out, Part{Proto: proto, Port: uint16(p)})
	}
	return out, nil
}

// portNumber parses a port number or service name of protocol pname,
// with ipset's three-line message.
func portNumber(t, pname string) (uint16, *Error) {
	if v, ok := serviceport(t, pname); ok {
		return v, nil
	}
	v, err := parseUint(t, 0xffff)
	if err != nil {
		// (ipset tries the text as a service name after the number:
		// its report starts over, and a restore names no line)
		return 0, &Error{Msg: err.Msg + "\nSyntax error: '" + pname + "' is invalid as number\ncannot parse '" + t + "' as a " + pname + " port", Status: StatusError, NoLine: true}
	}
	return uint16(v), nil
}

var icmpNames = []struct {
	name string
	v    uint16
}{
	{"echo-reply", 0x0000}, {"pong", 0x0000}, {"network-unreachable", 0x0300}, {"host-unreachable", 0x0301},
	{"protocol-unreachable", 0x0302}, {"port-unreachable", 0x0303}, {"fragmentation-needed", 0x0304},
	{"source-route-failed", 0x0305}, {"network-unknown", 0x0306}, {"host-unknown", 0x0307},
	{"network-prohibited", 0x0309}, {"host-prohibited", 0x030a}, {"TOS-network-unreachable", 0x030b},
	{"TOS-host-unreachable", 0x030c}, {"communication-prohibited", 0x030d}, {"host-precedence-violation", 0x030e},
	{"precedence-cutoff", 0x030f}, {"source-quench", 0x0400}, {"network-redirect", 0x0500},
	{"host-redirect", 0x0501}, {"TOS-network-redirect", 0x0502}, {"TOS-host-redirect", 0x0503},
	{"echo-request", 0x0800}, {"ping", 0x0800}, {"router-advertisement", 0x0900},
	{"router-solicitation", 0x0a00}, {"ttl-zero-during-transit", 0x0b00}, {"ttl-zero-during-reassembly", 0x0b01},
	{"ip-header-bad", 0x0c00}, {"required-option-missing", 0x0c01}, {"timestamp-request", 0x0d00},
	{"timestamp-reply", 0x0e00}, {"address-mask-request", 0x1100}, {"address-mask-reply", 0x1200},
}

var icmp6Names = []struct {
	name string
	v    uint16
}{
	{"no-route", 0x0100}, {"communication-prohibited", 0x0101}, {"address-unreachable", 0x0103},
	{"port-unreachable", 0x0104}, {"packet-too-big", 0x0200}, {"ttl-zero-during-transit", 0x0300},
	{"ttl-zero-during-reassembly", 0x0301}, {"bad-header", 0x0400}, {"unknown-header-type", 0x0401},
	{"unknown-option", 0x0402}, {"echo-request", 0x8000}, {"ping", 0x8000}, {"echo-reply", 0x8100},
	{"pong", 0x8100}, {"router-solicitation", 0x8500}, {"router-advertisement", 0x8600},
	{"neighbour-solicitation", 0x8700}, {"neigbour-solicitation", 0x8700},
	{"neighbour-advertisement", 0x8800}, {"neigbour-advertisement", 0x8800}, {"redirect", 0x8900},
}

func icmpCode(proto uint8, s string) (uint16, bool) {
	tab := icmpNames
	if proto == protoICMPv6 {
		tab = icmp6Names
	}
	for _, n := range tab {
		if strings.EqualFold(n.name, s) {
			return n.v, true
		}
	}
	t, c, ok := cutCIDR(s) // (a '/' at either end is no separator)
	if !ok {
		return 0, false
	}
	tv, err1 := parseUint(t, 255)
	cv, err2 := parseUint(c, 255)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return uint16(tv<<8 | cv), true
}

// icmpRangeErr is ipset's message for an ICMP type/code that is no
// name and has a '/': the first of type and code that is no number
// from 0 to 255 (as C's strtoull reads it, "" included) is named.
func icmpRangeErr(s string) *Error {
	t, c, ok := cutCIDR(s)
	if !ok {
		return nil
	}
	for _, x := range []string{t, c} {
		if _, err := parseUint(x, 255); err != nil {
			return err
		}
	}
	return nil
}

func icmpString(proto uint8, v uint16) string {
	tab := icmpNames
	if proto == protoICMPv6 {
		tab = icmp6Names
	}
	for _, n := range tab {
		if n.v == v {
			return n.name
		}
	}
	return fmt.Sprintf("%d/%d", v>>8, v&0xff)
}

var (
	etcOnce  sync.Once
	protoByN map[uint8]string
	protoByS map[string]uint8
	services map[string]uint16 // "name/proto"
)

func loadEtc() {
	etcOnce.Do(func() {
		protoByN, protoByS, services = map[uint8]string{}, map[string]uint8{}, map[string]uint16{}
		for _, p := range []struct {
			n uint8
			s string
		}{{0, "ip"}, {1, "icmp"}, {6, "tcp"}, {17, "udp"}, {47, "gre"}, {58, "ipv6-icmp"}, {132, "sctp"}, {136, "udplite"}} {
			protoByN[p.n], protoByS[p.s] = p.s, p.n
		}
		if f, err := os.Open("/etc/protocols"); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fs := strings.Fields(strings.SplitN(sc.Text(), "#", 2)[0])
				if len(fs) < 2 {
					continue
				}
				n, err := strconv.Atoi(fs[1])
				if err != nil || n > 255 {
					continue
				}
				if _, ok := protoByN[uint8(n)]; !ok {
					protoByN[uint8(n)] = fs[0]
				}
				for _, name := range append([]string{fs[0]}, fs[2:]...) {
					if _, ok := protoByS[name]; !ok {
						protoByS[name] = uint8(n)
					}
				}
			}
			f.Close()
		}
		if f, err := os.Open("/etc/services"); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fs := strings.Fields(strings.SplitN(sc.Text(), "#", 2)[0])
				if len(fs) < 2 {
					continue
				}
				port, proto, ok := strings.Cut(fs[1], "/")
				n, err := strconv.Atoi(port)
				if !ok || err != nil {
					continue
				}
				for _, name := range append([]string{fs[0]}, fs[2:]...) {
					if _, ok := services[name+"/"+proto]; !ok {
						services[name+"/"+proto] = uint16(n)
					}
				}
			}
			f.Close()
		}
	})
}

func protoNumber(s string) (uint8, bool) {
	loadEtc()
	if s == "icmpv6" {
		return protoICMPv6, true
	}
	if n, err := strconv.ParseUint(s, 10, 8); err == nil {
		return uint8(n), true
	}
	n, ok := protoByS[s]
	return n, ok
}

func protoName(n uint8) string {
	loadEtc()
	if s, ok := protoByN[n]; ok {
		return s
	}
	return strconv.Itoa(int(n))
}

func serviceport(name, proto string) (uint16, bool) {
	loadEtc()
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return 0, false
	}
	v, ok := services[name+"/"+proto]
	return v, ok
}

func parseMAC(s string) ([6]byte, bool) {
	// ipset reads six fields with C's strtol(.., 16), each ending in ':'
	// (the last in the end of the text), from a text of at most 17
	// bytes: so blanks and a sign before a field, a "0x", more than two
	// digits and an empty field (0) pass.
	var m [6]byte
	if len(s) > 17 {
		return m, false
	}
	p := 0
	for i := 0; i < 6; i++ {
		v, end := hexPrefix(s, p)
		last := i == 5
		if end < len(s) && s[end] == ':' && !last || end == len(s) && last {
			if v < 0 || v > 255 {
				return m, false
			}
			m[i] = byte(v)
			p = end + 1
			continue
		}
		return m, false
	}
	return m, true
}

// Format prints an element of set s as ipset does.
func (s *Set) FormatElem(e Elem) string { return s.formatElem(e, false) }

// formatElem is FormatElem; resolve prints addresses by name where
// their names are known (-resolve).
func (s *Set) formatElem(e Elem, resolve bool) string {
	var b strings.Builder
	for i, p := range e {
		if i > 0 {
			if s.Type.OptionalMAC && !p.HasMAC {
				break
			}
			b.WriteByte(',')
		}
		switch s.Type.Dims[i] {
		case DimIP:
			b.WriteString(addrText(p.Addr, resolve))
		case DimNet:
			b.WriteString(addrText(p.Addr, resolve))
			if p.Bits != s.maxBits() {
				b.WriteString("/" + strconv.Itoa(p.Bits))
			}
		case DimPort:
			switch {
			case s.Type.Bitmap:
				b.WriteString(strconv.Itoa(int(p.Port)))
			case p.Proto == protoICMP || p.Proto == protoICMPv6:
				b.WriteString(protoName(p.Proto) + ":" + icmpString(p.Proto, p.Port))
			default:
				b.WriteString(protoName(p.Proto) + ":" + strconv.Itoa(int(p.Port)))
			}
		case DimIface:
			if p.Physdev {
				b.WriteString("physdev:")
			}
			b.WriteString(p.Iface)
		case DimMAC:
			fmt.Fprintf(&b, "%02X:%02X:%02X:%02X:%02X:%02X", p.MAC[0], p.MAC[1], p.MAC[2], p.MAC[3], p.MAC[4], p.MAC[5])
		case DimMark:
			fmt.Fprintf(&b, "0x%08x", p.Mark)
		case DimSet:
			b.WriteString(p.Name)
		}
	}
	return b.String()
}

// EchoElem is arg as ipset echoes it in test's messages: ipset prints
// the element it parsed, so names and numbers come out canonical
// (protocol and port names resolved, IPv6 addresses shortened) while an
// IPv4 range or prefix keeps its form ("10.0.0.5/8", "A-B").
func EchoElem(s *Set, arg string) string {
	if s.MarkMask != 0 {
		// the mark as written: the kernel masks it
		u := *s
		u.MarkMask = 0
		s = &u
	}
	elems, err := ParseElem(s, arg)
	if err != nil && !ParseError(err) && s.Type.Bitmap {
		// an element outside a bitmap's range is echoed as parsed too
		// (the kernel refused it, not ipset's parser)
		wide := *s
		wide.PortLo, wide.PortHi = 0, 0xffff
		wide.RangeLo, wide.RangeHi = netip.IPv4Unspecified(), netip.AddrFrom4([4]byte{0xff, 0xff, 0xff, 0xff}) // (bitmaps are IPv4)
		elems, err = ParseElem(&wide, arg)
	} else if err != nil && !ParseError(err) {
		// a /0, which the kernel refuses, is echoed as written, the
		// other dimensions as parsed
		f := splitParts(arg, len(s.Type.Dims))
		for i := range f {
			if p, ok := strings.CutSuffix(f[i], "/0"); ok {
				f[i] = p + "/1"
			}
		}
		elems, err = ParseElem(s, strings.Join(f, ","))
	}
	if err != nil || len(elems) == 0 {
		return arg
	}
	fields := splitParts(arg, len(s.Type.Dims))
	var b strings.Builder
	for i, f := range fields {
		if i >= len(elems[0]) {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		d := s.Type.Dims[i]
		if d == DimIface {
			b.WriteString(elems[0][i].Iface) // ipset echoes no physdev:
			continue
		}
		if d != DimIP && d != DimNet {
			one := &Set{Type: &Type{Dims: []Dim{d}, Bitmap: s.Type.Bitmap}, Family: s.Family}
			b.WriteString(one.FormatElem(Elem{elems[0][i]}))
			continue
		}
		if lo, hi, ok := strings.Cut(f, "-"); ok && !hasCIDR(f) {
			l, _ := parseAddr(s, lo)
			h, _ := parseAddr(s, hi)
			if i > 0 && d == DimNet {
				b.WriteString(l.String()) // what test looks up (ParseElemFor)
				continue
			}
			b.WriteString(l.String() + "-" + h.String())
			continue
		}
		a, bits, _, _ := parseCIDR(s, f)
		b.WriteString(a.String())
		if bits != s.maxBits() {
			b.WriteString("/" + strconv.Itoa(bits))
		}
	}
	return b.String()
}

// HostPrefixErr is ipset's refusal of the "/32" its parser takes as a
// plain address of bitmap:ip,mac (it sets the CIDR option, which no
// command of the type allows): checked after the element and its
// options parse, before the kernel sees anything (a restore stops
// there without its line and without the lines before).
func HostPrefixErr(s *Set, arg string, op Op) *Error {
	if !s.Type.OptionalMAC {
		return nil
	}
	f := splitParts(arg, len(s.Type.Dims))
	if len(f) == 0 {
		return nil
	}
	_, bits, ok := cutCIDR(f[0])
	if _, _, isRange := cutRange(f[0]); !ok || bits != "32" || isRange {
		return nil
	}
	return &Error{Msg: fmt.Sprintf("IP/CIDR range is not allowed in command %s with set type %s and family %s", op, s.Type.Name, s.Family),
		Status: StatusError, NoLine: true}
}

// nullKeyErr is the refusal of the null address as the key of a
// hash:ip, a hash:mac or a hash type of an address and one more
// dimension.
func nullKeyErr(s *Set, elems []Elem) *Error {
	if s.Type.Name == "hash:mac" {
		// (the kernel refuses the zero address as a hash:ip's)
		for _, e := range elems {
			if e[0].MAC == [6]byte{} {
				return errorf("Null-valued element, cannot be stored in a hash type of set")
			}
		}
		return nil
	}
	if s.Type.Bitmap || len(s.Type.Dims) > 2 || s.Type.Dims[0] != DimIP {
		return nil
	}
	for _, e := range elems {
		if e[0].Addr.IsUnspecified() {
			if s.Type.Name == "hash:ip" {
				return errorf("Null-valued element, cannot be stored in a hash type of set")
			}
			return errorf("Kernel error received: Invalid argument")
		}
	}
	return nil
}

// ParseElemFor is ParseElem for command op, with the messages ipset
// gives for that command: an ICMP protocol of the other family fails
// add with a second line and test and del with an internal-error
// message.
func ParseElemFor(s *Set, arg string, op Op) ([]Elem, *Error) {
	if op == OpTest && len(s.Type.Dims) == 1 && s.Type.Dims[0] == DimIP && !s.Type.Bitmap && s.Family != Inet6 && len(elemFields(arg)) == 1 {
		// hash:ip tests the address as written of a range or prefix
		// (the kernel tests before it looks at the range): a /8 is
		// one lookup, not 2^24 elements
		if a, b, ok := cutRange(arg); ok && !hasCIDR(arg) {
			if _, err := parseAddr(s, a); err != nil {
				return nil, err
			}
			if _, err := parseAddr(s, b); err != nil {
				return nil, err
			}
			arg = a
		} else if ip, _, ok := cutCIDR(arg); ok {
			if _, _, _, err := parseCIDR(s, arg); err != nil {
				return nil, err
			}
			arg = ip
		}
	}
	elems, err := ParseElem(s, arg)
	if err == nil {
		if err := nullKeyErr(s, elems); err != nil {
			return nil, err
		}
	}
	if err == nil && op == OpTest && len(elems) > 0 {
		// test takes a range in a later net dimension (hash:ip,port,net)
		// as its first address, a host: the most specific entry holding
		// it decides
		for i, f := range splitParts(arg, len(s.Type.Dims)) {
			if _, _, isRange := cutRange(f); i > 0 && i < len(elems[0]) && s.Type.Dims[i] == DimNet && isRange && !hasCIDR(f) {
				e := append(Elem(nil), elems[0]...)
				e[i].Bits = s.maxBits()
				elems = []Elem{e}
			}
		}
	}
	if err != nil && err.Checked && op != OpAdd && strings.HasPrefix(err.Msg, "There are not allowed options (28)") {
		// (test and del have no options: ipset words its complaint so)
		err.Msg = "There are not allowed options (28) but option list is empty. It's a bug, please report the problem."
	}
	if err != nil && strings.HasPrefix(err.Msg, "Syntax error: Protocol ICMP") && strings.HasSuffix(err.Msg, " only") {
		// ipset's parser goes on after an ICMP protocol of the other
		// family: a later dimension's syntax error is reported after
		// it; without one, add says the command lacks its set, test
		// of hash:ip,port,net too, and test and del of other types
		// fail their check of mandatory flags (an error, not "NOT in
		// set")
		fields := splitParts(arg, len(s.Type.Dims))
		// (after the protocol's refusal ipset reads the addresses as
		// IPv4, whatever the set's family)
		v4 := *s
		v4.Family = Inet
		for i, d := range s.Type.Dims {
			if d != DimPort || i >= len(fields) || i+1 >= len(fields) {
				continue
			}
			rest := append(append([]string(nil), fields...), "")[:len(fields)]
			rest[i] = "0"
			for j := range i {
				rest[j] = "0.0.0.1" // (parsed already, in the set's family)
			}
			if _, later := ParseElem(&v4, strings.Join(rest, ",")); later != nil && ParseError(later) {
				return nil, &Error{Msg: err.Msg + "\n" + later.Msg, Status: StatusError, NoLine: later.NoLine}
			}
		}
		// (a net dimension, which always has a prefix, takes test to
		// the same message as add)
		switch {
		case op == OpAdd:
			err.Msg += "\nInvalid add command: missing setname"
		case op == OpTest && s.NetDims() > 0:
			err.Msg += "\nInvalid test command: missing setname"
		default:
			// (a check of ipset's command parser: a restore reports
			// it without the line)
			err = errorf("There are missing mandatory flags but can't check them. It's a bug, please report the problem.")
			err.NoLine = true
		}
		// found after the options parse (an unknown word comes
		// first), before the check of a range in test
		err.Checked, err.Mandatory = true, true
	}
	return elems, err
}
