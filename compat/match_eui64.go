package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// EUI64Match is ip6tables -m eui64: the source address's interface
// identifier is the EUI-64 derived from the source MAC address.
type EUI64Match struct{}

var eui64MatchSpec = ExtSpec{
	Name:     "eui64",
	Family:   IPv6,
	X6:       true,
	NewMatch: func(Family) MatchExt { return &EUI64Match{} },
}

var _ = RegisterMatch(&eui64MatchSpec)

func (m *EUI64Match) Name() string { return "eui64" }

func (m *EUI64Match) Parse(*OptArg) error { return nil }

func (m *EUI64Match) Final(*Rule, OptSet) error { return nil }

// Save: the match has no options.
func (m *EUI64Match) Save(*strings.Builder, *Rule) {}

// List: ip6tables prints nothing for it.
func (m *EUI64Match) List(*strings.Builder, *Rule, bool) {}

// NftExprs: the xtables match (an int of padding); nftables has no
// expression that compares the address with the MAC header. The kernel
// allows it in PREROUTING, INPUT and FORWARD only.
func (m *EUI64Match) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u32(0)
	return []expr.Any{compatMatch("eui64", 0, x)}, nil
}
