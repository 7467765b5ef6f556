package integration

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/ipset"
)

// plainBlocklist is a restore file of n hash:ip entries of set name
// (maxelem 500000: shard copies here), some with comments.
func plainBlocklist(name string, n int, create bool) string {
	var b strings.Builder
	if create {
		fmt.Fprintf(&b, "create %s hash:ip family inet hashsize 4096 maxelem 500000 comment\n", name)
	}
	for i := range n {
		extra := ""
		if i%5 == 0 {
			extra = fmt.Sprintf(" comment \"c%d\"", i%9)
		}
		fmt.Fprintf(&b, "add %s 10.%d.%d.%d%s\n", name, 100+i%7, (i*37)%256, (i*91)%256, extra)
	}
	return b.String()
}

// checkCopies checks that our set name keeps shard copies (shards sets
// and a count equal to its entries), or (shards 0) has none.
func (p *ipsetPair) checkCopies(name string, shards int) {
	p.t.Helper()
	n, k := p.shardLayout(name)
	if k != shards {
		p.t.Errorf("set %s: %d shard sets, want %d", name, k, shards)
	}
	switch {
	case shards == 0 && n != -1:
		p.t.Errorf("set %s: a count set (%d) without shards", name, n)
	case shards > 0 && n != p.entries(name):
		p.t.Errorf("set %s: count %d, %d entries", name, n, p.entries(name))
	}
}

