package integration

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestIpsetReturnNomatch: -m set --return-nomatch with the reference
// ipset + iptables-nft and with xdptables, each in its own pair of
// namespaces: the match is true where the most specific entry holding
// the key is a nomatch entry, false for a plain entry or none (! the
// opposite); types without nomatch entries (hash:ip) ignore the flag.
// Between two rounds of traffic the sets change by every path that
// touches the nomatch pieces (single add and del, swap, flush, restore
// with create + swap + destroy, restore -exist into an existing set)
// while the rules stay. Counters, -S, save, the refusal to destroy a
// set in use, and (ours) that no nomatch set outlives its use are
// compared. Only ICMP echo requests and single UDP datagrams are sent:
// every count is exact.
func TestIpsetReturnNomatch(t *testing.T) {
	tools := pktTools(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	ipsets := map[string]string{"ref": "ipset", "ours": filepath.Join(LinkDir(t), "ipset")}
	sets := func(veth string) []string {
		return []string{
			"create nm hash:net", "add nm 198.18.0.0/24", "add nm 198.18.0.0/30 nomatch",
			"create pl hash:net", "add pl 198.18.0.0/24",
			"create no hash:net", "add no 198.19.0.0/16",
			"create nm2 hash:net", "add nm2 198.18.0.0/16 nomatch",
			"create hip hash:ip", "add hip 198.18.0.1",
			"create ni hash:net,iface", "add ni 198.18.0.0/24," + veth, "add ni 198.18.0.1," + veth + " nomatch",
			"create np hash:net,port", "add np 198.18.0.0/24,udp:53", "add np 198.18.0.0/30,udp:53 nomatch",
			"create bl hash:net", "add bl 198.19.0.0/16",
			"create rs hash:net", "add rs 198.18.0.0/24",
		}
	}
	type rule struct {
		rule        string
		want, want2 uint64 // after the first round, after the second
	}
	var rules []rule
	for _, r := range []struct {
		set              string
		rn, notRn, plain [2]uint64
	}{
		{"nm", [2]uint64{3, 3}, [2]uint64{0, 3}, [2]uint64{0, 3}},  // del of the nomatch entry
		{"pl", [2]uint64{0, 3}, [2]uint64{3, 3}, [2]uint64{3, 3}},  // add of a nomatch entry
		{"no", [2]uint64{0, 3}, [2]uint64{3, 3}, [2]uint64{0, 0}},  // swapped with nm2
		{"nm2", [2]uint64{3, 3}, [2]uint64{0, 3}, [2]uint64{0, 0}}, // swapped with no
		{"hip", [2]uint64{3, 6}, [2]uint64{0, 0}, [2]uint64{3, 6}}, // no nomatch: flag ignored
		{"bl", [2]uint64{0, 3}, [2]uint64{3, 3}, [2]uint64{0, 0}},  // restore: create, swap, destroy
		{"rs", [2]uint64{0, 3}, [2]uint64{3, 3}, [2]uint64{3, 3}},  // restore -exist: a nomatch entry
	} {
		rules = append(rules,
			rule{"-p icmp -m set --match-set " + r.set + " src --return-nomatch", r.rn[0], r.rn[1]},
			rule{"-p icmp -m set ! --match-set " + r.set + " src --return-nomatch", r.notRn[0], r.notRn[1]},
			rule{"-p icmp -m set --match-set " + r.set + " src", r.plain[0], r.plain[1]})
	}
	rules = append(rules,
		rule{"-p icmp -m set --match-set ni src,src --return-nomatch", 3, 3}, // flushed
		rule{"-p icmp -m set --match-set ni src,dst --return-nomatch", 0, 0},
		rule{"-p udp -m set --match-set np dst,dst --return-nomatch", 1, 1}, // nomatch entry deleted
	)
	changes := []string{"del nm 198.18.0.0/30", "add pl 198.18.0.1 nomatch", "swap no nm2", "flush ni", "del np 198.18.0.0/30,udp:53"}
	restores := []struct {
		exist bool
		text  string
	}{
		{false, "create bltmp hash:net\nadd bltmp 198.18.0.0/16\nadd bltmp 198.18.0.0/24 nomatch\nswap bltmp bl\ndestroy bltmp\n"},
		{true, "create rs hash:net\nadd rs 198.18.0.0/24\nadd rs 198.18.0.0/28 nomatch\n"},
	}
	initval := regexp.MustCompile(` initval 0x[0-9a-f]+`)
	type outcome struct {
		counts            [2][]uint64
		rulesS, save      string
		destroy           netns.Result
		destroyAfterFlush int
	}
	got := map[string]outcome{}
	for _, label := range []string{"ref", "ours"} {
		tool, ipset := tools[label], ipsets[label]
		p := newPktPair(t, "h2"+label[:1])
		var o outcome
		for _, c := range sets(p.serverDev) {
			mustRun(t, p.server, append([]string{ipset}, strings.Fields(c)...)...)
		}
		for _, r := range rules {
			mustRun(t, p.server, append([]string{tool, "-A", "INPUT"}, strings.Fields(r.rule)...)...)
		}
		round := func() []uint64 {
			mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "2", pktServer)
			sendUDP(t, p.client, 53)
			time.Sleep(200 * time.Millisecond)
			return ruleCounters(t, p.server, tool, "filter", "INPUT")
		}
		o.counts[0] = round()
		for _, c := range changes {
			mustRun(t, p.server, append([]string{ipset}, strings.Fields(c)...)...)
		}
		for _, r := range restores {
			args := []string{ipset, "restore"}
			if r.exist {
				args = append(args, "-exist")
			}
			if res := p.server.Run(r.text, args...); res.RC != 0 {
				t.Fatalf("%s: restore %q: rc %d: %s", label, r.text, res.RC, res.Stderr)
			}
		}
		o.counts[1] = round()
		o.rulesS = mustRun(t, p.server, tool, "-S", "INPUT")
		// (members of hash types in no particular order: ipset -s
		// sorts them)
		o.save = initval.ReplaceAllString(mustRun(t, p.server, ipset, "-s", "save"), "")
		o.destroy = p.server.Run("", ipset, "destroy", "pl")
		mustRun(t, p.server, tool, "-F", "INPUT")
		o.destroyAfterFlush = p.server.Run("", ipset, "destroy").RC
		if label == "ours" {
			// every nomatch set went with its set
			if out := mustRun(t, p.server, "nft", "list", "ruleset"); strings.Contains(out, "ipset") {
				t.Errorf("sets left after destroy:\n%s", out)
			}
		}
		got[label] = o
	}
	ref, ours := got["ref"], got["ours"]
	for i, r := range rules {
		for k, want := range []uint64{r.want, r.want2} {
			if len(ref.counts[k]) != len(rules) || len(ours.counts[k]) != len(rules) {
				t.Fatalf("round %d: %d/%d counters for %d rules", k+1, len(ref.counts[k]), len(ours.counts[k]), len(rules))
			}
			if a, b := ref.counts[k][i], ours.counts[k][i]; a != b || b != want {
				t.Errorf("round %d: %s: reference counted %d, xdptables %d, want %d", k+1, r.rule, a, b, want)
			}
		}
	}
	if ref.rulesS != ours.rulesS {
		t.Errorf("-S differs:\nref:\n%s\nours:\n%s", ref.rulesS, ours.rulesS)
	}
	// the veth names differ by the label's letter
	if strings.ReplaceAll(ref.save, "h2r", "h2o") != ours.save {
		t.Errorf("save differs:\nref:\n%s\nours:\n%s", ref.save, ours.save)
	}
	if ref.destroy != ours.destroy || ref.destroy.RC == 0 {
		t.Errorf("destroy of a set in use: ref %+v, ours %+v", ref.destroy, ours.destroy)
	}
	if ref.destroyAfterFlush != 0 || ours.destroyAfterFlush != 0 {
		t.Errorf("destroy after the rules went: ref rc %d, ours rc %d", ref.destroyAfterFlush, ours.destroyAfterFlush)
	}
}

