package compat

import (
	"net/netip"
	"strconv"
	"strings"
	"sync"
)

// Helpers shared by the icmp, multiport, conntrack, state, comment, set,
// limit, hashlimit, recent, mark and connmark matches.

// cStrtoull behaves like C strtoull(s, &end, base): leading white space,
// an optional sign and (base 0/16) a 0x prefix are accepted. ok is false
// when no digit was read (rest is then s); erange reports overflow.
func cStrtoull(s string, base int) (v uint64, rest string, ok, erange bool) {
	i := 0
	for i < len(s) && strings.IndexByte(" \t\n\v\f\r", s[i]) >= 0 {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	digit := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return int(c - '0')
		case c >= 'a' && c <= 'z':
			return int(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			return int(c-'A') + 10
		}
		return 99
	}
	if (base == 0 || base == 16) && i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') &&
		i+2 < len(s) && digit(s[i+2]) < 16 {
		base = 16
		i += 2
	} else if base == 0 {
		if i < len(s) && s[i] == '0' {
			base = 8
		} else {
			base = 10
		}
	}
	start := i
	for i < len(s) && digit(s[i]) < base {
		d := uint64(digit(s[i]))
		if !erange {
			if v > (^uint64(0)-d)/uint64(base) {
				erange = true
			} else {
				v = v*uint64(base) + d
			}
		}
		i++
	}
	if i == start {
		return 0, s, false, false
	}
	if erange {
		v = ^uint64(0)
	} else if neg {
		v = -v
	}
	return v, s[i:], true, erange
}

// xtStrtoul is xtables_strtoul_base with base 0: digits must be read, no
// overflow, the value within [min, max]; rest is what follows.
func xtStrtoul(s string, min, max uint64) (uint64, string, bool) {
	v, rest, ok, erange := cStrtoull(s, 0)
	if !ok || erange || v < min || v > max {
		return v, rest, false
	}
	return v, rest, true
}

// xtStrtoui is xtables_strtoui: the whole string must be a number.
func xtStrtoui(s string, min, max uint64) (uint64, bool) {
	v, rest, ok := xtStrtoul(s, min, max)
	return v, ok && rest == ""
}

// xtParsePort is xtables_parse_port: a number or a service name of proto.
func xtParsePort(s, proto string) (uint16, error) {
	if v, ok := xtStrtoui(s, 0, 65535); ok {
		return uint16(v), nil
	}
	if p, ok := ServicePort(s, proto); ok {
		return p, nil
	}
	return 0, Paramf("invalid port/service `%s' specified", s)
}

// parseMarkMask parses an x6 MARKMASK32 value "V[/M]"; the mask
// defaults to all ones.
func parseMarkMask(ext, opt, s string) (uint32, uint32, error) {
	bad := Paramf("%s: bad integer value for option \"--%s\", or out of range.\n", ext, opt)
	garbage := Paramf("%s: trailing garbage after value for option \"--%s\".\n", ext, opt)
	v, rest, ok := xtStrtoul(s, 0, 0xffffffff)
	if !ok {
		return 0, 0, bad
	}
	if rest == "" {
		return uint32(v), 0xffffffff, nil
	}
	if rest[0] != '/' {
		return 0, 0, garbage
	}
	m, rest, ok := xtStrtoul(rest[1:], 0, 0xffffffff)
	if !ok {
		return 0, 0, bad
	}
	if rest != "" {
		return 0, 0, garbage
	}
	return uint32(v), uint32(m), nil
}

// parseUintRange parses an x6 "A[:B]" range of unsigned integers up to
// max (XTTYPE_UINT32RC and friends): an empty lower bound is 0, an empty
// upper bound max, a single value is the range [A, A].
func parseUintRange(ext, opt, s string, max uint64) (uint64, uint64, error) {
	var vals []uint64
	arg := s
	for i := 0; ; i++ {
		if i == 2 {
			return 0, 0, Paramf("%s: Too many components for option \"--%s\" (max: 2)\n", ext, opt)
		}
		var v uint64
		if arg == "" || arg[0] == ':' {
			if i > 0 {
				v = max
			}
		} else {
			var rest string
			var ok bool
			v, rest, ok = xtStrtoul(arg, 0, max)
			if !ok {
				return 0, 0, Paramf("%s: bad value for option \"--%s\" near \"%s\", or out of range (0-%d).\n", ext, opt, arg, max)
			}
			arg = rest
		}
		vals = append(vals, v)
		if arg == "" {
			break
		}
		if arg[0] != ':' {
			return 0, 0, Paramf("%s: Argument to \"--%s\" has unexpected characters near \"%s\".\n", ext, opt, arg)
		}
		arg = arg[1:]
	}
	if len(vals) == 1 {
		return vals[0], vals[0], nil
	}
	return vals[0], vals[1], nil
}

