package translate

import (
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
)

// iptables -E gives a chain a name of any length: its rules read back.
func TestStoredRuleLongChainName(t *testing.T) {
	chain := strings.Repeat("x", 40)
	cmd, err := compat.Parse(compat.IPv4, []string{"-A", "u1", "-s", "198.51.100.1", "-j", "RETURN"}, compat.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ud, err := UserData(cmd.Rules[0])
	if err != nil {
		t.Fatal(err)
	}
	r, err := StoredRule(compat.IPv4, "filter", chain, ud)
	if err != nil {
		t.Fatalf("rule of a renamed chain: %v", err)
	}
	if got := compat.SaveRule(chain, r, false); got != "-A "+chain+" -s 198.51.100.1/32 -j RETURN" {
		t.Errorf("read back as %q", got)
	}
}