// TestIpsetNomatchSetLifetime: the nomatch set of a net type exists
// while the set holds nomatch entries or a rule looks it up, whichever
// path changes the set (single add and del, flush, restore, swap with a
// set of another header while a rule uses it).
func TestIpsetNomatchSetLifetime(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	ipset, iptables := filepath.Join(dir, "ipset"), filepath.Join(dir, "iptables")
	ns := netns.New(t, "h2life")
	has := func(name string) bool {
		out := mustRun(t, ns, "nft", "list", "sets")
		return strings.Contains(out, "set ipset-nomatch."+name+" ")
	}
	steps := []struct {
		argv string
		want bool // the nomatch set of n exists afterwards
	}{
		{"ipset create n hash:net", false},
		{"ipset add n 198.18.0.0/16", false},
		{"ipset add n 198.18.1.0/24 nomatch", true},
		{"ipset add n 198.18.1.1", true},
		{"ipset add n 198.19.0.0/24 nomatch", true},
		{"ipset del n 198.18.1.0/24", true}, // another nomatch entry is left
		{"ipset del n 198.19.0.0/24", false},
		{"ipset add n 198.19.0.0/24 nomatch", true},
		{"ipset flush n", false},
		{"ipset add n 198.18.0.0/16", false},
		// a rule makes it, and keeps it while it looks it up
		{"iptables -A INPUT -m set --match-set n src --return-nomatch", true},
		{"ipset add n 198.18.1.0/24 nomatch", true},
		{"ipset del n 198.18.1.0/24", true},
		{"ipset flush n", true},
		{"iptables -A INPUT -m set ! --match-set n src --return-nomatch -j DROP", true},
		{"iptables -D INPUT 1", true},
		{"iptables -D INPUT 1", true}, // left empty, until the set changes
		{"ipset add n 198.18.0.0/16", false},
		// swap with a set of another header while a rule uses it: the
		// rule is put back, with its nomatch set
		{"iptables -A INPUT -m set --match-set n src --return-nomatch", true},
		{"ipset create big hash:net maxelem 1000", true},
		{"ipset add big 198.18.0.0/16", true},
		{"ipset add big 198.18.0.0/24 nomatch", true},
		{"ipset swap n big", true},
		{"ipset del n 198.18.0.0/24", true},
		{"iptables -F INPUT", true},
		{"ipset destroy n", false},
		// restore: new sets, sets added to, flushed and refilled
		{"ipset restore", true},
	}
	for _, st := range steps {
		argv := strings.Fields(st.argv)
		stdin := ""
		if st.argv == "ipset restore" {
			stdin = "create n hash:net\nadd n 198.18.0.0/16\nadd n 198.18.0.1 nomatch\n"
		}
		tool := map[string]string{"ipset": ipset, "iptables": iptables}[argv[0]]
		if r := ns.Run(stdin, append([]string{tool}, argv[1:]...)...); r.RC != 0 {
			t.Fatalf("%s: rc %d: %s", st.argv, r.RC, r.Stderr)
		}
		if got := has("n"); got != st.want {
			t.Errorf("after %s: nomatch set exists %v, want %v", st.argv, got, st.want)
		}
	}
	for _, r := range []struct {
		exist bool
		text  string
		want  bool
	}{
		{true, "create n hash:net\nadd n 198.18.0.2 nomatch\n", true},
		{false, "flush n\nadd n 198.18.0.0/16\n", false},
		{false, "flush n\nadd n 198.18.0.0/16\nadd n 198.18.0.7 nomatch\n", true},
		{false, "create t hash:net\nadd t 198.18.0.0/16\nswap t n\ndestroy t\n", false},
		// a rule holds it: flushed and refilled, swapped, emptied
		{false, "", true},
		{false, "flush n\nadd n 198.18.0.0/16\nadd n 198.18.0.9 nomatch\n", true},
		{false, "create t hash:net\nadd t 198.18.0.0/16\nswap t n\ndestroy t\n", true},
		{true, "create n hash:net\nadd n 198.18.0.4 nomatch\n", true},
		{false, "flush n\nadd n 198.18.0.0/16\n", true},
	} {
		if r.text == "" {
			mustRun(t, ns, iptables, "-A", "INPUT", "-m", "set", "--match-set", "n", "src", "--return-nomatch")
			continue
		}
		args := []string{ipset, "restore"}
		if r.exist {
			args = append(args, "-exist")
		}
		if res := ns.Run(r.text, args...); res.RC != 0 {
			t.Fatalf("restore %q: rc %d: %s", r.text, res.RC, res.Stderr)
		}
		if got := has("n"); got != r.want {
			t.Errorf("after restore %q: nomatch set exists %v, want %v", r.text, got, r.want)
		}
		// what it holds: the nomatch entries the restore added, the only
		// ones after a flush
		if want := regexp.MustCompile(`add n (\S+) nomatch`).FindStringSubmatch(r.text); r.want && want != nil {
			out := mustRun(t, ns, "nft", "list", "set", "ip", "xdptables", "ipset-nomatch.n")
			if strings.HasPrefix(r.text, "flush") && !strings.Contains(out, "elements = { "+want[1]+" }") || !strings.Contains(out, want[1]) {
				t.Errorf("after restore %q: nomatch set\n%s", r.text, out)
			}
		}
	}
	if out := mustRun(t, ns, ipset, "save", "n"); !strings.Contains(out, "add n 198.18.0.0/16\n") || strings.Contains(out, "nomatch") {
		t.Errorf("save n:\n%s", out)
	}
	if out := mustRun(t, ns, "nft", "list", "set", "ip", "xdptables", "ipset-nomatch.n"); strings.Contains(out, "elements") {
		t.Errorf("the nomatch set kept elements:\n%s", out)
	}
	mustRun(t, ns, iptables, "-F", "INPUT")
	mustRun(t, ns, ipset, "destroy")
}

