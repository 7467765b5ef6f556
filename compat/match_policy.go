package compat

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// PolicyMatch is -m policy: the IPsec policy (security path) a packet
// was decapsulated with, or will be encapsulated with.
type PolicyMatch struct {
	Family Family
	Flags  uint16 // policyIn | policyOut | policyNone | policyStrict
	// Elems are the elements given (--next starts the next one); Len
	// is how many the kernel uses: none with --pol none, though an
	// element's options are still stored.
	Elems []PolicyElem
	Len   int
}

// PolicyElem is one element of a policy (struct xt_policy_elem).
type PolicyElem struct {
	Match, Invert  uint8 // policySaddr | policyDaddr | ... bits
	Saddr, Daddr   netip.Addr
	Smask, Dmask   [16]byte // as xtables stores them
	SBits, DBits   int
	SSlash, DSlash bool // a /mask was given (IPv4 /32 is stored unlike no mask)
	SPI, Reqid     uint32
	Proto, Mode    uint8
}

const (
	policyIn     = 1
	policyOut    = 2
	policyNone   = 4
	policyStrict = 8
)

// bits of struct xt_policy_spec
const (
	policySaddr = 1 << iota
	policyDaddr
	policyProto
	policyMode
	policySPI
	policyReqid
)

const (
	policyOptDir = iota
	policyOptPol
	policyOptStrict
	policyOptReqid
	policyOptSPI
	policyOptProto
	policyOptMode
	policyOptTunnelSrc
	policyOptTunnelDst
	policyOptNext
)

var policyOpts = []OptDef{
	{Name: "dir", Arg: RequiredArg, ID: policyOptDir},
	{Name: "pol", Arg: RequiredArg, ID: policyOptPol},
	{Name: "strict", Arg: NoArg, ID: policyOptStrict},
	{Name: "reqid", Arg: RequiredArg, ID: policyOptReqid, Multi: true, Invert: true},
	{Name: "spi", Arg: RequiredArg, ID: policyOptSPI, Multi: true, Invert: true},
	{Name: "tunnel-src", Arg: RequiredArg, ID: policyOptTunnelSrc, Multi: true, Invert: true},
	{Name: "tunnel-dst", Arg: RequiredArg, ID: policyOptTunnelDst, Multi: true, Invert: true},
	{Name: "proto", Arg: RequiredArg, ID: policyOptProto, Multi: true, Invert: true},
	{Name: "mode", Arg: RequiredArg, ID: policyOptMode, Multi: true, Invert: true},
	{Name: "next", Arg: NoArg, ID: policyOptNext, Multi: true},
}

const policyMaxElem = 4

var policyMatchSpec = ExtSpec{
	Name:    "policy",
	Options: policyOpts,
	X6:      true,
	NewMatch: func(f Family) MatchExt {
		return &PolicyMatch{Family: f, Elems: make([]PolicyElem, 1, policyMaxElem)}
	},
}

var _ = RegisterMatch(&policyMatchSpec)

func (m *PolicyMatch) Name() string { return "policy" }

// policyHostMask parses an XTTYPE_HOSTMASK value: the host, then a
// /mask as XTTYPE_PLENMASK.
func policyHostMask(p *OptArg, f Family) (netip.Addr, [16]byte, int, bool, error) {
	host, mask, slash := strings.Cut(p.Arg, "/")
	full := 32
	if f == IPv6 {
		full = 128
	}
	var raw [16]byte
	for i := range raw {
		raw[i] = 0xff
	}
	a, err := lookupHost(host, f)
	if err != nil {
		return a, raw, 0, false, err
	}
	if !slash {
		return a, raw, full, false, nil
	}
	q := *p
	q.Arg = mask
	raw, plen, err := plenMask(&q, f)
	if err != nil {
		return a, raw, 0, false, err
	}
	if plen > full {
		// a non-contiguous mask: xtables keeps all ones
		return a, raw, full, false, nil
	}
	return a, raw, plen, true, nil
}

