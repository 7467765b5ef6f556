package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// IpvsMatch is -m ipvs (revision 0): the packet belongs to an IPVS
// connection, optionally of a given virtual service (protocol, address,
// port), direction, forwarding method or controlling connection port.
// kube-router's dumps carry it. Every option sets the --ipvs property
// bit too, as libxt_ipvs does.
type IpvsMatch struct {
	Family   Family
	VAddr    hostMask // unmasked address and prefix length (XTTYPE_HOSTMASK)
	VPort    uint16
	Proto    uint8
	Method   uint8 // IP_VS_CONN_F_MASQ/TUNNEL/DROUTE
	VPortCtl uint16
	Invert   uint8 // XT_IPVS_* bits
	Bitmask  uint8 // XT_IPVS_* bits
}

// The option ids are the bit numbers of the XT_IPVS_* flags, as in
// libxt_ipvs, where an inverted option sets invert bit 1<<id.
const (
	ipvsOptIpvs = iota
	ipvsOptVProto
	ipvsOptVAddr
	ipvsOptVPort
	ipvsOptVDir
	ipvsOptVMethod
	ipvsOptVPortCtl
)

const (
	ipvsProperty = 1 << ipvsOptIpvs
	ipvsProto    = 1 << ipvsOptVProto
	ipvsVAddr    = 1 << ipvsOptVAddr
	ipvsVPort    = 1 << ipvsOptVPort
	ipvsDir      = 1 << ipvsOptVDir
	ipvsMethod   = 1 << ipvsOptVMethod
	ipvsVPortCtl = 1 << ipvsOptVPortCtl
)

// IPVS forwarding methods (IP_VS_CONN_F_*).
const (
	ipvsFwdMasq   = 0
	ipvsFwdTunnel = 2
	ipvsFwdDroute = 3
)

var ipvsOpts = []OptDef{
	{Name: "ipvs", Arg: NoArg, ID: ipvsOptIpvs, Invert: true},
	{Name: "vproto", Arg: RequiredArg, ID: ipvsOptVProto, Invert: true},
	{Name: "vaddr", Arg: RequiredArg, ID: ipvsOptVAddr, Invert: true},
	{Name: "vport", Arg: RequiredArg, ID: ipvsOptVPort, Invert: true},
	{Name: "vdir", Arg: RequiredArg, ID: ipvsOptVDir},
	{Name: "vmethod", Arg: RequiredArg, ID: ipvsOptVMethod, Invert: true},
	{Name: "vportctl", Arg: RequiredArg, ID: ipvsOptVPortCtl, Invert: true},
}

var ipvsMatchSpec = ExtSpec{
	Name:     "ipvs",
	X6:       true,
	Options:  ipvsOpts,
	NewMatch: func(f Family) MatchExt { return &IpvsMatch{Family: f} },
}

var _ = RegisterMatch(&ipvsMatchSpec)

// XtRevision: the revision iptables 1.8.9 loads, asked for in the kernel
// (see xtProber).
func (m *IpvsMatch) XtRevision() uint32 { return 0 }

func (m *IpvsMatch) Name() string { return "ipvs" }

func (m *IpvsMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case ipvsOptVProto:
		// XTTYPE_PROTOCOL: xtables_parse_protocol, not lower-cased
		v, err := ParseProtocol(p.Arg)
		if err != nil {
			return err
		}
		m.Proto = v
	case ipvsOptVAddr:
		hm, err := parseHostMask("ipvs", "vaddr", p.Arg, m.Family)
		if err != nil {
			return err
		}
		m.VAddr = hm
	case ipvsOptVPort, ipvsOptVPortCtl:
		v, ok := tgPortByName(p.Arg)
		if !ok {
			return Paramf("Port \"%s\" does not resolve to anything.\n", p.Arg)
		}
		if p.Def.ID == ipvsOptVPort {
			m.VPort = v
		} else {
			m.VPortCtl = v
		}
	case ipvsOptVDir:
		switch {
		case strings.EqualFold(p.Arg, "ORIGINAL"):
			m.Invert &^= ipvsDir
		case strings.EqualFold(p.Arg, "REPLY"):
			m.Invert |= ipvsDir
		default:
			return Paramf("ipvs: Bad value for \"--vdir\" option: \"%s\"", p.Arg)
		}
	case ipvsOptVMethod:
		switch {
		case strings.EqualFold(p.Arg, "GATE"):
			m.Method = ipvsFwdDroute
		case strings.EqualFold(p.Arg, "IPIP"):
			m.Method = ipvsFwdTunnel
		case strings.EqualFold(p.Arg, "MASQ"):
			m.Method = ipvsFwdMasq
		default:
			return Paramf("ipvs: Bad value for \"--vmethod\" option: \"%s\"", p.Arg)
		}
	}
	m.Bitmask |= 1<<uint(p.Def.ID) | ipvsProperty
	if p.Invert {
		m.Invert |= 1 << uint(p.Def.ID)
	}
	return nil
}

