package xdp

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
)

// strideBits are prefix lengths at and around the DIR-16-8-8 strides.
// (/0 is in every compiled field; as a rule, -s 0.0.0.0/0 tests
// nothing)
var strideBits = []int{1, 8, 15, 16, 17, 22, 23, 24, 25, 30, 31, 32}

// TestClassifierFastPrograms: runs decided by one address field (-s or
// -d, negated or not) load xdptables_fast_src/_dst when the IPv4 side is
// a table, and xdptables_classify when it keeps its trie (over budget);
// verdicts and counters against the reference evaluator, with prefixes
// of every length 1-32 (and the /0 of every field) overlapping at the
// strides, addresses at their
// edges, IPv6 rules beside them or not, and the frames the fast
// programs must leave alone or pass (options, bad checksums, fragments,
// truncation, other hosts, broadcast and multicast, other EtherTypes).
func TestClassifierFastPrograms(t *testing.T) {
	requireBPF(t)
	for _, budget := range []int{dirFieldBudget, 0} {
		t.Run(fmt.Sprintf("budget%d", budget), func(t *testing.T) {
			withDirBudget(t, budget)
			rng := rand.New(rand.NewSource(int64(21 + budget)))
			tables := 0
			for round := 0; round < 24; round++ {
				tables += fastRound(t, rng, round)
			}
			// both programs ran: tables within the budget, tries over it
			if (budget > 0 && tables != 24) || (budget == 0 && (tables == 0 || tables == 24)) {
				t.Fatalf("%d of 24 runs had a table", tables)
			}
			// ip6tables runs: tables of up to 8 lengths (4 with the
			// budget of 0), tries beyond
			if budget == 0 {
				withFieldLens(t, 4)
			}
			tables = 0
			for round := 0; round < 12; round++ {
				tables += fastRound6(t, rng, round)
			}
			if tables == 0 || budget == 0 && tables == 12 {
				t.Fatalf("%d of 12 IPv6 runs had a table", tables)
			}
		})
	}
}

// fastRound6 is fastRound for a run of ip6tables rules alone:
// xdptables_fast_src6/_dst6, whose field is a table (tables is 1) or a
// trie (more than fieldLens prefix lengths); IPv4 frames pass.
func fastRound6(t *testing.T, rng *rand.Rand, round int) (tables int) {
	field := []string{"-s", "-d"}[round%2]
	size := []int{1, 3, 40, 300, 3000, 9}[round/2%6]
	bases := []netip.Addr{a("2001:db8::"), a("2001:db8::7"), a("2001:db8:1::ffff"), a("2001:db8:0:1::"), a("::"), a("2000::1")}
	var pfx []netip.Prefix
	var s6 []string
	for i := 0; i < size; i++ {
		base := bases[rng.Intn(len(bases))]
		if rng.Intn(2) == 0 {
			b := base.As16()
			b[14], b[15] = byte(rng.Intn(256)), byte(rng.Intn(256))
			base = netip.AddrFrom16(b)
		}
		p, _ := base.Prefix([]int{128, 127, 120, 64, 48, 33, 32, 1, 100, 16}[rng.Intn(3+round%8)])
		pfx = append(pfx, p)
		neg := []string{"", "", "", "! "}[rng.Intn(4)]
		s6 = append(s6, fmt.Sprintf("%s%s %s -j %s", neg, field, p, []string{"DROP", "DROP", "ACCEPT"}[rng.Intn(3)]))
	}
	r6 := parseRules(t, compat.IPv6, s6...)
	tb := newTestbed(t, nil, r6, "eth0")
	want := map[string]string{"-s": "xdptables_fast_src6", "-d": "xdptables_fast_dst6"}[field]
	if !tb.c.Single || tb.c.Stop6 != nil || tb.prog.prog != tb.prog.coll.Programs[want] {
		t.Fatalf("round %d: single %v, stop %v, not %s", round, tb.c.Single, tb.c.Stop6, want)
	}
	f := map[string]string{"-s": "src6", "-d": "dst6"}[field]
	if tb.prog.coll.Maps[".data."+f+"_tab"].ValueSize() > 8 {
		tables = 1
	}
	counted := counts{}
	for k, ad := range edges(pfx) {
		p := randomPkt(rng, compat.IPv6)
		if field == "-s" {
			p.src = ad
		} else {
			p.dst = ad
		}
		exp := expect(r6, &p)
		if p.src.IsMulticast() || p.dst.IsLoopback() || p.src.IsLoopback() || p.dst.IsMulticast() {
			// (v6_ok leaves what ipv6_rcv drops to the kernel)
			exp = xdpPass
		}
		switch k % 4 {
		case 1:
			p.truncate = 1 + rng.Intn(8)
			exp = xdpPass
		case 2:
			p.dstMAC = [6]byte{0x02, 0, 0, 0, 0, 9} // another host
			exp = xdpPass
		case 3:
			p.dstMAC = [6]byte{0x33, 0x33, 0, 0, 0, 1}
		}
		got := tb.run(t, &p)
		if got != exp {
			t.Fatalf("round %d: rules\n%s\npacket %+v: verdict %d, want %d (rule %d)",
				round, strings.Join(s6, "\n"), p, got, exp, verdict(r6, &p)+1)
		}
		if got == xdpDrop {
			counted.add(1000+uint32(verdict(r6, &p)), &p)
		}
	}
	for k := 0; k < 20; k++ {
		if p := randomPkt(rng, compat.IPv4); tb.run(t, &p) != xdpPass {
			t.Fatalf("round %d: an IPv4 packet not passed: %+v", round, p)
		}
	}
	counted.check(t, tb, round)
	return tables
}

