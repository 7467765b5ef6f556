package integration

import (
	"path/filepath"
	"regexp"
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
	} {
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
	}
	if out := mustRun(t, ns, ipset, "save", "n"); !strings.Contains(out, "add n 198.18.0.0/16\n") || strings.Contains(out, "nomatch") {
		t.Errorf("save n:\n%s", out)
	}
}
