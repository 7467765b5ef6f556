package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/nftables"

	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// shardBlocklist is a restore file of n hash:net entries of set name
// (maxelem 200000: sharded here): networks of several sizes, some
// nested in others, some nomatch, some with comments.
func shardBlocklist(name string, n int, create bool) string {
	var b strings.Builder
	if create {
		fmt.Fprintf(&b, "create %s hash:net family inet hashsize 4096 maxelem 200000 comment\n", name)
	}
	for i := range n {
		bits := []int{16, 24, 28, 32, 24, 30}[i%6]
		a := [4]int{10, 100 + i%7, (i * 37) % 256, (i * 91) % 256}
		extra := ""
		switch {
		case i%13 == 0 && bits > 16:
			extra = " nomatch"
		case i%5 == 0:
			extra = fmt.Sprintf(" comment \"c%d\"", i%9)
		}
		fmt.Fprintf(&b, "add %s %d.%d.%d.%d/%d%s\n", name, a[0], a[1], a[2], a[3], bits, extra)
	}
	return b.String()
}

// newShardPair is newIpsetPair, initval in xml output aside.
func newShardPair(t *testing.T, tag string) *ipsetPair {
	p := newIpsetPair(t, tag)
	cmp := p.compare
	initval := regexp.MustCompile(`<initval>0x[0-9a-f]+</initval>`)
	p.compare = func(s string) string { return cmp(initval.ReplaceAllString(s, "<initval>X</initval>")) }
	return p
}

// shardLayout returns the entry count our sharded set keeps, and how
// many shard sets it has.
func (p *ipsetPair) shardLayout(name string) (count, shards int) {
	p.t.Helper()
	r := p.me.Run("", "nft", "list", "sets")
	// Shards are made with their first entry: with the count set, the
	// header gives their number and no shard set beyond it may exist;
	// without it (copies dropped) the shard sets left are counted.
	made := strings.Count(r.Stdout, "set "+ipset.ShardPrefix+name+".")
	header := -1
	if i := strings.Index(r.Stdout, "set "+ipset.LookupSetName(name)+" {"); i >= 0 {
		block, _, _ := strings.Cut(r.Stdout[i:], "}")
		if m := regexp.MustCompile(` shards ([0-9]+)`).FindStringSubmatch(block); m != nil {
			header, _ = strconv.Atoi(m[1])
		}
	}
	r = p.me.Run("", "nft", "list", "set", "ip", "xdptables", ipset.CountSetName(name))
	if r.RC != 0 {
		r = p.me.Run("", "nft", "list", "set", "ip6", "xdptables", ipset.CountSetName(name))
	}
	m := regexp.MustCompile(`elements = \{ 0x([0-9a-f]+) \}`).FindStringSubmatch(r.Stdout)
	if m == nil {
		return -1, made
	}
	if made > header {
		return -1, made
	}
	c, _ := strconv.ParseUint(m[1], 16, 32)
	return int(c), header
}

// entries counts the members ipset save prints for set name.
func (p *ipsetPair) entries(name string) int {
	r := p.me.Run("", p.ours["ipset"], "save", name)
	return strings.Count(r.Stdout, "\nadd ")
}