func fastRound(t *testing.T, rng *rand.Rand, round int) (tables int) {
	field := []string{"-s", "-d"}[round%2]
	size := []int{1, 2, 7, 40, 300, 3000}[round/2%6]
	withV6 := round%3 == 0
	// bases that nest: one /15, its /16s, /24s around the /16 edge
	bases := []netip.Addr{a("198.18.0.0"), a("198.18.255.255"), a("198.19.0.0"), a("198.19.0.128"),
		a("198.18.1.0"), a("198.18.0.255"), a("203.0.113.0"), a("203.0.113.127"),
		a("0.0.0.0"), a("0.0.1.7")}
	var pfx []netip.Prefix
	var s4, s6 []string
	for i := 0; i < size; i++ {
		base := bases[rng.Intn(len(bases))]
		if i >= len(strideBits) && rng.Intn(2) == 0 {
			base = netip.AddrFrom4([4]byte{198, 18 + byte(rng.Intn(2)), byte(rng.Intn(256)), byte(rng.Intn(256))})
		}
		bits := strideBits[i%len(strideBits)]
		if i >= len(strideBits) {
			bits = 1 + rng.Intn(32)
		}
		p, _ := base.Prefix(bits)
		pfx = append(pfx, p)
		neg := ""
		if rng.Intn(4) == 0 {
			neg = "! "
		}
		target := []string{"DROP", "DROP", "ACCEPT"}[rng.Intn(3)]
		s4 = append(s4, fmt.Sprintf("%s%s %s -j %s", neg, field, p, target))
		if withV6 {
			p6 := []string{"2001:db8::/32", "2001:db8::7/128", "2001:db8:1::/48", "2000::/3"}[rng.Intn(4)]
			s6 = append(s6, fmt.Sprintf("%s%s %s -j %s", neg, field, p6, target))
		}
	}
	r4, r6 := parseRules(t, compat.IPv4, s4...), parseRules(t, compat.IPv6, s6...)
	tb := newTestbed(t, r4, r6, "eth0")
	if !tb.c.Single || tb.c.Stop4 != nil || tb.c.Stop6 != nil {
		t.Fatalf("round %d: single %v, stops %v %v", round, tb.c.Single, tb.c.Stop4, tb.c.Stop6)
	}
	// the trie when the table is over budget (with a budget of 0, a
	// table without chunks still fits)
	f := map[string]string{"-s": "src4", "-d": "dst4"}[field]
	want := "xdptables_classify"
	if tb.prog.coll.Maps[".data."+f+"_dir"].ValueSize() > 4 {
		want = map[string]string{"-s": "xdptables_fast_src", "-d": "xdptables_fast_dst"}[field]
		tables++
	}
	if tb.prog.prog != tb.prog.coll.Programs[want] {
		t.Fatalf("round %d: %s run on one interface does not run %s", round, field, want)
	}
	addrs := edges(pfx)
	counted := counts{}
	probe := func(p pkt, rules []*compat.Rule, base uint32, exp uint32) {
		t.Helper()
		got := tb.run(t, &p)
		if got != exp {
			t.Fatalf("round %d: rules\n%s\npacket %+v: verdict %d, want %d (rule %d)",
				round, strings.Join(s4, "\n"), p, got, exp, verdict(rules, &p)+1)
		}
		if got == xdpDrop {
			counted.add(base+uint32(verdict(rules, &p)), &p)
		}
	}
	for k, ad := range addrs {
		p := randomPkt(rng, compat.IPv4)
		if field == "-s" {
			p.src = ad
		} else {
			p.dst = ad
		}
		exp := expect(r4, &p)
		switch k % 9 {
		case 1:
			p.options = 1 + rng.Intn(10)
		case 2:
			p.badCsum = true
			exp = xdpPass
		case 3:
			p.fragOff = []uint16{0x2000, 0x0001, 0x1fff}[rng.Intn(3)]
			exp = xdpPass
		case 4:
			p.truncate = 1 + rng.Intn(8)
			exp = xdpPass
		case 5:
			p.dstMAC = [6]byte{0x02, 0, 0, 0, 0, 9} // another host
			exp = xdpPass
		case 6:
			p.dstMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		case 7:
			p.dstMAC = [6]byte{0x01, 0x00, 0x5e, 0, 0, 1}
		}
		probe(p, r4, 0, exp)
	}
	for k := 0; k < 60; k++ {
		p := randomPkt(rng, compat.IPv6)
		probe(p, r6, 1000, expect(r6, &p))
	}
	// frames that are neither IPv4 nor IPv6, or too short
	for _, b := range [][]byte{arpFrame(), vlanFrame(), make([]byte, 33)} {
		if ret, err := tb.prog.prog.Run(&ebpf.RunOptions{Data: b}); err != nil || ret != xdpPass {
			t.Fatalf("round %d: frame %x: verdict %d (%v), want pass", round, b, ret, err)
		}
	}
	counted.check(t, tb, round)
	return tables
}

