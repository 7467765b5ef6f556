package ipset

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// footprintCase is a set made by footprintScript.
type footprintCase struct {
	typ, opts string
	v6        bool
	n         int
	ext       string // "", "all": timeout, counters, comment, skbinfo on the entries
}

// footprintScript is the restore text of a case: create x with initval
// 0x5eed0001 and n adds, generated from i.
func footprintScript(c footprintCase) string {
	var b strings.Builder
	fam := "inet"
	if c.v6 {
		fam = "inet6"
	}
	fmt.Fprintf(&b, "create x %s family %s initval 0x5eed0001 %s\n", c.typ, fam, c.opts)
	addr := func(i, stride int) string {
		if c.v6 {
			a := netip.MustParseAddr("2001:db8::").As16()
			binary.BigEndian.PutUint64(a[8:], uint64(i*stride))
			return netip.AddrFrom16(a).String()
		}
		return netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, 0xc6120000+uint32(i*stride)))).String()
	}
	host, net := 32, 24
	if c.v6 {
		host, net = 128, 120
	}
	for i := 1; i <= c.n; i++ {
		// nets: every third a host, the others /24 (/120), every
		// seventh nomatch
		nb := net
		if i%3 == 0 {
			nb = host
		}
		n := fmt.Sprintf("%s/%d", addr(i, 256), nb)
		port := fmt.Sprintf("%s:%d", []string{"tcp", "udp"}[i%2], 1+i%1000)
		var e string
		switch c.typ {
		case "hash:ip":
			e = addr(i, 1)
		case "hash:net":
			e = n
		case "hash:ip,port":
			e = addr(i, 1) + "," + port
		case "hash:net,port":
			e = n + "," + port
		case "hash:ip,port,ip":
			e = addr(i, 1) + "," + port + "," + addr(i%50, 3)
		case "hash:ip,port,net":
			e = addr(i, 1) + "," + port + "," + n
		case "hash:net,iface":
			e = n + "," + []string{"eth0", "eth1", "physdev:br0", "veth12"}[i%4]
		}
		if c.typ != "hash:ip" && c.typ != "hash:ip,port" && c.typ != "hash:ip,port,ip" && i%7 == 0 {
			e += " nomatch"
		}
		if c.ext == "all" {
			e += fmt.Sprintf(" timeout %d packets %d bytes %d skbmark 0x%x", 100+i%5, i, 10*i, i)
			if i%4 != 0 {
				e += fmt.Sprintf(" comment \"c%s\"", strings.Repeat("x", i%23))
			}
		}
		fmt.Fprintf(&b, "add x %s\n", e)
	}
	return b.String()
}

// footprintGolden holds what ipset 7.17 (Linux 6.18) prints for each of
// footprintCases, in order: the hashsize and "Size in memory" of
// `ipset list -t x` after `ipset restore` of footprintScript.
var footprintGolden = [][2]int{
	{1024, 216},
	{1024, 256},
	{1024, 616},
	{1024, 28656},
	{2048, 121720},
	{1024, 44320},
	{1024, 224},
	{1024, 288},
	{1024, 864},
	{1024, 46432},
	{2048, 193144},
	{1024, 49144},
	{1024, 456},
	{1024, 504},
	{1024, 936},
	{1024, 34968},
	{2048, 145488},
	{1024, 44416},
	{1024, 1240},
	{1024, 1312},
	{1024, 1960},
	{1024, 52216},
	{2048, 217336},
	{1024, 53520},
	{1024, 216},
	{1024, 264},
	{1024, 696},
	{1024, 34344},
	{2048, 143856},
	{1024, 45328},
	{1024, 232},
	{1024, 304},
	{1024, 952},
	{1024, 51712},
	{2048, 216760},
	{1024, 52688},
	{1024, 456},
	{1024, 504},
	{1024, 936},
	{1024, 35448},
	{2048, 144864},
	{1024, 44560},
	{1024, 1240},
	{1024, 1312},
	{1024, 1960},
	{1024, 53152},
	{2048, 216760},
	{1024, 54048},
	{1024, 208},
	{1024, 264},
	{1024, 768},
	{1024, 39968},
	{2048, 168680},
	{1024, 48648},
	{1024, 232},
	{1024, 336},
	{1024, 1272},
	{1024, 75632},
	{1024, 286856},
	{1024, 60000},
	{1024, 464},
	{1024, 520},
	{1024, 1024},
	{1024, 40840},
	{2048, 168432},
	{1024, 49224},
	{1024, 1256},
	{1024, 1360},
	{1024, 2296},
	{1024, 77488},
	{1024, 287048},
	{1024, 63312},
	{1024, 488},
	{1024, 576},
	{1024, 1368},
	{1024, 63496},
	{2048, 264776},
	{1024, 56160},
	{1024, 1264},
	{1024, 1376},
	{1024, 2384},
	{1024, 81904},
	{1024, 310160},
	{1024, 62904},
	{32768, 1311920},
	{16384, 1395744},
	{2048, 33200},
	{512, 30504},
	{16384, 1860872},
	{16384, 2092552},
	{2048, 52216},
	{512, 45808},
}

