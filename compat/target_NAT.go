package compat

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables/expr"
)

// NATTarget is one of the address/port translation targets SNAT, DNAT,
// MASQUERADE and REDIRECT (libxt_NAT in xtables). They share the range
// syntax "[addr[-addr]][:port[-port[/base]]]" (IPv6 addresses in
// brackets when a port follows) and the --random, --random-fully and
// --persistent flags.
type NATTarget struct {
	Kind   string // "SNAT", "DNAT", "MASQUERADE", "REDIRECT"
	Family Family
	Range  NATRange
	// givenBase is the base port given to a target that keeps none
	// (iptables prints /0), for the rule's exact form: /0 would not
	// parse back
	givenBase uint16
}

// NATRange is nf_nat_range2.
type NATRange struct {
	Flags            uint32
	MinAddr, MaxAddr netip.Addr
	MinPort, MaxPort uint16
	BasePort         uint16
}

// NF_NAT_RANGE_* flags.
const (
	NATMapIPs          = 1 << 0
	NATProtoSpecified  = 1 << 1
	NATProtoRandom     = 1 << 2
	NATPersistent      = 1 << 3
	NATProtoRandomFull = 1 << 4
	NATProtoOffset     = 1 << 5
)

const (
	tgNatOptToDest = iota
	tgNatOptToSrc
	tgNatOptToPorts
	tgNatOptRandom
	tgNatOptRandomFully
	tgNatOptPersistent
)

var tgNatOptions = map[string][]OptDef{
	"SNAT": {
		{Name: "to-source", Arg: RequiredArg, ID: tgNatOptToSrc},
		{Name: "random", Arg: NoArg, ID: tgNatOptRandom},
		{Name: "random-fully", Arg: NoArg, ID: tgNatOptRandomFully},
		{Name: "persistent", Arg: NoArg, ID: tgNatOptPersistent},
	},
	"DNAT": {
		{Name: "to-destination", Arg: RequiredArg, ID: tgNatOptToDest},
		{Name: "random", Arg: NoArg, ID: tgNatOptRandom},
		{Name: "persistent", Arg: NoArg, ID: tgNatOptPersistent},
	},
	"MASQUERADE": {
		{Name: "to-ports", Arg: RequiredArg, ID: tgNatOptToPorts},
		{Name: "random", Arg: NoArg, ID: tgNatOptRandom},
		{Name: "random-fully", Arg: NoArg, ID: tgNatOptRandomFully},
	},
	"REDIRECT": {
		{Name: "to-ports", Arg: RequiredArg, ID: tgNatOptToPorts},
		{Name: "random", Arg: NoArg, ID: tgNatOptRandom},
	},
}

var tgNatRels = map[string]map[int]x6Rel{
	"SNAT": {tgNatOptToSrc: {mand: true}},
	"DNAT": {tgNatOptToDest: {mand: true}},
}

func tgRegisterNAT(kind string) *ExtSpec {
	return RegisterTarget(&ExtSpec{
		Name:      kind,
		X6:        true,
		Options:   tgNatOptions[kind],
		NewTarget: func(f Family) TargetExt { return &NATTarget{Kind: kind, Family: f} },
	})
}

func (t *NATTarget) Name() string { return t.Kind }

// tgNatPortOK says whether the rule's protocol has ports to translate.
func tgNatPortOK(r *Rule) bool {
	switch r.Proto {
	case 6, 17, 132, 33, 1: // tcp, udp, sctp, dccp, icmp
		return true
	}
	return false
}

func (t *NATTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgNatOptToDest, tgNatOptToSrc:
		return t.Range.parseTo(p.Arg, tgNatPortOK(p.Rule), t.Family)
	case tgNatOptToPorts:
		return t.Range.parsePorts(p.Arg, tgNatPortOK(p.Rule))
	case tgNatOptRandom:
		t.Range.Flags |= NATProtoRandom
	case tgNatOptRandomFully:
		t.Range.Flags |= NATProtoRandomFull
	case tgNatOptPersistent:
		t.Range.Flags |= NATPersistent
	}
	return nil
}

func (t *NATTarget) Final(_ *Rule, seen OptSet) error {
	// Only DNAT uses nf_nat_range2 (revision 2), which has room for the
	// base port of a shifted port map; the others keep the flag only.
	if t.Kind != "DNAT" {
		t.givenBase, t.Range.BasePort = t.Range.BasePort, 0
	}
	if t.Kind == "REDIRECT" && t.Range.Flags&NATProtoOffset != 0 {
		return Paramf("Shifted portmap ranges not supported with this kernel")
	}
	return x6Fcheck(t.Kind, tgNatOptions[t.Kind], seen, tgNatRels[t.Kind])
}

