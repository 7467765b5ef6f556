package xdp

import (
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
)

// cidrRules makes n rules "-s 198.18.X.Y/32 -j DROP" (all from
// 198.18.0.0/15) ending with the rule the benchmark packet hits.
func cidrRules(t testing.TB, n int) []*compat.Rule {
	specs := make([]string, 0, n)
	for i := 0; i < n-1; i++ {
		specs = append(specs, fmt.Sprintf("-s 198.19.%d.%d/32 -j DROP", i/256, i%256))
	}
	specs = append(specs, "-s 198.18.0.0/24 -j DROP")
	return parseRules(t, compat.IPv4, specs...)
}

var benchPkt = pkt{src: netip.MustParseAddr("198.18.0.7"), dst: netip.MustParseAddr("203.0.113.1"), proto: 17, sport: 1, dport: 9, dstMAC: testMAC}

func benchProg(b *testing.B, prog *ebpf.Program, want uint32) {
	benchPacket(b, prog, benchPkt, want)
}

// benchPacket is benchProg with packet p.
func benchPacket(b *testing.B, prog *ebpf.Program, p pkt, want uint32) {
	frame := p.frame()
	b.ResetTimer()
	ret, d, err := prog.Benchmark(frame, b.N, nil)
	if err != nil {
		b.Fatal(err)
	}
	if ret != want {
		b.Fatalf("verdict %d, want %d", ret, want)
	}
	b.ReportMetric(float64(d.Nanoseconds()), "ns/pkt")
}

func BenchmarkDropAll(b *testing.B) {
	requireBPF(b)
	tb := newTestbed(b, parseRules(b, compat.IPv4, "-j DROP"), nil, "eth0")
	benchProg(b, tb.prog.coll.Programs["xdptables_drop_all"], xdpDrop)
}

func BenchmarkRules(b *testing.B) {
	requireBPF(b)
	for _, n := range []int{1, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			tb := newTestbed(b, cidrRules(b, n), nil, "eth0")
			benchProg(b, tb.prog.prog, xdpDrop)
		})
	}
}

// BenchmarkRulesSpread is BenchmarkRules/10000 with the /32s each in
// a /16 of its own: 20 000 chunks in the source table.
func BenchmarkRulesSpread(b *testing.B) {
	requireBPF(b)
	const n = 10000
	specs := make([]string, 0, n)
	for i := 0; i < n-1; i++ {
		specs = append(specs, fmt.Sprintf("-s %d.%d.7.%d/32 -j DROP", 1+i/256, i%256, i%256))
	}
	specs = append(specs, "-s 198.18.0.0/24 -j DROP")
	tb := newTestbed(b, parseRules(b, compat.IPv4, specs...), nil, "eth0")
	benchProg(b, tb.prog.prog, xdpDrop)
}

// BenchmarkRulesTwoFields is BenchmarkRules with "-p udp" in every rule:
// two vectors, which xdptables_fast_psrc folds into one table.
func BenchmarkRulesTwoFields(b *testing.B) {
	requireBPF(b)
	for _, n := range []int{1, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			specs := make([]string, 0, n)
			for i := 0; i < n-1; i++ {
				specs = append(specs, fmt.Sprintf("-p udp -s 198.19.%d.%d/32 -j DROP", i/256, i%256))
			}
			specs = append(specs, "-p udp -s 198.18.0.0/24 -j DROP")
			tb := newTestbed(b, parseRules(b, compat.IPv4, specs...), nil, "eth0")
			if tb.c.Single {
				b.Fatal("single")
			}
			benchProg(b, tb.prog.prog, xdpDrop)
		})
	}
}

// BenchmarkRulesThreeFields is BenchmarkRules with "-p udp --dport 9"
// in every rule: three fields, which xdptables_fast_ppsrc folds into
// two tables.
func BenchmarkRulesThreeFields(b *testing.B) {
	requireBPF(b)
	for _, n := range []int{1, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			specs := make([]string, 0, n)
			for i := 0; i < n-1; i++ {
				specs = append(specs, fmt.Sprintf("-p udp -s 198.19.%d.%d/32 --dport 9 -j DROP", i/256, i%256))
			}
			specs = append(specs, "-p udp -s 198.18.0.0/24 --dport 9 -j DROP")
			tb := newTestbed(b, parseRules(b, compat.IPv4, specs...), nil, "eth0")
			if tb.prog.prog != tb.prog.coll.Programs["xdptables_fast_ppsrc"] {
				b.Fatal("not the folded program")
			}
			benchProg(b, tb.prog.prog, xdpDrop)
		})
	}
}