func footprintCases() []footprintCase {
	var cs []footprintCase
	for _, t := range []string{"hash:ip", "hash:net", "hash:ip,port", "hash:net,port", "hash:ip,port,ip", "hash:ip,port,net", "hash:net,iface"} {
		for _, v6 := range []bool{false, true} {
			for _, n := range []int{0, 1, 10, 1000, 5000} {
				cs = append(cs, footprintCase{typ: t, v6: v6, n: n})
			}
			cs = append(cs, footprintCase{typ: t, v6: v6, n: 300, opts: "timeout 100 counters comment skbinfo", ext: "all"})
		}
	}
	for _, v6 := range []bool{false, true} {
		cs = append(cs, footprintCase{typ: "hash:ip", v6: v6, n: 50000},
			footprintCase{typ: "hash:net", v6: v6, n: 50000},
			footprintCase{typ: "hash:ip", v6: v6, n: 1000, opts: "hashsize 64 bucketsize 4"},
			footprintCase{typ: "hash:net", v6: v6, n: 1000, opts: "hashsize 128 bucketsize 7"})
	}
	return cs
}

// The header values list and save print for hash sets are those ipset's
// kernel reports for the same members and initval.
func TestFootprintGolden(t *testing.T) {
	cs := footprintCases()
	if len(cs) != len(footprintGolden) {
		t.Fatalf("%d cases, %d golden values", len(cs), len(footprintGolden))
	}
	for i, c := range cs {
		if testing.Short() && c.n > 5000 {
			continue
		}
		st := &State{}
		cmds, err := ParseRestore(footprintScript(c))
		if err != nil {
			t.Fatal(Format(err))
		}
		for _, cmd := range cmds {
			if _, err := st.Exec(cmd); err != nil {
				t.Fatalf("%+v: %s", c, Format(err))
			}
		}
		out, _ := run(t, st, "list -t x")
		var hs, mem, n int
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(l, "Header: "):
				fmt.Sscanf(l[strings.Index(l, "hashsize "):], "hashsize %d", &hs)
			case strings.HasPrefix(l, "Size in memory: "):
				fmt.Sscanf(l, "Size in memory: %d", &mem)
			case strings.HasPrefix(l, "Number of entries: "):
				fmt.Sscanf(l, "Number of entries: %d", &n)
			}
		}
		want := footprintGolden[i]
		if n != c.n || hs != want[0] || mem != want[1] {
			t.Errorf("%+v: hashsize %d, size in memory %d, %d entries; ipset: %d, %d", c, hs, mem, n, want[0], want[1])
		}
	}
}