// counts are the packets and bytes a test expects each counter slot to
// count.
type counts map[uint32][2]uint64

func (c counts) add(slot uint32, p *pkt) {
	w := c[slot]
	c[slot] = [2]uint64{w[0] + 1, w[1] + uint64(p.length)}
}

// check compares them with what the program of tb counted.
func (c counts) check(t *testing.T, tb *testbed, round int) {
	t.Helper()
	for slot, w := range c {
		if pk, by := tb.count(t, slot); pk != w[0] || by != w[1] {
			t.Fatalf("round %d slot %d: counted %d/%d, want %d/%d", round, slot, pk, by, w[0], w[1])
		}
	}
}

// arpFrame is an ARP request to testMAC, padded to 60 bytes.
func arpFrame() []byte {
	b := make([]byte, 60)
	copy(b, testMAC[:])
	b[12], b[13] = 0x08, 0x06
	return b
}

// vlanFrame is an 802.1Q-tagged IPv4 frame to testMAC: XDP sees the tag,
// raw PREROUTING the packet without it, so it is left to nftables.
func vlanFrame() []byte {
	p := pkt{src: a("198.18.0.1"), dst: a("203.0.113.1"), proto: 17, dstMAC: testMAC}
	f := p.frame()
	b := append(append(append([]byte{}, f[:12]...), 0x81, 0x00, 0x00, 0x05), f[12:]...)
	return b
}

// TestClassifierFastSet: a run of one -m set lookup (src or dst, negated
// or not) of a hash:net set mirrored as a table loads xdptables_fast_set;
// verdicts and counters against the set's longest-prefix answer, with
// entries (some nomatch) of every length 1-32 overlapping at the strides,
// addresses at their edges, and the frames the program must pass.
func TestClassifierFastSet(t *testing.T) {
	requireBPF(t)
	fastSetRounds(t, rand.New(rand.NewSource(31)), false)
}

// TestClassifierFastSetHash is TestClassifierFastSet with sets of
// mostly /32s (some nomatch, sometimes 0.0.0.0/32) whose table is over
// budget with them and within it without them and the prefixes of /24
// or shorter: the set is split, the /32s that match in a hash, the
// prefixes of /24 or shorter in a bitmap (sethash.go).
func TestClassifierFastSetHash(t *testing.T) {
	requireBPF(t)
	fastSetRounds(t, rand.New(rand.NewSource(33)), true)
}

