package xdp

import (
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
)

// setRule is a rule of the set tests and its direct evaluation.
type setRule struct {
	spec  string
	match func(p *pkt) bool
	drop  bool
}

// setVerdict is the verdict of rules rs on pk: the first that matches
// decides.
func setVerdict(rs []setRule, pk *pkt) uint32 {
	for _, r := range rs {
		if r.match(pk) {
			if r.drop {
				return xdpDrop
			}
			break
		}
	}
	return xdpPass
}

// compileSetRules compiles rules specs of family fam, with s for every
// set they name, for one interface; every rule must run in XDP.
func compileSetRules(t testing.TB, fam compat.Family, s *ipset.Set, specs ...string) *Classifier {
	t.Helper()
	rules := parseRules(t, fam, specs...)
	var v4, v6 []*compat.Rule
	if fam == compat.IPv6 {
		v6 = rules
	} else {
		v4 = rules
	}
	c, err := CompileSets(v4, v6, []Iface{{Index: 1, Name: "eth0", MAC: testMAC[:]}}, func(string) *ipset.Set { return s })
	if err != nil || c.Run4+c.Run6 != len(specs) {
		t.Fatalf("%v: %v, run %d+%d, stop %v %v", specs, err, c.Run4, c.Run6, c.Stop4, c.Stop6)
	}
	return c
}

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

// TestClassifierSetsLen: TestClassifierSets with the set as a
// per-length table: IPv4 with timeouts (an hour), IPv6 (the same
// addresses in 2001:db8::/96) without and with timeouts.
func TestClassifierSetsLen(t *testing.T) {
	requireBPF(t)
	for _, form := range []string{"timeout", "6", "6-timeout"} {
		classifierSetsOf(t, setLenName, form)
	}
}

// TestClassifierSetsTrie6: TestClassifierSetsLen with the sets in
// their LPM tries.
func TestClassifierSetsTrie6(t *testing.T) {
	requireBPF(t)
	withTrie(t)
	for _, form := range []string{"timeout", "6", "6-timeout"} {
		classifierSetsOf(t, "", form)
	}
}

// classifierSets runs TestClassifierSets with the set's map named form
// (its kind; "" for the trie).
func classifierSets(t *testing.T, form string) {
	classifierSetsOf(t, form, "")
}

