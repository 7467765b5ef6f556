package ipset

import (
	"strings"
	"testing"
)

// TestNftNamePart: the nftables sets of a set whose name holds '%' get
// names without it (the kernel fills a "%d" in with a number and refuses
// another '%'), and every name reads back as itself.
func TestNftNamePart(t *testing.T) {
	names := []string{"plain", "weave-k;Qp]2x!Lm%Zt$7{Vb|a?0", "x%dy", "%", "%%", `back\sl`, `\p`, `both%\p`, `\\%`, `tail\`}
	seen := map[string]string{}
	for _, n := range names {
		for _, nft := range []string{LookupSetName(n), EntriesSetName(n), NomatchSetName(n), CountSetName(n), ShardSetName(n, 3)} {
			if strings.Contains(nft, "%") {
				t.Errorf("%q: nftables set %q holds a '%%'", n, nft)
			}
		}
		part := NftNamePart(n)
		if o, dup := seen[part]; dup {
			t.Errorf("%q and %q are both written %q", o, n, part)
		}
		seen[part] = n
		if got := nameFromNftPart(part); got != n {
			t.Errorf("%q is written %q, which reads back as %q", n, part, got)
		}
		s, ok := ParseHeader(LookupSetName(n), "ipset hash:ip family inet hashsize 1024 maxelem 65536")
		if !ok || s.Name != n {
			t.Errorf("ParseHeader(%q) = %v, %v; want the set %q", LookupSetName(n), s, ok, n)
		}
		if got, ok := NomatchSetOf(NomatchSetName(n)); !ok || got != n {
			t.Errorf("NomatchSetOf(%q) = %q, %v", NomatchSetName(n), got, ok)
		}
	}
	if NftNamePart("plain") != "plain" {
		t.Error("a name without '%' or '\\' is not written as it is")
	}
}
