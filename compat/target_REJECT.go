package compat

import (
	"strings"
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

func init() {
	opts := []OptDef{{Name: "reject-with", Arg: RequiredArg, ID: 0}}
	RegisterTarget(&ExtSpec{Name: "REJECT", Family: IPv4, X6: true, Options: opts,
		NewTarget: func(Family) TargetExt { return &RejectTarget{Family: IPv4, With: tgRejectPortUnreach4} }})
	RegisterTarget(&ExtSpec{Name: "REJECT", Family: IPv6, X6: true, Options: opts,
		NewTarget: func(Family) TargetExt { return &RejectTarget{Family: IPv6, With: tgRejectPortUnreach6} }})
}

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
