package ipset

import (
	"fmt"
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

// The shards of a set are created with room for half as many entries
// again as they get (none for empty shards, and for sets with timeouts
// or counters, whose elements are not re-created when a shard fills),
// and each shard's name reads back as its set.
func TestShardSize(t *testing.T) {
	for _, tc := range []struct {
		opts string
		want func(n int) uint32
	}{
		{"", func(n int) uint32 {
			if n == 0 {
				return 0
			}
			return uint32(n + n/2 + 256)
		}},
		{" comment", func(n int) uint32 {
			if n == 0 {
				return 0
			}
			return uint32(n + n/2 + 256)
		}},
		{" timeout 600", func(int) uint32 { return 0 }},
		{" counters", func(int) uint32 { return 0 }},
	} {
		st := &State{}
		if _, err := st.Exec(&Command{Op: OpCreate, Args: append([]string{"s%x", "hash:net", "maxelem", "200000"}, strings.Fields(tc.opts)...)}); err != nil {
			t.Fatalf("%q: create: %v", tc.opts, err)
		}
		for i := range 500 {
			if _, err := st.Exec(&Command{Op: OpAdd, Args: []string{"s%x", fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)}}); err != nil {
				t.Fatalf("%q: add: %v", tc.opts, err)
			}
		}
		s := st.Sets[0]
		shards, total := 0, 0
		for _, ns := range s.NftSetsNoIDs() {
			if ns.Role != RoleEntries {
				continue
			}
			shards++
			total += len(ns.Elems)
			if got, want := ns.Set.Size, tc.want(len(ns.Elems)); got != want {
				t.Errorf("%q: shard %s of %d entries: size %d, want %d", tc.opts, ns.Set.Name, len(ns.Elems), got, want)
			}
			if n, ok := ShardSetOf(ns.Set.Name); !ok || n != "s%x" {
				t.Errorf("ShardSetOf(%q) = %q, %v", ns.Set.Name, n, ok)
			}
		}
		if shards != s.Shards || total != 500 {
			t.Errorf("%q: %d shards holding %d entries", tc.opts, shards, total)
		}
	}
	for _, n := range []string{LookupSetName("a"), CountSetName("a"), ShardPrefix + "a", ShardPrefix + "a.x"} {
		if _, ok := ShardSetOf(n); ok {
			t.Errorf("ShardSetOf(%q) says it is a shard", n)
		}
	}
}
