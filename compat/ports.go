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