func fastSetRounds(t *testing.T, rng *rand.Rand, hashed bool) {
	for round := 0; round < 16; round++ {
		s := ipset.NewSet("bl", ipset.LookupType("hash:net"))
		s.MaxElem = 4096
		var pfx []netip.Prefix
		seen := map[netip.Prefix]bool{}
		for i := 0; i < []int{1, 5, 40, 700}[round%4]; i++ {
			base := netip.AddrFrom4([4]byte{198, 18 + byte(rng.Intn(2)), byte(rng.Intn(4) * 63), byte(rng.Intn(256))})
			bits := strideBits[i%len(strideBits)]
			if i >= len(strideBits) {
				bits = 1 + rng.Intn(32)
			}
			if hashed && (i < 3 || rng.Intn(4) > 0) {
				bits = 32
				switch r := rng.Intn(4); {
				case i == 1 && round%2 == 0:
					base = netip.IPv4Unspecified()
				case i < 3 || r < 2:
					// a /16 of its own, where no other prefix
					// is but a /0: two chunks in the table
					base = netip.AddrFrom4([4]byte{byte(20 + rng.Intn(40)), byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256))})
				case r == 2:
					// a /24 of its own
					base = netip.AddrFrom4([4]byte{198, 18 + byte(rng.Intn(2)), byte(rng.Intn(256)), byte(rng.Intn(256))})
				}
			}
			p, _ := base.Prefix(bits)
			if seen[p] {
				continue
			}
			seen[p] = true
			pfx = append(pfx, p)
			s.Entries = append(s.Entries, &ipset.Entry{Elem: ipset.Elem{{Addr: p.Addr(), Bits: p.Bits()}}, Nomatch: i > 0 && rng.Intn(4) == 0})
		}
		in := func(ad netip.Addr) bool {
			best, nomatch := -1, false
			for _, e := range s.Entries {
				p := netip.PrefixFrom(e.Elem[0].Addr, e.Elem[0].Bits)
				if p.Contains(ad) && p.Bits() > best {
					best, nomatch = p.Bits(), e.Nomatch
				}
			}
			return best >= 0 && !nomatch
		}
		dir := []string{"src", "dst"}[round%2]
		neg := round/2%2 == 1
		drop := round%3 != 2
		spec := fmt.Sprintf("-m set %s--match-set bl %s -j %s", map[bool]string{true: "! "}[neg], dir,
			map[bool]string{true: "DROP", false: "ACCEPT"}[drop])
		rules := parseRules(t, compat.IPv4, spec)
		c, err := CompileSets(rules, nil, []Iface{{Index: 1, Name: "eth0", MAC: testMAC[:]}},
			func(string) *ipset.Set { return s })
		if err != nil || c.Run4 != 1 || !c.Single {
			t.Fatalf("round %d: %v, run %d, single %v", round, err, c.Run4, c.Single)
		}
		if hashed {
			// a budget the table fits only without its /32s
			ps := dirSetPrefixes(s)
			_, _, long := splitHashed(ps)
			n := buildDir4(long, 1<<30).nchunks()
			if buildDir4(ps, 1<<30).nchunks() <= n {
				t.Fatalf("round %d: the whole table is no larger than the split one", round)
			}
			withDirBudget(t, n)
		}
		sm, err := newSetMap(s)
		if err != nil {
			t.Fatal(err)
		}
		if info, err := sm.Info(); err != nil || (info.Name == hashSetName) != hashed {
			t.Fatalf("round %d: set map %v (%v), hashed %v", round, info, err, hashed)
		}
		p, err := load(c, []uint32{7}, nil, map[string]*ebpf.Map{"bl": sm})
		sm.Close()
		if err != nil {
			t.Fatal(err)
		}
		tb := &testbed{c: c, prog: p}
		want := map[bool]string{false: "xdptables_fast_set", true: "xdptables_fast_split"}[hashed]
		if p.prog != p.coll.Programs[want] {
			p.Close()
			t.Fatalf("round %d: %s does not run %s", round, spec, want)
		}
		var pk, by uint64
		for k, ad := range edges(pfx) {
			q := randomPkt(rng, compat.IPv4)
			if dir == "src" {
				q.src = ad
			} else {
				q.dst = ad
			}
			want := uint32(xdpPass)
			if in(ad) != neg && drop {
				want = xdpDrop
			}
			switch k % 7 {
			case 1:
				q.options = 1 + rng.Intn(10)
			case 2:
				q.badCsum, want = true, xdpPass
			case 3:
				q.fragOff, want = 0x2000, xdpPass
			case 4:
				q.dstMAC, want = [6]byte{0x02, 0, 0, 0, 0, 9}, xdpPass
			case 5:
				q.dstMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
			}
			if got := tb.run(t, &q); got != want {
				p.Close()
				t.Fatalf("round %d: %s: packet %+v: verdict %d, want %d", round, spec, q, got, want)
			}
			if want == xdpDrop {
				pk, by = pk+1, by+uint64(q.length)
			}
		}
		for k := 0; k < 20; k++ {
			q := randomPkt(rng, compat.IPv6)
			if got := tb.run(t, &q); got != xdpPass {
				p.Close()
				t.Fatalf("round %d: IPv6 packet %+v: verdict %d, want pass", round, q, got)
			}
		}
		if gp, gb := tb.count(t, 7); gp != pk || gb != by {
			p.Close()
			t.Fatalf("round %d: counted %d/%d, want %d/%d", round, gp, gb, pk, by)
		}
		p.Close()
	}
}

