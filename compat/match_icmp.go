package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// ICMPMatch is -m icmp (IPv4), also loaded implicitly by -p icmp.
type ICMPMatch struct {
	Type             uint8
	CodeMin, CodeMax uint8
	Invert           bool
}

// icmpName is one entry of a type table: a name and the type/code range
// it stands for. Aliases follow the entry they alias.
type icmpName struct {
	name          string
	typ, min, max uint8
}

var icmpNames = []icmpName{
	{"any", 0xff, 0, 0xff},
	{"echo-reply", 0, 0, 0xff},
	{"pong", 0, 0, 0xff},
	{"destination-unreachable", 3, 0, 0xff},
	{"network-unreachable", 3, 0, 0},
	{"host-unreachable", 3, 1, 1},
	{"protocol-unreachable", 3, 2, 2},
	{"port-unreachable", 3, 3, 3},
	{"fragmentation-needed", 3, 4, 4},
	{"source-route-failed", 3, 5, 5},
	{"network-unknown", 3, 6, 6},
	{"host-unknown", 3, 7, 7},
	{"network-prohibited", 3, 9, 9},
	{"host-prohibited", 3, 10, 10},
	{"TOS-network-unreachable", 3, 11, 11},
	{"TOS-host-unreachable", 3, 12, 12},
	{"communication-prohibited", 3, 13, 13},
	{"host-precedence-violation", 3, 14, 14},
	{"precedence-cutoff", 3, 15, 15},
	{"source-quench", 4, 0, 0xff},
	{"redirect", 5, 0, 0xff},
	{"network-redirect", 5, 0, 0},
	{"host-redirect", 5, 1, 1},
	{"TOS-network-redirect", 5, 2, 2},
	{"TOS-host-redirect", 5, 3, 3},
	{"echo-request", 8, 0, 0xff},
	{"ping", 8, 0, 0xff},
	{"router-advertisement", 9, 0, 0xff},
	{"router-solicitation", 10, 0, 0xff},
	{"time-exceeded", 11, 0, 0xff},
	{"ttl-exceeded", 11, 0, 0xff},
	{"ttl-zero-during-transit", 11, 0, 0},
	{"ttl-zero-during-reassembly", 11, 1, 1},
	{"parameter-problem", 12, 0, 0xff},
	{"ip-header-bad", 12, 0, 0},
	{"required-option-missing", 12, 1, 1},
	{"timestamp-request", 13, 0, 0xff},
	{"timestamp-reply", 14, 0, 0xff},
	{"address-mask-request", 17, 0, 0xff},
	{"address-mask-reply", 18, 0, 0xff},
}

var icmpMatchSpec = ExtSpec{
	Name:   "icmp",
	Family: IPv4,
	X6:     true,
	Options: []OptDef{
		{Name: "icmp-type", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true},
	},
	NewMatch: func(Family) MatchExt { return &ICMPMatch{} },
	HelpMore: func() string { return icmpTypeHelp("Valid ICMP Types:", icmpNames) },
}

var _ = RegisterMatch(&icmpMatchSpec)

func (m *ICMPMatch) Name() string { return "icmp" }

// parseICMPType parses a type name (unique prefix, any case) or
// "TYPE[/CODE]"; kind is "ICMP" or "ICMPv6" for the messages.
func parseICMPType(s, kind string, table []icmpName) (typ, min, max uint8, err error) {
	match := -1
	for i, n := range table {
		if len(s) <= len(n.name) && strings.EqualFold(n.name[:len(s)], s) {
			if match >= 0 {
				return 0, 0, 0, Paramf("Ambiguous %s type `%s': `%s' or `%s'?", kind, s, table[match].name, n.name)
			}
			match = i
		}
	}
	if match >= 0 {
		n := table[match]
		return n.typ, n.min, n.max, nil
	}
	v, rest, ok, erange := cStrtoull(s, 0)
	if !ok || erange || v > 0xff {
		return 0, 0, 0, Paramf("Unknown %s type `%s'", kind, s)
	}
	typ, min, max = uint8(v), 0, 0xff
	if strings.HasPrefix(rest, "/") {
		c, r, ok, erange := cStrtoull(rest[1:], 0)
		if !ok || erange || c > 0xff {
			return 0, 0, 0, Paramf("Unknown %s code `%s'", kind, s)
		}
		min, max, rest = uint8(c), uint8(c), r
	}
	if rest != "" {
		return 0, 0, 0, Paramf("unknown character %c", rest[0])
	}
	return typ, min, max, nil
}

