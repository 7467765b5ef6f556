package ipset

import (
	"bytes"
	"strings"
	"testing"
)

// createSet runs "create" with args on an empty state.
func createSet(t *testing.T, args ...string) *Set {
	t.Helper()
	st := &State{}
	if _, err := st.Exec(&Command{Op: OpCreate, Args: args}); err != nil {
		t.Fatalf("create %v: %v", args, err)
	}
	return st.Sets[0]
}

// Plain hash types of a large maxelem get shard copies, unless their
// elements expire or count packets in the lookup set; the header keeps
// the shard count and reads back as written.
func TestShardCopiesLayout(t *testing.T) {
	for _, c := range []struct {
		args   string
		shards int
	}{
		{"s hash:ip maxelem 1000000", 128},
		{"s hash:ip maxelem 2000000", 256},
		{"s hash:ip maxelem 262145", 64},
		{"s hash:ip maxelem 262144", 0},
		{"s hash:ip", 0},
		{"s hash:ip maxelem 1000000 timeout 10", 0},
		{"s hash:ip maxelem 1000000 counters", 0},
		{"s hash:ip maxelem 1000000 comment skbinfo", 128},
		{"s hash:ip,port maxelem 300000", 64},
		{"s hash:ip,port,ip maxelem 300000", 64},
		{"s hash:ip,mark maxelem 300000", 64},
		{"s hash:ip,mac maxelem 300000", 64},
		{"s hash:mac maxelem 300000", 64},
		{"s hash:ip family inet6 maxelem 300000", 64},
		{"s hash:net maxelem 70000", 16},
		{"s bitmap:ip range 10.0.0.0/16", 0},
	} {
		s := createSet(t, strings.Fields(c.args)...)
		if s.Shards != c.shards {
			t.Errorf("%s: %d shards, want %d", c.args, s.Shards, c.shards)
		}
		h := s.Header()
		if got := strings.Contains(h, " shards "); got != (c.shards > 0) {
			t.Errorf("%s: header %q", c.args, h)
		}
		back, ok := ParseHeader(LookupSetName(s.Name), h)
		if !ok || back.Header() != h || back.Shards != s.Shards || back.ShardCopies() != (c.shards > 0 && !s.Type.Net()) {
			t.Errorf("%s: header %q read back as %+v (ok %v)", c.args, h, back, ok)
		}
		// A new set has made no shard yet; one read back without
		// knowing which exist may have them all.
		names, all := s.NftSetNames(), back.NftSetNames()
		if s.ShardCopies() && (len(names) != 2 || len(all) != 2+c.shards || all[len(all)-1] != CountSetName("s")) {
			t.Errorf("%s: sets %v, read back %v", c.args, names, all)
		}
	}
	// A header of a set with timeouts or counters never has shards: one
	// that says so is not ours.
	if _, ok := ParseHeader(LookupSetName("x"), "ipset hash:ip family inet hashsize 1024 maxelem 1000000 timeout 10 shards 128"); ok {
		t.Error("a timeout set with shard copies was read")
	}
	// The header of an earlier build (no shards) reads as one set.
	old, ok := ParseHeader(LookupSetName("x"), "ipset hash:ip family inet hashsize 1024 maxelem 1000000 slot 3")
	if !ok || old.Sharded() || len(old.NftSetNames()) != 1 {
		t.Errorf("old header: %+v %v", old, ok)
	}
	// Dropped copies (a -j SET rule): one lookup set, no shards word.
	s := createSet(t, "s", "hash:ip", "maxelem", "1000000")
	s.DropShardCopies()
	if s.Sharded() || strings.Contains(s.Header(), "shards") || len(s.NftSetNames()) != 1 {
		t.Errorf("dropped copies: %q %v", s.Header(), s.NftSetNames())
	}
}