// edges are the first and last addresses of every prefix and those just
// outside it.
func edges(pfx []netip.Prefix) []netip.Addr {
	var out []netip.Addr
	for _, p := range pfx {
		first, last := p.Masked().Addr(), lastAddr(p)
		for _, ad := range []netip.Addr{first, last, first.Prev(), last.Next()} {
			if ad.IsValid() {
				out = append(out, ad)
			}
		}
	}
	return out
}

// TestClassifierFastPort: runs whose rules test the protocol and one
// port (destination or source, ranges, negation, multiport, rules with
// -p alone) load xdptables_fast_port, the two folded into one table;
// verdicts and counters against the reference evaluator, also for
// packets without ports, with options, bad checksums, fragments,
// truncated transport headers and other hosts' frames.
func TestClassifierFastPort(t *testing.T) {
	requireBPF(t)
	rng := rand.New(rand.NewSource(41))
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	for round := 0; round < 24; round++ {
		dir := []string{"dport", "sport"}[round%2]
		var s4 []string
		for i := 0; i < []int{1, 3, 20, 90}[round/2%4]; i++ {
			neg := pick("", "", "! ")
			proto := pick("tcp", "udp", "udp")
			var spec string
			switch rng.Intn(5) {
			case 0:
				spec = pick("-p tcp", "-p udp", "-p icmp", "! -p udp")
			case 1:
				spec = fmt.Sprintf("-p %s -m multiport --%ss %s", proto, dir, pick("7,9:11", "53,80", "1000:2000,22"))
			default:
				spec = fmt.Sprintf("-p %s %s--%s %s", proto, neg, dir, pick("53", "80", "1000:2000", "7", "2001:65535", "0:22"))
			}
			if i == 0 {
				spec = fmt.Sprintf("-p %s --%s %s", proto, dir, pick("53", "1000:2000"))
			}
			s4 = append(s4, spec+" -j "+pick("DROP", "DROP", "ACCEPT"))
		}
		r4 := parseRules(t, compat.IPv4, s4...)
		tb := newTestbed(t, r4, nil, "eth0")
		if tb.c.Stop4 != nil {
			t.Fatalf("round %d: stop %v", round, tb.c.Stop4)
		}
		if tb.prog.prog != tb.prog.coll.Programs["xdptables_fast_port"] {
			t.Fatalf("round %d: rules\n%s\ndo not run xdptables_fast_port (fields %#x)", round, strings.Join(s4, "\n"), tb.c.Fields)
		}
		pkts := make([]pkt, 300)
		for k := range pkts {
			pkts[k] = randomPkt(rng, compat.IPv4)
		}
		tb.checkFast(t, rng, round, s4, r4, pkts, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, true)
	}
}

// checkFastAddrProgram checks that the rules s4 of one address field
// (-s or -d) load the lean program prefix+"src"/"dst" when the field is
// a table, the general one when it is not, reporting whether it is.
func (tb *testbed) checkFastAddrProgram(t *testing.T, round int, s4 []string, field, prefix string) (table bool) {
	t.Helper()
	f := map[string]string{"-s": "src4", "-d": "dst4"}[field]
	want := "xdptables_classify"
	table = tb.prog.coll.Maps[".data."+f+"_dir"].ValueSize() > 4
	if table {
		want = prefix + map[string]string{"-s": "src", "-d": "dst"}[field]
	}
	if tb.c.Stop4 != nil || tb.prog.prog != tb.prog.coll.Programs[want] {
		t.Fatalf("round %d: rules\n%s\nstop %v, do not run %s (fields %#x)", round, strings.Join(s4, "\n"), tb.c.Stop4, want, tb.c.Fields)
	}
	return table
}