// classifierSetsOf is classifierSets of an IPv6 set (the addresses in
// 2001:db8::/96) when set has "6", of a set with timeouts when it has
// "timeout".
func classifierSetsOf(t *testing.T, form, set string) {
	v6, timeout := strings.Contains(set, "6"), strings.Contains(set, "timeout")
	fam := compat.IPv4
	// conv is IPv4 address or prefix x as the test's family has it
	conv := func(x string) string {
		if !v6 {
			return x
		}
		if strings.Contains(x, "/") {
			return in6(netip.MustParsePrefix(x)).String()
		}
		return in6(netip.PrefixFrom(a(x), 32)).Addr().String()
	}
	s := ipset.NewSet("bl", ipset.LookupType("hash:net"))
	s.MaxElem = 16
	if v6 {
		s.Family, fam = ipset.Inet6, compat.IPv6
	}
	s.HasTimeout = timeout
	for _, e := range []struct {
		p       string
		nomatch bool
	}{{"198.18.0.0/16", false}, {"198.18.1.0/24", true}, {"198.18.1.7/32", false}, {"203.0.113.9/32", false}} {
		pf := netip.MustParsePrefix(conv(e.p))
		en := &ipset.Entry{Elem: ipset.Elem{{Addr: pf.Addr(), Bits: pf.Bits()}}, Nomatch: e.nomatch}
		if timeout {
			en.Timeout = 3600
		}
		s.Entries = append(s.Entries, en)
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
	srcIn := setRule{"-m set --match-set bl src -j DROP", func(p *pkt) bool { return in(p.src) }, true}
	srcOut := setRule{"-m set ! --match-set bl src -j DROP", func(p *pkt) bool { return !in(p.src) }, true}
	dstIn := setRule{"-m set --match-set bl dst -j ACCEPT", func(p *pkt) bool { return in(p.dst) }, false}
	udpSrc := setRule{"-p udp -m set --match-set bl src -j DROP", func(p *pkt) bool { return p.proto == 17 && in(p.src) }, true}
	net15 := setRule{"-s " + conv("198.18.0.0/15") + " -j DROP", func(p *pkt) bool { return netip.MustParsePrefix(conv("198.18.0.0/15")).Contains(p.src) }, true}
	for i, rs := range [][]setRule{{srcIn}, {srcOut}, {dstIn, srcIn}, {udpSrc, net15}, {net15, srcIn}, {dstIn, udpSrc, srcOut}} {
		var specs []string
		for _, r := range rs {
			specs = append(specs, r.spec)
		}
		c := compileSetRules(t, fam, s, specs...)
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
			if form == setLenName {
				prog = map[bool]string{false: "xdptables_fast_lenset", true: "xdptables_fast_lenset6"}[v6]
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
					pk := pkt{src: a(conv(src)), dst: a(conv(dst)), proto: proto, sport: 1, dport: 9, dstMAC: testMAC, iface: "eth0"}
					if got, want := tb.run(t, &pk), setVerdict(rs, &pk); got != want {
						t.Errorf("%s case %d %v: %s -> %s proto %d: verdict %d, want %d", set, i, specs, src, dst, proto, got, want)
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
	setUpdates(t, 9, "dir")
}

// TestClassifierLenSetUpdates is TestClassifierSetUpdates with the set
// as a per-length table (lenhash.go): with timeouts (an hour: the
// entries' values carry their expiry), IPv4 and IPv6 (the same prefixes
// in 2001:db8::/96), changed by lenSetUpdate; a change of a length
// the table has no probe for rebuilds it.
func TestClassifierLenSetUpdates(t *testing.T) {
	requireBPF(t)
	setUpdates(t, 10, "len4")
	setUpdates(t, 11, "len6")
}

// in6 is IPv4 prefix p within 2001:db8::/96.
func in6(p netip.Prefix) netip.Prefix {
	b := netip.MustParseAddr("2001:db8::").As16()
	a4 := p.Addr().As4()
	copy(b[12:], a4[:])
	return netip.PrefixFrom(netip.AddrFrom16(b), 96+p.Bits())
}

func setUpdates(t *testing.T, seed int64, form string) {
	rng := rand.New(rand.NewSource(seed))
	v6 := form == "len6"
	fam := compat.IPv4
	if v6 {
		fam = compat.IPv6
	}
	var sm *ebpf.Map
	var p *program
	var s *ipset.Set
	defer func() {
		if p != nil {
			p.Close()
			sm.Close()
		}
	}()
	entry := func(q netip.Prefix, nomatch bool) *ipset.Entry {
		if v6 {
			q = in6(q)
		}
		en := &ipset.Entry{Elem: ipset.Elem{{Addr: q.Addr(), Bits: q.Bits()}}, Nomatch: nomatch}
		if form != "dir" {
			en.Timeout = 3600
		}
		return en
	}
	tries := 0
	reload := func(ps []PrefixClass) {
		if p != nil {
			p.Close()
			sm.Close()
		}
		s = ipset.NewSet("bl", ipset.LookupType("hash:net"))
		s.MaxElem = 1024
		if v6 {
			s.Family = ipset.Inet6
		}
		s.HasTimeout = form != "dir"
		for _, q := range ps[1:] {
			s.Entries = append(s.Entries, entry(q.Prefix, q.Class == 0))
		}
		c := compileSetRules(t, fam, s, "-m set --match-set bl src -j DROP")
		var err error
		if sm, err = newSetMap(s); err != nil {
			t.Fatal(err)
		}
		pfx := make([]netip.Prefix, len(ps))
		for i, q := range ps {
			pfx[i] = q.Prefix
		}
		// (a set of more lengths than the program probes: its trie)
		_, fits := prefixLens(pfx, maxLens)
		if (sm.Type() == ebpf.Array) != (form == "dir" || fits) {
			t.Fatalf("%s: map %v for %d prefixes", form, sm.Type(), len(ps))
		}
		if p, err = load(c, make([]uint32, len(c.Rules)), nil, map[string]*ebpf.Map{"bl": sm}); err != nil {
			t.Fatal(err)
		}
		prog := map[string]string{"dir": "xdptables_fast_set", "len4": "xdptables_fast_lenset", "len6": "xdptables_fast_lenset6"}[form]
		if sm.Type() != ebpf.Array {
			prog = "xdptables_classify"
			tries++
		}
		if p.prog != p.coll.Programs[prog] {
			t.Fatalf("not %s", prog)
		}
	}
	reload([]PrefixClass{{}})
	rebuilt := 0
	randomSetChanges(t, rng, 300, func(ps []PrefixClass, q netip.Prefix) bool {
		// the entry of q after the change, or its deletion
		o := setOp{del: true, en: entry(q, false)}
		for _, x := range ps {
			if x.Prefix == q {
				o = setOp{en: entry(q, x.Class == 0)}
			}
		}
		var err error
		switch {
		case sm.Type() != ebpf.Array:
			// the trie, as SetChanged changes it
			k, v := entryKV(s, o.en, ipset.Monotime())
			if o.del {
				err = sm.Delete(k)
			} else {
				err = sm.Put(k, v)
			}
			pfx := make([]netip.Prefix, len(ps))
			for i, q := range ps {
				pfx[i] = q.Prefix
			}
			if _, fits := prefixLens(pfx, maxLens); err == nil && fits {
				// (a table again)
				err = errDirFull
			}
		case form == "dir":
			tab, err2 := mapTable(sm)
			if err2 != nil {
				t.Fatal(err2)
			}
			err = dirSetUpdate(tab, ps, q)
			tab.close()
		default:
			tab, err2 := mapTable(sm)
			if err2 != nil {
				t.Fatal(err2)
			}
			var l lenSet
			if l, err = lenSetOf(sm, tab); err == nil && !lenSetUpdate(tab, l, s, ipset.Monotime(), []setOp{o}) {
				err = errDirFull
			}
			tab.close()
		}
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
		src := netip.AddrFrom4(a4)
		dst := a("203.0.113.1")
		if v6 {
			src, dst = in6(netip.PrefixFrom(src, 32)).Addr(), a("2001:db8:ffff::1")
		}
		pk := pkt{src: src, dst: dst, proto: 17, sport: 1, dport: 9, dstMAC: testMAC, iface: "eth0"}
		exp := uint32(xdpPass)
		if want == 1 {
			exp = xdpDrop
		}
		ret, err := p.prog.Run(&ebpf.RunOptions{Data: pk.frame()})
		if err != nil {
			t.Fatal(err)
		}
		if ret != exp {
			t.Fatalf("%s %v: verdict %d, want %d", form, src, ret, exp)
		}
	})
	t.Logf("%s: %d rebuilds, %d tries", form, rebuilt, tries)
}

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

// TestClassifierPortSets: -m set lookups of hash:ip,port and
// hash:net,port sets (a nomatch entry in the latter), IPv4 and IPv6 (the
// same addresses in 2001:db8::/96), as per-length tables and as tries,
// alone and among other rules; verdicts against a direct evaluation.
func TestClassifierPortSets(t *testing.T) {
	requireBPF(t)
	for _, trie := range []bool{false, true} {
		for _, typ := range []string{"hash:ip,port", "hash:net,port"} {
			for _, v6 := range []bool{false, true} {
				portSets(t, typ, v6, trie)
			}
		}
	}
}

func portSets(t *testing.T, typ string, v6, trie bool) {
	if trie {
		withTrie(t)
		defer func() { splitSets, lenSets = true, true }()
	}
	conv := func(x string) netip.Prefix {
		p := netip.MustParsePrefix(x)
		if v6 {
			p = in6(p)
		}
		return p
	}
	s := ipset.NewSet("ps", ipset.LookupType(typ))
	fam := compat.IPv4
	if v6 {
		s.Family, fam = ipset.Inet6, compat.IPv6
	}
	type ent struct {
		p       string
		proto   uint8
		port    uint16
		nomatch bool
	}
	ents := []ent{{"198.18.1.7/32", 6, 22, false}, {"198.18.1.7/32", 17, 53, false}, {"203.0.113.9/32", 132, 80, false}}
	if typ == "hash:net,port" {
		ents = append(ents, ent{"198.18.0.0/16", 6, 22, false}, ent{"198.18.1.0/24", 6, 22, true}, ent{"198.18.1.0/25", 17, 53, false})
	}
	for _, e := range ents {
		p := conv(e.p)
		s.Entries = append(s.Entries, &ipset.Entry{Elem: ipset.Elem{{Addr: p.Addr(), Bits: p.Bits()}, {Proto: e.proto, Port: e.port}}, Nomatch: e.nomatch})
	}
	// in is the set's answer for address x and the packet's protocol
	// and port: the longest entry of that protocol and port holding x
	in := func(x netip.Addr, pk *pkt, dst bool) bool {
		port := pk.sport
		if dst {
			port = pk.dport
		}
		best, nomatch := -1, false
		for _, e := range ents {
			if p := conv(e.p); p.Contains(x) && e.proto == pk.proto && e.port == port && p.Bits() > best {
				best, nomatch = p.Bits(), e.nomatch
			}
		}
		return best >= 0 && !nomatch
	}
	srcDst := setRule{"-m set --match-set ps src,dst -j DROP", func(p *pkt) bool { return in(p.src, p, true) }, true}
	notSrcSrc := setRule{"-m set ! --match-set ps src,src -j DROP", func(p *pkt) bool { return !in(p.src, p, false) }, true}
	dstDst := setRule{"-m set --match-set ps dst,dst -j ACCEPT", func(p *pkt) bool { return in(p.dst, p, true) }, false}
	tcp := setRule{"-p tcp -m set --match-set ps src,dst -j DROP", func(p *pkt) bool { return p.proto == 6 && in(p.src, p, true) }, true}
	for i, rs := range [][]setRule{{srcDst}, {notSrcSrc}, {dstDst, srcDst}, {tcp, notSrcSrc}} {
		var specs []string
		for _, r := range rs {
			specs = append(specs, r.spec)
		}
		c := compileSetRules(t, fam, s, specs...)
		sm, err := newSetMap(s)
		if err != nil {
			t.Fatal(err)
		}
		if info, err := sm.Info(); err != nil || (info.Name == setLenName) == trie {
			t.Fatalf("%s case %d: set map %v (%v), trie %v", typ, i, info, err, trie)
		}
		p, err := load(c, make([]uint32, len(c.Rules)), nil, map[string]*ebpf.Map{"ps": sm})
		sm.Close()
		if err != nil {
			t.Fatal(err)
		}
		tb := &testbed{c: c, prog: p}
		for _, src := range []string{"198.18.0.1", "198.18.1.5", "198.18.1.7", "198.18.1.200", "203.0.113.9"} {
			for _, dst := range []string{"198.18.1.7", "203.0.113.9"} {
				for _, proto := range []uint8{6, 17, 132, 1} {
					for _, ports := range [][2]uint16{{22, 53}, {53, 22}, {80, 80}, {1, 22}} {
						pk := pkt{src: conv(src + "/32").Addr(), dst: conv(dst + "/32").Addr(), proto: proto,
							sport: ports[0], dport: ports[1], dstMAC: testMAC, iface: "eth0"}
						if got, want := tb.run(t, &pk), setVerdict(rs, &pk); got != want {
							t.Errorf("%s v6 %v trie %v case %d %v: %s -> %s proto %d ports %v: verdict %d, want %d",
								typ, v6, trie, i, specs, src, dst, proto, ports, got, want)
						}
					}
				}
			}
		}
		p.Close()
	}
}

// TestClassifierSetExpiry: entries of sets with timeouts stop matching
// in XDP before the kernel's elements expire, by expiryMargin plus at
// most one unit of the tables' expiries (the trie's are exact to the
// ns): an entry listed with 4 s left still matches 1.4 s later and no
// longer 2.1 s later; one listed with 1 s left (its last second) does
// not match; one without a timeout (timeout 0) matches throughout. IPv4
// and IPv6, per-length tables and tries.
func TestClassifierSetExpiry(t *testing.T) {
	requireBPF(t)
	type bed struct {
		name     string
		prog     *program
		a4, a1   netip.Addr // the entries of 4 s and of 1 s
		forever  netip.Addr
		dst      netip.Addr
		wantProg string
	}
	var beds []bed
	// (the entries are listed after start, before built)
	start := time.Now()
	for _, trie := range []bool{false, true} {
		for _, v6 := range []bool{false, true} {
			s := ipset.NewSet("tl", ipset.LookupType("hash:ip"))
			s.HasTimeout, s.Timeout = true, 600
			fam, conv := compat.IPv4, func(x string) netip.Addr { return a(x) }
			if v6 {
				s.Family, fam = ipset.Inet6, compat.IPv6
				conv = func(x string) netip.Addr { return in6(netip.PrefixFrom(a(x), 32)).Addr() }
			}
			b := bed{name: fmt.Sprintf("v6 %v trie %v", v6, trie), a4: conv("198.18.0.4"), a1: conv("198.18.0.1"),
				forever: conv("198.18.0.9"), dst: conv("203.0.113.1"), wantProg: map[bool]string{false: "xdptables_fast_lenset", true: "xdptables_fast_lenset6"}[v6]}
			for _, e := range []struct {
				a       netip.Addr
				timeout uint32
			}{{b.a4, 4}, {b.a1, 1}, {b.forever, 0}} {
				s.Entries = append(s.Entries, &ipset.Entry{Elem: ipset.Elem{{Addr: e.a, Bits: e.a.BitLen()}}, Timeout: e.timeout})
			}
			c := compileSetRules(t, fam, s, "-m set --match-set tl src -j DROP")
			if trie {
				lenSets = false
				b.wantProg = "xdptables_classify"
			}
			sm, err := newSetMap(s)
			lenSets = true
			if err != nil {
				t.Fatal(err)
			}
			b.prog, err = load(c, make([]uint32, len(c.Rules)), nil, map[string]*ebpf.Map{"tl": sm})
			sm.Close()
			if err != nil {
				t.Fatal(err)
			}
			defer b.prog.Close()
			if b.prog.prog != b.prog.coll.Programs[b.wantProg] {
				t.Fatalf("%s: not %s", b.name, b.wantProg)
			}
			beds = append(beds, b)
		}
	}
	built := time.Now()
	check := func(when string, want4 uint32) {
		for _, b := range beds {
			for _, c := range []struct {
				src  netip.Addr
				want uint32
			}{{b.a4, want4}, {b.a1, xdpPass}, {b.forever, xdpDrop}} {
				pk := pkt{src: c.src, dst: b.dst, proto: 17, sport: 1, dport: 9, dstMAC: testMAC}
				ret, err := b.prog.prog.Run(&ebpf.RunOptions{Data: pk.frame()})
				if err != nil {
					t.Fatal(err)
				}
				if ret != c.want {
					t.Errorf("%s, %s (%v): %v: verdict %d, want %d", b.name, when, time.Since(start), c.src, ret, c.want)
				}
			}
		}
	}
	// the 4 s entries expire in XDP 1.585-1.853 s after they were listed
	check("at once", xdpDrop)
	time.Sleep(time.Second - time.Since(start))
	if time.Since(start) < 1500*time.Millisecond {
		check("1 s later", xdpDrop)
	} else {
		t.Logf("too slow to look at 1 s: %v", time.Since(start))
	}
	time.Sleep(1900*time.Millisecond - time.Since(built))
	check("1.9 s later", xdpPass)
}

// TestExpiryCountsFromListing: an entry's expiry counts from when its
// set was listed (ipset.Set.ReadAt), not from when the mirror is
// written, so that a slow build makes it earlier, never later; a set
// without a listing time counts from now.
func TestExpiryCountsFromListing(t *testing.T) {
	en := &ipset.Entry{Timeout: 10}
	listed := ipset.Monotime() - 5*time.Second
	s := &ipset.Set{HasTimeout: true, ReadAt: listed}
	if got, want := expiry(en, readAt(s)), uint64(listed+10*time.Second-expiryMargin); got != want {
		t.Errorf("expiry of a set listed 5 s ago: %d, want %d", got, want)
	}
	before := ipset.Monotime()
	s.ReadAt = 0
	got := time.Duration(expiry(en, readAt(s)))
	if lo, hi := before+10*time.Second-expiryMargin, ipset.Monotime()+10*time.Second-expiryMargin; got < lo || got > hi {
		t.Errorf("expiry of a set without a listing time: %v, want within [%v, %v]", got, lo, hi)
	}
}

// TestMirrorableMasks: a set whose addresses a bitmask (or a hash:ip,port
// netmask) masks is not mirrored: a range added to it keeps addresses
// unmasked, which no prefix of the masked packet address stands for.
func TestMirrorableMasks(t *testing.T) {
	for _, tc := range []struct {
		typ, opt, val string
		ok            bool
	}{
		{"hash:ip", "", "", true},
		{"hash:ip", "netmask", "24", true},
		{"hash:ip", "bitmask", "255.255.0.255", false},
		{"hash:ip,port", "netmask", "24", false},
		{"hash:ip,port", "bitmask", "255.255.255.0", false},
	} {
		st := &ipset.State{}
		line := []string{"create", "s", tc.typ}
		if tc.opt != "" {
			line = append(line, tc.opt, tc.val)
		}
		c, perr := ipset.ParseArgs(line)
		if perr != nil {
			t.Fatalf("%v: %v", line, perr)
		}
		if _, err := st.Exec(c); err != nil {
			t.Fatalf("%v: %v", line, err)
		}
		if err := Mirrorable(st.Find("s")); (err == nil) != tc.ok {
			t.Errorf("%v: Mirrorable %v, want ok %v", line, err, tc.ok)
		}
	}
}

// TestMirrorableWildcard: a hash:net,iface with wildcard entries (a
// range of interface names per entry) is left to nftables, with a
// reason that names the set.
func TestMirrorableWildcard(t *testing.T) {
	st := &ipset.State{}
	for _, line := range [][]string{
		{"create", "w", "hash:net,iface"},
		{"add", "w", "198.51.100.0/24,eth", "wildcard"},
	} {
		c, perr := ipset.ParseArgs(line)
		if perr != nil {
			t.Fatalf("%v: %v", line, perr)
		}
		if _, err := st.Exec(c); err != nil {
			t.Fatalf("%v: %v", line, err)
		}
	}
	if err := Mirrorable(st.Find("w")); err == nil || !strings.Contains(err.Error(), "set w ") {
		t.Errorf("Mirrorable: %v, want a refusal naming set w", err)
	}
}
