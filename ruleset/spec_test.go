package ruleset

import (
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
)

// TestSpecComparesHiddenFields: rules whose -S text is the same but whose
// kernel structs differ are different rules for -C and -D, as for
// iptables-nft.
func TestSpecComparesHiddenFields(t *testing.T) {
	for _, c := range []struct {
		f    compat.Family
		a, b string
	}{
		// the default connlimit mask has all 16 bytes set;
		// --connlimit-mask 32 zeroes the IPv6 words (in IPv6 the
		// default and /128 are the same struct)
		{compat.IPv4, "-A INPUT -p tcp -m connlimit --connlimit-above 111 -j DROP",
			"-A INPUT -p tcp -m connlimit --connlimit-above 111 --connlimit-mask 32 --connlimit-saddr -j DROP"},
		{compat.IPv4, "-A INPUT -p tcp -m connlimit --connlimit-upto 5 --connlimit-daddr -j DROP",
			"-A INPUT -p tcp -m connlimit --connlimit-upto 5 --connlimit-mask 255.255.255.255 --connlimit-daddr -j DROP"},
		// --fragid and --rt-segsleft set their flag even for the full
		// range, which -S prints as nothing
		{compat.IPv6, "-A INPUT -m frag -j DROP", "-A INPUT -m frag --fragid 0:4294967295 -j DROP"},
		{compat.IPv6, "-A INPUT -m rt --rt-type 0 -j DROP", "-A INPUT -m rt --rt-type 0 --rt-segsleft 0:4294967295 -j DROP"},
	} {
		ra, rb := parseFamRule(t, c.f, c.a), parseFamRule(t, c.f, c.b)
		if saveText(ra) != saveText(rb) {
			t.Fatalf("-S differs: %q %q", saveText(ra), saveText(rb))
		}
		if spec(ra) == spec(rb) {
			t.Errorf("%q and %q compare equal", c.a, c.b)
		}
		if spec(ra) != spec(parseFamRule(t, c.f, c.a)) {
			t.Errorf("%q differs from itself", c.a)
		}
	}
}

func parseFamRule(t *testing.T, f compat.Family, line string) *compat.Rule {
	t.Helper()
	cmd, err := compat.Parse(f, compat.RestoreWords(line), compat.ParseOptions{Table: "filter", Restore: true})
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return cmd.Rules[0]
}

func saveText(r *compat.Rule) string {
	var b strings.Builder
	compat.WriteRuleSpec(&b, r, false)
	return b.String()
}