// edgePkts are random IPv4 packets whose field (-s or -d) address is
// each of the first max+1 edges of the prefixes pfx.
func edgePkts(rng *rand.Rand, pfx []netip.Prefix, field string, max int) []pkt {
	var pkts []pkt
	for k, ad := range edges(pfx) {
		if k > max {
			break
		}
		p := randomPkt(rng, compat.IPv4)
		if field == "-s" {
			p.src = ad
		} else {
			p.dst = ad
		}
		pkts = append(pkts, p)
	}
	return pkts
}

// checkFast runs one round of a lean program's property test: the IPv4
// packets pkts, the k-th varied by k%9 into a frame the program must
// pass (IP options aside: bad checksum, fragment, truncated, another
// host's MAC) or judge as the rules do (IP options, the group MAC
// group), against the reference evaluator; then IPv6 packets, which it
// passes; with shortLen IPv4 frames whose total length ends within the
// transport header, which it passes; and last the counters against the
// drops.
func (tb *testbed) checkFast(t *testing.T, rng *rand.Rand, round int, s4 []string, r4 []*compat.Rule, pkts []pkt, group [6]byte, shortLen bool) {
	t.Helper()
	counted := map[uint32][2]uint64{}
	for k, p := range pkts {
		exp := expect(r4, &p)
		switch k % 9 {
		case 1:
			p.options = 1 + rng.Intn(10)
		case 2:
			p.badCsum, exp = true, xdpPass
		case 3:
			p.fragOff, exp = 0x2000, xdpPass
		case 4:
			p.truncate, exp = 1+rng.Intn(12), xdpPass
		case 5:
			p.dstMAC, exp = [6]byte{0x02, 0, 0, 0, 0, 9}, xdpPass
		case 6:
			p.dstMAC = group
		}
		got := tb.run(t, &p)
		if got != exp {
			t.Fatalf("round %d: rules\n%s\npacket %+v: verdict %d, want %d (rule %d)",
				round, strings.Join(s4, "\n"), p, got, exp, verdict(r4, &p)+1)
		}
		if got == xdpDrop {
			slot := uint32(verdict(r4, &p))
			c := counted[slot]
			counted[slot] = [2]uint64{c[0] + 1, c[1] + uint64(p.length)}
		}
	}
	for k := 0; k < 20; k++ {
		p := randomPkt(rng, compat.IPv6)
		if got := tb.run(t, &p); got != xdpPass {
			t.Fatalf("round %d: IPv6 packet %+v: verdict %d, want pass", round, p, got)
		}
	}
	if shortLen {
		for _, proto := range []uint8{6, 17} {
			for _, l4 := range []int{0, 4, 7, 12, 19} {
				if proto == 17 && l4 > 7 {
					continue
				}
				p := randomPkt(rng, compat.IPv4)
				p.proto = proto
				f := shortTotLen(p.frame(), 20+l4)
				if ret, err := tb.prog.prog.Run(&ebpf.RunOptions{Data: f}); err != nil || ret != xdpPass {
					t.Fatalf("round %d: %+v with total length %d: verdict %d (%v), want pass", round, p, 20+l4, ret, err)
				}
			}
		}
	}
	for slot, w := range counted {
		if pk, by := tb.count(t, slot); pk != w[0] || by != w[1] {
			t.Fatalf("round %d slot %d: counted %d/%d, want %d/%d", round, slot, pk, by, w[0], w[1])
		}
	}
}

// shortTotLen sets the IPv4 total length of frame f (no options) to n
// and its header checksum to match.
func shortTotLen(f []byte, n int) []byte {
	ip := f[14:]
	binary.BigEndian.PutUint16(ip[2:], uint16(n))
	ip[10], ip[11] = 0, 0
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	return f
}

