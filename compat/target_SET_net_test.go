package compat

import (
	"errors"
	"strings"
	"testing"
)

// TestSetTargetNetType: ipset adds the packet's address to a hash:net set
// from -j SET; here a net type's lookup set is an interval set, which
// nftables cannot update from the packet path (ipset/doc.go). The rule
// is refused with a message that names the set and says why, as for a
// list:set, not with the internal "no native nftables translation".
func TestSetTargetNetType(t *testing.T) {
	LookupIPSet = func(name string) (SetInfo, bool) {
		if name == "nets" {
			return SetInfo{NftName: "ipset.nets", Family: IPv4, Dims: []SetDim{SetDimAddr}}, true
		}
		return SetInfo{}, false
	}
	defer func() { LookupIPSet = nil }()
	for _, args := range []string{
		"-A INPUT -p tcp ! --syn -j SET --add-set nets src",
		"-A INPUT -j SET --del-set nets src",
		"-A INPUT -j SET --add-set nets src --exist --timeout 5",
	} {
		cmd, err := Parse(IPv4, strings.Fields(args), ParseOptions{LookupSets: true})
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		r := cmd.Rules[0]
		_, err = r.Target.(*SetTarget).NftExprs(&NftContext{Family: IPv4, Rule: r, Table: "filter", Chain: "INPUT"})
		want := "Set nets is of a net type: the nftables backend cannot update it from rules (its lookup set is an interval set, which the kernel's dynset refuses)."
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", args, err, want)
		}
		var ce *Error
		if !errors.As(err, &ce) || ce.Status != StatusParameter {
			t.Errorf("%s: got %#v, want a parameter problem", args, err)
		}
	}
}