// Sets of a large maxelem keep their entries in shards: every command
// gives ipset's results on them, the count stays the number of
// entries, and swap and restore work between sharded and unsharded
// sets.
func TestIpsetSharded(t *testing.T) {
	p := newShardPair(t, "ish5")
	check := func(name string, shards ...int) {
		t.Helper()
		want := 32
		if len(shards) > 0 {
			want = shards[0]
		}
		n, k := p.shardLayout(name)
		if k != want {
			t.Errorf("set %s: %d shard sets, want %d", name, k, want)
		}
		if want := p.entries(name); n != want {
			t.Errorf("set %s: count %d, %d entries", name, n, want)
		}
	}
	p.run(shardBlocklist("bl", 1500, true), "ipset -exist restore")
	check("bl")
	for _, l := range []string{
		"ipset -s save", "ipset list bl", "ipset save bl", "ipset -t list bl", "ipset -o xml list bl",
		"ipset -o xml -t list", "ipset -n list",
		"ipset add bl 10.200.0.0/16", "ipset add bl 10.200.0.0/16", "ipset -exist add bl 10.200.0.0/16",
		"ipset add bl 10.200.3.0/24", "ipset add bl 10.200.3.128/25 nomatch", "ipset test bl 10.200.3.200",
		"ipset test bl 10.200.3.1", "ipset test bl 10.200.9.9", "ipset test bl 10.201.0.1",
		"ipset test bl 10.200.0.0/16", "ipset add bl 10.210.0.0-10.210.0.9", "ipset del bl 10.210.0.8/31",
		"ipset del bl 10.200.3.0/24", "ipset del bl 10.200.3.0/24", "ipset -exist del bl 10.200.3.0/24",
		"ipset del bl 10.200.0.0/16", "ipset add bl 10.100.0.0/8", "ipset del bl 10.100.0.0/8",
		"ipset add bl 10.220.0.0/16 comment x", "ipset -exist add bl 10.220.0.0/16 comment y",
	} {
		p.run("", l)
	}
	check("bl")
	p.run("", "ipset -s save")

	// Restore into the existing set (read, then changed), and a flush
	// and refill in one file.
	p.run(shardBlocklist("bl", 1600, false)[len(shardBlocklist("bl", 1500, false)):]+"add bl 10.230.0.0/16\n", "ipset -exist restore")
	check("bl")
	p.run("", "ipset -t list bl")
	p.run("flush bl\n"+shardBlocklist("bl", 700, false), "ipset -exist restore")
	check("bl")
	p.run("", "ipset -s save")
	p.run("", "ipset -t list bl")

	// swap: with a sharded set of the same header (elements move), with
	// an unsharded set (both made again), in a restore file; with a
	// rule using the set.
	p.run(shardBlocklist("bl2", 300, true), "ipset -exist restore")
	p.run("", "iptables -A INPUT -m set --match-set bl src -j DROP")
	p.run("", "ipset swap bl bl2")
	check("bl")
	check("bl2")
	p.run("", "ipset create small hash:net comment")
	p.run("", "ipset add small 10.9.0.0/16")
	p.run("", "ipset swap small bl")
	p.run("", "ipset -s save")
	p.run("", "iptables -S INPUT")
	p.run("", "ipset test bl 10.9.1.1")
	p.run("", "ipset swap small bl")
	check("bl")
	p.run("", "ipset -s save")
	p.run("create tmp hash:net family inet hashsize 4096 maxelem 200000 comment\nadd tmp 198.18.0.0/16\nswap tmp bl\ndestroy tmp\n", "ipset restore")
	check("bl")
	p.run(strings.Replace(shardBlocklist("tmp", 50, true), "maxelem 200000", "maxelem 1000", 1)+"swap tmp bl\ndestroy tmp\n", "ipset -exist restore")
	p.run("", "ipset -s save")
	p.run("", "iptables -S INPUT")

	// rename, flush, destroy
	p.run("", "ipset -t list")
	p.run("", "ipset rename bl2 bl3")
	check("bl3")
	p.run("", "ipset -s save")
	p.run("", "ipset flush bl3")
	check("bl3")
	p.run("", "ipset -s list bl3")
	p.run("", "ipset destroy bl3")
	p.run("", "ipset destroy bl")
	p.run("", "iptables -F INPUT")
	p.run("", "ipset destroy bl")
	p.run("", "ipset -s save")

	// Other net types (the general path), and inet6.
	for _, l := range []string{
		"ipset create np hash:net,port maxelem 100000", "ipset add np 10.0.0.0/24,tcp:80", "ipset add np 10.0.0.0/16,udp:53",
		"ipset add np 10.0.0.0/16,tcp:80", "ipset add np 10.0.1.0/24,tcp:80 nomatch", "ipset test np 10.0.1.1,tcp:80",
		"ipset test np 10.0.0.1,tcp:80", "ipset del np 10.0.0.0/24,tcp:80", "ipset test np 10.0.0.1,tcp:80", "ipset -s save",
		"ipset create n6 hash:net family inet6 maxelem 100000", "ipset add n6 2001:db8::/32", "ipset add n6 2001:db8:1::/48",
		"ipset add n6 2001:db8:1:2::/64 nomatch", "ipset test n6 2001:db8:1:2::1", "ipset test n6 2001:db8:1::1",
		"ipset del n6 2001:db8::/32", "ipset test n6 2001:db8:2::1", "ipset -s save", "ipset -s list n6",
	} {
		p.run("", l)
	}
	check("np", 16)
	check("n6", 16)
	p.run("", "ipset destroy")
	if r := p.me.Run("", "nft", "list", "sets"); strings.Contains(r.Stdout, ipset.ShardPrefix) || strings.Contains(r.Stdout, ipset.CountPrefix) {
		t.Errorf("sets left after destroy:\n%s", r.Stdout)
	}
}

