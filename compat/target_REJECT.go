package compat

import (
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// RejectTarget is -j REJECT: it drops the packet and answers with an
// ICMP error or a TCP reset. With is an index into the family's reject
// type table (the kernel's ipt/ip6t_reject_with values).
type RejectTarget struct {
	Family Family
	With   int
}

type tgRejectType struct {
	name, alias string
}

// tgRejectTypes4 is indexed by enum ipt_reject_with; index 4 (echo-reply)
// is not offered.
var tgRejectTypes4 = []tgRejectType{
	{"icmp-net-unreachable", "net-unreach"},
	{"icmp-host-unreachable", "host-unreach"},
	{"icmp-proto-unreachable", "proto-unreach"},
	{"icmp-port-unreachable", "port-unreach"},
	{},
	{"icmp-net-prohibited", "net-prohib"},
	{"icmp-host-prohibited", "host-prohib"},
	{"tcp-reset", "tcp-rst"},
	{"icmp-admin-prohibited", "admin-prohib"},
}

// tgRejectTypes6 is indexed by enum ip6t_reject_with; not-neighbour and
// echo-reply are not offered.
var tgRejectTypes6 = []tgRejectType{
	{"icmp6-no-route", "no-route"},
	{"icmp6-adm-prohibited", "adm-prohibited"},
	{},
	{"icmp6-addr-unreachable", "addr-unreach"},
	{"icmp6-port-unreachable", "port-unreach"},
	{},
	{"tcp-reset", "tcp-reset"},
	{"icmp6-policy-fail", "policy-fail"},
	{"icmp6-reject-route", "reject-route"},
}

const (
	tgRejectPortUnreach4 = 3
	tgRejectPortUnreach6 = 4
)

var (
	tgRejectOptions   = []OptDef{{Name: "reject-with", Arg: RequiredArg, ID: 0}}
	rejectTargetSpec4 = ExtSpec{Name: "REJECT", Family: IPv4, X6: true, Options: tgRejectOptions,
		NewTarget: func(Family) TargetExt { return &RejectTarget{Family: IPv4, With: tgRejectPortUnreach4} }}
	rejectTargetSpec6 = ExtSpec{Name: "REJECT", Family: IPv6, X6: true, Options: tgRejectOptions,
		NewTarget: func(Family) TargetExt { return &RejectTarget{Family: IPv6, With: tgRejectPortUnreach6} }}
)

var (
	_ = RegisterTarget(&rejectTargetSpec4)
	_ = RegisterTarget(&rejectTargetSpec6)
)

func (t *RejectTarget) Name() string { return "REJECT" }

func (t *RejectTarget) table() []tgRejectType {
	if t.Family == IPv6 {
		return tgRejectTypes6
	}
	return tgRejectTypes4
}

// Parse accepts any case-insensitive prefix of a type name or alias;
// the first entry in table order wins (so "" means the first type).
func (t *RejectTarget) Parse(p *OptArg) error {
	arg := strings.ToLower(p.Arg)
	for i, rt := range t.table() {
		if rt.name == "" {
			continue
		}
		if strings.HasPrefix(rt.name, arg) || strings.HasPrefix(rt.alias, arg) {
			t.With = i
			return nil
		}
	}
	if t.Family == IPv4 && (strings.HasPrefix("echo-reply", arg) || strings.HasPrefix("echoreply", arg)) {
		// iptables prints a notice before the error itself.
		return Rawf(StatusParameter, "--reject-with echo-reply no longer supported\n%s v%s (nf_tables): unknown reject type \"%s\"\n",
			p.Family.Prog(), Version, p.Arg)
	}
	return Paramf("unknown reject type \"%s\"", p.Arg)
}

func (t *RejectTarget) Final(*Rule, OptSet) error { return nil }

// TypeName is the canonical name of the reject type.
func (t *RejectTarget) TypeName() string {
	tab := t.table()
	if t.With >= 0 && t.With < len(tab) {
		return tab[t.With].name
	}
	return ""
}

func (t *RejectTarget) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(" --reject-with " + t.TypeName())
}

func (t *RejectTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" reject-with " + t.TypeName())
}

// tgRejectCodes4/6 map the reject type (index as in tgRejectTypes4/6)
// to the ICMP code the kernel's REJECT sends; -1 is tcp-reset. Both
// xt REJECT and nft reject call nf_send_unreach(6)/nf_send_reset(6)
// with these values and drop the packet.
var (
	tgRejectCodes4 = []int{0, 1, 2, 3, -2, 9, 10, -1, 13} // ..., ICMP_NET_ANO, ICMP_HOST_ANO, RST, ICMP_PKT_FILTERED
	tgRejectCodes6 = []int{0, 1, -2, 3, 4, -2, -1, 5, 6}  // ICMPV6_NOROUTE, ADM_PROHIBITED, ADDR_UNREACH, PORT_UNREACH, RST, POLICY_FAIL, REJECT_ROUTE
)

// NftExprs is the nft reject expression. The kernel's REJECT is bound
// to the filter table and refuses tcp-reset unless the rule is -p tcp:
// there we hand it the xtables target so it refuses the rule as it does
// iptables-nft's.
func (t *RejectTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	codes := tgRejectCodes4
	if t.Family == IPv6 {
		codes = tgRejectCodes6
	}
	if t.With < 0 || t.With >= len(codes) || codes[t.With] == -2 {
		return nil, errTgUnsupported
	}
	code := codes[t.With]
	if ctx.Table != "filter" || (code == -1 && !ruleProtoIs(ctx.Rule, 6)) {
		return tgRefused("REJECT", 0, 4), nil
	}
	if code == -1 {
		return []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_TCP_RST}}, nil
	}
	return []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: uint8(code)}}, nil
}