// TestClassifierFastProtoAddr: runs whose rules test the protocol and
// one address field (-p udp -s NET; also rules with one of the two, and
// negations) load xdptables_fast_psrc/_pdst, the protocol folded with
// the address table's classes; verdicts and counters against the
// reference evaluator at the prefixes' edges, with the frames the
// program must pass, and the general program when the table is over
// budget.
func TestClassifierFastProtoAddr(t *testing.T) {
	requireBPF(t)
	rng := rand.New(rand.NewSource(51))
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	budget, kinds := dirFieldBudget, map[bool]int{}
	defer func() { dirFieldBudget = budget }()
	for round := 0; round < 24; round++ {
		field := []string{"-s", "-d"}[round%2]
		// the general program when the address table is over budget
		dirFieldBudget = budget
		if round%6 == 5 {
			dirFieldBudget = 0
		}
		var s4 []string
		var pfx []netip.Prefix
		for i := 0; i < []int{1, 4, 30, 1000}[round/2%4]; i++ {
			base := netip.AddrFrom4([4]byte{198, 18 + byte(rng.Intn(2)), byte(rng.Intn(4) * 63), byte(rng.Intn(256))})
			if rng.Intn(8) == 0 {
				// the table's first entries
				base = netip.AddrFrom4([4]byte{0, 0, byte(rng.Intn(2)), byte(rng.Intn(256))})
			}
			bits := strideBits[i%len(strideBits)]
			if i >= len(strideBits) {
				bits = 1 + rng.Intn(32)
			}
			p, _ := base.Prefix(bits)
			pfx = append(pfx, p)
			proto := pick("-p udp ", "-p tcp ", "-p icmp ", "! -p udp ", "")
			addr := fmt.Sprintf("%s%s %s ", pick("", "", "! "), field, p)
			if i > 0 && rng.Intn(6) == 0 {
				addr = ""
			}
			if i == 0 {
				proto, addr = "-p udp ", fmt.Sprintf("%s %s ", field, p)
			}
			s4 = append(s4, proto+addr+"-j "+pick("DROP", "DROP", "ACCEPT"))
		}
		r4 := parseRules(t, compat.IPv4, s4...)
		tb := newTestbed(t, r4, nil, "eth0")
		kinds[tb.checkFastAddrProgram(t, round, s4, field, "xdptables_fast_p")]++
		pkts := edgePkts(rng, pfx, field, 600)
		tb.checkFast(t, rng, round, s4, r4, pkts, [6]byte{0x01, 0x00, 0x5e, 0, 0, 1}, false)
	}
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Fatalf("runs with and without a table: %v", kinds)
	}
}

// TestClassifierFastProtoPortAddr: runs whose rules test the protocol,
// one port and one address field (-p udp -s NET --dport 9; also rules
// with some of the three, port ranges, multiport, negations) load
// xdptables_fast_ppsrc/_ppdst, the protocol and port folded into rows
// of a second table indexed by the address table's class; verdicts and
// counters against the reference evaluator at the prefixes' edges and
// the ports' range edges, with the frames the program must pass
// (options, bad checksums, fragments, truncated headers, other hosts'
// frames, IPv6), and the general program when the address table is
// over budget.
func TestClassifierFastProtoPortAddr(t *testing.T) {
	requireBPF(t)
	rng := rand.New(rand.NewSource(61))
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	budget, kinds := dirFieldBudget, map[bool]int{}
	defer func() { dirFieldBudget = budget }()
	for round := 0; round < 32; round++ {
		field := []string{"-s", "-d"}[round%2]
		dir := []string{"dport", "sport"}[round/2%2]
		dirFieldBudget = budget
		if round%8 == 7 {
			dirFieldBudget = 0
		}
		var s4 []string
		var pfx []netip.Prefix
		for i := 0; i < []int{1, 3, 25, 400}[round/4%4]; i++ {
			base := netip.AddrFrom4([4]byte{198, 18 + byte(rng.Intn(2)), byte(rng.Intn(4) * 63), byte(rng.Intn(256))})
			if rng.Intn(8) == 0 {
				base = netip.AddrFrom4([4]byte{0, 0, byte(rng.Intn(2)), byte(rng.Intn(256))})
			}
			bits := strideBits[i%len(strideBits)]
			if i >= len(strideBits) {
				bits = 1 + rng.Intn(32)
			}
			p, _ := base.Prefix(bits)
			pfx = append(pfx, p)
			proto := pick("udp", "tcp", "udp")
			addr := fmt.Sprintf("%s%s %s ", pick("", "", "! "), field, p)
			var port string
			switch rng.Intn(6) {
			case 0:
				port = ""
			case 1:
				port = fmt.Sprintf("-m multiport --%ss %s ", dir, pick("7,9:11", "53,80", "1000:2000,22"))
			default:
				port = fmt.Sprintf("%s--%s %s ", pick("", "", "! "), dir, pick("53", "80", "1000:2000", "7", "2001:65535", "0:22"))
			}
			spec := "-p " + proto + " " + addr + port
			switch {
			case i == 0:
				spec = fmt.Sprintf("-p udp %s %s --%s 53 ", field, p, dir)
			case rng.Intn(8) == 0:
				spec = pick("-p icmp ", "! -p udp ", "-p tcp ") + addr
			case rng.Intn(8) == 0:
				spec = "-p " + proto + " " + port
			}
			s4 = append(s4, spec+"-j "+pick("DROP", "DROP", "ACCEPT"))
		}
		r4 := parseRules(t, compat.IPv4, s4...)
		tb := newTestbed(t, r4, nil, "eth0")
		kinds[tb.checkFastAddrProgram(t, round, s4, field, "xdptables_fast_pp")]++
		ports := []uint16{0, 6, 7, 8, 9, 11, 12, 21, 22, 23, 52, 53, 54, 80, 999, 1000, 2000, 2001, 65535}
		pkts := edgePkts(rng, pfx, field, 800)
		for k := range pkts {
			if dir == "dport" {
				pkts[k].dport = ports[rng.Intn(len(ports))]
			} else {
				pkts[k].sport = ports[rng.Intn(len(ports))]
			}
		}
		tb.checkFast(t, rng, round, s4, r4, pkts, [6]byte{0x01, 0x00, 0x5e, 0, 0, 1}, true)
	}
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Fatalf("runs with and without a table: %v", kinds)
	}
}

