package compat

import (
	"errors"
	"strings"
	"testing"
)

// TestRpfilterAcceptLocal: --accept-local where xt_rpfilter would run
// for iptables-nft (raw/mangle PREROUTING, user chains) is refused as
// having no exact native form (status 1 through translate), saying why;
// elsewhere the rule keeps the xtables match for the kernel to refuse.
func TestRpfilterAcceptLocal(t *testing.T) {
	for _, c := range []struct{ table, chain, args string }{
		{"raw", "PREROUTING", "-m rpfilter --accept-local"},
		{"mangle", "PREROUTING", "-m rpfilter --accept-local --invert --loose"},
		{"mangle", "mine", "-m rpfilter --accept-local"},
	} {
		cmd, err := Parse(IPv4, strings.Fields("-A "+c.chain+" "+c.args), ParseOptions{Table: c.table})
		if err != nil {
			t.Fatal(err)
		}
		m := cmd.Rules[0].Matches[0].(*RpfilterMatch)
		_, err = m.NftExprs(&NftContext{Family: IPv4, Table: c.table, Chain: c.chain, Rule: cmd.Rules[0]})
		if !errors.Is(err, ErrNoNative) || !strings.Contains(err.Error(), "no exact equivalent of --accept-local") {
			t.Errorf("%s %s %s: %v", c.table, c.chain, c.args, err)
		}
		if StatusOf(err) == StatusParameter {
			t.Errorf("%s: a parameter problem; the reference takes the rule", c.args)
		}
	}
	cmd, err := Parse(IPv4, strings.Fields("-A INPUT -m rpfilter --accept-local"), ParseOptions{Table: "filter"})
	if err != nil {
		t.Fatal(err)
	}
	es, err := cmd.Rules[0].Matches[0].(*RpfilterMatch).NftExprs(&NftContext{Family: IPv4, Table: "filter", Chain: "INPUT", Rule: cmd.Rules[0]})
	if err != nil || len(es) != 1 {
		t.Errorf("filter: %v %v, want the xtables match", es, err)
	}
}