// The shards of a plain hash set hold exactly the lookup set's elements,
// each in the shard ShardOf names, and the count set counts them.
func TestShardCopiesElements(t *testing.T) {
	st := &State{}
	for _, c := range []*Command{
		{Op: OpCreate, Args: []string{"s", "hash:ip,port", "maxelem", "300000", "comment"}},
		{Op: OpAdd, Args: []string{"s", "10.0.0.1,tcp:80", "comment", "x"}},
		{Op: OpAdd, Args: []string{"s", "10.0.0.0/28,udp:53"}},
	} {
		if _, err := st.Exec(c); err != nil {
			t.Fatal(err)
		}
	}
	s := st.Sets[0]
	sets := s.NftSets()
	if len(sets) != 2+s.Shards {
		t.Fatalf("%d nftables sets", len(sets))
	}
	look, count := sets[0], sets[len(sets)-1]
	if look.Role != RoleLookup || look.Set.Size != 300000 || !look.Set.Dynamic || count.Role != RoleCount {
		t.Errorf("lookup %+v, count %+v", look.Set, count.Set)
	}
	if n, ok := ParseCount(count.Elems[0].Parts[0].Key); !ok || n != 17 {
		t.Errorf("count %d", n)
	}
	inShards := 0
	for i, sh := range sets[1 : len(sets)-1] {
		if sh.Role != RoleEntries || sh.Set.Name != ShardSetName("s", i) || sh.Set.Size != 0 || sh.Set.Comment != "" {
			t.Errorf("shard %d: %+v", i, sh.Set)
		}
		for _, e := range sh.Elems {
			if s.ShardOf(e.Parts[0].Key) != i {
				t.Errorf("element %x in shard %d", e.Parts[0].Key, i)
			}
			found := false
			for _, l := range look.Elems {
				found = found || (l.ID == e.ID && bytes.Equal(l.Parts[0].Key, e.Parts[0].Key) && l.Parts[0].Comment == e.Parts[0].Comment)
			}
			if !found {
				t.Errorf("element %s of shard %d is not in the lookup set", e.ID, i)
			}
			inShards++
		}
	}
	if inShards != len(look.Elems) || inShards != 17 {
		t.Errorf("%d elements in shards, %d in the lookup set", inShards, len(look.Elems))
	}
}

// swap: shard copies stay with the name, where the set it gets may have
// them.
func TestSwapKeepsShardCopies(t *testing.T) {
	st := &State{}
	for _, c := range []*Command{
		{Op: OpCreate, Args: []string{"big", "hash:ip", "maxelem", "1000000"}},
		{Op: OpCreate, Args: []string{"small", "hash:ip"}},
		{Op: OpCreate, Args: []string{"tmo", "hash:ip", "timeout", "5", "maxelem", "1000000"}},
		{Op: OpCreate, Args: []string{"net", "hash:net", "maxelem", "1000000"}},
		{Op: OpCreate, Args: []string{"net2", "hash:net"}},
		{Op: OpSwap, Args: []string{"big", "small"}},
	} {
		if _, err := st.Exec(c); err != nil {
			t.Fatal(err)
		}
	}
	if big, small := st.Find("big"), st.Find("small"); big.Shards != 128 || small.Shards != 0 || big.MaxElem != 65536 {
		t.Errorf("after swap: big %d shards (maxelem %d), small %d", big.Shards, big.MaxElem, small.Shards)
	}
	if _, err := st.Exec(&Command{Op: OpSwap, Args: []string{"big", "tmo"}}); err != nil {
		t.Fatal(err)
	}
	if big, tmo := st.Find("big"), st.Find("tmo"); big.Shards != 0 || tmo.Shards != 0 {
		t.Errorf("a timeout set got shard copies: big %d, tmo %d", big.Shards, tmo.Shards)
	}
	// net types: the entries sets move with the entries (as before)
	if _, err := st.Exec(&Command{Op: OpSwap, Args: []string{"net", "net2"}}); err != nil {
		t.Fatal(err)
	}
	if net, net2 := st.Find("net"), st.Find("net2"); net.Shards != 0 || net2.Shards != 128 {
		t.Errorf("net %d shards, net2 %d", net.Shards, net2.Shards)
	}
}