func (m *PolicyMatch) Parse(p *OptArg) error {
	e := &m.Elems[len(m.Elems)-1]
	double := func(bit uint8, opt string) error {
		if e.Match&bit != 0 {
			return Paramf("policy match: double --%s option", opt)
		}
		e.Match |= bit
		if p.Invert {
			e.Invert |= bit
		}
		return nil
	}
	switch p.Def.ID {
	case policyOptDir:
		switch p.Arg {
		case "in":
			m.Flags |= policyIn
		case "out":
			m.Flags |= policyOut
		default:
			return Paramf("policy_match: invalid dir \"%s\"", p.Arg)
		}
	case policyOptPol:
		switch p.Arg {
		case "none":
			m.Flags |= policyNone
		case "ipsec":
		default:
			return Paramf("policy match: invalid policy \"%s\"", p.Arg)
		}
	case policyOptStrict:
		m.Flags |= policyStrict
	case policyOptReqid, policyOptSPI:
		v, err := x6Uint(p, 0, math.MaxUint32)
		if err != nil {
			return err
		}
		if p.Def.ID == policyOptReqid {
			if err := double(policyReqid, "reqid"); err != nil {
				return err
			}
			e.Reqid = uint32(v)
		} else {
			if err := double(policySPI, "spi"); err != nil {
				return err
			}
			e.SPI = uint32(v)
		}
	case policyOptTunnelSrc, policyOptTunnelDst:
		a, raw, bits, slash, err := policyHostMask(p, m.Family)
		if err != nil {
			return err
		}
		if p.Def.ID == policyOptTunnelSrc {
			if err := double(policySaddr, "tunnel-src"); err != nil {
				return err
			}
			e.Saddr, e.Smask, e.SBits, e.SSlash = a, raw, bits, slash
		} else {
			if err := double(policyDaddr, "tunnel-dst"); err != nil {
				return err
			}
			e.Daddr, e.Dmask, e.DBits, e.DSlash = a, raw, bits, slash
		}
	case policyOptProto:
		v, err := ParseProtocol(p.Arg)
		if err != nil {
			return err
		}
		if e.Match&policyProto != 0 {
			return Paramf("policy match: double --proto option")
		}
		e.Proto = v
		if v != 51 && v != 50 && v != 108 {
			return Paramf("policy match: protocol must be ah/esp/ipcomp")
		}
		_ = double(policyProto, "proto")
	case policyOptMode:
		if err := double(policyMode, "mode"); err != nil {
			return err
		}
		switch p.Arg {
		case "transport":
			e.Mode = 0
		case "tunnel":
			e.Mode = 1
		default:
			return Paramf("policy match: invalid mode \"%s\"", p.Arg)
		}
	case policyOptNext:
		if len(m.Elems) == policyMaxElem {
			return Paramf("policy match: maximum policy depth reached")
		}
		m.Elems = append(m.Elems, PolicyElem{})
	}
	return nil
}

func (m *PolicyMatch) Final(_ *Rule, seen OptSet) error {
	if err := x6Fcheck("policy", policyOpts, seen, map[int]x6Rel{
		policyOptNext: {also: bit(policyOptStrict)},
	}); err != nil {
		return err
	}
	if m.Flags&(policyIn|policyOut) == 0 {
		return Paramf("policy match: neither --dir in nor --dir out specified")
	}
	if m.Flags&policyNone != 0 {
		if m.Flags&policyStrict != 0 {
			return Paramf("policy match: policy none but --strict given")
		}
		if len(m.Elems) != 1 {
			return Paramf("policy match: policy none but policy given")
		}
	} else {
		m.Len = len(m.Elems)
	}
	for i := 0; i < m.Len; i++ {
		e := &m.Elems[i]
		if m.Flags&policyStrict != 0 && e.Match == 0 {
			return Paramf("policy match: empty policy element %d. --strict is in effect, but at least one of reqid, spi, tunnel-src, tunnel-dst, proto or mode is required.", i)
		}
		if e.Match&(policySaddr|policyDaddr) != 0 &&
			((e.Mode == 1 && e.Invert&policyMode != 0) || (e.Mode == 0 && e.Invert&policyMode == 0)) {
			return Paramf("policy match: --tunnel-src/--tunnel-dst is only valid in tunnel mode")
		}
	}
	return nil
}

func (m *PolicyMatch) flags(b *strings.Builder, prefix string) {
	if m.Flags&policyIn != 0 {
		b.WriteString(" " + prefix + "dir in")
	} else {
		b.WriteString(" " + prefix + "dir out")
	}
	if m.Flags&policyNone != 0 {
		b.WriteString(" " + prefix + "pol none")
	} else {
		b.WriteString(" " + prefix + "pol ipsec")
	}
	if m.Flags&policyStrict != 0 {
		b.WriteString(" " + prefix + "strict")
	}
}