// Plain hash sets of a large maxelem keep a copy of their entries in
// shards, which list and save read: every command gives ipset's results
// on them; swap keeps each name's layout; a -j SET rule on the set
// drops the copies in its own transaction.
func TestIpsetShardCopies(t *testing.T) {
	p := newShardPair(t, "ish21")
	p.run(plainBlocklist("bl", 1500, true), "ipset -exist restore")
	p.checkCopies("bl", 64)
	for _, l := range []string{
		"ipset -s save", "ipset list bl", "ipset save bl", "ipset -t list bl", "ipset -o xml list bl",
		"ipset -o xml -t list", "ipset -n list", "ipset -s list bl",
		"ipset add bl 10.200.0.1", "ipset add bl 10.200.0.1", "ipset -exist add bl 10.200.0.1",
		"ipset -exist add bl 10.200.0.1 comment x", "ipset add bl 10.200.0.2 comment y",
		"ipset -exist add bl 10.200.0.2 comment z", "ipset test bl 10.200.0.2", "ipset test bl 10.201.0.1",
		"ipset add bl 10.210.0.0-10.210.0.9", "ipset add bl 10.210.1.0/30", "ipset del bl 10.210.0.8/31",
		"ipset del bl 10.200.0.1", "ipset del bl 10.200.0.1", "ipset -exist del bl 10.200.0.1",
		"ipset add bl 10.210.0.5-10.210.0.12", "ipset -exist add bl 10.210.0.5-10.210.0.12",
		"ipset del bl 10.210.0.0-10.210.0.3", "ipset test bl 10.210.0.5",
	} {
		p.run("", l)
	}
	p.checkCopies("bl", 64)
	p.run("", "ipset -s save")

	// Restore into the existing set (read, then changed), and a flush
	// and refill in one file.
	p.run(plainBlocklist("bl", 1600, false)[len(plainBlocklist("bl", 1500, false)):]+"add bl 10.230.0.1\n", "ipset -exist restore")
	p.checkCopies("bl", 64)
	p.run("", "ipset -t list bl")
	p.run("flush bl\n"+plainBlocklist("bl", 700, false), "ipset -exist restore")
	p.checkCopies("bl", 64)
	p.run("", "ipset -s save")

	// swap: with a set of the same header (elements move), with a set
	// without copies (each name keeps its layout), in a restore file;
	// with a rule using the set.
	p.run(plainBlocklist("bl2", 300, true), "ipset -exist restore")
	p.run("", "iptables -A INPUT -m set --match-set bl src -j DROP")
	p.run("", "ipset swap bl bl2")
	p.checkCopies("bl", 64)
	p.checkCopies("bl2", 64)
	p.run("", "ipset create small hash:ip comment")
	p.run("", "ipset add small 10.9.0.1")
	p.run("", "ipset swap small bl")
	p.checkCopies("bl", 64)
	p.checkCopies("small", 0)
	p.run("", "ipset -s save")
	p.run("", "iptables -S INPUT")
	p.run("", "ipset test bl 10.9.0.1")
	p.run("", "ipset add bl 10.9.0.2")
	p.run("", "ipset del small 10.100.0.0")
	p.run("", "ipset swap small bl")
	p.checkCopies("bl", 64)
	p.run("", "ipset -s save")
	p.run("create tmp hash:ip family inet hashsize 4096 maxelem 500000 comment\nadd tmp 198.18.0.1\nswap tmp bl\ndestroy tmp\n", "ipset restore")
	p.checkCopies("bl", 64)
	p.run(strings.Replace(plainBlocklist("tmp", 50, true), "maxelem 500000", "maxelem 1000", 1)+"swap tmp bl\ndestroy tmp\n", "ipset -exist restore")
	p.checkCopies("bl", 64)
	p.run("", "ipset -s save")
	p.run("", "iptables -S INPUT")

	// rename, flush, destroy
	p.run("", "ipset rename bl2 bl3")
	p.checkCopies("bl3", 64)
	p.run("", "ipset -s save")
	p.run("", "ipset flush bl3")
	p.checkCopies("bl3", 64)
	p.run("", "ipset -s list bl3")
	p.run("", "ipset add bl3 10.1.1.1")
	p.checkCopies("bl3", 64)

	// -j SET on the set: the copies go with the rule's transaction, and
	// stay gone when the rule goes.
	p.run("", "iptables -A INPUT -p udp -j SET --add-set bl3 src --del-set bl dst")
	p.checkCopies("bl3", 0)
	p.checkCopies("bl", 0)
	for _, l := range []string{
		"ipset -s save", "ipset -t list", "ipset add bl3 10.1.1.2", "ipset del bl3 10.1.1.1", "ipset test bl3 10.1.1.2",
		"ipset add bl 10.1.1.3", "iptables -S INPUT", "iptables -D INPUT 2", "ipset -s save", "ipset -s list bl3",
	} {
		p.run("", l)
	}
	p.checkCopies("bl3", 0)
	// swap of a name without copies (once written by a rule) and one
	// with them: each name keeps its layout.
	p.run(plainBlocklist("bl4", 200, true), "ipset -exist restore")
	p.run("", "ipset swap bl3 bl4")
	p.checkCopies("bl3", 0)
	p.checkCopies("bl4", 64)
	p.run("", "ipset -s save")
	p.run("", "ipset destroy bl3")
	p.run("", "ipset destroy bl")
	p.run("", "iptables -F INPUT")
	p.run("", "ipset destroy bl")
	p.run("", "ipset -s save")

	// Other plain hash types, and inet6; timeout and counters keep one
	// set.
	for _, l := range []string{
		"ipset create ipp hash:ip,port maxelem 300000", "ipset add ipp 10.0.0.1,tcp:80", "ipset add ipp 10.0.0.1,udp:53-55",
		"ipset test ipp 10.0.0.1,udp:54", "ipset del ipp 10.0.0.1,udp:54", "ipset -s save ipp",
		"ipset create ipi hash:ip,port,ip maxelem 300000", "ipset add ipi 10.0.0.1,tcp:22,10.0.0.2", "ipset -s list ipi",
		"ipset create i6 hash:ip family inet6 maxelem 300000", "ipset add i6 2001:db8::1", "ipset add i6 2001:db8::2",
		"ipset del i6 2001:db8::1", "ipset test i6 2001:db8::2", "ipset -s list i6",
		"ipset create tmo hash:ip timeout 100 maxelem 300000", "ipset create ctr hash:ip counters maxelem 300000",
		"ipset create small2 hash:ip maxelem 262144",
	} {
		p.run("", l)
	}
	// (types the reference kernel here does not have: ours alone)
	for _, l := range []string{
		"create ipm hash:ip,mark maxelem 300000", "add ipm 10.0.0.1,0x10", "add ipm 10.0.0.1,0x20", "del ipm 10.0.0.1,0x10",
		"create mac hash:mac maxelem 300000", "add mac 02:00:00:00:00:01", "add mac 02:00:00:00:00:02", "del mac 02:00:00:00:00:01",
	} {
		if r := p.me.Run("", append([]string{p.ours["ipset"]}, strings.Fields(l)...)...); r.RC != 0 {
			t.Errorf("%s: %+v", l, r)
		}
	}
	if r := p.me.Run("", p.ours["ipset"], "save", "ipm"); !strings.Contains(r.Stdout, "\nadd ipm 10.0.0.1,0x00000020\n") || strings.Count(r.Stdout, "\nadd ") != 1 {
		t.Errorf("save ipm: %+v", r)
	}
	if r := p.me.Run("", p.ours["ipset"], "list", "mac"); !strings.HasSuffix(r.Stdout, "Number of entries: 1\nMembers:\n02:00:00:00:00:02\n") {
		t.Errorf("list mac: %+v", r)
	}
	for _, name := range []string{"ipp", "ipm", "mac", "ipi", "i6"} {
		p.checkCopies(name, 64)
	}
	for _, name := range []string{"tmo", "ctr", "small2"} {
		p.checkCopies(name, 0)
	}
	p.run("", "ipset destroy")
	if r := p.me.Run("", "nft", "list", "sets"); strings.Contains(r.Stdout, ipset.ShardPrefix) || strings.Contains(r.Stdout, ipset.CountPrefix) {
		t.Errorf("sets left after destroy:\n%s", r.Stdout)
	}
}