// inetAton parses an IPv4 address the way inet_aton does: one to four
// parts in decimal, octal or hex, the last part filling the rest.
func inetAton(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		if p == "" || p[0] == '+' || p[0] == '-' || p[0] == ' ' {
			return netip.Addr{}, false
		}
		v, rest, ok, erange := cStrtoull(p, 0)
		if !ok || erange || rest != "" || v > 0xffffffff {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var out uint32
	n := len(vals)
	for i, v := range vals[:n-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		out |= uint32(v) << (24 - 8*i)
	}
	if last := vals[n-1]; last > 0xffffffff>>(8*(n-1)) {
		return netip.Addr{}, false
	} else {
		out |= uint32(last)
	}
	return netip.AddrFrom4([4]byte{byte(out >> 24), byte(out >> 16), byte(out >> 8), byte(out)}), true
}

var (
	hostsByNameOnce sync.Once
	hostsByName     map[string][]netip.Addr
)

// lookupHost resolves a literal address or an /etc/hosts name for
// family f, as getaddrinfo does without DNS.
func lookupHost(s string, f Family) (netip.Addr, error) {
	if f == IPv4 {
		if a, ok := inetAton(s); ok {
			return a, nil
		}
	} else if a, err := netip.ParseAddr(s); err == nil && a.Is6() && a.Zone() == "" {
		return a, nil
	}
	if f == IPv6 {
		if _, ok := inetAton(s); ok {
			return netip.Addr{}, Paramf("getaddrinfo: Address family for hostname not supported\n")
		}
	} else if a, err := netip.ParseAddr(s); err == nil && a.Is6() {
		return netip.Addr{}, Paramf("getaddrinfo: Address family for hostname not supported\n")
	}
	hostsByNameOnce.Do(func() {
		hostsByName = map[string][]netip.Addr{}
		readNameDB("/etc/hosts", func(fields []string) {
			ip, err := netip.ParseAddr(fields[0])
			if err != nil {
				return
			}
			for _, n := range fields[1:] {
				hostsByName[strings.ToLower(n)] = append(hostsByName[strings.ToLower(n)], ip)
			}
		})
	})
	for _, a := range hostsByName[strings.ToLower(s)] {
		if (f == IPv4) == a.Is4() {
			return a, nil
		}
	}
	return netip.Addr{}, Paramf("getaddrinfo: Name or service not known\n")
}

// hostMask is an address with a prefix length as the x6 HOSTMASK type
// keeps it: the address is not masked.
type hostMask struct {
	Addr netip.Addr
	Bits int
}

// parseHostMask parses "HOST[/MASK]" (XTTYPE_HOSTMASK): MASK is a
// prefix length or a dotted/colon mask; lengths past the family width and
// non-contiguous masks mean a host match.
func parseHostMask(ext, opt, s string, f Family) (hostMask, error) {
	full := 32
	if f == IPv6 {
		full = 128
	}
	host, mask, hasMask := strings.Cut(s, "/")
	hm := hostMask{Bits: full}
	if hasMask {
		bad := Paramf("%s: bad value for option \"--%s\", neither a valid network mask nor valid CIDR (0-%d).\n", ext, opt, full)
		if strings.ContainsAny(mask, ".:") {
			m, err := netip.ParseAddr(mask)
			if err != nil || m.Is4() != (f == IPv4) {
				return hm, bad
			}
			bits := (Net{Mask: m}).Bits()
			if bits >= 0 {
				hm.Bits = bits
			}
		} else {
			v, ok := xtStrtoui(mask, 0, 128)
			if !ok {
				return hm, bad
			}
			if int(v) < full {
				hm.Bits = int(v)
			}
		}
	}
	a, err := lookupHost(host, f)
	if err != nil {
		return hm, err
	}
	hm.Addr = a
	return hm, nil
}

// String prints the address with "/bits" unless it is a host.
func (h hostMask) String() string {
	if h.Bits == h.Addr.BitLen() {
		return h.Addr.String()
	}
	return h.Addr.String() + "/" + strconv.Itoa(h.Bits)
}

// listString is the -L form: names unless numeric; like libxt_conntrack,
// "anywhere" is the unspecified address whatever its mask, and any other
// address keeps its mask (1.2.3.4/0).
func (h hostMask) listString(numeric bool) string {
	if numeric {
		return h.String()
	}
	if h.Addr.IsUnspecified() {
		return "anywhere"
	}
	s := hostName(h.Addr)
	if h.Bits != h.Addr.BitLen() {
		s += "/" + strconv.Itoa(h.Bits)
	}
	return s
}

// exclusive reports the x6 "cannot be used together" error for the
// first pair of mutually exclusive options given; names are in the
// extension's definition order and groups lists the exclusive pairs by
// index into names.
func exclusive(ext string, seen OptSet, ids []int, names []string, pairs [][2]int) error {
	for _, p := range pairs {
		if seen.Has(ids[p[0]]) && seen.Has(ids[p[1]]) {
			return Paramf("%s: option \"--%s\" cannot be used together with \"--%s\".\n", ext, names[p[0]], names[p[1]])
		}
	}
	return nil
}

// bang returns " !" when inv is set, for -S output.
func bang(inv bool) string {
	if inv {
		return " !"
	}
	return ""
}