// natPort parses a port number or, where allowed, a service name.
func tgNatServicePort(s string) (uint16, bool) {
	return ServicePort(s, "")
}

func (r *NATRange) parsePorts(arg string, portOK bool) error {
	if !portOK {
		return Paramf("Need TCP, UDP, SCTP or DCCP with port specification")
	}
	r.Flags |= NATProtoSpecified
	port, end, ok := tgStrtoul(arg, 0, 0xffff, false)
	if !ok {
		p, found := tgNatServicePort(arg)
		if !found {
			return Paramf("Port `%s' not valid", arg)
		}
		port, end = uint64(p), ""
	}
	switch {
	case end == "":
		r.MinPort, r.MaxPort = uint16(port), uint16(port)
		return nil
	case end[0] == '-':
		arg = end[1:]
	case end[0] == ':':
		return Paramf("Invalid port:port syntax - use dash")
	default:
		return Paramf("Garbage after port value: `%s'", end)
	}
	maxPort, end, ok := tgStrtoul(arg, 0, 0xffff, false)
	if !ok {
		return Paramf("Port `%s' not valid", arg)
	}
	if maxPort < port {
		return Paramf("Port range `%s' funky", arg)
	}
	r.MinPort, r.MaxPort = uint16(port), uint16(maxPort)
	switch {
	case end == "":
		return nil
	case end[0] == '/':
		arg = end[1:]
	default:
		return Paramf("Garbage after port range: `%s'", end)
	}
	base, _, ok := tgStrtoul(arg, 1, 0xffff, false)
	if !ok {
		p, found := tgNatServicePort(arg)
		if !found {
			return Paramf("Port `%s' not valid", arg)
		}
		base = uint64(p)
	}
	r.Flags |= NATProtoOffset
	r.BasePort = uint16(base)
	return nil
}

// tgNatParseAddr is inet_pton for the family.
func tgNatParseAddr(s string, f Family) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" || a.Is4() != (f == IPv4) {
		return netip.Addr{}, false
	}
	return a, true
}

func (r *NATRange) parseTo(arg string, portOK bool, f Family) error {
	var start string
	colon := -1 // index into arg
	if i := strings.IndexByte(arg, '['); i < 0 {
		start = arg
		if c := strings.IndexByte(arg, ':'); c >= 0 && !strings.Contains(arg[c+1:], ":") {
			colon = c
		}
	} else {
		rest := arg[i+1:]
		e := strings.IndexByte(rest, ']')
		if e < 0 || f == IPv4 {
			return Paramf("Invalid address format")
		}
		start = rest[:e]
		after := i + 1 + e + 1
		if c := strings.IndexByte(arg[after:], ':'); c >= 0 {
			colon = after + c
		}
	}
	if colon >= 0 {
		if err := r.parsePorts(arg[colon+1:], portOK); err != nil {
			return err
		}
		// a colon first (or after "[]") means no address part
		if colon == 0 || colon == 2 {
			return nil
		}
		if len(start) > colon && start == arg {
			start = arg[:colon]
		}
	}
	r.Flags |= NATMapIPs
	lo, hi, hasDash := strings.Cut(start, "-")
	min, ok := tgNatParseAddr(lo, f)
	if !ok {
		return Paramf("Bad IP address \"%s\"", lo)
	}
	max := min
	if hasDash {
		if max, ok = tgNatParseAddr(hi, f); !ok {
			return Paramf("Bad IP address \"%s\"", hi)
		}
	}
	r.MinAddr, r.MaxAddr = min, max
	return nil
}

// String prints the range as xtables' sprint_range does.
func (r *NATRange) String(f Family) string {
	var b strings.Builder
	brackets := f == IPv6 && r.Flags&NATProtoSpecified != 0
	if r.Flags&NATMapIPs != 0 {
		if brackets {
			b.WriteByte('[')
		}
		b.WriteString(tgNatAddrString(r.MinAddr, f))
		if r.MaxAddr != r.MinAddr {
			b.WriteString("-" + tgNatAddrString(r.MaxAddr, f))
		}
		if brackets {
			b.WriteByte(']')
		}
	}
	if r.Flags&NATProtoSpecified != 0 {
		fmt.Fprintf(&b, ":%d", r.MinPort)
		if r.MaxPort != r.MinPort {
			fmt.Fprintf(&b, "-%d", r.MaxPort)
		}
		if r.Flags&NATProtoOffset != 0 {
			fmt.Fprintf(&b, "/%d", r.BasePort)
		}
	}
	return b.String()
}

func tgNatAddrString(a netip.Addr, f Family) string {
	if !a.IsValid() {
		if f == IPv6 {
			return "::"
		}
		return "0.0.0.0"
	}
	return a.String()
}

