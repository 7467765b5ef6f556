package xdp

import (
	"math/rand"
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
)

// TestClassifierSets: -m set lookups of a hash:net set with a nomatch
// entry, alone (the precomputed first rule of the set's class) and
// among other rules (the vector search); verdicts against a direct
// evaluation of these rules.
func TestClassifierSets(t *testing.T) {
	requireBPF(t)
	classifierSets(t, "xdpt_setdir")
}

// TestClassifierSetsHash: TestClassifierSets with the set's /32s in the
// hash after its table (with them, the table is over budget).
func TestClassifierSetsHash(t *testing.T) {
	requireBPF(t)
	withDirBudget(t, 1)
	classifierSets(t, hashSetName)
}

// classifierSets runs TestClassifierSets with the set's map named form
// (its kind; "" for the trie).
func classifierSets(t *testing.T, form string) {
	s := ipset.NewSet("bl", ipset.LookupType("hash:net"))
	s.MaxElem = 16
	for _, e := range []struct {
		p       string
		nomatch bool
	}{{"198.18.0.0/16", false}, {"198.18.1.0/24", true}, {"198.18.1.7/32", false}, {"203.0.113.9/32", false}} {
		pf := netip.MustParsePrefix(e.p)
		s.Entries = append(s.Entries, &ipset.Entry{Elem: ipset.Elem{{Addr: pf.Addr(), Bits: pf.Bits()}}, Nomatch: e.nomatch})
	}
	// in is the set's answer: the longest entry containing a decides
	in := func(a netip.Addr) bool {
		best, nomatch := -1, false
		for _, e := range s.Entries {
			pf := netip.PrefixFrom(e.Elem[0].Addr, e.Elem[0].Bits)
			if pf.Contains(a) && pf.Bits() > best {
				best, nomatch = pf.Bits(), e.Nomatch
			}
		}
		return best >= 0 && !nomatch
	}
	type rule struct {
		spec  string
		match func(p *pkt) bool
		drop  bool
	}
	srcIn := rule{"-m set --match-set bl src -j DROP", func(p *pkt) bool { return in(p.src) }, true}
	srcOut := rule{"-m set ! --match-set bl src -j DROP", func(p *pkt) bool { return !in(p.src) }, true}
	dstIn := rule{"-m set --match-set bl dst -j ACCEPT", func(p *pkt) bool { return in(p.dst) }, false}
	udpSrc := rule{"-p udp -m set --match-set bl src -j DROP", func(p *pkt) bool { return p.proto == 17 && in(p.src) }, true}
	net15 := rule{"-s 198.18.0.0/15 -j DROP", func(p *pkt) bool { return netip.MustParsePrefix("198.18.0.0/15").Contains(p.src) }, true}
	for i, rs := range [][]rule{{srcIn}, {srcOut}, {dstIn, srcIn}, {udpSrc, net15}, {net15, srcIn}, {dstIn, udpSrc, srcOut}} {
		var specs []string
		for _, r := range rs {
			specs = append(specs, r.spec)
		}
		rules := parseRules(t, compat.IPv4, specs...)
		c, err := CompileSets(rules, nil, []Iface{{Index: 1, Name: "eth0", MAC: testMAC[:]}},
			func(string) *ipset.Set { return s })
		if err != nil || c.Run4 != len(rs) {
			t.Fatalf("case %d: %v, run %d, stop %v", i, err, c.Run4, c.Stop4)
		}
		if c.Single != (len(rs) == 1) {
			t.Fatalf("case %d: single %v", i, c.Single)
		}
		sm, err := newSetMap(s)
		if err != nil {
			t.Fatal(err)
		}
		if info, err := sm.Info(); err != nil || info.Name != form && (form != "" || sm.Type() != ebpf.LPMTrie) {
			t.Fatalf("case %d: set map %v (%v), want %q", i, info, err, form)
		}
		// one lookup of a table decides: the fast program
		prog := "xdptables_classify"
		if len(rs) == 1 && sm.Type() == ebpf.Array {
			prog = "xdptables_fast_set"
			if form == hashSetName {
				prog = "xdptables_fast_split"
			}
		}
		p, err := load(c, make([]uint32, len(c.Rules)), nil, map[string]*ebpf.Map{"bl": sm})
		sm.Close()
		if err != nil {
			t.Fatal(err)
		}
		if p.prog != p.coll.Programs[prog] {
			t.Fatalf("case %d: not %s", i, prog)
		}
		tb := &testbed{c: c, prog: p}
		for _, src := range []string{"198.18.0.1", "198.18.1.5", "198.18.1.7", "198.19.0.1", "203.0.113.9", "203.0.113.8"} {
			for _, dst := range []string{"198.18.1.7", "198.51.100.1", "203.0.113.9"} {
				for _, proto := range []uint8{6, 17} {
					pk := pkt{src: a(src), dst: a(dst), proto: proto, sport: 1, dport: 9, dstMAC: testMAC, iface: "eth0"}
					want := uint32(xdpPass)
					for _, r := range rs {
						if r.match(&pk) {
							if r.drop {
								want = xdpDrop
							}
							break
						}
					}
					if got := tb.run(t, &pk); got != want {
						t.Errorf("case %d %v: %s -> %s proto %d: verdict %d, want %d", i, specs, src, dst, proto, got, want)
					}
				}
			}
		}
		p.Close()
	}
}