// maxelem holds for a sharded set as a whole: single adds to a full
// set and restores are refused as they are on an unsharded set that
// the kernel's set size limits (ipset's own answers near maxelem
// follow its hash resizing: not compared).
func TestIpsetShardedFull(t *testing.T) {
	ns := netns.New(t, "ish5f")
	bin := filepath.Join(LinkDir(t), "ipset")
	fill := func(name string, max, n int) {
		var b strings.Builder
		fmt.Fprintf(&b, "create %s hash:net maxelem %d\n", name, max)
		for i := range n {
			fmt.Fprintf(&b, "add %s 10.%d.%d.%d\n", name, i>>16, i>>8&255, i&255)
		}
		if r := ns.Run(b.String(), bin, "restore"); r.RC != 0 {
			t.Fatalf("restore: %+v", r)
		}
	}
	// f is sharded, u (maxelem 65536) is not; both hold maxelem - 1
	// entries.
	fill("f", 70000, 69999)
	fill("u", 65536, 65535)
	p := &ipsetPair{t: t, me: ns, ours: map[string]string{"ipset": bin}}
	if n, k := p.shardLayout("f"); n != 69999 || k != 16 {
		t.Errorf("count %d, %d shards; want 69999, 16", n, k)
	}
	for _, l := range []string{
		"add S 10.200.0.0/16", "add S 10.201.0.0/16", "add S 10.200.0.1", "-exist add S 10.0.0.1",
		"add S 10.202.0.0-10.202.0.3", "del S 10.0.0.1", "add S 10.202.0.0-10.202.0.3", "add S 10.201.0.0/16",
		"del S 10.200.0.0/16", "add S 10.200.0.5", "del S 10.0.0.2", "del S 10.0.0.3", "add S 10.0.0.0/24",
		"add S 10.0.0.0/23", "add S 10.0.0.0/22", "test S 10.0.0.2", "del S 10.0.0.0/24", "add S 10.210.0.0/16 nomatch",
		"add S 10.211.0.0/16",
	} {
		var rs [2]netns.Result
		for i, set := range []string{"f", "u"} {
			rs[i] = ns.Run("", append([]string{bin}, strings.Fields(strings.Replace(l, "S", set, 1))...)...)
			rs[i].Stdout = strings.ReplaceAll(rs[i].Stdout, " "+set+".", " S.")
			rs[i].Stderr = strings.ReplaceAll(rs[i].Stderr, " "+set+".", " S.")
		}
		if rs[0] != rs[1] {
			t.Errorf("%s: sharded %+v, unsharded %+v", l, rs[0], rs[1])
		}
	}
	for i, set := range []string{"f", "u"} {
		r := ns.Run(fmt.Sprintf("add %s 10.220.0.0/16\nadd %s 10.221.0.0/16\n", set, set), bin, "restore")
		if r.RC == 0 || !strings.Contains(r.Stderr, "Hash is full") {
			t.Errorf("restore past maxelem into %s: %+v", set, r)
		}
		if i == 0 {
			if n, _ := p.shardLayout("f"); n != p.entries("f") || n != 70000 {
				t.Errorf("count %d, %d entries, want 70000", n, p.entries("f"))
			}
		}
	}
}

// A sharded set with timeouts: entries are counted from the dump (the
// stored count may include expired ones).
func TestIpsetShardedTimeout(t *testing.T) {
	ns := netns.New(t, "ish5t")
	bin := filepath.Join(LinkDir(t), "ipset")
	p := &ipsetPair{t: t, me: ns, ours: map[string]string{"ipset": bin}}
	for _, l := range []string{
		"create tm hash:net timeout 1000 maxelem 100000 comment", "add tm 10.1.0.0/16 timeout 500",
		"add tm 10.2.0.0/16", "add tm 10.2.1.0/24 timeout 20 comment x", "add tm 10.3.0.0/16 timeout 0",
		"-exist add tm 10.1.0.0/16 timeout 600", "del tm 10.3.0.0/16",
	} {
		if r := ns.Run("", append([]string{bin}, strings.Fields(l)...)...); r.RC != 0 {
			t.Fatalf("%s: %+v", l, r)
		}
	}
	if r := ns.Run("", bin, "-t", "list", "tm"); !strings.Contains(r.Stdout, "Number of entries: 3\n") {
		t.Errorf("-t list: %+v", r)
	}
	r := ns.Run("", bin, "list", "tm")
	for _, want := range []string{`Number of entries: 3\n`, `\n10\.2\.1\.0/24 timeout 1\d comment "x"\n`, `\n10\.1\.0\.0/16 timeout (599|600)\n`} {
		if !regexp.MustCompile(want).MatchString(r.Stdout) {
			t.Errorf("list lacks %q: %+v", want, r)
		}
	}
	if n, k := p.shardLayout("tm"); n != 3 || k != 16 {
		t.Errorf("count %d, %d shards; want 3, 16", n, k)
	}
	if r := ns.Run("", bin, "test", "tm", "10.2.1.1"); r.RC != 0 {
		t.Errorf("test: %+v", r)
	}
}

