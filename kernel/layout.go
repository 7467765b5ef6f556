package kernel

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// TableName is the name of the nftables table xdptables owns in each family.
const TableName = "xdptables"

// Family is an nftables family; xdptables uses ip (iptables) and ip6
// (ip6tables).
type Family uint8

// The families xdptables owns a table in.
const (
	IPv4 Family = unix.NFPROTO_IPV4
	IPv6 Family = unix.NFPROTO_IPV6
)

func (f Family) String() string {
	switch f {
	case unix.NFPROTO_UNSPEC:
		return "unspec"
	case unix.NFPROTO_INET:
		return "inet"
	case IPv4:
		return "ip"
	case unix.NFPROTO_ARP:
		return "arp"
	case unix.NFPROTO_NETDEV:
		return "netdev"
	case unix.NFPROTO_BRIDGE:
		return "bridge"
	case IPv6:
		return "ip6"
	}
	return fmt.Sprintf("family(%d)", uint8(f))
}

// Hook is a netfilter hook number of a base chain.
type Hook uint32

// Netfilter hooks of the ip and ip6 families.
const (
	HookPrerouting  Hook = unix.NF_INET_PRE_ROUTING
	HookInput       Hook = unix.NF_INET_LOCAL_IN
	HookForward     Hook = unix.NF_INET_FORWARD
	HookOutput      Hook = unix.NF_INET_LOCAL_OUT
	HookPostrouting Hook = unix.NF_INET_POST_ROUTING
)

func (h Hook) String() string {
	switch h {
	case HookPrerouting:
		return "prerouting"
	case HookInput:
		return "input"
	case HookForward:
		return "forward"
	case HookOutput:
		return "output"
	case HookPostrouting:
		return "postrouting"
	}
	return fmt.Sprintf("hook(%d)", uint32(h))
}

// ChainType is the nftables type of a base chain.
type ChainType string

// Base chain types.
const (
	TypeFilter ChainType = "filter"
	TypeNAT    ChainType = "nat"
	TypeRoute  ChainType = "route"
)

// Policy is a base chain's verdict for packets no rule decided on.
type Policy uint32

// Base chain policies, with the kernel's values (NF_DROP, NF_ACCEPT).
const (
	PolicyDrop   Policy = 0
	PolicyAccept Policy = 1
)

func (p Policy) String() string {
	switch p {
	case PolicyDrop:
		return "drop"
	case PolicyAccept:
		return "accept"
	}
	return fmt.Sprintf("policy(%d)", uint32(p))
}

// BaseChain is where a base chain hooks into the stack.
type BaseChain struct {
	Hook     Hook
	Priority int32
	Type     ChainType
}

// iptablesTables are the names of the iptables tables.
var iptablesTables = []string{"filter", "nat", "mangle", "raw", "security"}

// builtins lists, per iptables table, its built-in chains in iptables' order
// with iptables-nft's hooks, types and priorities (spec §1).
var builtins = map[string][]struct {
	name string
	base BaseChain
}{
	"filter": {
		{"INPUT", BaseChain{HookInput, 0, TypeFilter}},
		{"FORWARD", BaseChain{HookForward, 0, TypeFilter}},
		{"OUTPUT", BaseChain{HookOutput, 0, TypeFilter}},
	},
	"nat": {
		{"PREROUTING", BaseChain{HookPrerouting, -100, TypeNAT}},
		{"INPUT", BaseChain{HookInput, 100, TypeNAT}},
		{"OUTPUT", BaseChain{HookOutput, -100, TypeNAT}},
		{"POSTROUTING", BaseChain{HookPostrouting, 100, TypeNAT}},
	},
	"mangle": {
		{"PREROUTING", BaseChain{HookPrerouting, -150, TypeFilter}},
		{"INPUT", BaseChain{HookInput, -150, TypeFilter}},
		{"FORWARD", BaseChain{HookForward, -150, TypeFilter}},
		{"OUTPUT", BaseChain{HookOutput, -150, TypeRoute}},
		{"POSTROUTING", BaseChain{HookPostrouting, -150, TypeFilter}},
	},
	"raw": {
		{"PREROUTING", BaseChain{HookPrerouting, -300, TypeFilter}},
		{"OUTPUT", BaseChain{HookOutput, -300, TypeFilter}},
	},
	"security": {
		{"INPUT", BaseChain{HookInput, 150, TypeFilter}},
		{"FORWARD", BaseChain{HookForward, 150, TypeFilter}},
		{"OUTPUT", BaseChain{HookOutput, 150, TypeFilter}},
	},
}

// IptablesTables returns the names of the five iptables tables.
func IptablesTables() []string {
	return append([]string(nil), iptablesTables...)
}

// IsIptablesTable reports whether name is one of the five iptables tables.
func IsIptablesTable(name string) bool {
	_, ok := builtins[name]
	return ok
}

// BuiltinChains returns the built-in chains of an iptables table in
// iptables' order, or nil for an unknown table.
func BuiltinChains(table string) []string {
	var out []string
	for _, b := range builtins[table] {
		out = append(out, b.name)
	}
	return out
}

// BuiltinChain returns where the built-in chain of an iptables table hooks
// in; ok is false when chain is not built-in in that table.
func BuiltinChain(table, chain string) (base BaseChain, ok bool) {
	for _, b := range builtins[table] {
		if b.name == chain {
			return b.base, true
		}
	}
	return BaseChain{}, false
}

// ChainName returns the nft chain name of an iptables chain:
// ChainName("nat", "DOCKER") is "nat.DOCKER".
func ChainName(table, chain string) string {
	return table + "." + chain
}

// SplitChainName splits an nft chain name of our table into the iptables
// table and chain. ok is false for names that do not follow the layout.
func SplitChainName(name string) (table, chain string, ok bool) {
	table, chain, ok = strings.Cut(name, ".")
	if !ok || !IsIptablesTable(table) || chain == "" {
		return "", "", false
	}
	return table, chain, true
}