// TestClassifierReturnNomatch: a -m set rule with --return-nomatch on a
// net type ends the XDP run (nftables alone evaluates it: it looks up
// the set's nomatch set, which XDP does not mirror), with or without !;
// on other types, which ignore the flag, it is a plain lookup.
func TestClassifierReturnNomatch(t *testing.T) {
	nets := ipset.NewSet("bl", ipset.LookupType("hash:net"))
	ips := ipset.NewSet("ips", ipset.LookupType("hash:ip"))
	src := func(name string) *ipset.Set {
		if name == "ips" {
			return ips
		}
		return nets
	}
	for _, tc := range []struct {
		spec string
		run  int
	}{
		{"-m set --match-set bl src --return-nomatch -j DROP", 1},
		{"-m set ! --match-set bl src --return-nomatch -j ACCEPT", 1},
		{"-m set --match-set ips src --return-nomatch -j DROP", 3},
	} {
		rules := parseRules(t, compat.IPv4, "-s 198.18.0.0/16 -j DROP", tc.spec, "-s 198.19.0.0/16 -j DROP")
		c, err := CompileSets(rules, nil, nil, src)
		if err != nil {
			t.Fatal(err)
		}
		if c.Run4 != tc.run || (tc.run == 1) != (c.Stop4 != nil) || c.Stop4 != nil && (c.Stop4.Pos != 1 || !strings.Contains(c.Stop4.Reason, "return-nomatch")) {
			t.Errorf("%s: run %d stop %v", tc.spec, c.Run4, c.Stop4)
		}
	}
}

// TestClassifierSetsTrie: TestClassifierSets with the set in its LPM
// trie (table over budget).
func TestClassifierSetsTrie(t *testing.T) {
	requireBPF(t)
	withDirBudget(t, 0)
	withTrie(t)
	classifierSets(t, "")
}

// TestClassifierSetUpdates: a hash:net set mirrored as a table, entries
// added and removed in place (as ipset add/del do) while the program
// runs; verdicts of "-m set --match-set bl src -j DROP" against the
// longest-prefix answer after each change. When the table has no room
// for a change, the set's map is rebuilt and the program reloaded, as
// the manager does.
func TestClassifierSetUpdates(t *testing.T) {
	requireBPF(t)
	rng := rand.New(rand.NewSource(9))
	rules := parseRules(t, compat.IPv4, "-m set --match-set bl src -j DROP")
	var sm *ebpf.Map
	var p *program
	defer func() {
		if p != nil {
			p.Close()
			sm.Close()
		}
	}()
	reload := func(ps []PrefixClass) {
		if p != nil {
			p.Close()
			sm.Close()
		}
		s := ipset.NewSet("bl", ipset.LookupType("hash:net"))
		s.MaxElem = 1024
		for _, q := range ps[1:] {
			s.Entries = append(s.Entries, &ipset.Entry{Elem: ipset.Elem{{Addr: q.Prefix.Addr(), Bits: q.Prefix.Bits()}}, Nomatch: q.Class == 0})
		}
		c, err := CompileSets(rules, nil, []Iface{{Index: 1, Name: "eth0", MAC: testMAC[:]}}, func(string) *ipset.Set { return s })
		if err != nil {
			t.Fatal(err)
		}
		if sm, err = newSetMap(s); err != nil {
			t.Fatal(err)
		}
		if sm.Type() != ebpf.Array {
			t.Fatal("not a table")
		}
		if p, err = load(c, make([]uint32, len(c.Rules)), nil, map[string]*ebpf.Map{"bl": sm}); err != nil {
			t.Fatal(err)
		}
		if p.prog != p.coll.Programs["xdptables_fast_set"] {
			t.Fatal("not the fast program")
		}
	}
	reload([]PrefixClass{{}})
	rebuilt := 0
	randomSetChanges(t, rng, 300, func(ps []PrefixClass, q netip.Prefix) bool {
		tab, err := mapTable(sm)
		if err != nil {
			t.Fatal(err)
		}
		err = dirSetUpdate(tab, ps, q)
		tab.close()
		if err == errDirFull {
			rebuilt++
			reload(ps)
			return true
		}
		if err != nil {
			t.Fatal(err)
		}
		return true
	}, func(a4 [4]byte, want uint32) {
		pk := pkt{src: netip.AddrFrom4(a4), dst: a("203.0.113.1"), proto: 17, sport: 1, dport: 9, dstMAC: testMAC, iface: "eth0"}
		exp := uint32(xdpPass)
		if want == 1 {
			exp = xdpDrop
		}
		ret, err := p.prog.Run(&ebpf.RunOptions{Data: pk.frame()})
		if err != nil {
			t.Fatal(err)
		}
		if ret != exp {
			t.Fatalf("%v: verdict %d, want %d", netip.AddrFrom4(a4), ret, exp)
		}
	})
	t.Logf("%d rebuilds", rebuilt)
}

// TestClassifierListSet: a -m set rule on a list:set ends the XDP run
// (nftables alone tries its members: see ipset/doc.go), with or without !.
func TestClassifierListSet(t *testing.T) {
	l := ipset.NewSet("L", ipset.LookupType("list:set"))
	src := func(string) *ipset.Set { return l }
	for _, spec := range []string{"-m set --match-set L src -j DROP", "-m set ! --match-set L src -j ACCEPT"} {
		rules := parseRules(t, compat.IPv4, "-s 198.18.0.0/16 -j DROP", spec, "-s 198.19.0.0/16 -j DROP")
		c, err := CompileSets(rules, nil, nil, src)
		if err != nil {
			t.Fatal(err)
		}
		if c.Run4 != 1 || c.Stop4 == nil || c.Stop4.Pos != 1 || !strings.Contains(c.Stop4.Reason, "list:set") {
			t.Errorf("%s: run %d stop %v", spec, c.Run4, c.Stop4)
		}
	}
}
