package compat

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// NetmapTarget is -j NETMAP (nat table): it maps the network part of
// the destination (PREROUTING, OUTPUT) or source (POSTROUTING, INPUT)
// address onto another network of the same size, keeping the host
// part. Min is the network (address & mask), Max its last address.
type NetmapTarget struct {
	Family   Family
	Min, Max netip.Addr
}

var netmapTargetSpec = ExtSpec{
	Name: "NETMAP",
	X6:   true,
	Options: []OptDef{
		{Name: "to", Arg: RequiredArg, ID: 0, Mandatory: true},
	},
	NewTarget: func(f Family) TargetExt { return &NetmapTarget{Family: f} },
}

var _ = RegisterTarget(&netmapTargetSpec)

func (t *NetmapTarget) Name() string { return "NETMAP" }

// tgNetmapMask parses the mask of an XTTYPE_HOSTMASK argument as
// xtopt_parse_plenmask does: a prefix length up to the family width, or
// else a numeric address taken as a mask. xtables then builds the mask
// from the length; a non-contiguous mask (length -1 as unsigned) leaves
// every bit set, so it means a single host.
func tgNetmapMask(p *OptArg, s string, f Family) (int, error) {
	full := 32
	if f == IPv6 {
		full = 128
	}
	if v, ok := xtStrtoui(s, 0, uint64(full)); ok {
		return int(v), nil
	}
	var m netip.Addr
	ok := false
	if f == IPv4 {
		m, ok = inetAton(s)
	} else if a, err := netip.ParseAddr(s); err == nil && a.Is6() && a.Zone() == "" {
		m, ok = a, true
	}
	if !ok {
		return 0, Paramf("%s: bad value for option \"--%s\", neither a valid network mask nor valid CIDR (0-%d).\n",
			p.Ext, p.Def.Name, full)
	}
	if bits := (Net{Mask: m}).Bits(); bits >= 0 {
		return bits, nil
	}
	return full, nil
}

// Parse reads "ADDR[/MASK]" (XTTYPE_HOSTMASK): the host part first, as
// xtables resolves it before the mask.
func (t *NetmapTarget) Parse(p *OptArg) error {
	host, mask, hasMask := strings.Cut(p.Arg, "/")
	a, err := lookupHost(host, t.Family)
	if err != nil {
		return err
	}
	bits := a.BitLen()
	if hasMask {
		if bits, err = tgNetmapMask(p, mask, t.Family); err != nil {
			return err
		}
	}
	t.Min = netip.PrefixFrom(a, bits).Masked().Addr()
	t.Max = tgNetmapLast(t.Min, bits)
	return nil
}

// tgNetmapLast is the last address of the network a/bits.
func tgNetmapLast(a netip.Addr, bits int) netip.Addr {
	b := a.AsSlice()
	for i := range b {
		for j := 7; j >= 0; j-- {
			if i*8+(7-j) >= bits {
				b[i] |= 1 << j
			}
		}
	}
	out, _ := netip.AddrFromSlice(b)
	return out
}

func (t *NetmapTarget) Final(*Rule, OptSet) error { return nil }

// bits is the prefix length of the mapping.
func (t *NetmapTarget) bits() int {
	n := 0
	lo, hi := t.Min.AsSlice(), t.Max.AsSlice()
	for i := range lo {
		for j := 7; j >= 0; j-- {
			if (lo[i]^hi[i])&(1<<j) != 0 {
				return n
			}
			n++
		}
	}
	return n
}

func (t *NetmapTarget) text() string {
	a := t.Min
	if !a.IsValid() {
		a = netip.IPv4Unspecified()
		if t.Family == IPv6 {
			a = netip.IPv6Unspecified()
		}
	}
	return a.String() + "/" + strconv.Itoa(t.bits())
}

func (t *NetmapTarget) Save(b *strings.Builder, _ *Rule) { b.WriteString(" --to " + t.text()) }

func (t *NetmapTarget) List(b *strings.Builder, _ *Rule, _ bool) { b.WriteString(" to:" + t.text()) }

// NftExprs is nft's `dnat/snat ip prefix to NET`: the nat expression
// with the network's first and last address in registers 1 and 2 and
// NF_NAT_RANGE_NETMAP, for which the kernel keeps the bits of the
// packet's address outside the mask and takes the rest from the
// network, then calls nf_nat_setup_info with that one address, as xt
// NETMAP does (same new address, same verdict). xt NETMAP picks the
// side by the hook: destination in PREROUTING and OUTPUT, source in
// POSTROUTING and INPUT. An nft nat expression has its side fixed and
// the kernel allows it only in that side's hooks, so in a user-defined
// chain, reachable from any of them, there is no exact form. NETMAP is
// bound to the nat table: elsewhere we hand the kernel the xtables
// target, which it refuses as it does iptables-nft's.
func (t *NetmapTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "nat" {
		size := 24 // nf_nat_ipv4_multi_range_compat
		if t.Family == IPv6 {
			size = 40 // nf_nat_range
		}
		return tgRefused("NETMAP", 0, size), nil
	}
	n := &expr.NAT{Family: uint32(t.Family), RegAddrMin: 1, RegAddrMax: 2, Prefix: true}
	switch ctx.Chain {
	case "PREROUTING", "OUTPUT":
		n.Type = expr.NATTypeDestNAT
	case "POSTROUTING", "INPUT":
		n.Type = expr.NATTypeSourceNAT
	default:
		return nil, tgNotInTable("NETMAP", "nat", "NETMAP in a user-defined chain, where the hook the packet is in decides between source and destination mapping")
	}
	return []expr.Any{tgImm(1, t.Min.AsSlice()), tgImm(2, t.Max.AsSlice()), n}, nil
}
