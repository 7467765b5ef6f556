package compat

import (
	"net/netip"
	"strings"
)

// cSpace is what C's isspace says is white space.
const cSpace = " \t\n\v\f\r"

// trimCSpace is strings.TrimLeft(s, cSpace) (C isspace) without building
// the cut set on every call: strtoui and every address of a restore's
// rules go through it.
func trimCSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] >= '\t' && s[0] <= '\r') {
		s = s[1:]
	}
	return s
}

// parseAddrs parses a -s/-d argument: comma-separated addresses or host
// names, each with an optional /prefix or /dotted-mask. Without the
// option (given false) any address matches; an empty argument (a
// script's unset variable) is a host that is not found, as in iptables.
// Host bits are cleared as iptables does.
func (p *parser) parseAddrs(spec string, given bool) ([]Net, error) {
	if !given {
		return []Net{{}}, nil
	}
	// each address goes without the white space before it, as
	// xtables_ipparse_multiple skips it: scripts write "A, B"
	if strings.IndexByte(spec, ',') < 0 {
		return ParseNet(trimCSpace(spec), p.f, p.o.Resolve)
	}
	var out []Net
	for _, item := range strings.Split(spec, ",") {
		nets, err := ParseNet(trimCSpace(item), p.f, p.o.Resolve)
		if err != nil {
			return nil, err
		}
		out = append(out, nets...)
	}
	return out, nil
}

// ParseNet parses one address[/mask] for family f. Host names resolve
// through resolve (when non-nil) to one Net per address.
func ParseNet(item string, f Family, resolve func(string, Family) ([]string, error)) ([]Net, error) {
	// the mask follows the last slash, as in iptables (strrchr)
	host, maskStr, hasMask := item, "", false
	if i := strings.LastIndexByte(item, '/'); i >= 0 {
		host, maskStr, hasMask = item[:i], item[i+1:], true
	}
	bitsMax := 32
	if f == IPv6 {
		bitsMax = 128
	}
	var mask netip.Addr
	if hasMask {
		m, err := parseMask(maskStr, f)
		if err != nil {
			return nil, err
		}
		mask = m
	} else {
		mask = prefixMask(bitsMax, f)
	}
	// a zero mask ignores the name, like in "any/0" (Docker writes
	// ip6tables -d 0/0)
	if mask.IsUnspecified() {
		host = "0.0.0.0"
		if f == IPv6 {
			host = "::"
		}
	}
	var addrs []netip.Addr
	if a, ok := numericAddr(host, f); ok {
		return []Net{{Addr: applyMask(a, mask), Mask: mask}}, nil
	} else {
		var names []string
		if resolve != nil && f == IPv4 {
			// what iptables' parser refuses, getaddrinfo still takes
			// as a number when inet_aton does ("3325256705",
			// "0xc6336401", "198.51.25601")
			if a, ok := inetAton(host); ok {
				names = []string{a.String()}
			}
		}
		if resolve != nil && host != "" && names == nil {
			names, _ = resolve(host, f)
		}
		for _, n := range names {
			if a, err := netip.ParseAddr(n); err == nil {
				addrs = append(addrs, a.Unmap())
			}
		}
		if len(addrs) == 0 {
			return nil, Paramf("host/network `%s' not found", host)
		}
	}
	var out []Net
	for _, a := range addrs {
		n := Net{Addr: applyMask(a, mask), Mask: mask}
		dup := false
		for _, o := range out {
			dup = dup || o == n
		}
		if !dup {
			out = append(out, n)
		}
	}
	return out, nil
}

// numericAddr parses an address as iptables' numeric parsers do: IPv4
// with 1–4 parts of base-0 numbers (missing parts are zero), IPv6 as
// inet_pton.
func numericAddr(s string, f Family) (netip.Addr, bool) {
	if f == IPv6 {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return netip.Addr{}, false
		}
		return a, true
	}
	return dottedToIPv4(s, false)
}

func dottedToIPv4(s string, isMask bool) (netip.Addr, bool) {
	if len(s) > 19 {
		s = s[:19]
	}
	var b [4]byte
	// the parts as strings.SplitN(s, ".", 4) gives them, without the slice
	for i := 0; i < 4; i++ {
		part, last := s, true
		if i < 3 {
			if j := strings.IndexByte(s, '.'); j >= 0 {
				part, s, last = s[:j], s[j+1:], false
			} else if isMask {
				return netip.Addr{}, false
			}
		}
		v, ok := strtoui(part, 0, 255)
		if !ok {
			return netip.Addr{}, false
		}
		b[i] = byte(v)
		if last {
			break
		}
	}
	return netip.AddrFrom4(b), true
}

func parseMask(s string, f Family) (netip.Addr, error) {
	if f == IPv4 {
		if strings.Contains(s, ".") {
			if m, ok := dottedToIPv4(s, true); ok {
				return m, nil
			}
			return netip.Addr{}, Paramf("invalid mask `%s' specified", s)
		}
		v, ok := strtoui(s, 0, 32)
		if !ok {
			return netip.Addr{}, Paramf("invalid mask `%s' specified", s)
		}
		return prefixMask(int(v), f), nil
	}
	if strings.Contains(s, ":") {
		if m, err := netip.ParseAddr(s); err == nil && m.Is6() {
			return m, nil
		}
		return netip.Addr{}, Paramf("invalid mask `%s' specified", s)
	}
	v, ok := strtoui(s, 0, 128)
	if !ok {
		return netip.Addr{}, Paramf("invalid mask `%s' specified", s)
	}
	return prefixMask(int(v), f), nil
}

func prefixMask(bits int, f Family) netip.Addr {
	n := 4
	if f == IPv6 {
		n = 16
	}
	b := make([]byte, n)
	for i := 0; i < bits; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// PrefixNet returns the Net for a netip.Prefix.
func PrefixNet(p netip.Prefix, f Family) Net {
	m := prefixMask(p.Bits(), f)
	return Net{Addr: applyMask(p.Addr(), m), Mask: m}
}

func applyMask(a, m netip.Addr) netip.Addr {
	ab, mb := a.AsSlice(), m.AsSlice()
	for i := range ab {
		ab[i] &= mb[i]
	}
	r, _ := netip.AddrFromSlice(ab)
	return r
}
