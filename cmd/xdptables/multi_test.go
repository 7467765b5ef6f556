package main

import "testing"

// Every xtables-nft-multi subcommand runs one of the personalities, and
// each personality can be reached under its own and its -nft name.
func TestMultiSubcommands(t *testing.T) {
	names := map[string]bool{}
	for _, sc := range multiSubcommands {
		if personalities[sc.personality] == nil {
			t.Errorf("%s: no personality %q", sc.name, sc.personality)
		}
		names[sc.name] = true
	}
	for p := range personalities {
		if p == "ipset" {
			continue // not a tool of xtables-nft-multi
		}
		if !names[p] || !names[nftName(p)] {
			t.Errorf("personality %s: not a subcommand as %s and %s", p, p, nftName(p))
		}
	}
	if rc := multiMain([]string{"arptables", "-L"}); rc != 1 {
		t.Errorf("unknown subcommand: rc %d, want 1", rc)
	}
	if rc := multiMain(nil); rc != 1 {
		t.Errorf("no subcommand: rc %d, want 1", rc)
	}
}