// maxelem of a set with shard copies: the lookup set's size refuses the
// entry past it, for single adds and restores, which change nothing
// then. (ipset's own answers near maxelem follow its hash resizing: it
// may take an entry or two more. Not compared.)
func TestIpsetShardCopiesFull(t *testing.T) {
	ns := netns.New(t, "ish21f")
	bin := filepath.Join(LinkDir(t), "ipset")
	p := &ipsetPair{t: t, me: ns, ours: map[string]string{"ipset": bin}}
	const max = 262200
	var b strings.Builder
	fmt.Fprintf(&b, "create f hash:ip maxelem %d\n", max)
	for i := range max - 1 {
		fmt.Fprintf(&b, "add f 10.%d.%d.%d\n", i>>16, i>>8&255, i&255)
	}
	if r := ns.Run(b.String(), bin, "restore"); r.RC != 0 {
		t.Fatalf("restore: %+v", r)
	}
	p.checkCopies("f", 64)
	const full = "ipset v7.17: Hash is full, cannot add more elements\n"
	for _, c := range []struct {
		line   string
		rc     int
		stderr string
	}{
		{"add f 10.200.0.1", 0, ""},
		{"add f 10.200.0.2", 1, full},
		{"-exist add f 10.0.0.1", 0, ""},
		{"test f 10.200.0.2", 1, ""},
		{"del f 10.0.0.1", 0, ""},
		{"add f 10.200.0.2", 0, ""},
		{"add f 10.200.0.3", 1, full},
		{"add f 10.200.0.4-10.200.0.5", 1, full},
		{"del f 10.0.0.2", 0, ""},
		// ipset adds the first and is full at the second (h49's
		// 5fba35b: so do a plain hash set and one with copies)
		{"add f 10.200.0.4-10.200.0.5", 1, full},
		{"test f 10.200.0.4", 0, ""},
		{"test f 10.200.0.5", 1, ""},
		{"add f 10.200.0.4", 1, "ipset v7.17: Element cannot be added to the set: it's already added\n"},
	} {
		r := ns.Run("", append([]string{bin}, strings.Fields(c.line)...)...)
		if r.RC != c.rc || (c.stderr != "" && r.Stderr != c.stderr) {
			t.Errorf("%s: %+v, want rc %d %q", c.line, r, c.rc, c.stderr)
		}
	}
	p.checkCopies("f", 64)
	r := ns.Run("del f 10.0.0.3\nadd f 10.220.0.1\nadd f 10.220.0.2\n", bin, "restore")
	if r.RC == 0 || !strings.Contains(r.Stderr, "Hash is full") {
		t.Errorf("restore past maxelem: %+v", r)
	}
	p.checkCopies("f", 64)
	if n := p.entries("f"); n != max {
		t.Errorf("%d entries after a refused restore, want %d", n, max)
	}
}

