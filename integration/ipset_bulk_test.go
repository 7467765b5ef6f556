package integration

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// Restore files that only create sets and add to them take the bulk
// path (setengine.Restore); anything else takes the general path. Both
// must give ipset's errors, line numbers and contents, and build the
// same nftables sets.
func TestIpsetRestoreBulk(t *testing.T) {
	p := newIpsetPair(t, "ibk")
	// ipset keeps what came before a failing line; here nothing
	// changes: save is compared for files that load.
	for _, tc := range []struct {
		ok         bool
		opts, file string
	}{
		{false, "", "create a hash:ip\nadd a 10.0.0.1\nadd a 10.0.0.1\n"},
		{true, "-exist", "create a hash:ip timeout 100\nadd a 10.0.0.1\nadd a 10.0.0.1 timeout 5\n"},
		{false, "", "create a hash:net maxelem 2\nadd a 10.0.0.0/24\nadd a 10.0.1.0/24\nadd a 10.0.2.0/24\n"},
		{false, "", "\n# blocklist\ncreate a hash:net\nadd nope 10.0.0.0/24\n"},
		{false, "", "create a hash:net\ncreate a hash:net\n"},
		{false, "-exist", "create a hash:net\ncreate a hash:net\ncreate a hash:ip\n"},
		{false, "", "create a hash:net\nadd a 10.0.0.0/24\nadd a 10.0.0.0/33\n"},
		{false, "", "create a hash:net\nadd a 10.0.0.0/24 timeout 5\n"},
		{false, "", "create a hash:net\nadd a 10.0.0.0/0\n"},
		{false, "", "create a hash:ip,port\nadd a 10.0.0.1,http\nadd a 10.0.0.1,tcp:80\n"},
		{false, "", "create a hash:ip\nadd a 10.0.0.0/30\nadd a 10.0.0.2\n"},
		{false, "", "create a hash:net\nadd a 10.0.0.0-10.0.0.9\nadd a 10.0.0.8/31\n"},
		{false, "", "create a hash:net comment\nadd a 10.0.0.0/24 comment \"x y\"\nadd a 10.0.0.0/24 comment z\n"},
		{false, "", "create a hash:net\nadd a 10.0.0.0/24 nomatch\nadd a 10.0.0.0/24\n"},
		{false, "", "create a hash:net family inet6\nadd a 2001:db8::/64\nadd a 10.0.0.0/8\n"},
	} {
		p.run(tc.file, "ipset "+strings.TrimSpace(tc.opts+" restore"))
		if tc.ok {
			p.run("", "ipset -s save")
		} else if m := p.me.Run("", p.ours["ipset"], "list", "-n"); m.Stdout != "" {
			t.Errorf("after a failed restore: %q", m.Stdout)
		}
		p.run("", "ipset destroy")
	}

	// A file that loads: contents as ipset's, and the same nftables sets
	// through the bulk path and the general path (a flush of no set
	// first sends the file there).
	var b strings.Builder
	b.WriteString("create n hash:net\ncreate ip hash:ip timeout 100 comment\ncreate ipp hash:ip,port counters\n")
	b.WriteString("create n6 hash:net family inet6\n")
	for i := range 300 {
		bits := []int{16, 20, 24, 28, 30, 32}[i%6]
		fmt.Fprintf(&b, "add n 10.%d.%d.%d/%d%s\n", i%3, (i*37)%256, (i*91)%256, bits, map[bool]string{true: " nomatch"}[i%11 == 0])
		fmt.Fprintf(&b, "add ip 198.51.100.%d timeout %d comment \"c%d\"\n", i%200, i%3*300, i%5)
		fmt.Fprintf(&b, "add ipp 203.0.113.%d,%s:%d\n", i%250, []string{"tcp", "udp"}[i%2], i%5)
		fmt.Fprintf(&b, "add n6 2001:db8:%x::/%d\n", i%17, 48+i%3*8)
	}
	file := b.String()
	p.run(file, "ipset -exist restore")
	p.run("", "ipset -s save")
	p.run("", "ipset -s list")
	p.run("", "ipset test n 10.1.37.91")
	p.run("", "ipset test n 10.0.0.1")

	ours := p.ours["ipset"]
	general := netns.New(t, "ibkg")
	if r := general.Run("flush\n"+file, ours, "-exist", "restore"); r.RC != 0 {
		t.Fatalf("general path: %+v", r)
	}
	norm := func(s string) string {
		s = regexp.MustCompile(`expires [0-9hms]+`).ReplaceAllString(s, "expires E")
		return s
	}
	for _, set := range []string{"ipset.n", "ipset-entries.n", "ipset.ip", "ipset.ipp"} {
		a := p.me.Run("", "nft", "list", "set", "ip", "xdptables", set)
		g := general.Run("", "nft", "list", "set", "ip", "xdptables", set)
		if a.RC != 0 || norm(a.Stdout) != norm(g.Stdout) {
			t.Errorf("nft set %s: bulk path\n%s%s\ngeneral path\n%s%s", set, a.Stdout, a.Stderr, g.Stdout, g.Stderr)
		}
	}
	for _, set := range []string{"ipset.n6", "ipset-entries.n6"} {
		a := p.me.Run("", "nft", "list", "set", "ip6", "xdptables", set)
		g := general.Run("", "nft", "list", "set", "ip6", "xdptables", set)
		if a.RC != 0 || a.Stdout != g.Stdout {
			t.Errorf("nft set %s: bulk path\n%s%s\ngeneral path\n%s%s", set, a.Stdout, a.Stderr, g.Stdout, g.Stderr)
		}
	}
}

