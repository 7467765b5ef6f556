package xdp

import (
	"fmt"
	"math/rand"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdptables/xdptables/compat"
)

const (
	xdpDrop = 1
	xdpPass = 2
)

// requireBPF skips when this process cannot load BPF programs.
func requireBPF(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP-ROOT: loading BPF programs needs root")
	}
}

// testbed is a classifier loaded for BPF_PROG_TEST_RUN, which runs it
// as if received on the loopback device (ifindex 1); the classifier
// is compiled as if that device were named ifname.
type testbed struct {
	c    *Classifier
	prog *program
}

func newTestbed(t testing.TB, v4, v6 []*compat.Rule, ifname string) *testbed {
	t.Helper()
	return newTestbedIfaces(t, v4, v6, []Iface{{Index: 1, Name: ifname, MAC: testMAC[:]}})
}

// newTestbedIfaces compiles for the interfaces ifs; the one with Index
// 1 is the one packets arrive on.
func newTestbedIfaces(t testing.TB, v4, v6 []*compat.Rule, ifs []Iface) *testbed {
	t.Helper()
	c, err := Compile(v4, v6, ifs)
	if err != nil {
		t.Fatal(err)
	}
	slots := make([]uint32, len(c.Rules))
	for i, r := range c.Rules {
		slots[i] = uint32(r.Pos)
		if r.Family == compat.IPv6 {
			slots[i] += 1000
		}
	}
	p, err := load(c, slots, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &testbed{c: c, prog: p}
}

func (tb *testbed) run(t testing.TB, p *pkt) uint32 {
	t.Helper()
	ret, err := tb.prog.prog.Run(&ebpf.RunOptions{Data: p.frame()})
	if err != nil {
		t.Fatal(err)
	}
	return ret
}

func (tb *testbed) count(t testing.TB, slot uint32) (pk, by uint64) {
	t.Helper()
	var per []classifierCounter
	if err := tb.prog.coll.Maps["counters"].Lookup(slot, &per); err != nil {
		t.Fatal(err)
	}
	for _, c := range per {
		pk += c.Packets
		by += c.Bytes
	}
	return pk, by
}

func expect(rules []*compat.Rule, p *pkt) uint32 {
	i := verdict(rules, p)
	if i >= 0 && rules[i].Target.Name() == compat.VerdictDrop {
		return xdpDrop
	}
	return xdpPass
}

func a(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestClassifierTable(t *testing.T) {
	requireBPF(t)
	type probe struct {
		p    pkt
		want uint32
	}
	v4 := func(src, dst string, proto uint8, sport, dport uint16) pkt {
		return pkt{src: a(src), dst: a(dst), proto: proto, sport: sport, dport: dport, dstMAC: testMAC, iface: "eth0"}
	}
	tests := []struct {
		name   string
		rules  []string
		v6     []string
		probes []probe
	}{
		{"src prefix", []string{"-s 198.18.0.0/16 -j DROP"}, nil, []probe{
			{v4("198.18.3.4", "203.0.113.1", 17, 1, 2), xdpDrop},
			{v4("198.19.3.4", "203.0.113.1", 17, 1, 2), xdpPass},
		}},
		{"accept before drop", []string{"-s 198.18.1.0/24 -j ACCEPT", "-s 198.18.0.0/16 -j DROP"}, nil, []probe{
			{v4("198.18.1.4", "203.0.113.1", 17, 1, 2), xdpPass},
			{v4("198.18.2.4", "203.0.113.1", 17, 1, 2), xdpDrop},
		}},
		{"negated dst", []string{"! -d 203.0.113.0/24 -j DROP"}, nil, []probe{
			{v4("198.18.1.4", "203.0.113.1", 17, 1, 2), xdpPass},
			{v4("198.18.1.4", "198.51.100.1", 17, 1, 2), xdpDrop},
		}},
		{"ports", []string{"-p tcp --dport 1000:2000 -j DROP", "-p udp ! --sport 53 -j DROP"}, nil, []probe{
			{v4("198.18.1.4", "203.0.113.1", 6, 1, 1500), xdpDrop},
			{v4("198.18.1.4", "203.0.113.1", 6, 1, 2500), xdpPass},
			{v4("198.18.1.4", "203.0.113.1", 17, 53, 1500), xdpPass},
			{v4("198.18.1.4", "203.0.113.1", 17, 54, 1500), xdpDrop},
			{v4("198.18.1.4", "203.0.113.1", 1, 0, 0), xdpPass},
		}},
		{"multiport either", []string{"-p udp -m multiport --ports 7,9:11 -j DROP"}, nil, []probe{
			{v4("198.18.1.4", "203.0.113.1", 17, 10, 1), xdpDrop},
			{v4("198.18.1.4", "203.0.113.1", 17, 1, 7), xdpDrop},
			{v4("198.18.1.4", "203.0.113.1", 17, 8, 8), xdpPass},
		}},
		{"syn", []string{"-p tcp --syn -j DROP"}, nil, []probe{
			{pkt{src: a("198.18.0.1"), dst: a("198.18.0.2"), proto: 6, flags: 0x02, dstMAC: testMAC}, xdpDrop},
			{pkt{src: a("198.18.0.1"), dst: a("198.18.0.2"), proto: 6, flags: 0x12, dstMAC: testMAC}, xdpPass},
		}},
		{"fragments pass", []string{"-s 198.18.0.0/15 -j DROP", "-f -j DROP"}, nil, []probe{
			{pkt{src: a("198.18.0.1"), dst: a("198.18.0.2"), proto: 17, fragOff: 0x2000, dstMAC: testMAC}, xdpPass},
			{pkt{src: a("198.51.100.1"), dst: a("198.18.0.2"), proto: 17, fragOff: 0x0010, dstMAC: testMAC}, xdpPass},
		}},
		{"other host and truncated", []string{"-j DROP"}, nil, []probe{
			{pkt{src: a("198.18.0.1"), dst: a("198.18.0.2"), proto: 17, dstMAC: [6]byte{2, 9, 9, 9, 9, 9}}, xdpPass},
			{pkt{src: a("198.18.0.1"), dst: a("198.18.0.2"), proto: 17, dstMAC: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, xdpDrop},
			{pkt{src: a("198.18.0.1"), dst: a("198.18.0.2"), proto: 6, truncate: 4, dstMAC: testMAC}, xdpPass},
		}},
		{"iface", []string{"-i eth+ -s 198.18.0.1 -j DROP", "! -i eth0 -j DROP"}, nil, []probe{
			{v4("198.18.0.1", "203.0.113.1", 17, 1, 2), xdpDrop},
			{v4("198.18.0.2", "203.0.113.1", 17, 1, 2), xdpPass},
		}},
		{"ipv6", nil, []string{"-s 2001:db8::/48 -p tcp --dport 80 -j DROP", "-d 2001:db8:1::1 -j DROP"}, []probe{
			{pkt{src: a("2001:db8::5"), dst: a("2001:db8:2::1"), proto: 6, dport: 80, dstMAC: testMAC}, xdpDrop},
			{pkt{src: a("2001:db8::5"), dst: a("2001:db8:2::1"), proto: 6, dport: 81, dstMAC: testMAC}, xdpPass},
			{pkt{src: a("2001:db8:9::5"), dst: a("2001:db8:1::1"), proto: 58, dstMAC: testMAC}, xdpDrop},
			{pkt{src: a("198.18.0.1"), dst: a("198.18.0.2"), proto: 17, dstMAC: testMAC}, xdpPass},
		}},
		{"length and iprange", []string{"-m length --length 100:200 -m iprange --src-range 198.18.0.10-198.18.0.20 -j DROP"}, nil, []probe{
			{pkt{src: a("198.18.0.15"), dst: a("198.18.0.2"), proto: 17, length: 150, dstMAC: testMAC}, xdpDrop},
			{pkt{src: a("198.18.0.21"), dst: a("198.18.0.2"), proto: 17, length: 150, dstMAC: testMAC}, xdpPass},
			{pkt{src: a("198.18.0.15"), dst: a("198.18.0.2"), proto: 17, length: 201, dstMAC: testMAC}, xdpPass},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := newTestbed(t, parseRules(t, compat.IPv4, tt.rules...), parseRules(t, compat.IPv6, tt.v6...), "eth0")
			if tb.c.Stop4 != nil || tb.c.Stop6 != nil {
				t.Fatalf("run stopped: %v %v", tb.c.Stop4, tb.c.Stop6)
			}
			for i, pr := range tt.probes {
				if got := tb.run(t, &pr.p); got != pr.want {
					t.Errorf("probe %d (%+v): verdict %d, want %d", i, pr.p, got, pr.want)
				}
			}
		})
	}
}

// TestClassifierChecksum: a DROP verdict needs a valid IPv4 header
// checksum (ip_rcv_core drops the others before PREROUTING: they are
// passed, uncounted), options included.
func TestClassifierChecksum(t *testing.T) {
	requireBPF(t)
	for _, spec := range []string{"-j DROP", "-s 198.18.0.0/15 -j DROP", "-p udp --dport 9 -j DROP"} {
		tb := newTestbed(t, parseRules(t, compat.IPv4, spec), nil, "eth0")
		for opts := 0; opts <= 10; opts++ {
			for _, bad := range []bool{false, true} {
				p := pkt{src: a("198.18.0.1"), dst: a("198.18.0.2"), proto: 17, dport: 9, dstMAC: testMAC, options: opts, badCsum: bad}
				want := uint32(xdpDrop)
				if bad {
					want = xdpPass
				}
				if got := tb.run(t, &p); got != want {
					t.Errorf("%s: %d option words, bad checksum %v: verdict %d, want %d", spec, opts, bad, got, want)
				}
				// the header cut short within the options
				if opts > 0 {
					p.truncate = p.length - 20 - 4*opts + 2
					if got := tb.run(t, &p); got != xdpPass {
						t.Errorf("%s: %d option words, truncated: verdict %d", spec, opts, got)
					}
				}
			}
		}
	}
}

func TestClassifierStops(t *testing.T) {
	c, err := Compile(parseRules(t, compat.IPv4,
		"-s 198.18.0.0/16 -j DROP",
		"-m conntrack --ctstate INVALID -j DROP",
		"-s 198.19.0.0/16 -j DROP"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Run4 != 1 || c.Stop4 == nil || c.Stop4.Pos != 1 || !strings.Contains(c.Stop4.Reason, "conntrack") {
		t.Fatalf("run %d stop %v", c.Run4, c.Stop4)
	}
	c, _ = Compile(parseRules(t, compat.IPv4, "-s 198.18.0.0/16 -j NOTRACK"), nil, nil)
	if c.Run4 != 0 || c.Stop4 == nil {
		t.Fatalf("NOTRACK must end the run: %d %v", c.Run4, c.Stop4)
	}
}

func TestRangePrefixes(t *testing.T) {
	ps, _ := rangePrefixes(a("198.18.0.10"), a("198.18.0.20"))
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	if got := strings.Join(s, " "); got != "198.18.0.10/31 198.18.0.12/30 198.18.0.16/30 198.18.0.20/32" {
		t.Fatal(got)
	}
	vs := valuePrefixes(1, 6)
	if len(vs) != 4 || vs[0].Bits != 16 || vs[1].Bits != 15 || vs[2].Bits != 15 || vs[3].Bits != 16 {
		t.Fatalf("%+v", vs)
	}
}

// randomRule draws a rule from small pools so that rules overlap.
func randomRule(rng *rand.Rand, fam compat.Family) string {
	var w []string
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	neg := func() string {
		if rng.Intn(4) == 0 {
			return "! "
		}
		return ""
	}
	addr := func() string {
		if fam == compat.IPv4 {
			return pick("198.18.0.0/15", "198.18.0.0/16", "198.18.1.0/24", "198.18.1.7", "198.19.0.0/17", "203.0.113.0/25", "203.0.113.9")
		}
		return pick("2001:db8::/32", "2001:db8::/48", "2001:db8:0:1::/64", "2001:db8::7", "2001:db8:1::/48")
	}
	if rng.Intn(2) == 0 {
		w = append(w, neg()+"-s "+addr())
	}
	if rng.Intn(3) == 0 {
		w = append(w, neg()+"-d "+addr())
	}
	if rng.Intn(4) == 0 {
		w = append(w, neg()+"-i "+pick("eth0", "eth+", "veth1", "lo"))
	}
	proto := pick("", "", "tcp", "udp", "icmp", "sctp")
	if proto != "" {
		if rng.Intn(5) == 0 && proto != "tcp" && proto != "udp" {
			w = append(w, "! -p "+proto)
			proto = ""
		} else {
			w = append(w, "-p "+proto)
		}
	}
	ports := func() string {
		return pick("22", "53", "1000:2000", "1500", "0:1023", "80")
	}
	switch proto {
	case "tcp", "udp":
		if rng.Intn(2) == 0 {
			w = append(w, neg()+"--dport "+ports())
		}
		if rng.Intn(3) == 0 {
			w = append(w, neg()+"--sport "+ports())
		}
		if proto == "tcp" && rng.Intn(3) == 0 {
			w = append(w, neg()+pick("--syn", "--tcp-flags SYN,ACK ACK", "--tcp-flags ALL NONE"))
		}
		if rng.Intn(3) == 0 {
			w = append(w, "-m multiport "+neg()+pick("--dports", "--sports", "--ports")+" "+pick("22,80", "1000:1499,53", "7"))
		}
	case "sctp":
		if rng.Intn(2) == 0 {
			w = append(w, "-m multiport "+neg()+pick("--dports", "--ports")+" 22,1500")
		}
	}
	if rng.Intn(5) == 0 {
		if fam == compat.IPv4 {
			w = append(w, "-m iprange "+neg()+"--src-range 198.18.1.0-198.18.1.9")
		} else {
			w = append(w, "-m iprange "+neg()+"--dst-range 2001:db8::5-2001:db8::9")
		}
	}
	if rng.Intn(5) == 0 {
		w = append(w, "-m length "+neg()+"--length "+pick("60:100", "0:80", "200"))
	}
	if fam == compat.IPv4 && rng.Intn(10) == 0 {
		w = append(w, neg()+"-f")
	}
	w = append(w, "-j "+pick("DROP", "DROP", "ACCEPT"))
	return strings.Join(w, " ")
}

func randomPkt(rng *rand.Rand, fam compat.Family) pkt {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	var p pkt
	if fam == compat.IPv4 {
		p.src = a(pick("198.18.0.1", "198.18.1.7", "198.18.1.5", "198.19.0.3", "198.19.200.1", "203.0.113.9", "203.0.113.200"))
		p.dst = a(pick("198.18.1.7", "203.0.113.9", "198.51.100.1", "198.18.77.1"))
	} else {
		p.src = a(pick("2001:db8::7", "2001:db8::1", "2001:db8:0:1::5", "2001:db8:1::6", "2001:db9::1"))
		p.dst = a(pick("2001:db8::5", "2001:db8::9", "2001:db8::a", "2001:db8:1::1"))
	}
	p.proto = []uint8{6, 17, 1, 132, 58}[rng.Intn(5)]
	port := func() uint16 { return []uint16{22, 53, 80, 999, 1000, 1500, 2000, 2001, 7, 65535}[rng.Intn(10)] }
	p.sport, p.dport = port(), port()
	p.flags = []uint8{0x02, 0x12, 0x10, 0x00, 0x3f, 0x11}[rng.Intn(6)]
	p.length = []int{40, 60, 64, 80, 81, 100, 200, 300}[rng.Intn(8)]
	p.iface = "eth0"
	p.dstMAC = testMAC
	return p
}

// TestClassifierDifferential compares the BPF program with the reference
// evaluator on random rule sets and packets, verdicts and counters.
func TestClassifierDifferential(t *testing.T) {
	requireBPF(t)
	differential(t, 5)
}

// TestClassifierDifferentialTrie: the same with the address fields in
// their LPM tries (tables over budget) instead of DIR-16-8-8 tables
// (IPv4) and per-length hash tables (IPv6).
func TestClassifierDifferentialTrie(t *testing.T) {
	requireBPF(t)
	withDirBudget(t, 0)
	withFieldLens(t, 0)
	differential(t, 6)
}

// withTrie makes the sets of test t keep their tries when over budget
// (not split) or not IPv4 address-only sets without timeouts (no
// per-length table).
func withTrie(t testing.TB) {
	splitSets, lenSets = false, false
	t.Cleanup(func() { splitSets, lenSets = true, true })
}

// withDirBudget sets the chunk budget of the address fields' and sets'
// tables for test t.
func withDirBudget(t testing.TB, n int) {
	old, oldField := dirBudget, dirFieldBudget
	dirBudget, dirFieldBudget = n, n
	t.Cleanup(func() { dirBudget, dirFieldBudget = old, oldField })
}

// withFieldLens bounds the prefix lengths of an IPv6 address field's
// table for test t (more: the field's trie).
func withFieldLens(t testing.TB, n int) {
	old := fieldLens
	fieldLens = n
	t.Cleanup(func() { fieldLens = old })
}

func differential(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	for round := 0; round < 60; round++ {
		n := 1 + rng.Intn(20)
		var s4, s6 []string
		for i := 0; i < n; i++ {
			s4 = append(s4, randomRule(rng, compat.IPv4))
			s6 = append(s6, randomRule(rng, compat.IPv6))
		}
		ifname := []string{"eth0", "veth1", "lo"}[rng.Intn(3)]
		r4, r6 := parseRules(t, compat.IPv4, s4...), parseRules(t, compat.IPv6, s6...)
		tb := newTestbed(t, r4, r6, ifname)
		if tb.c.Stop4 != nil || tb.c.Stop6 != nil {
			t.Fatalf("run stopped: %v %v", tb.c.Stop4, tb.c.Stop6)
		}
		want := map[uint32][2]uint64{}
		for k := 0; k < 200; k++ {
			fam, rules, base := compat.IPv4, r4, uint32(0)
			if k%2 == 1 {
				fam, rules, base = compat.IPv6, r6, 1000
			}
			p := randomPkt(rng, fam)
			p.iface = ifname
			got := tb.run(t, &p)
			if exp := expect(rules, &p); got != exp {
				t.Fatalf("round %d: rules\n%s\npacket %+v: verdict %d, want %d (rule %d)",
					round, strings.Join(map[bool][]string{true: s4, false: s6}[fam == compat.IPv4], "\n"), p, got, exp, verdict(rules, &p)+1)
			}
			if got == xdpDrop {
				slot := base + uint32(verdict(rules, &p))
				w := want[slot]
				want[slot] = [2]uint64{w[0] + 1, w[1] + uint64(p.length)}
			}
		}
		for slot, w := range want {
			if pk, by := tb.count(t, slot); pk != w[0] || by != w[1] {
				t.Fatalf("round %d slot %d: counted %d/%d, want %d/%d", round, slot, pk, by, w[0], w[1])
			}
		}
	}
}

// TestClassifierDifferentialLarge is the differential test with the
// random rules spread among rules no packet matches, so that the match
// lies in any word of the bit vectors (up to 4 words: the unrolled walk;
// more: the summary walk, whose candidate words may hold no match), IPv6
// rules beside them (address fields of several prefix lengths), and
// with the receiving interface among 1 to 6 attached ones (more than 4:
// the ifaces map instead of the compiled-in table).
func TestClassifierDifferentialLarge(t *testing.T) {
	requireBPF(t)
	differentialLarge(t, 7)
}

// TestClassifierDifferentialLargeBudget: the large runs with a chunk
// budget that some address tables exceed (those fields keep their
// tries) and others do not, and IPv6 fields with more than 4 prefix
// lengths in their tries.
func TestClassifierDifferentialLargeBudget(t *testing.T) {
	requireBPF(t)
	withDirBudget(t, 3)
	withFieldLens(t, 4)
	differentialLarge(t, 8)
}

func differentialLarge(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	tables6 := 0
	defer func() {
		// (with fewer lengths allowed, both kinds of IPv6 field were
		// exercised)
		if !t.Failed() && fieldLens < maxLens && (tables6 == 0 || tables6 == 18) {
			t.Errorf("%d of 18 IPv6 fields were tables", tables6)
		}
	}()
	sizes := []int{70, 130, 200, 256, 257, 300, 700, 4100, 9000}
	for round, size := range sizes {
		filler := func(i int) string {
			switch rng.Intn(4) {
			case 0:
				return fmt.Sprintf("-s 198.19.%d.%d/32 -j DROP", 240+i/256%16, i%256)
			case 1:
				return fmt.Sprintf("-d 198.18.%d.%d/32 -j DROP", 128+i/256%64, i%256)
			case 2:
				return fmt.Sprintf("-p udp --dport %d -j DROP", 3000+i%4000)
			default:
				return fmt.Sprintf("-p tcp -s 198.19.%d.0/24 -j ACCEPT", 224+i%16)
			}
		}
		filler6 := func(i int) string {
			switch rng.Intn(4) {
			case 0:
				return fmt.Sprintf("-s 2001:db8:f0::%x/128 -j DROP", i)
			case 1:
				return fmt.Sprintf("-d 2001:db8:e0::%x/127 -j DROP", 2*i)
			case 2:
				return fmt.Sprintf("-p udp --dport %d -j DROP", 3000+i%4000)
			default:
				return fmt.Sprintf("-p tcp -s 2001:db8:%x::/56 -j ACCEPT", 0xd000+i%16)
			}
		}
		var s4, s6 []string
		for i := 0; i < size; i++ {
			if rng.Intn(size/8+1) == 0 {
				s4 = append(s4, randomRule(rng, compat.IPv4))
			} else {
				s4 = append(s4, filler(i))
			}
			// (the IPv6 run, a third as long: both are at most MaxRules)
			if i%3 == 0 {
				if rng.Intn(size/24+1) == 0 {
					s6 = append(s6, randomRule(rng, compat.IPv6))
				} else {
					s6 = append(s6, filler6(i))
				}
			}
		}
		s4 = append(s4, randomRule(rng, compat.IPv4))
		s6 = append(s6, randomRule(rng, compat.IPv6))
		var ifs []Iface
		nif := 1 + round%6
		for i := 0; i < nif; i++ {
			ifs = append(ifs, Iface{Index: uint32(10 + i), Name: fmt.Sprintf("veth%d", i), MAC: []byte{2, 0, 0, 0, 0, byte(i)}})
		}
		ifname := "eth0"
		ifs[round%nif] = Iface{Index: 1, Name: ifname, MAC: testMAC[:]}
		r4, r6 := parseRules(t, compat.IPv4, s4...), parseRules(t, compat.IPv6, s6...)
		tb := newTestbedIfaces(t, r4, r6, ifs)
		if tb.c.Stop4 != nil || tb.c.Stop6 != nil {
			t.Fatalf("run stopped: %v %v", tb.c.Stop4, tb.c.Stop6)
		}
		for i, name := range []string{".data.src6_tab", ".data.dst6_tab"} {
			// the fields with at most fieldLens prefix lengths are tables
			ps := [][]PrefixClass{tb.c.Src6, tb.c.Dst6}[i]
			pfx := make([]netip.Prefix, len(ps))
			for j, p := range ps {
				pfx[j] = p.Prefix
			}
			_, fits := prefixLens(pfx, fieldLens)
			if table := tb.prog.coll.Maps[name].ValueSize() > 8; table != (fits && len(ps) > 1) {
				t.Fatalf("round %d: %s table %v, %d prefixes (%d lengths at most: %v)", round, name, table, len(ps), fieldLens, fits)
			}
			tables6 += boolInt(fits && len(ps) > 1)
		}
		want := map[uint32][2]uint64{}
		for k := 0; k < 400; k++ {
			fam, rules, specs, base := compat.IPv4, r4, s4, uint32(0)
			if k%4 == 3 {
				fam, rules, specs, base = compat.IPv6, r6, s6, 1000
			}
			p := randomPkt(rng, fam)
			if fam == compat.IPv6 && k%8 == 7 {
				// a source or destination of the fillers'
				j := rng.Intn(size)
				p.src = a(fmt.Sprintf("2001:db8:f0::%x", j))
				p.dst = a(fmt.Sprintf("2001:db8:e0::%x", j))
			}
			p.iface = ifname
			if k%10 == 0 {
				p.dstMAC = [6]byte{2, 0, 0, 0, 0, byte(k % 7)} // another host's frame
			}
			got := tb.run(t, &p)
			exp := expect(rules, &p)
			if p.dstMAC != testMAC {
				exp = xdpPass
			}
			if got != exp {
				t.Fatalf("round %d (%d rules, %d ifaces): packet %+v: verdict %d, want %d (rule %d: %s)",
					round, len(specs), nif, p, got, exp, verdict(rules, &p)+1, specs[max(verdict(rules, &p), 0)])
			}
			if got == xdpDrop {
				slot := base + uint32(verdict(rules, &p))
				w := want[slot]
				want[slot] = [2]uint64{w[0] + 1, w[1] + uint64(p.length)}
			}
		}
		for slot, w := range want {
			if pk, by := tb.count(t, slot); pk != w[0] || by != w[1] {
				t.Fatalf("round %d slot %d: counted %d/%d, want %d/%d", round, slot, pk, by, w[0], w[1])
			}
		}
	}
}

// TestClassifierSingleField: runs whose rules test one field only (or
// nothing) take the precomputed first rule of the field's class
// instead of the vector search; verdicts and counters against the
// reference evaluator, both families, small and large runs.
func TestClassifierSingleField(t *testing.T) {
	requireBPF(t)
	rng := rand.New(rand.NewSource(11))
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	neg := func() string { return pick("", "", "! ") }
	kinds := []func(fam compat.Family, i int) string{
		func(fam compat.Family, i int) string {
			if fam == compat.IPv6 {
				return neg() + "-s " + pick("2001:db8::/32", "2001:db8::7", "2001:db8:1::/48", fmt.Sprintf("2001:db8:ff::%x", i))
			}
			return neg() + "-s " + pick("198.18.0.0/15", "198.18.1.0/24", "198.18.1.7", "203.0.113.0/25", fmt.Sprintf("198.19.%d.%d", 240+i/256%16, i%256))
		},
		func(fam compat.Family, i int) string {
			if fam == compat.IPv6 {
				return neg() + "-d " + pick("2001:db8::5", "2001:db8::/64", fmt.Sprintf("2001:db8:ff::%x", i))
			}
			return neg() + "-d " + pick("198.18.1.7", "203.0.113.0/24", fmt.Sprintf("198.19.%d.%d", 240+i/256%16, i%256))
		},
		func(compat.Family, int) string { return neg() + "-i " + pick("eth0", "eth+", "veth1") },
		func(compat.Family, int) string {
			return "-m length " + neg() + "--length " + pick("60:100", "0:80", "200", "1000:2000")
		},
		func(compat.Family, int) string { return "" },
	}
	for round := 0; round < 30; round++ {
		kind := kinds[round%len(kinds)]
		size := []int{1, 5, 40, 200, 1500}[round/len(kinds)%5]
		var s4, s6 []string
		for i := 0; i < size; i++ {
			s4 = append(s4, kind(compat.IPv4, i)+" -j "+pick("DROP", "DROP", "ACCEPT"))
			s6 = append(s6, kind(compat.IPv6, i)+" -j "+pick("DROP", "DROP", "ACCEPT"))
		}
		if round%3 == 0 {
			s6 = nil
		}
		r4, r6 := parseRules(t, compat.IPv4, s4...), parseRules(t, compat.IPv6, s6...)
		tb := newTestbed(t, r4, r6, "eth0")
		// -i and -m length also AND the family's vector when both
		// families have rules; no condition at all: the family's
		// vector alone, or none (rule 1 matches every packet)
		single := true
		switch round % len(kinds) {
		case 2, 3:
			single = s6 == nil
		case 4:
			single = s6 != nil
		}
		if tb.c.Single != single || tb.c.Stop4 != nil || tb.c.Stop6 != nil {
			t.Fatalf("round %d: single %v, stops %v %v", round, tb.c.Single, tb.c.Stop4, tb.c.Stop6)
		}
		want := map[uint32][2]uint64{}
		for k := 0; k < 200; k++ {
			fam, rules, base := compat.IPv4, r4, uint32(0)
			if k%2 == 1 {
				fam, rules, base = compat.IPv6, r6, 1000
			}
			p := randomPkt(rng, fam)
			got := tb.run(t, &p)
			if exp := expect(rules, &p); got != exp {
				t.Fatalf("round %d: packet %+v: verdict %d, want %d (rule %d)", round, p, got, exp, verdict(rules, &p)+1)
			}
			if got == xdpDrop {
				slot := base + uint32(verdict(rules, &p))
				w := want[slot]
				want[slot] = [2]uint64{w[0] + 1, w[1] + uint64(p.length)}
			}
		}
		for slot, w := range want {
			if pk, by := tb.count(t, slot); pk != w[0] || by != w[1] {
				t.Fatalf("round %d slot %d: counted %d/%d, want %d/%d", round, slot, pk, by, w[0], w[1])
			}
		}
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}

var _ = fmt.Sprint

// TestValueTableCovers: the port and length classes cover every 16-bit
// value, so no packet misses in their array maps.
func TestValueTableCovers(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for round := 0; round < 40; round++ {
		var s4 []string
		for i := 0; i < 1+rng.Intn(30); i++ {
			s4 = append(s4, randomRule(rng, compat.IPv4))
		}
		c, err := Compile(parseRules(t, compat.IPv4, s4...), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, vs := range map[string][]ValueClass{"sports": c.Sports, "dports": c.Dports, "lengths": c.Length} {
			if len(vs) == 0 {
				continue
			}
			_, vals := valueTable(vs)
			for x, v := range vals[:valueSlots-1] {
				if int(v) >= len(c.Vecs) {
					t.Fatalf("round %d: %s value %d has no class", round, name, x)
				}
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
