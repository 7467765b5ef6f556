package compat

import (
	"strconv"
	"strings"
)

// PortRange is an inclusive port range; the zero-value check is
// Any(): 0:65535.
type PortRange struct {
	Min, Max uint16
	Invert   bool
}

// AnyPorts is the range that matches every port.
var AnyPorts = PortRange{Min: 0, Max: 0xffff}

// IsAny reports whether r matches every port and is not inverted.
func (r PortRange) IsAny() bool { return r.Min == 0 && r.Max == 0xffff && !r.Invert }

// Full reports whether r spans every port (inverted or not).
func (r PortRange) Full() bool { return r.Min == 0 && r.Max == 0xffff }

// nativeRange is r as iptables-nft reads back its native port test: a
// full range, inverted or not, is no test at all; an inverted range from
// 0 is a "greater than" compare, which reads back as the range above it.
func (r PortRange) nativeRange() PortRange {
	switch {
	case r.Full():
		return AnyPorts
	case r.Invert && r.Min == 0 && r.Max != 0:
		return PortRange{Min: r.Max + 1, Max: 0xffff}
	}
	return r
}

// readBackMerge is the port test of a native match after iptables-nft's
// read-back folded into it the test of a later match (next). Its parser
// sets what each compare says: an equality or a range both bounds (and
// ORs the inversion), a "less or equal" (a range from 0) only the upper
// bound and a "greater than" (such a range inverted) only the lower one;
// a full range is no compare.
func readBackMerge(first, next PortRange) PortRange {
	first = first.nativeRange()
	switch {
	case next.Full():
		return first
	case next.Min == 0 && next.Max != 0 && next.Invert:
		first.Min = next.Max + 1
		return first
	case next.Min == 0 && next.Max != 0:
		first.Max = next.Max
		return first
	}
	next.Invert = next.Invert || first.Invert
	return next
}

// saveIsExact says whether the -S form of r (read back, when native) is
// r itself: savePorts leaves out full ranges.
func (r PortRange) saveIsExact(native bool) bool {
	if native {
		return r.nativeRange() == r
	}
	return !r.Full() || !r.Invert
}

// ParsePortRange parses "P", "P:Q", "P:" or ":Q" as the tcp/udp matches
// do, resolving service names for proto.
func ParsePortRange(s, proto string) (PortRange, error) {
	lo, hi, isRange := strings.Cut(s, ":")
	if !isRange {
		p, err := ParsePort(s, proto)
		return PortRange{Min: p, Max: p}, err
	}
	r := PortRange{Min: 0, Max: 0xffff}
	var err error
	if lo != "" {
		if r.Min, err = ParsePort(lo, proto); err != nil {
			return r, err
		}
	}
	if hi != "" {
		if r.Max, err = ParsePort(hi, proto); err != nil {
			return r, err
		}
	}
	if r.Min > r.Max {
		return r, Paramf("invalid portrange (min > max)")
	}
	return r, nil
}

// SaveString prints the range for -S: "22" or "1024:65535".
func (r PortRange) SaveString() string {
	if r.Min == r.Max {
		return strconv.Itoa(int(r.Min))
	}
	return strconv.Itoa(int(r.Min)) + ":" + strconv.Itoa(int(r.Max))
}

// ListPorts appends the -L form of tcp/udp port ranges ("dpt:22",
// "spts:1024:65535", "dpt:!ssh").
func ListPorts(b *strings.Builder, name string, r PortRange, proto string, numeric bool) {
	if r.Min == 0 && r.Max == 0xffff && !r.Invert {
		return
	}
	inv := ""
	if r.Invert {
		inv = "!"
	}
	b.WriteByte(' ')
	b.WriteString(name)
	if r.Min == r.Max {
		b.WriteString(":" + inv)
		b.WriteString(PortName(r.Min, proto, numeric))
		return
	}
	b.WriteString("s:" + inv)
	b.WriteString(PortName(r.Min, proto, numeric))
	b.WriteByte(':')
	b.WriteString(PortName(r.Max, proto, numeric))
}

// PortName prints a port as a service name unless numeric.
func PortName(p uint16, proto string, numeric bool) string {
	if !numeric {
		if n := ServiceName(p, proto); n != "" {
			return n
		}
	}
	return strconv.Itoa(int(p))
}

// ParseMPortRange parses a port range option of xtables' guided parser
// (XTTYPE_PORTRC: the udp match's --sport/--dport), as 1.8.9 does: up to
// two ':'-separated components, an empty one keeping 0 or 65535, each
// resolved as getaddrinfo resolves a service (see getPortByName). A
// range whose first port is above the second is kept as given.
func ParseMPortRange(ext, opt, s string) (PortRange, error) {
	comps := strings.Split(s, ":")
	if len(comps) > 2 {
		return PortRange{}, Paramf("%s: Too many components for option \"--%s\" (max: 2)\n", ext, opt)
	}
	r := PortRange{Min: 0, Max: 0xffff}
	for i, c := range comps {
		if c == "" {
			continue
		}
		p, ok := getPortByName(c)
		if !ok {
			return PortRange{}, Paramf("Port \"%s\" does not resolve to anything.\n", c)
		}
		if i == 0 {
			r.Min = p
		} else {
			r.Max = p
		}
	}
	if len(comps) == 1 {
		r.Max = r.Min
	}
	return r, nil
}

// getPortByName is xtables_getportbyname: getaddrinfo(NULL, s, NULL)
// reads a number as glibc's strtoul(s, &end, 10) does (leading blanks and
// a sign allowed, the value kept as a C int: negative ones fail, others
// are cut to 16 bits) and anything else as a service name of any
// protocol, tcp's first.
func getPortByName(s string) (uint16, bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] >= '\t' && s[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	j := i
	var v uint64
	overflow := false
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		d := uint64(s[j] - '0')
		if v > (^uint64(0)-d)/10 {
			overflow = true
		}
		v = v*10 + d
		j++
	}
	if j > i && j == len(s) {
		if overflow {
			v = ^uint64(0)
		} else if neg {
			v = -v
		}
		if n := int32(uint32(v)); n >= 0 {
			return uint16(n), true
		}
	}
	return ServicePort(s, "")
}