// The blocklist update (a new set filled, swapped with the one in use,
// destroyed) and flush-and-refill of a set in use replace the set's
// elements in one transaction, with ipset's results.
func TestIpsetRestoreBulkReplace(t *testing.T) {
	p := newIpsetPair(t, "ibr")
	ours := p.ours["ipset"]
	general := netns.New(t, "ibrg")
	setup := "create bl hash:net\nadd bl 198.51.100.0/24\nadd bl 203.0.113.0/25 nomatch\nadd bl 203.0.113.0/24\n" +
		"create hip hash:ip timeout 600\nadd hip 198.18.0.1\ncreate cn hash:net counters comment\nadd cn 10.50.0.0/16 comment x\nadd cn 10.51.0.0/16\n"
	p.run(setup, "ipset restore")
	p.run("", "iptables -A INPUT -m set --match-set bl src -j DROP")
	p.run("", "iptables -A INPUT -m set --match-set hip src -j DROP")
	if r := general.Run(setup, ours, "restore"); r.RC != 0 {
		t.Fatal(r)
	}
	var b strings.Builder
	b.WriteString("create tmp hash:net\n")
	for i := range 200 {
		fmt.Fprintf(&b, "add tmp 10.%d.%d.0/%d\n", i%4, i, 20+i%5)
	}
	b.WriteString("swap tmp bl\ndestroy tmp\n")
	b.WriteString("flush hip\nadd hip 198.18.0.2\nadd hip 198.18.0.3 timeout 0\n")
	b.WriteString("create tmp2 hash:ip timeout 600\nadd tmp2 198.18.1.1\nswap hip tmp2\ndestroy tmp2\n")
	file := b.String()
	p.run(file, "ipset restore")
	// The same nftables sets as the general path (a rename sends the
	// file there).
	if r := general.Run("create zz hash:ip\nrename zz zz2\ndestroy zz2\n"+file, ours, "restore"); r.RC != 0 {
		t.Fatal(r)
	}
	for _, set := range []string{"ipset.bl", "ipset-entries.bl", "ipset.hip"} {
		x := p.me.Run("", "nft", "list", "set", "ip", "xdptables", set)
		y := general.Run("", "nft", "list", "set", "ip", "xdptables", set)
		norm := regexp.MustCompile(`expires [0-9hms]+`)
		if x.RC != 0 || norm.ReplaceAllString(x.Stdout, "") != norm.ReplaceAllString(y.Stdout, "") {
			t.Errorf("%s: bulk path\n%s%s\ngeneral path\n%s%s", set, x.Stdout, x.Stderr, y.Stdout, y.Stderr)
		}
	}
	p.run("", "ipset -s save")
	p.run("", "ipset -t list")
	p.run("", "ipset test bl 10.0.0.1")
	p.run("", "ipset test bl 198.51.100.1")
	// Adds to an existing set (a second restore -exist of a saved
	// file): the set is read and its elements replaced.
	reload := "create bl hash:net\nadd bl 10.200.0.0/16\nadd bl 10.0.0.0/22\nadd bl 10.200.1.0/24 nomatch\nadd bl 10.0.0.0/8\n" +
		"create hip hash:ip timeout 600\nadd hip 198.18.0.9\nadd hip 198.18.1.1 timeout 300\n" +
		"create cn hash:net counters comment\nadd cn 10.50.1.0/24\nadd cn 10.50.0.0/16 comment y\nadd cn 10.51.0.0/16\n"
	p.run(reload, "ipset -exist restore")
	if r := general.Run("create zz hash:ip\nrename zz zz2\ndestroy zz2\n"+reload, ours, "-exist", "restore"); r.RC != 0 {
		t.Fatal(r)
	}
	norm := regexp.MustCompile(`expires [0-9hms]+`)
	for _, set := range []string{"ipset.bl", "ipset-entries.bl", "ipset-nomatch.bl", "ipset.hip", "ipset.cn", "ipset-entries.cn"} {
		x := p.me.Run("", "nft", "list", "set", "ip", "xdptables", set)
		y := general.Run("", "nft", "list", "set", "ip", "xdptables", set)
		if x.RC != 0 || norm.ReplaceAllString(x.Stdout, "") != norm.ReplaceAllString(y.Stdout, "") {
			t.Errorf("%s after a reload: bulk path\n%s%s\ngeneral path\n%s%s", set, x.Stdout, x.Stderr, y.Stdout, y.Stderr)
		}
	}
	p.run("", "ipset -s save")
	p.run("", "ipset test bl 10.200.1.1")
	p.run("", "ipset test bl 10.200.2.1")
	// Files that fail: ipset keeps what came before the failing line,
	// here nothing changes; only the messages are compared (in other
	// namespaces, emptied after each file).
	q := newIpsetPair(t, "ibf")
	for _, f := range []string{"swap tmp bl\n", "create t hash:ip\nswap t bl\n",
		"create t hash:net\nadd t 10.0.0.0/8\nswap t bl\nadd t 10.0.0.0/8\n", "flush bl\nadd bl 10.0.0.0/8\nadd bl 10.0.0.0/8\n",
		"add bl 10.9.0.0/16\nadd bl 198.51.100.0/24\n", "create bl hash:ip\n", "add bl 10.9.0.0/16\ncreate bl hash:net maxelem 9\n"} {
		q.run(setup, "ipset restore")
		q.run(f, "ipset restore")
		q.run("", "ipset destroy")
	}
	// A file that keeps the swapped-out set (the general path).
	for _, f := range []string{"create t hash:net\nadd t 10.0.0.0/8\nswap t bl\n"} {
		p.run(f, "ipset restore")
		p.run("", "ipset -s save")
	}
}