func (t *NATTarget) write(b *strings.Builder, rangeOpt, flagPfx string, skipColon bool) {
	s := t.Range.String(t.Family)
	if s != "" {
		if skipColon && s[0] == ':' {
			s = s[1:]
		}
		b.WriteString(" " + rangeOpt + s)
	}
	if t.Range.Flags&NATProtoRandom != 0 {
		b.WriteString(" " + flagPfx + "random")
	}
	if t.Range.Flags&NATProtoRandomFull != 0 {
		b.WriteString(" " + flagPfx + "random-fully")
	}
	if t.Range.Flags&NATPersistent != 0 {
		b.WriteString(" " + flagPfx + "persistent")
	}
}

func (t *NATTarget) Save(b *strings.Builder, _ *Rule) {
	switch t.Kind {
	case "SNAT":
		t.write(b, "--to-source ", "--", false)
	case "DNAT":
		t.write(b, "--to-destination ", "--", false)
	default:
		t.write(b, "--to-ports ", "--", true)
	}
}

// SaveExact is Save with the base port given to SNAT or MASQUERADE,
// which keep none and print /0 (a base port no parse accepts).
func (t *NATTarget) SaveExact(b *strings.Builder, r *Rule) {
	c := *t
	if !t.ExactIsSave() {
		c.Range.BasePort = t.givenBase
	}
	c.Save(b, r)
}

// ExactIsSave: the exact form differs only where a base port was dropped.
func (t *NATTarget) ExactIsSave() bool {
	return t.Kind == "DNAT" || t.Range.Flags&NATProtoOffset == 0
}

func (t *NATTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	switch t.Kind {
	case "SNAT", "DNAT":
		t.write(b, "to:", "", false)
	case "MASQUERADE":
		t.write(b, "masq ports: ", "", true)
	case "REDIRECT":
		t.write(b, "redir ports ", "", true)
	}
}

// NftExprs is the nft nat, masq or redir expression with the range in
// registers (addresses in 1 and 2, ports in 3 and 4, as immediates) and
// the same NF_NAT_RANGE_* flags: the kernel calls nf_nat_setup_info,
// nf_nat_masquerade_* or nf_nat_redirect_* with the same range xt's
// targets build, and the verdict is theirs (accept or drop). The
// targets are bound to the nat table; elsewhere we hand the kernel the
// xtables target, which it refuses as it does iptables-nft's.
func (t *NATTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "nat" {
		rev, size := uint32(0), 24
		switch {
		case t.Kind == "DNAT":
			rev, size = 2, 48
		case t.Family == IPv6 && t.Kind == "SNAT":
			rev, size = 1, 40
		case t.Family == IPv6:
			size = 40
		}
		return tgRefused(t.Kind, rev, size), nil
	}
	r := t.Range
	var out []expr.Any
	ports := r.Flags&NATProtoSpecified != 0
	var pmin, pmax uint32
	switch {
	case r.Flags&NATProtoOffset != 0 && t.Kind == "SNAT":
		// xt SNAT's struct has no base port: the kernel runs the offset
		// mode with base 0, as the nat expression does with the flag
		pmin, pmax = 3, 3
		out = append(out, tgImm(3, be16(r.MinPort)))
		if r.MaxPort != r.MinPort {
			pmax = 4
			out = append(out, tgImm(4, be16(r.MaxPort)))
		}
	case r.Flags&NATProtoOffset != 0:
		// nft nat has no base port: the port each destination port
		// of the rule maps to comes from a constant map. MASQUERADE's
		// xt target hands nf_nat a base port it never sets, which no
		// expression can copy.
		if t.Kind != "DNAT" {
			return nil, tgNotInTable(t.Kind, "nat", "a shifted port map (/BASE)")
		}
		m, ok := t.shiftedPortMap(ctx.Rule)
		if !ok {
			return nil, tgNotInTable(t.Kind, "nat", "a shifted port map (/BASE) without one bounded --dport range of tcp, udp or sctp")
		}
		pmin, pmax = 3, 3
		out = append(out, &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 3, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}, m)
	case ports:
		pmin, pmax = 3, 3
		out = append(out, tgImm(3, be16(r.MinPort)))
		if r.MaxPort != r.MinPort {
			pmax = 4
			out = append(out, tgImm(4, be16(r.MaxPort)))
		}
	}
	random, fully, persistent := r.Flags&NATProtoRandom != 0, r.Flags&NATProtoRandomFull != 0, r.Flags&NATPersistent != 0
	switch t.Kind {
	case "MASQUERADE":
		// With ports the kernel package sends NFTA_MASQ_FLAGS with
		// NF_NAT_RANGE_PROTO_SPECIFIED next to the port registers
		// (the library's own encoding leaves the flags out, and the
		// kernel would then ignore the ports): see kernel/fastexpr.go.
		m := &expr.Masq{Random: random, FullyRandom: fully, Persistent: persistent}
		// a single port names its register as both ends: the kernel
		// lists it so (it fills in the missing max)
		if ports {
			m.ToPorts, m.RegProtoMin, m.RegProtoMax = true, pmin, pmax
		}
		return append(out, m), nil
	case "REDIRECT":
		return append(out, &expr.Redir{RegisterProtoMin: pmin, RegisterProtoMax: pmax, Flags: r.Flags}), nil
	}
	n := &expr.NAT{Type: expr.NATTypeSourceNAT, Family: uint32(t.Family), RegProtoMin: pmin, RegProtoMax: pmax,
		Random: random, FullyRandom: fully, Persistent: persistent, Specified: ports}
	if t.Kind == "DNAT" {
		n.Type = expr.NATTypeDestNAT
	}
	var nat expr.Any = n
	if t.Kind == "SNAT" && r.Flags&NATProtoOffset != 0 {
		nat = &offsetNAT{n}
	}
	if r.Flags&NATMapIPs != 0 {
		var pre []expr.Any
		n.RegAddrMin, n.RegAddrMax = 1, 1
		pre = append(pre, tgImm(1, r.MinAddr.AsSlice()))
		if r.MaxAddr != r.MinAddr {
			n.RegAddrMax = 2
			pre = append(pre, tgImm(2, r.MaxAddr.AsSlice()))
		}
		out = append(pre, out...)
	}
	return append(out, nat), nil
}