// Sizes of bitmaps, list:set, comments and hash:net,iface's tuned
// bucket size, as ipset 7.17 (Linux 6.18) prints them after the lines.
func TestFootprintSmall(t *testing.T) {
	many := func(n int, f string) []string {
		var l []string
		for i := 1; i <= n; i++ {
			l = append(l, fmt.Sprintf(f, i))
		}
		return l
	}
	gen := func(create string, n int, lines func(int) []string) []string {
		l := []string{create}
		for i := 1; i <= n; i++ {
			l = append(l, lines(i)...)
		}
		return l
	}
	for _, tc := range []struct {
		lines  []string
		header string
	}{
		{[]string{"create b bitmap:ip range 198.51.100.0/24", "add b 198.51.100.1"}, "range 198.51.100.0-198.51.100.255 120"},
		{[]string{"create b bitmap:ip range 198.51.100.0/28 timeout 100 counters comment skbinfo", "add b 198.51.100.1 comment hello"},
			"range 198.51.100.0-198.51.100.15 timeout 100 counters comment skbinfo 886"},
		{[]string{"create b bitmap:port range 0-1023 counters", "add b 80"}, "range 0-1023 counters 16584"},
		{[]string{"create b bitmap:ip,mac range 198.51.100.0/24 comment", "add b 198.51.100.1,02:00:00:00:00:01 comment x"},
			"range 198.51.100.0-198.51.100.255 comment 4226"},
		{[]string{"create b bitmap:ip range 198.18.0.0/16 netmask 24"}, "range 198.18.0.0-198.18.255.255 netmask 24 120"},
		{[]string{"create b bitmap:ip range 198.18.0.0-198.18.0.100 timeout 5"}, "range 198.18.0.0-198.18.0.100 timeout 5 912"},
		{[]string{"create m1 hash:ip", "create m2 hash:net", "create b list:set", "add b m1", "add b m2"}, "size 8 176"},
		{[]string{"create m1 hash:ip", "create b list:set counters comment timeout 10", "add b m1 comment abcdef"},
			"size 8 timeout 10 counters comment 183"},
		{[]string{"create b hash:ip comment initval 1", "add b 198.51.100.1 comment abc"},
			"family inet hashsize 1024 maxelem 65536 comment bucketsize 12 initval 0x00000001 300"},
		{[]string{"create b hash:ip comment initval 1", "add b 198.51.100.1 comment abc", "add b 198.51.100.2 comment abcdefghij", "add b 198.51.100.3"},
			"family inet hashsize 1024 maxelem 65536 comment bucketsize 12 initval 0x00000001 455"},
		{[]string{"create b hash:ip comment initval 1", "add b 198.51.100.1 comment abc", "add b 198.51.100.2 comment abcdefghij", "add b 198.51.100.3",
			"add -exist b 198.51.100.1 comment xy"}, "family inet hashsize 1024 maxelem 65536 comment bucketsize 12 initval 0x00000001 454"},
		{gen("create b hash:ip netmask 24 initval 0x77 hashsize 64", 300, func(i int) []string {
			return []string{fmt.Sprintf("add -exist b 198.%d.%d.%d", 18+i%2, i%256, i*7%256)}
		}), "family inet hashsize 64 maxelem 65536 netmask 24 bucketsize 12 initval 0x00000077 6016"},
		{gen("create b hash:ip,port initval 0x78 hashsize 64", 200, func(i int) []string {
			a := fmt.Sprintf("add -exist b 198.51.100.%d,", i%250)
			return []string{a + fmt.Sprintf("icmp:%d/%d", i%16, i%3), a + "gre:0", a + fmt.Sprintf("sctp:%d", i)}
		}), "family inet hashsize 128 maxelem 65536 bucketsize 12 initval 0x00000078 16296"},
		{gen("create b hash:ip,port family inet6 initval 0x79 hashsize 64", 200, func(i int) []string {
			return []string{fmt.Sprintf("add b 2001:db8::%d,icmpv6:%d/0", i, i%5), fmt.Sprintf("add b 2001:db8::%d,udplite:%d", i, i)}
		}), "family inet6 hashsize 128 maxelem 65536 bucketsize 12 initval 0x00000079 16720"},
		{gen("create b hash:net,iface initval 0x7a hashsize 64", 150, func(i int) []string {
			l := []string{fmt.Sprintf("add b 198.18.%d.0/%d,physdev:p%d", i, i%32+1, i)}
			if i <= 50 {
				l = append([]string{fmt.Sprintf("add b 0.0.0.0/0,if%d", i)}, l...)
			}
			return l
		}), "family inet hashsize 64 maxelem 65536 bucketsize 50 initval 0x0000007a 10696"},
		{gen("create b hash:ip,port,net initval 0x7b hashsize 64", 200, func(i int) []string {
			return []string{fmt.Sprintf("add b 198.51.100.%d,tcp:%d,198.18.%d.0/%d", i%250, i, i, i%32+1)}
		}), "family inet hashsize 64 maxelem 65536 bucketsize 12 initval 0x0000007b 6848"},
		{append(append([]string{"create b hash:net,iface initval 0x11 hashsize 64 bucketsize 4"},
			many(40, "add b 198.51.100.0/24,if%d")...), many(30, "add b 203.0.113.%d,eth0")...),
			"family inet hashsize 64 maxelem 65536 bucketsize 40 initval 0x00000011 4272"},
	} {
		st := &State{}
		for _, l := range tc.lines {
			if _, err := run(t, st, l); err != "" {
				t.Fatalf("%s: %s", l, err)
			}
		}
		out, _ := run(t, st, "list -t b")
		var header, mem string
		for _, l := range strings.Split(out, "\n") {
			if h, ok := strings.CutPrefix(l, "Header: "); ok {
				header = h
			}
			if m, ok := strings.CutPrefix(l, "Size in memory: "); ok {
				mem = m
			}
		}
		if got := header + " " + mem; got != tc.header {
			t.Errorf("%s:\n got %s\nwant %s", tc.lines[len(tc.lines)-1], got, tc.header)
		}
	}
}