// TestClassifierFieldTableSpread: 10 000 "-s A/32 -j DROP" rules, each
// in a /16 of its own (two chunks each, 20 000 chunks), some after an
// ACCEPT rule of a neighbour of A, and a rule of a shorter prefix after
// them, keep the source field a table and load xdptables_fast_src;
// verdicts and counters at each rule's address and beside it.
func TestClassifierFieldTableSpread(t *testing.T) {
	requireBPF(t)
	const n = 10000
	specs := make([]string, 0, n+n/5+1)
	var pfx []netip.Prefix
	for i := 0; i < n; i++ {
		b := [4]byte{byte(1 + i/256), byte(i), 7, byte(i)}
		p := netip.PrefixFrom(netip.AddrFrom4(b), 32)
		if i%5 == 4 {
			b[3]++
			q := netip.PrefixFrom(netip.AddrFrom4(b), 32)
			pfx = append(pfx, q)
			specs = append(specs, fmt.Sprintf("-s %s -j ACCEPT", q))
		}
		pfx = append(pfx, p)
		specs = append(specs, fmt.Sprintf("-s %s -j DROP", p))
	}
	specs = append(specs, "-s 198.18.0.0/15 -j DROP")
	r4 := parseRules(t, compat.IPv4, specs...)
	tb := newTestbed(t, r4, nil, "eth0")
	if tb.prog.prog != tb.prog.coll.Programs["xdptables_fast_src"] {
		t.Fatalf("%d rules of /32s in as many /16s do not run xdptables_fast_src", n)
	}
	rng := rand.New(rand.NewSource(71))
	counted := map[uint32][2]uint64{}
	for k, ad := range append(edges(pfx[:400]), a("198.18.3.4"), a("198.20.0.1")) {
		p := randomPkt(rng, compat.IPv4)
		p.src = ad
		if k%2 == 1 {
			// beside a rule's address: in the same /24, /16
			b := ad.As4()
			b[3] ^= byte(1 + k%7)
			p.src = netip.AddrFrom4(b)
		}
		exp := expect(r4, &p)
		got := tb.run(t, &p)
		if got != exp {
			t.Fatalf("packet %+v: verdict %d, want %d (rule %d)", p, got, exp, verdict(r4, &p)+1)
		}
		if got == xdpDrop {
			slot := uint32(verdict(r4, &p))
			c := counted[slot]
			counted[slot] = [2]uint64{c[0] + 1, c[1] + uint64(p.length)}
		}
	}
	if len(counted) < 100 {
		t.Fatalf("only %d rules dropped a packet", len(counted))
	}
	for slot, w := range counted {
		if pk, by := tb.count(t, slot); pk != w[0] || by != w[1] {
			t.Fatalf("slot %d: counted %d/%d, want %d/%d", slot, pk, by, w[0], w[1])
		}
	}
}