// BenchmarkRulesSearch is BenchmarkRules with "-p udp --sport 1 --dport
// 9" in every rule: four vectors to AND, so xdptables_classify's
// bit-vector search runs.
func BenchmarkRulesSearch(b *testing.B) {
	requireBPF(b)
	for _, n := range []int{1, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			specs := make([]string, 0, n)
			for i := 0; i < n-1; i++ {
				specs = append(specs, fmt.Sprintf("-p udp -s 198.19.%d.%d/32 --sport 1 --dport 9 -j DROP", i/256, i%256))
			}
			specs = append(specs, "-p udp -s 198.18.0.0/24 --sport 1 --dport 9 -j DROP")
			tb := newTestbed(b, parseRules(b, compat.IPv4, specs...), nil, "eth0")
			if tb.prog.prog != tb.prog.coll.Programs["xdptables_classify"] {
				b.Fatal("not the general program")
			}
			benchProg(b, tb.prog.prog, xdpDrop)
		})
	}
}

// BenchmarkTrieEntries measures a source trie of a million prefixes
// (the shape a mirrored hash:net set would have) with one DROP rule: the
// LPM trie an address field keeps when its table is over budget.
func BenchmarkTrieEntries(b *testing.B) {
	requireBPF(b)
	withDirBudget(b, 0)
	benchSrcEntries(b, 1_000_000, func(i int) netip.Prefix {
		a := netip.AddrFrom4([4]byte{10 + byte(i>>22), byte(i >> 14), byte(i >> 6), byte(i << 2)})
		return netip.PrefixFrom(a, 30)
	})
}

// BenchmarkTableEntries: the source field as a DIR-16-8-8 table, with a
// million contiguous /30s (their chunks collapse) and with 5000 /32s
// spread over as many /16s (two chunks each, 10 000 chunks), the
// packet's source among them (three lookups, the longest path).
func BenchmarkTableEntries(b *testing.B) {
	requireBPF(b)
	b.Run("1000000x30", func(b *testing.B) {
		benchSrcEntries(b, 1_000_000, func(i int) netip.Prefix {
			a := netip.AddrFrom4([4]byte{10 + byte(i>>22), byte(i >> 14), byte(i >> 6), byte(i << 2)})
			return netip.PrefixFrom(a, 30)
		})
	})
	b.Run("5000x32", func(b *testing.B) {
		benchSrcEntries(b, 5000, func(i int) netip.Prefix {
			if i == 0 { // the packet's source: three levels
				return netip.MustParsePrefix("198.18.0.7/32")
			}
			a := netip.AddrFrom4([4]byte{20 + byte(i/200), byte(i % 200), byte(i), 7})
			return netip.PrefixFrom(a, 32)
		})
	})
}