// Final is ipvs_mt_check: one option at least, and an inverted --ipvs
// alone.
func (m *IpvsMatch) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("IPVS: At least one option is required")
	}
	if m.Bitmask&^ipvsProperty != 0 && m.inv(ipvsProperty) {
		return Paramf("! --ipvs cannot be together with other options")
	}
	return nil
}

func (m *IpvsMatch) inv(bit uint8) bool { return m.Invert&bit != 0 }

// dump is ipvs_mt_dump: prefix "--" for -S, "" for -L. --ipvs is
// printed only when it is the sole test; a direction is printed as its
// value, never with "!".
func (m *IpvsMatch) dump(b *strings.Builder, prefix string, numeric bool) {
	if m.Bitmask == ipvsProperty {
		b.WriteString(bang(m.inv(ipvsProperty)))
		fmt.Fprintf(b, " %sipvs", prefix)
	}
	if m.Bitmask&ipvsProto != 0 {
		b.WriteString(bang(m.inv(ipvsProto)))
		fmt.Fprintf(b, " %svproto %d", prefix, m.Proto)
	}
	if m.Bitmask&ipvsVAddr != 0 {
		b.WriteString(bang(m.inv(ipvsVAddr)))
		fmt.Fprintf(b, " %svaddr %s", prefix, m.vaddrString(numeric))
	}
	if m.Bitmask&ipvsVPort != 0 {
		b.WriteString(bang(m.inv(ipvsVPort)))
		fmt.Fprintf(b, " %svport %d", prefix, m.VPort)
	}
	if m.Bitmask&ipvsDir != 0 {
		if m.inv(ipvsDir) {
			fmt.Fprintf(b, " %svdir REPLY", prefix)
		} else {
			fmt.Fprintf(b, " %svdir ORIGINAL", prefix)
		}
	}
	if m.Bitmask&ipvsMethod != 0 {
		b.WriteString(bang(m.inv(ipvsMethod)))
		fmt.Fprintf(b, " %svmethod %s", prefix, ipvsMethodName(m.Method))
	}
	if m.Bitmask&ipvsVPortCtl != 0 {
		b.WriteString(bang(m.inv(ipvsVPortCtl)))
		fmt.Fprintf(b, " %svportctl %d", prefix, m.VPortCtl)
	}
}

func ipvsMethodName(v uint8) string {
	switch v {
	case ipvsFwdDroute:
		return "GATE"
	case ipvsFwdTunnel:
		return "IPIP"
	case ipvsFwdMasq:
		return "MASQ"
	}
	return "UNKNOWN"
}

// vaddrString is ipvs_mt_dump_addr: the address as given (unmasked)
// with its mask, a name unless numeric, "anywhere" for the unspecified
// address when not numeric.
func (m *IpvsMatch) vaddrString(numeric bool) string {
	return m.VAddr.listString(numeric)
}

func (m *IpvsMatch) Save(b *strings.Builder, _ *Rule) { m.dump(b, "--", true) }

func (m *IpvsMatch) List(b *strings.Builder, _ *Rule, numeric bool) { m.dump(b, "", numeric) }

// NftExprs is the xtables match with struct xt_ipvs_mtinfo (vaddr,
// vmask as union nf_inet_addr, vport, l4proto, fwd_method, vportctl,
// invert, bitmask: 40 bytes): nftables cannot see IPVS connections.
// Kernels without xt_ipvs refuse it with ENOENT, as they refuse
// iptables-nft's ("RULE_APPEND failed (No such file or directory)").
func (m *IpvsMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	return []expr.Any{compatMatch("ipvs", 0, m.blob())}, nil
}

func (m *IpvsMatch) blob() *xtBlob {
	var b xtBlob
	addr := make([]byte, 16)
	mask := make([]byte, 16)
	if m.VAddr.Addr.IsValid() {
		copy(addr, m.VAddr.Addr.AsSlice())
		for i := 0; i < m.VAddr.Bits; i++ {
			mask[i/8] |= 0x80 >> uint(i%8)
		}
	}
	b.raw(addr, 16)
	b.raw(mask, 16)
	b.b = append(b.b, byte(m.VPort>>8), byte(m.VPort)) // __be16
	b.u8(m.Proto)
	b.u8(m.Method)
	b.b = append(b.b, byte(m.VPortCtl>>8), byte(m.VPortCtl)) // __be16
	b.u8(m.Invert)
	b.u8(m.Bitmask)
	return &b
}