func (m *ICMPMatch) Parse(p *OptArg) error {
	t, lo, hi, err := parseICMPType(p.Arg, "ICMP", icmpNames)
	if err != nil {
		return err
	}
	m.Type, m.CodeMin, m.CodeMax, m.Invert = t, lo, hi, p.Invert
	return nil
}

func (m *ICMPMatch) Final(*Rule, OptSet) error { return nil }

func (m *ICMPMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(bang(m.Invert) + " --icmp-type ")
	if m.Type == 0xff {
		b.WriteString("any")
		return
	}
	fmt.Fprintf(b, "%d", m.Type)
	if m.CodeMin == m.CodeMax {
		fmt.Fprintf(b, "/%d", m.CodeMin)
	}
}

// SaveExact keeps the code of type 255 ("any" in -S, which reads back
// as all codes): -L shows it.
func (m *ICMPMatch) SaveExact(b *strings.Builder, r *Rule) {
	if m.Type == 0xff && m.CodeMin == m.CodeMax {
		fmt.Fprintf(b, "%s --icmp-type 255/%d", bang(m.Invert), m.CodeMin)
		return
	}
	m.Save(b, r)
}

// listICMPType appends the -L text of a type/code test after the
// protocol word: a name unless numeric, else "type T[ code C]".
func listICMPType(b *strings.Builder, table []icmpName, typ, min, max uint8, inv, numeric bool) {
	if !numeric {
		for _, n := range table {
			if n.typ == typ && n.min == min && n.max == max {
				b.WriteByte(' ')
				if inv {
					b.WriteByte('!')
				}
				b.WriteString(n.name)
				return
			}
		}
	}
	if inv {
		b.WriteString(" !")
	}
	fmt.Fprintf(b, "type %d", typ)
	if min == max {
		fmt.Fprintf(b, " code %d", min)
	} else if min != 0 || max != 0xff {
		fmt.Fprintf(b, " codes %d-%d", min, max)
	}
}

func (m *ICMPMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" icmp")
	listICMPType(b, icmpNames, m.Type, m.CodeMin, m.CodeMax, m.Invert, numeric)
}

// NftExprs translates --icmp-type natively: a transport-header load of
// type (and code) and a compare, behind the non-first-fragment guard
// (see firstFragmentExprs) so that fragments never match, inverted or
// not, as with xt icmp. Where the native form would differ, the xt icmp
// match (revision 0) is used instead: without `-p icmp` (the kernel
// refuses it, as it does for iptables-nft) and for `! --icmp-type any`
// (never true). One difference remains: xt icmp drops a packet too
// short for an 8-byte ICMP header; the native test just does not match.
func (m *ICMPMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if !ruleProtoIs(ctx.Rule, 1) || (m.Type == 0xff && m.Invert) {
		return []expr.Any{icmpXtMatch("icmp", m.Type, m.CodeMin, m.CodeMax, m.Invert)}, nil
	}
	out := firstFragmentExprs(ctx.Rule)
	if m.Type == 0xff {
		return out, nil
	}
	return append(out, icmpTypeExprs(m.Type, m.CodeMin, m.CodeMax, m.Invert)...), nil
}

// icmpTypeExprs tests the ICMP/ICMPv6 type byte and code byte at the
// start of the transport header.
func icmpTypeExprs(typ, min, max uint8, inv bool) []expr.Any {
	eq := expr.CmpOpEq
	if inv {
		eq = expr.CmpOpNeq
	}
	load := func(n uint32) *expr.Payload {
		return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: n}
	}
	switch {
	case min == 0 && max == 0xff:
		return []expr.Any{load(1), &expr.Cmp{Op: eq, Register: 1, Data: []byte{typ}}}
	case min == max:
		return []expr.Any{load(2), &expr.Cmp{Op: eq, Register: 1, Data: []byte{typ, min}}}
	}
	return []expr.Any{load(2), &expr.Range{Op: eq, Register: 1, FromData: []byte{typ, min}, ToData: []byte{typ, max}}}
}

// icmpXtMatch is struct ipt_icmp / ip6t_icmp: type, code range, invert
// flag.
func icmpXtMatch(name string, typ, min, max uint8, inv bool) *expr.Match {
	var flags uint8
	if inv {
		flags = 1
	}
	return xtMatch(name, 0, []byte{typ, min, max, flags})
}