// Single adds and deletes of nested prefixes change the lookup set
// locally (setengine's netRun): after any sequence of them it holds
// what a restore of the saved set builds from scratch.
func TestIpsetSingleNetLayout(t *testing.T) {
	netns.RequireRoot(t)
	ours := filepath.Join(LinkDir(t), "ipset")
	a, b := netns.New(t, "inla"), netns.New(t, "inlb")
	r := rand.New(rand.NewPCG(7, 7))
	for _, create := range []string{"create n hash:net comment", "create n6 hash:net family inet6"} {
		if m := a.Run("", append([]string{ours}, strings.Fields(create)...)...); m.RC != 0 {
			t.Fatalf("%s: %+v", create, m)
		}
	}
	for i := range 300 {
		op := []string{"add", "add", "del", "-exist add", "-exist del"}[r.IntN(5)]
		bits := []int{16, 18, 20, 22, 24, 26, 28, 30, 31, 32}[r.IntN(10)]
		args := strings.Fields(op)
		if i%3 == 2 {
			p := netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, byte(r.IntN(4)), byte(r.IntN(256))}), 48+bits)
			args = append(args, "n6", p.Masked().String())
		} else {
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(r.IntN(4)), byte(r.IntN(256))}), bits)
			args = append(args, "n", p.Masked().String())
			if strings.HasSuffix(op, "add") && r.IntN(2) == 0 {
				args = append(args, "comment", fmt.Sprintf("c%d", r.IntN(2)))
			}
		}
		a.Run("", append([]string{ours}, args...)...)
	}
	save := a.Run("", ours, "save")
	if r := b.Run(save.Stdout, ours, "restore"); r.RC != 0 {
		t.Fatalf("restore: %+v", r)
	}
	for _, set := range [][]string{{"ip", "ipset.n"}, {"ip6", "ipset.n6"}} {
		x := a.Run("", "nft", "list", "set", set[0], "xdptables", set[1])
		y := b.Run("", "nft", "list", "set", set[0], "xdptables", set[1])
		if x.RC != 0 || x.Stdout != y.Stdout {
			t.Errorf("%s after single commands:\n%s%s\nrestored:\n%s", set[1], x.Stdout, x.Stderr, y.Stdout)
		}
	}
	t.Logf("%d entries", strings.Count(save.Stdout, "\nadd "))
}