func policyAddr(a netip.Addr, bits int, slash, exact bool) string {
	s := a.String()
	if bits != a.BitLen() || (exact && slash) {
		s += "/" + strconv.Itoa(bits)
	}
	return s
}

func (e *PolicyElem) print(b *strings.Builder, prefix string, numeric, exact bool) {
	inv := func(bit uint8) {
		if e.Invert&bit != 0 {
			b.WriteString(" !")
		}
	}
	if e.Match&policyReqid != 0 {
		inv(policyReqid)
		fmt.Fprintf(b, " %sreqid %d", prefix, e.Reqid)
	}
	if e.Match&policySPI != 0 {
		inv(policySPI)
		fmt.Fprintf(b, " %sspi 0x%x", prefix, e.SPI)
	}
	if e.Match&policyProto != 0 {
		inv(policyProto)
		name := ""
		if !numeric {
			protoOnce.Do(loadProtocols)
			name = protoByNum[e.Proto]
		}
		if name == "" || exact && !protoParsesAs(name, e.Proto) {
			name = strconv.Itoa(int(e.Proto))
		}
		fmt.Fprintf(b, " %sproto %s", prefix, name)
	}
	if e.Match&policyMode != 0 {
		inv(policyMode)
		mode := "???"
		switch e.Mode {
		case 0:
			mode = "transport"
		case 1:
			mode = "tunnel"
		}
		fmt.Fprintf(b, " %smode %s", prefix, mode)
	}
	if e.Match&policyDaddr != 0 {
		inv(policyDaddr)
		fmt.Fprintf(b, " %stunnel-dst %s", prefix, policyAddr(e.Daddr, e.DBits, e.DSlash, exact))
	}
	if e.Match&policySaddr != 0 {
		inv(policySaddr)
		fmt.Fprintf(b, " %stunnel-src %s", prefix, policyAddr(e.Saddr, e.SBits, e.SSlash, exact))
	}
}

func (m *PolicyMatch) save(b *strings.Builder, exact bool) {
	m.flags(b, "--")
	n := m.Len
	if exact {
		n = len(m.Elems) // with --pol none, element 0 is stored unused
	}
	for i := 0; i < n; i++ {
		m.Elems[i].print(b, "--", false, exact)
		if i+1 < n {
			b.WriteString(" --next")
		}
	}
}

func (m *PolicyMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact keeps an IPv4 "/32" (xtables stores it unlike a bare host:
// the unused mask words are zero, not all ones) and the options of an
// element that --pol none leaves unused.
func (m *PolicyMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

func (m *PolicyMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" policy match")
	m.flags(b, "")
	for i := 0; i < m.Len; i++ {
		if m.Len > 1 {
			fmt.Fprintf(b, " [%d]", i)
		}
		m.Elems[i].print(b, "", numeric, false)
	}
}

// NftExprs: the xtables match (struct xt_policy_info). nft's "ipsec"
// expression tests one position of the security path; xt_policy walks
// it (strict or any position) and tells "no policy" apart.
func (m *PolicyMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	for i := 0; i < policyMaxElem; i++ {
		var e PolicyElem
		if i < len(m.Elems) {
			e = m.Elems[i]
		}
		addr := func(a netip.Addr) {
			if a.IsValid() {
				x.raw(a.AsSlice(), 16)
			} else {
				x.raw(nil, 16)
			}
		}
		mask := func(set bool, raw [16]byte) {
			if set {
				x.raw(raw[:], 16)
			} else {
				x.raw(nil, 16)
			}
		}
		addr(e.Saddr)
		mask(e.Match&policySaddr != 0, e.Smask)
		addr(e.Daddr)
		mask(e.Match&policyDaddr != 0, e.Dmask)
		x.u32(e.SPI)
		x.u32(e.Reqid)
		x.u8(e.Proto)
		x.u8(e.Mode)
		x.u8(e.Match)
		x.u8(e.Invert)
	}
	x.u16(m.Flags)
	x.u16(uint16(m.Len))
	return []expr.Any{compatMatch("policy", 0, x)}, nil
}