// TestIpsetRandomNet runs a random sequence of add, del (with and
// without nomatch and -exist), test (also test ... nomatch), flush and
// small restores on a hash:net (inet and inet6) and a hash:net,port
// with nesting prefixes, with the reference ipset and with ours: every command's
// output and status must be the same. A rule with --return-nomatch
// holds the nomatch sets for part of the run. Every few commands, ours
// is checked against itself: the lookup and nomatch sets it keeps after
// the single commands (targeted paths for hash:net, the general path
// for the concatenation) must hold what a fresh restore of its own save
// builds (the bulk path).
func TestIpsetRandomNet(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("ipset") || !netns.Have("iptables-nft") || !netns.Have("nft") {
		t.Skip("reference ipset, iptables-nft or nft not installed")
	}
	dir := LinkDir(t)
	ours := filepath.Join(dir, "ipset")
	ref, me, fresh := netns.New(t, "h2rndR"), netns.New(t, "h2rndO"), netns.New(t, "h2rndF")
	// XDPT_IPSET_SEED=N runs another sequence
	seed := uint64(42)
	if v, err := strconv.ParseUint(os.Getenv("XDPT_IPSET_SEED"), 10, 64); err == nil {
		seed = v
	}
	r := rand.New(rand.NewPCG(seed, 4))
	prefix := func() string {
		bits := 24 + r.IntN(9)
		a := netip.AddrFrom4([4]byte{198, 51, 100, byte(r.IntN(256))})
		p := netip.PrefixFrom(a, bits).Masked()
		if bits == 32 {
			return p.Addr().String()
		}
		return p.String()
	}
	host := func() string { return netip.AddrFrom4([4]byte{198, 51, 100, byte(r.IntN(256))}).String() }
	// elem is an element of set: hash:net's prefix, or with a port, or
	// the same prefix in 2001:db8::/120 for the inet6 set
	elem := func(set, p string) string {
		switch set {
		case "np":
			return p + []string{",tcp:80", ",udp:53"}[r.IntN(2)]
		case "n6":
			a, bits, _ := strings.Cut(p, "/")
			v6 := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: netip.MustParseAddr(a).As4()[3]})
			if bits == "" {
				return v6.String()
			}
			b, _ := strconv.Atoi(bits)
			return netip.PrefixFrom(v6, b+96).String()
		}
		return p
	}
	elems := func(ns *netns.NS, fam, set string) string {
		out := ns.Run("", "nft", "list", "set", fam, "xdptables", set).Stdout
		i := strings.Index(out, "elements = {")
		if i < 0 {
			return ""
		}
		out = out[i+len("elements = {"):]
		// (concatenations are listed in no particular order)
		els := strings.Split(strings.Join(strings.Fields(out[:strings.Index(out, "}")]), " "), ", ")
		slices.Sort(els)
		return strings.Join(els, ", ")
	}
	initval := regexp.MustCompile(`initval 0x[0-9a-f]+`)
	run := func(stdin string, args ...string) {
		t.Helper()
		a := ref.Run(stdin, append([]string{"ipset"}, args...)...)
		b := me.Run(stdin, append([]string{ours}, args...)...)
		a.Stdout, b.Stdout = initval.ReplaceAllString(a.Stdout, "initval X"), initval.ReplaceAllString(b.Stdout, "initval X")
		if a != b {
			t.Fatalf("ipset %s (%q):\nreference rc=%d %q %q\nours rc=%d %q %q", strings.Join(args, " "), stdin, a.RC, a.Stdout, a.Stderr, b.RC, b.Stdout, b.Stderr)
		}
	}
	check := func(step int) {
		t.Helper()
		save := me.Run("", ours, "save").Stdout
		fresh.Run("", ours, "destroy")
		if res := fresh.Run(save, ours, "restore"); res.RC != 0 {
			t.Fatalf("step %d: restore of our save: %s", step, res.Stderr)
		}
		for _, set := range []string{"ipset.n", "ipset-nomatch.n", "ipset.np", "ipset-nomatch.np", "ipset.n6", "ipset-nomatch.n6"} {
			fam := "ip"
			if strings.HasSuffix(set, "n6") {
				fam = "ip6"
			}
			if a, b := elems(me, fam, set), elems(fresh, fam, set); a != b {
				t.Fatalf("step %d: %s after single commands:\n%s\nafter a restore of the same save:\n%s\nsave:\n%s", step, set, a, b, save)
			}
		}
	}
	run("", "create", "n", "hash:net")
	run("", "create", "np", "hash:net,port")
	run("", "create", "n6", "hash:net", "family", "inet6")
	const steps = 500
	for step := 0; step < steps; step++ {
		if step == steps/4 || step == 3*steps/4 {
			for _, ns := range []struct {
				ns   *netns.NS
				tool string
			}{{ref, "iptables-nft"}, {me, filepath.Join(dir, "iptables")}} {
				op := "-A"
				if step == 3*steps/4 {
					op = "-D"
				}
				mustRun(t, ns.ns, ns.tool, op, "INPUT", "-m", "set", "--match-set", "n", "src", "--return-nomatch")
				mustRun(t, ns.ns, ns.tool, op, "INPUT", "-m", "set", "--match-set", "np", "src,dst", "--return-nomatch")
				mustRun(t, ns.ns, strings.Replace(ns.tool, "iptables", "ip6tables", 1), op, "INPUT", "-m", "set", "--match-set", "n6", "src", "--return-nomatch")
			}
		}
		set := []string{"n", "n", "np", "n6"}[r.IntN(4)]
		var args []string
		switch k := r.IntN(100); {
		case k < 35:
			args = []string{"add", set, elem(set, prefix())}
			if r.IntN(3) == 0 {
				args = append(args, "nomatch")
			}
		case k < 55:
			args = []string{"del", set, elem(set, prefix())}
		case k < 70:
			args = []string{"test", set, elem(set, host())}
		case k < 78:
			args = []string{"test", set, elem(set, prefix())}
		case k < 88:
			args = []string{"test", set, elem(set, host()), "nomatch"}
		case k < 90:
			args = []string{"flush", set}
		default:
			var b strings.Builder
			for range 1 + r.IntN(4) {
				b.WriteString("add " + set + " " + elem(set, prefix()))
				if r.IntN(3) == 0 {
					b.WriteString(" nomatch")
				}
				b.WriteString("\n")
			}
			run(b.String(), "-exist", "restore")
			continue
		}
		if args[0] != "test" && r.IntN(4) == 0 {
			args = append([]string{"-exist"}, args...)
		}
		run("", args...)
		if step%20 == 19 {
			check(step)
		}
	}
	// (ipset's -sorted leaves some IPv6 members in its kernel order: the
	// lines are compared sorted)
	a, b := ref.Run("", "ipset", "save"), me.Run("", ours, "save")
	if normIpset(a.Stdout) != normIpset(b.Stdout) {
		t.Errorf("final save:\nreference:\n%s\nours:\n%s", a.Stdout, b.Stdout)
	}
	check(steps)
}