// benchSrcEntries benchmarks one "-s 198.18.0.0/24 -j DROP" rule with n
// more prefixes pfx(i) of the same class in the source field.
func benchSrcEntries(b *testing.B, n int, pfx func(int) netip.Prefix) {
	rules := parseRules(b, compat.IPv4, "-s 198.18.0.0/24 -j DROP")
	c, err := Compile(rules, nil, []Iface{{Index: 1, Name: "eth0", MAC: testMAC[:]}})
	if err != nil {
		b.Fatal(err)
	}
	var hit uint32
	for _, p := range c.Src4 {
		if p.Prefix.Bits() == 24 {
			hit = p.Class
		}
	}
	for i := 0; i < n; i++ {
		c.Src4 = append(c.Src4, PrefixClass{Prefix: pfx(i), Class: hit})
	}
	p, err := load(c, make([]uint32, len(c.Rules)), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	benchProg(b, p.prog, xdpDrop)
}

// BenchmarkSetEntries: one "-m set --match-set bl src -j DROP" rule on a
// mirrored hash:net set of 1 and 1 000 000 entries, as a table, and of
// 1 000 000 entries in an LPM trie (the mirror of a set whose table is
// over budget, or with timeouts or ports); and sets whose table is over
// budget, split (sethash.go): a /24 and 999 999 random /32s, the
// packet's source in the /24 (-x32: the hash's two buckets, the table,
// then the bitmap) or one of the /32s (-x32-hit: the hash); a million
// /24s spread over every /16 (-x24: the hash, the table, the bitmap).
func BenchmarkSetEntries(b *testing.B) {
	requireBPF(b)
	for _, name := range []string{"1", "1000000", "1000000-trie", "1000000-x32", "1000000-x32-hit", "1000000-x24"} {
		n := 1
		if name != "1" {
			n = 1_000_000
		}
		b.Run(name, func(b *testing.B) {
			if strings.HasSuffix(name, "-trie") {
				withDirBudget(b, 0)
				withTrie(b)
			}
			s := ipset.NewSet("bl", ipset.LookupType("hash:net"))
			s.MaxElem = uint32(n)
			first := ipset.Elem{{Addr: netip.MustParseAddr("198.18.0.0"), Bits: 24}}
			if strings.HasSuffix(name, "-hit") {
				first = ipset.Elem{{Addr: netip.MustParseAddr("198.18.0.7"), Bits: 32}}
			}
			s.Entries = append(s.Entries, &ipset.Entry{Elem: first})
			rng := rand.New(rand.NewSource(1))
			for i := 1; i < n; i++ {
				a := netip.AddrFrom4([4]byte{10 + byte(i>>22), byte(i >> 14), byte(i >> 6), byte(i << 2)})
				bits := 30
				switch {
				case strings.Contains(name, "-x32"):
					// (never 198.18.0.0/16)
					a, bits = netip.AddrFrom4([4]byte{byte(1 + rng.Intn(190)), byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256))}), 32
				case strings.Contains(name, "-x24"):
					// distinct /24s (an odd multiplier permutes
					// them), but 198.18.0.0/24
					x := uint32(i) * 2654435761 % (1 << 24)
					if x == 198<<16|18<<8 {
						x = 0
					}
					a, bits = netip.AddrFrom4([4]byte{byte(x >> 16), byte(x >> 8), byte(x), 0}), 24
				}
				s.Entries = append(s.Entries, &ipset.Entry{Elem: ipset.Elem{{Addr: a, Bits: bits}}})
			}
			rules := parseRules(b, compat.IPv4, "-m set --match-set bl src -j DROP")
			c, err := CompileSets(rules, nil, []Iface{{Index: 1, Name: "eth0", MAC: testMAC[:]}},
				func(string) *ipset.Set { return s })
			if err != nil || c.Run4 != 1 {
				b.Fatal(err, c.Stop4)
			}
			sm, err := newSetMap(s)
			if err != nil {
				b.Fatal(err)
			}
			defer sm.Close()
			if info, err := sm.Info(); err != nil || strings.Contains(name, "-x") && info.Name != hashSetName {
				b.Fatal("not a table with a hash", err)
			}
			p, err := load(c, make([]uint32, len(c.Rules)), nil, map[string]*ebpf.Map{"bl": sm})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			benchProg(b, p.prog, xdpDrop)
		})
	}
}

// BenchmarkPortRule: "-p udp --dport 9 -j DROP", the rule the traffic
// benchmark compares with xdp-filter's port mode.
func BenchmarkPortRule(b *testing.B) {
	requireBPF(b)
	tb := newTestbed(b, parseRules(b, compat.IPv4, "-p udp --dport 9 -j DROP"), nil, "eth0")
	benchProg(b, tb.prog.prog, xdpDrop)
}

var benchPkt6 = pkt{src: netip.MustParseAddr("2001:db8::7"), dst: netip.MustParseAddr("2001:db8:ffff::1"), proto: 17, sport: 1, dport: 9, dstMAC: testMAC}

// BenchmarkRules6 is BenchmarkRules for ip6tables: n-1 rules "-s
// 2001:db8:1::X/128 -j DROP", then "-s 2001:db8::/48 -j DROP", which
// the packet (from 2001:db8::7) hits.
func BenchmarkRules6(b *testing.B) {
	requireBPF(b)
	for _, n := range []int{1, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			specs := make([]string, 0, n)
			for i := 0; i < n-1; i++ {
				specs = append(specs, fmt.Sprintf("-s 2001:db8:1::%x/128 -j DROP", i))
			}
			specs = append(specs, "-s 2001:db8::/48 -j DROP")
			tb := newTestbed(b, nil, parseRules(b, compat.IPv6, specs...), "eth0")
			benchPacket(b, tb.prog.prog, benchPkt6, xdpDrop)
		})
	}
}

