package setengine

import (
	"testing"

	"github.com/google/nftables/expr"

	"github.com/xdptables/xdptables/kernel"
)

// The member tests of a list:set rule (lookups, then return, in a chain
// bound to the rule) are told from the other rules that bound chains
// and iptables chains hold: their lookups are no references of the set.
func TestIsListMemberTest(t *testing.T) {
	lookup := &expr.Lookup{SourceRegister: 1, SetName: "ipset.m", Invert: true}
	ret := &expr.Verdict{Kind: expr.VerdictReturn}
	cases := []struct {
		chain string
		exprs []expr.Any
		want  bool
	}{
		{"__chain3", []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4}, lookup, ret}, true},
		// the rest of the rule: its lookups are references
		{"__chain3", []expr.Any{lookup, &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}}, false},
		// -j ECN's bound chain returns without a lookup
		{"__chain4", []expr.Any{&expr.Bitwise{}, ret}, false},
		// an iptables chain's rule with a lookup and -j RETURN
		{"filter.INPUT", []expr.Any{lookup, &expr.Counter{}, ret}, false},
		{"__chain5", nil, false},
		// a member with counters counted where it is the first to match
		{"__chain3", []expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, lookup, lookup}, true},
		// -j SET's bound chain: the guard and the add are references
		{"__chain6", []expr.Any{lookup, &expr.Dynset{SetName: "ipset.m"}}, false},
	}
	for i, c := range cases {
		if got := isListMemberTest(kernel.Rule{Chain: c.chain, Exprs: c.exprs}); got != c.want {
			t.Errorf("case %d (%s): got %v, want %v", i, c.chain, got, c.want)
		}
	}
}