// A set stored by an earlier build, with its entries in one set
// (ipset-entries.NAME) whatever its maxelem, is read and changed in
// that layout; swap with a new (sharded) set makes both again.
func TestIpsetShardOldLayout(t *testing.T) {
	p := newShardPair(t, "ish5o")
	file := shardBlocklist("old", 400, true)
	p.ref.Run(file, "ipset", "-exist", "restore")

	// The old layout, written straight to the kernel.
	p.writeUnsharded(file, "old", "a new set of maxelem 200000 is not sharded")
	layout := func() {
		t.Helper()
		r := p.me.Run("", "nft", "list", "sets", "ip")
		if !strings.Contains(r.Stdout, "set "+ipset.EntriesSetName("old")+" ") || strings.Contains(r.Stdout, ipset.ShardPrefix+"old.") {
			t.Errorf("not the old layout:\n%s", r.Stdout)
		}
	}
	for _, l := range []string{
		"ipset -s save", "ipset list old", "ipset -o xml list old",
		"ipset add old 10.200.0.0/16", "ipset add old 10.200.3.0/24", "ipset test old 10.200.3.1",
		"ipset del old 10.200.3.0/24", "ipset add old 10.100.0.0/8", "ipset del old 10.100.0.0/8",
		"ipset -s save",
	} {
		p.run("", l)
	}
	p.run("add old 10.240.0.0/16\n", "ipset restore")
	p.run("flush old\n"+shardBlocklist("old", 100, false), "ipset -exist restore")
	layout()
	p.run("", "ipset -s save")

	// swap with a new set: the headers differ, both are made again.
	p.run(shardBlocklist("new", 50, true), "ipset -exist restore")
	p.run("", "ipset swap new old")
	p.run("", "ipset -s save")
	if n, k := p.shardLayout("old"); k != 32 || n != p.entries("old") {
		t.Errorf("old after swap: count %d, %d shards", n, k)
	}
	if r := p.me.Run("", "nft", "list", "sets", "ip"); !strings.Contains(r.Stdout, "set "+ipset.EntriesSetName("new")+" ") {
		t.Errorf("new after swap is not in the old layout:\n%s", r.Stdout)
	}
	p.run("", "ipset destroy")
	p.run("", "ipset -s save")
}

// save and list right after a large restore into a sharded set, while
// the kernel may still be resizing the shards' hash tables (a dump then
// gives some elements twice and is read again): every member once, and
// no error although save and list print as they read.
func TestIpsetShardedSaveAfterRestore(t *testing.T) {
	ns := netns.New(t, "ish5s")
	bin := filepath.Join(LinkDir(t), "ipset")
	const n = 200000
	var b strings.Builder
	b.WriteString("create big hash:net maxelem 400000\n")
	for i := range n {
		fmt.Fprintf(&b, "add big 10.%d.%d.%d\n", i>>16, i>>8&255, i&255)
	}
	file := b.String()
	for round := range 2 {
		// the second round flushes and refills: the shards shrink and
		// grow again
		if round == 1 {
			file = "flush big\n" + file[strings.Index(file, "\n")+1:]
		}
		if r := ns.Run(file, bin, "-exist", "restore"); r.RC != 0 {
			t.Fatalf("restore: %+v", r)
		}
		for _, args := range [][]string{{"save", "big"}, {"list", "big"}, {"-o", "xml", "list", "big"}} {
			r := ns.Run("", append([]string{bin}, args...)...)
			seen := map[string]bool{}
			for _, l := range strings.Split(r.Stdout, "\n") {
				if strings.HasPrefix(l, "add big ") || strings.HasPrefix(l, "10.") || strings.HasPrefix(l, "<member>") {
					if seen[l] {
						t.Fatalf("round %d, %v: %q twice", round, args, l)
					}
					seen[l] = true
				}
			}
			if r.RC != 0 || len(seen) != n {
				t.Errorf("round %d, %v: rc %d, %d members, stderr %q", round, args, r.RC, len(seen), r.Stderr)
			}
		}
	}
}