// BenchmarkSetEntries6: one "-m set --match-set bl src -j DROP" rule
// of ip6tables on a hash:net set of 2001:db8::/48 (the packet's
// source is in it) and 999 999 random /128s (-net), and on a hash:ip
// set of a million random addresses with the packet's among them (-ip).
func BenchmarkSetEntries6(b *testing.B) {
	requireBPF(b)
	for _, typ := range []string{"net", "ip"} {
		b.Run("1000000-"+typ, func(b *testing.B) {
			const n = 1_000_000
			s := ipset.NewSet("bl", ipset.LookupType("hash:"+typ))
			s.Family, s.MaxElem = ipset.Inet6, n
			first := ipset.Elem{{Addr: netip.MustParseAddr("2001:db8::"), Bits: 48}}
			if typ == "ip" {
				first = ipset.Elem{{Addr: benchPkt6.src, Bits: 128}}
			}
			s.Entries = append(s.Entries, &ipset.Entry{Elem: first})
			rng := rand.New(rand.NewSource(1))
			for i := 1; i < n; i++ {
				var a [16]byte
				a[0], a[1], a[2], a[3], a[4] = 0x20, 0x01, 0x0d, 0xb8, 0x80|byte(rng.Intn(128))
				rng.Read(a[5:])
				s.Entries = append(s.Entries, &ipset.Entry{Elem: ipset.Elem{{Addr: netip.AddrFrom16(a), Bits: 128}}})
			}
			benchSet(b, s, compat.IPv6, benchPkt6)
		})
	}
}

// BenchmarkSetTimeout: "-m set --match-set bl src -j DROP" on a hash:ip
// set with timeouts of a million entries, the packet's source among
// them: IPv4 (4) and IPv6 (6).
func BenchmarkSetTimeout(b *testing.B) {
	requireBPF(b)
	for _, fam := range []string{"4", "6"} {
		b.Run("1000000-"+fam, func(b *testing.B) {
			const n = 1_000_000
			s := ipset.NewSet("bl", ipset.LookupType("hash:ip"))
			s.MaxElem, s.HasTimeout, s.Timeout = n, true, 3600
			p, cf := benchPkt, compat.IPv4
			if fam == "6" {
				s.Family, p, cf = ipset.Inet6, benchPkt6, compat.IPv6
			}
			s.Entries = append(s.Entries, &ipset.Entry{Elem: ipset.Elem{{Addr: p.src, Bits: p.src.BitLen()}}, Timeout: 3600})
			rng := rand.New(rand.NewSource(1))
			for i := 1; i < n; i++ {
				var a netip.Addr
				if fam == "4" {
					a = netip.AddrFrom4([4]byte{byte(1 + rng.Intn(190)), byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256))})
				} else {
					var x [16]byte
					x[0], x[1], x[2], x[3], x[4] = 0x20, 0x01, 0x0d, 0xb8, 0x80|byte(rng.Intn(128))
					rng.Read(x[5:])
					a = netip.AddrFrom16(x)
				}
				s.Entries = append(s.Entries, &ipset.Entry{Elem: ipset.Elem{{Addr: a, Bits: a.BitLen()}}, Timeout: 3600})
			}
			benchSet(b, s, cf, p)
		})
	}
}

// benchSet benchmarks "-m set --match-set bl src -j DROP" of family fam
// on set s with packet p, which is dropped.
func benchSet(b *testing.B, s *ipset.Set, fam compat.Family, p pkt) {
	c := compileSetRules(b, fam, s, "-m set --match-set bl src -j DROP")
	sm, err := newSetMap(s)
	if err != nil {
		b.Fatal(err)
	}
	defer sm.Close()
	prog, err := load(c, make([]uint32, len(c.Rules)), nil, map[string]*ebpf.Map{"bl": sm})
	if err != nil {
		b.Fatal(err)
	}
	defer prog.Close()
	benchPacket(b, prog.prog, p, xdpDrop)
}