// jhash2 and kernelKey place members in the buckets ipset's kernel
// puts them in: ipset lists a hash set bucket by bucket, each in the
// order its members were added (the orders below are ipset 7.17's on
// Linux 6.18, hashsize 64).
func TestKernelBucketOrder(t *testing.T) {
	for _, tc := range []struct {
		create, listed string
	}{
		{"create o hash:ip hashsize 64 initval 0x1",
			"198.51.100.14 198.51.100.1 198.51.100.7 198.51.100.15 198.51.100.9 198.51.100.11 198.51.100.4 198.51.100.3 " +
				"198.51.100.5 198.51.100.13 198.51.100.2 198.51.100.12 198.51.100.10 198.51.100.16 198.51.100.6 198.51.100.8"},
		{"create o hash:net family inet6 hashsize 64 initval 0x2",
			"2001:db8:11::/48 2001:db8:5::/48 2001:db8:4::/48 2001:db8:8::/48 2001:db8:9::/48 2001:db8:10::/48 " +
				"2001:db8:6::/48 2001:db8:3::/48 2001:db8:12::/48 2001:db8:1::/48 2001:db8:2::/48 2001:db8:7::/48"},
	} {
		st := &State{}
		if _, err := run(t, st, tc.create); err != "" {
			t.Fatal(err)
		}
		want := strings.Fields(tc.listed)
		for _, m := range want {
			if _, err := run(t, st, "add o "+m); err != "" {
				t.Fatal(err)
			}
		}
		s := st.Find("o")
		// The members in the order they were added (by their number).
		added := slices.Clone(s.Entries)
		slices.SortFunc(added, func(a, b *Entry) int { return a.Elem[0].Addr.Compare(b.Elem[0].Addr) })
		bucket := func(en *Entry) uint32 { return jhash2(s.kernelKey(nil, en.Elem), s.InitVal) & 63 }
		slices.SortStableFunc(added, func(a, b *Entry) int { return cmp.Compare(bucket(a), bucket(b)) })
		var got []string
		for _, en := range added {
			got = append(got, s.FormatElem(en.Elem))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: bucket order\n got %s\nwant %s", tc.create, got, want)
		}
	}
}

// The footprint of the 1M hash:net a streamed list counts (keys as
// the kernel gives them: address, then prefix length).
func BenchmarkFootprint1M(b *testing.B) {
	st := &State{}
	if _, err := run(&testing.T{}, st, "create big hash:net maxelem 2000000"); err != "" {
		b.Fatal(err)
	}
	s := st.Find("big")
	keys := make([]byte, 0, 8<<20)
	x := uint32(12345)
	for i := 0; i < 1000000; i++ {
		x = x*1664525 + 1013904223
		keys = binary.BigEndian.AppendUint32(keys, x)
		keys = binary.NativeEndian.AppendUint32(keys, uint32(16+x%17))
	}
	b.ResetTimer()
	for range b.N {
		f := s.NewFootprint()
		for i := 0; i < len(keys); i += 8 {
			f.AddKey(keys[i : i+8])
		}
		f.Result()
	}
}

// hash:net,iface members counted one by one: the bucket size tuning
// looks at a bucket's members only when it is full.
func BenchmarkFootprintNetIface50k(b *testing.B) {
	st := &State{}
	if _, err := run(&testing.T{}, st, "create n hash:net,iface"); err != "" {
		b.Fatal(err)
	}
	s := st.Find("n")
	var ens []*Entry
	for i := range 50000 {
		a := netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
		ens = append(ens, &Entry{Elem: Elem{{Addr: a, Bits: 32}, {Iface: "eth0"}}})
	}
	b.ResetTimer()
	for range b.N {
		f := s.NewFootprint()
		for _, en := range ens {
			f.AddEntry(en)
		}
		f.Result()
	}
}