// The shards a restore creates are sized after the entries they get
// (ipset.Set.ShardSize), so that the kernel does not grow their hash
// tables while the restore's transaction fills them; the size never
// limits the set: a restore or a single add that fills a shard
// re-creates it without a size, with its elements, and every command
// gives ipset's results.
func TestIpsetShardSizes(t *testing.T) {
	p := newShardPair(t, "ish5z")
	sized := func(set string) bool {
		t.Helper()
		r := p.me.Run("", "nft", "list", "set", "ip", "xdptables", ipset.ShardSetName(set, 0))
		if r.RC != 0 {
			t.Fatalf("nft list set: %+v", r)
		}
		return regexp.MustCompile(`\n\s*size \d+\n`).MatchString(r.Stdout)
	}
	p.run(shardBlocklist("sz", 300, true), "ipset -exist restore")
	if !sized("sz") {
		t.Errorf("a restore's shard has no size")
	}
	// 12000 entries more in a second restore: every shard fills.
	var more strings.Builder
	for i := range 12000 {
		fmt.Fprintf(&more, "add sz 10.%d.%d.0/24 comment \"m%d\"\n", 150+i/256, i%256, i%7)
	}
	p.run(more.String(), "ipset -exist restore")
	if sized("sz") {
		t.Errorf("a full shard kept its size")
	}
	p.run("", "ipset -s save sz")
	p.run("", "ipset test sz 10.160.3.1")

	// Single adds, all to shard 0 of a second set, past its size.
	p.run(shardBlocklist("sz2", 300, true), "ipset -exist restore")
	hdr := &ipset.Set{Name: "sz2", Type: ipset.LookupType("hash:net"), Shards: 32}
	added := 0
	for a := 0; added < 300 && a < 1<<16; a++ {
		key := []byte{10, 240, byte(a >> 8), byte(a), 0, 0, 0, 0}
		if hdr.ShardOf(key) != 0 {
			continue
		}
		p.run("", fmt.Sprintf("ipset add sz2 10.240.%d.%d", a>>8, a&255))
		added++
	}
	if sized("sz2") {
		t.Errorf("shard 0 kept its size after %d single adds", added)
	}
	n, k := p.shardLayout("sz2")
	if want := p.entries("sz2"); n != want || k != 32 {
		t.Errorf("set sz2: count %d, %d entries, %d shards", n, want, k)
	}
	p.run("", "ipset -s save sz2")
	p.run("", "ipset test sz2 10.240.0.1")
	p.run("", "ipset destroy")
}

// writeUnsharded writes set name of the restore file straight to our
// side's kernel as an earlier build stored it: one set whatever its
// maxelem (no shards, no shard copies). notSharded is the failure when
// this build would not have sharded it, which would make the test moot.
func (p *ipsetPair) writeUnsharded(file, name, notSharded string) {
	t := p.t
	t.Helper()
	st := &ipset.State{}
	if err := ipset.EachRestoreCommand(file, func(c *ipset.Command) *ipset.Error {
		c.Opts.Exist = true
		_, err := st.Exec(c)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s := st.Find(name)
	if !s.Sharded() {
		t.Fatal(notSharded)
	}
	s.Shards = 0
	f, err := os.Open("/run/netns/" + p.me.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	conn, err := kernel.Open(kernel.WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	b := kernel.NewBatch()
	b.AddTable(kernel.IPv4)
	sets := s.NftSetsNoIDs()
	if s.HasNomatch() {
		sets = append(sets, s.Nomatch(false))
	}
	for _, ns := range sets {
		set := ns.Set
		b.AddSet(kernel.IPv4, &set, true)
		var els []nftables.SetElement
		for _, e := range ns.Elems {
			els = append(els, e.Parts...)
		}
		if len(els) > 0 {
			b.AddElements(kernel.IPv4, set.Name, set.HasTimeout, els, false)
		}
	}
	gen, err := conn.GenID()
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Commit(b, gen); err != nil {
		t.Fatal(err)
	}
}