// offsetNAT is the nat expression of SNAT --to-source ...:MIN-MAX/BASE:
// xt SNAT (revision 0, and 1 for IPv6) has no room for the base port and
// runs nf_nat's offset mode (NF_NAT_RANGE_PROTO_OFFSET) with base 0: the
// first port tried is MIN + sport % (MAX - MIN + 1), then the next ones
// on a clash. The nat expression runs the same with the flag, which the
// library cannot send (kernel.FlaggedNAT).
type offsetNAT struct{ *expr.NAT }

func (n *offsetNAT) NATExpr() *expr.NAT    { return n.NAT }
func (n *offsetNAT) ExtraNATFlags() uint32 { return NATProtoOffset }

// natShiftMaxPorts bounds the destination ports a shifted port map is
// translated for: one map entry each, sent with the rule.
const natShiftMaxPorts = 4096

// shiftedPortMap is the translation of a DNAT shifted port map
// (--to-destination ...:MIN-MAX/BASE) for rule r: a constant map from
// each destination port the rule matches to the port nf_nat's offset
// mode (NF_NAT_RANGE_PROTO_OFFSET) gives it, MIN + (u16)(port - BASE) %
// (MAX - MIN + 1), read from the transport header into register 3 and
// mapped there. ok is false when the rule's destination ports are not
// one bounded, not inverted range of a tcp, udp or sctp match (a packet
// on any other port would find no entry), or more than natShiftMaxPorts.
//
// One difference remains: xt_DNAT's offset mode moves on to the next
// port of the range when the mapped one would clash with an existing
// connection (same source, same new destination); nft nat keeps the
// mapped port, as it does for any single port.
func (t *NATTarget) shiftedPortMap(r *Rule) (*ValueMap, bool) {
	if r == nil || t.Kind != "DNAT" {
		return nil, false
	}
	var dst *PortRange
	for _, m := range r.Matches {
		var pr *PortRange
		switch m := m.(type) {
		case *TCPMatch:
			pr = &m.Dst
		case *UDPMatch:
			pr = &m.Dst
		case *SCTPMatch:
			pr = &m.Dst
		default:
			continue
		}
		if pr.IsAny() {
			continue
		}
		if dst != nil {
			return nil, false
		}
		dst = pr
	}
	if dst == nil || dst.Invert || dst.Min > dst.Max || int(dst.Max-dst.Min) >= natShiftMaxPorts {
		return nil, false
	}
	rg := t.Range
	lo, hi := rg.MinPort, rg.MaxPort
	if hi < lo {
		lo, hi = hi, lo
	}
	size := uint32(hi) - uint32(lo) + 1
	m := &ValueMap{Lookup: &expr.Lookup{SourceRegister: 3, DestRegister: 3, IsDestRegSet: true}, KeyLen: 2, DataLen: 2}
	for p := uint32(dst.Min); p <= uint32(dst.Max); p++ {
		off := uint32(uint16(p - uint32(rg.BasePort)))
		m.Keys = append(m.Keys, be16(uint16(p)))
		m.Values = append(m.Values, be16(uint16(uint32(lo)+off%size)))
	}
	return m, true
}