// TestXDPReturnNomatch: in raw PREROUTING, a --return-nomatch lookup in
// a hash:ip (which ignores the flag) runs in XDP as a plain lookup and
// drops there; one in a hash:net ends the XDP run and nftables drops the
// packets whose deciding entry is a nomatch entry. Every packet is
// counted once.
func TestXDPReturnNomatch(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("ping") {
		t.Skip("ping is not installed")
	}
	bin := LinkDir(t)
	xdpPins(t)
	a, b := netns.New(t, "h2xa"), netns.New(t, "h2xb")
	mustRun(t, a, "ip", "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b.Name)
	mustRun(t, a, "ip", "addr", "add", "198.18.0.1/24", "dev", "va")
	mustRun(t, b, "ip", "addr", "add", "198.18.0.2/24", "dev", "vb")
	mustRun(t, a, "ip", "link", "set", "va", "up")
	mustRun(t, b, "ip", "link", "set", "vb", "up")
	xt, ipt, ips := filepath.Join(bin, "xdptables"), filepath.Join(bin, "iptables"), filepath.Join(bin, "ipset")
	for _, c := range []string{"create xi hash:ip", "add xi 198.18.0.1", "create xn hash:net", "add xn 198.18.0.0/24", "add xn 198.18.0.1 nomatch"} {
		mustRun(t, b, append([]string{ips}, strings.Fields(c)...)...)
	}
	const n = 3
	ping := func() {
		t.Helper()
		if r := a.RunTimeout(30, "", "ping", "-n", "-q", "-c", strconv.Itoa(n), "-i", "0.2", "-W", "1", "198.18.0.2"); r.RC == 0 {
			t.Fatalf("ping got answers through a DROP rule:\n%s", r.Stdout)
		}
	}
	mustRun(t, b, ipt, "-t", "raw", "-A", "PREROUTING", "-p", "icmp", "-m", "set", "--match-set", "xi", "src", "--return-nomatch", "-j", "DROP")
	mustRun(t, b, xt, "xdp", "attach", "vb", "--mode", "generic")
	t.Cleanup(func() { b.Run("", xt, "xdp", "detach", "vb") })
	ping()
	st := mustRun(t, b, xt, "xdp", "status")
	if c := xdpCounts(t, st); c["-p icmp -m set --match-set xi src --return-nomatch -j DROP"] != n {
		t.Fatalf("XDP should drop with the hash:ip rule, %d packets each:\n%s", n, st)
	}
	if got := nftPackets(t, b, bin, "iptables", 1); got != n {
		t.Fatalf("-L -v counted %d packets, want %d", got, n)
	}
	// the hash:net rule ends the run: nftables drops
	mustRun(t, b, ipt, "-t", "raw", "-R", "PREROUTING", "1", "-p", "icmp", "-m", "set", "--match-set", "xn", "src", "--return-nomatch", "-j", "DROP")
	mustRun(t, b, xt, "xdp", "sync")
	ping()
	st = mustRun(t, b, xt, "xdp", "status")
	if c := xdpCounts(t, st); c["-p icmp -m set --match-set xn src --return-nomatch -j DROP"] != 0 {
		t.Fatalf("XDP counted the hash:net rule:\n%s", st)
	}
	if got := nftPackets(t, b, bin, "iptables", 1); got != n {
		t.Fatalf("-L -v counted %d packets, want %d (nftables alone)", got, n)
	}
}
