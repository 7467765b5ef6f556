package integration

import (
	"reflect"
	"testing"

	"github.com/xdptables/xdptables/compat"
)

// TestRuleGen: a seed always generates the same rules, another seed
// others, and the rules reach every table and mostly parse (the rest are
// the errors the generator means to write).
func TestRuleGen(t *testing.T) {
	for _, tool := range []string{"iptables", "ip6tables"} {
		a, b := GenerateRules(tool, 7, 200), GenerateRules(tool, 7, 200)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: seed 7 generated two different cases", tool)
		}
		if c := GenerateRules(tool, 8, 200); reflect.DeepEqual(a.Rules, c.Rules) {
			t.Fatalf("%s: seeds 7 and 8 generated the same rules", tool)
		}
		fam := compat.IPv4
		if tool == "ip6tables" {
			fam = compat.IPv6
		}
		tables := map[string]bool{}
		parsed := 0
		for _, r := range a.Rules {
			tables[r.Table] = true
			if _, err := compat.Parse(fam, r.Args("-A"), compat.ParseOptions{}); err == nil {
				parsed++
			}
		}
		if len(tables) != len(genTables) {
			t.Errorf("%s: rules in %d tables, want %d", tool, len(tables), len(genTables))
		}
		if parsed < len(a.Rules)*3/4 || parsed == len(a.Rules) {
			t.Errorf("%s: %d of %d rules parse: want most, not all", tool, parsed, len(a.Rules))
		}
	}
}