// A -j SET rule writes to the lookup set of a set with shard copies:
// the copies are gone with the rule's transaction, so that what the
// packet path adds and deletes is what list and save print, as ipset's.
func TestIpsetShardCopiesSetTarget(t *testing.T) {
	tools := pktTools(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	ipsets := map[string]string{"ref": "ipset", "ours": filepath.Join(LinkDir(t), "ipset")}
	saved := map[string][]string{}
	for _, label := range []string{"ref", "ours"} {
		tool, ipset := tools[label], ipsets[label]
		p := newPktPair(t, "h21j"+label[:1])
		for _, c := range []string{
			"create seen hash:ip maxelem 300000", "add seen 10.0.0.1",
			"create gone hash:ip,port maxelem 300000", "add gone 198.18.0.1,udp:53", "add gone 10.0.0.1,tcp:80",
		} {
			mustRun(t, p.server, append([]string{ipset}, strings.Fields(c)...)...)
		}
		mustRun(t, p.server, tool, "-A", "INPUT", "-p", "udp", "-j", "SET", "--add-set", "seen", "src", "--del-set", "gone", "src,dst")
		sendUDP(t, p.client, 53)
		time.Sleep(200 * time.Millisecond)
		mustRun(t, p.server, ipset, "add", "seen", "10.0.0.2")
		var lines []string
		for _, l := range strings.Split(mustRun(t, p.server, ipset, "save"), "\n") {
			if strings.HasPrefix(l, "add ") {
				lines = append(lines, l)
			}
		}
		sort.Strings(lines)
		for _, l := range strings.Split(mustRun(t, p.server, ipset, "list"), "\n") {
			if strings.HasPrefix(l, "Number of entries: ") || strings.HasPrefix(l, "References: ") {
				lines = append(lines, l)
			}
		}
		saved[label] = lines
		if label == "ours" {
			if r := p.server.Run("", "nft", "list", "sets"); strings.Contains(r.Stdout, "ipset-shard.") || strings.Contains(r.Stdout, "ipset-count.") {
				t.Errorf("shard copies left after the -j SET rule:\n%s", r.Stdout)
			}
		}
	}
	if strings.Join(saved["ref"], "\n") != strings.Join(saved["ours"], "\n") {
		t.Errorf("reference:\n%s\nxdptables:\n%s", strings.Join(saved["ref"], "\n"), strings.Join(saved["ours"], "\n"))
	}
}

// A plain hash set stored by an earlier build, one lookup set whatever
// its maxelem (no "shards" in its header), is read and changed in that
// layout.
func TestIpsetShardCopiesOldLayout(t *testing.T) {
	p := newShardPair(t, "ish21o")
	file := plainBlocklist("old", 400, true)
	p.ref.Run(file, "ipset", "-exist", "restore")
	p.writeUnsharded(file, "old", "a new hash:ip of maxelem 500000 has no shard copies")
	for _, l := range []string{
		"ipset -s save", "ipset list old", "ipset add old 10.200.0.1", "ipset test old 10.200.0.1",
		"ipset del old 10.200.0.1", "ipset -exist add old 10.100.0.0 comment q", "ipset -s save",
	} {
		p.run("", l)
	}
	p.run("add old 10.240.0.1\n", "ipset restore")
	p.run("flush old\n"+plainBlocklist("old", 100, false), "ipset -exist restore")
	p.checkCopies("old", 0)
	p.run("", "ipset -s save")
	// swap with a new set: each name keeps its layout.
	p.run(plainBlocklist("new", 50, true), "ipset -exist restore")
	p.run("", "ipset swap new old")
	p.checkCopies("old", 0)
	p.checkCopies("new", 64)
	p.run("", "ipset -s save")
	p.run("", "ipset destroy")
}
