package integration

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestIpsetListSetMatch: -m set on list:set sets with the reference ipset
// + iptables-nft and with xdptables, each in its own pair of namespaces.
// Members are tried in list order with the rule's directions on their
// own dimensions: a nomatch entry (and --return-nomatch), a member with
// more dimensions than directions, one of the other family, an empty
// list, !, a match after the list match that keeps state (limit: it must
// run once per packet the list matches; on a list that does not change,
// as a change translates the rule again and its limit starts afresh).
// Between two rounds of traffic the lists change by every path (add,
// add before, del, swap, flush, restore) while the rules stay. Counters
// after each round, -S, save -c, ipset list and save (with the element
// counters of members created with counters and of a list created
// with counters: only the first member that matches counts, none with
// ! --update-subcounters, the list's own not with ! --update-counters),
// the refusal
// to destroy a list in use, -Z and the destroy once the rules are gone
// are compared.
func TestIpsetListSetMatch(t *testing.T) {
	tools := pktTools(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	ipsets := map[string]string{"ref": "ipset", "ours": filepath.Join(LinkDir(t), "ipset")}
	sets := []string{
		"create m1 hash:net", "add m1 198.18.0.0/24", "add m1 198.18.0.1 nomatch",
		"create m2 hash:ip",
		"create m3 hash:ip,port", "add m3 198.18.0.1,udp:53",
		"create m6 hash:ip family inet6", "add m6 2001:db8::1",
		"create m4 hash:ip", "add m4 198.18.0.1",
		"create L list:set", "add L m1", "add L m2", "add L m3", "add L m6",
		"create W list:set", "add W m2",
		"create E list:set",
		"create F list:set", "add F m4",
		"create S list:set", "add S m2", "add S m1",
		"create c1 hash:ip counters", "add c1 198.18.0.1", "create c2 hash:ip counters", "add c2 198.18.0.1",
		"create C list:set counters", "add C m2", "add C c2", "add C c1",
		"create D list:set", "add D c1", "add D c2",
	}
	rules := []string{
		"-p icmp -m set --match-set L src",
		"-p icmp -m set --match-set L src --return-nomatch",
		"-p icmp -m set ! --match-set L src",
		"-p udp -m set --match-set L src,dst",
		"-p udp -m set ! --match-set L src,dst",
		"-p udp -m set --match-set L src,src",
		"-p icmp -m set --match-set W src",
		"-p icmp -m set ! --match-set W src",
		"-p icmp -m set --match-set E src",
		"-p icmp -m set ! --match-set E src",
		"-p icmp -m set --match-set F src",
		"-m set --match-set S src --return-nomatch -m limit --limit 1/hour --limit-burst 4",
		"-m set --match-set W src -j LOG --log-prefix W",
		"-p icmp -m set --match-set C src",
		"-p udp -m set ! --match-set C src",
		"-p icmp -m set --match-set D src ! --update-subcounters",
		"-p icmp -m set --match-set C src ! --update-counters",
	}
	changes := []string{"add W m4", "del L m1", "add L m4 before m2", "swap E F", "flush W", "add W m1"}
	restore := "create m5 hash:ip\nadd m5 198.18.0.1\nadd W m5\ndel L m4\nadd L m5 after m2\n"
	size := regexp.MustCompile(`(?m)^Size in memory: .*\n`)
	initval := regexp.MustCompile(` initval 0x[0-9a-f]+`)
	type outcome struct {
		counts                    [2][]uint64
		rulesS, save, list, isave string
		destroy                   netns.Result
		zeroed                    []uint64
		destroyAfterFlush         int
	}
	got := map[string]outcome{}
	for _, label := range []string{"ref", "ours"} {
		tool, ipset := tools[label], ipsets[label]
		p := newPktPair(t, "h24l"+label[:1])
		var o outcome
		for _, c := range sets {
			mustRun(t, p.server, append([]string{ipset}, strings.Fields(c)...)...)
		}
		for _, r := range rules {
			mustRun(t, p.server, append([]string{tool, "-A", "INPUT"}, strings.Fields(r)...)...)
		}
		round := func() []uint64 {
			mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "2", pktServer)
			sendUDP(t, p.client, 53)
			sendUDP(t, p.client, 54)
			time.Sleep(200 * time.Millisecond)
			return ruleCounters(t, p.server, tool, "filter", "INPUT")
		}
		o.counts[0] = round()
		for _, c := range changes {
			mustRun(t, p.server, append([]string{ipset}, strings.Fields(c)...)...)
		}
		if res := p.server.Run(restore, ipset, "restore"); res.RC != 0 {
			t.Fatalf("%s: restore: rc %d: %s", label, res.RC, res.Stderr)
		}
		o.counts[1] = round()
		o.rulesS = mustRun(t, p.server, tool, "-S", "INPUT")
		o.save = mustRun(t, p.server, tool+"-save", "-c")
		if i := strings.Index(o.save, "*filter"); i >= 0 {
			o.save = o.save[i:]
		}
		o.save = regexp.MustCompile(`(?m)^(#|:).*\n`).ReplaceAllString(o.save, "")
		o.list = initval.ReplaceAllString(size.ReplaceAllString(mustRun(t, p.server, ipset, "list", "-t"), ""), "")
		o.isave = initval.ReplaceAllString(mustRun(t, p.server, ipset, "-s", "save"), "")
		o.destroy = p.server.Run("", ipset, "destroy", "L")
		mustRun(t, p.server, tool, "-Z", "INPUT")
		o.zeroed = ruleCounters(t, p.server, tool, "filter", "INPUT")
		mustRun(t, p.server, tool, "-F", "INPUT")
		o.destroyAfterFlush = p.server.Run("", ipset, "destroy", "L").RC
		got[label] = o
	}
	ref, ours := got["ref"], got["ours"]
	matched := 0
	for k := range 2 {
		if len(ref.counts[k]) != len(rules) || len(ours.counts[k]) != len(rules) {
			t.Fatalf("round %d: %d/%d counters for %d rules", k+1, len(ref.counts[k]), len(ours.counts[k]), len(rules))
		}
		for i, r := range rules {
			if a, b := ref.counts[k][i], ours.counts[k][i]; a != b {
				t.Errorf("round %d: %s: reference counted %d, xdptables %d", k+1, r, a, b)
			}
			if ref.counts[k][i] > 0 {
				matched++
			}
		}
	}
	if matched < len(rules)+len(rules)/2 {
		t.Errorf("only %d of %d counters are not zero: the traffic does not exercise the rules", matched, 2*len(rules))
	}
	for _, c := range []struct{ what, a, b string }{
		{"-S", ref.rulesS, ours.rulesS}, {"iptables-save -c", ref.save, ours.save},
		{"ipset list -t", ref.list, ours.list}, {"ipset save", ref.isave, ours.isave},
	} {
		if c.a != c.b {
			t.Errorf("%s differs:\nref:\n%s\nours:\n%s", c.what, c.a, c.b)
		}
	}
	if ref.destroy != ours.destroy || ref.destroy.RC == 0 {
		t.Errorf("destroy of a list in use: ref %+v, ours %+v", ref.destroy, ours.destroy)
	}
	for i := range ours.zeroed {
		if ours.zeroed[i] != 0 || ref.zeroed[i] != 0 {
			t.Errorf("after -Z: ref %v, ours %v", ref.zeroed, ours.zeroed)
			break
		}
	}
	if ref.destroyAfterFlush != 0 || ours.destroyAfterFlush != 0 {
		t.Errorf("destroy after the rules went: ref rc %d, ours rc %d", ref.destroyAfterFlush, ours.destroyAfterFlush)
	}
}
