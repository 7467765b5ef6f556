package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestIpsetPacketsRealWorldShapes: sets as the real-world inputs of
// testdata/ipset make them (ipset 4 syntax of old scripts: --from/--to
// and --network bitmaps, --hashsize with ignored --probes; PeerGuardian
// range lists in hash:net, split into CIDRs; a country list swapped in
// under a list:set rule) match the same packets with the reference
// ipset + iptables-nft and with xdptables. Only ICMP echo requests and
// single UDP datagrams are sent, so every count is exact.
func TestIpsetPacketsRealWorldShapes(t *testing.T) {
	tools := pktTools(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	ipsets := map[string]string{"ref": "ipset", "ours": filepath.Join(LinkDir(t), "ipset")}
	sets := []string{
		"create bft bitmap:ip from 198.18.0.0 to 198.18.0.7", "add bft 198.18.0.1",
		"create bnet bitmap:ip --network 198.18.0.0/28", "add bnet 198.18.0.2",
		"create bport bitmap:port --from 50 --to 60", "add bport 53",
		"create old hash:ip --hashsize 64 --probes 8 --resize 50 --timeout 600", "add old 198.18.0.1 --timeout 0",
		"create pg hash:net", "add pg 198.18.0.1-198.18.0.6",
		"create pgmiss hash:net", "add pgmiss 198.18.0.3-198.18.0.9",
		"create pgport hash:net,port", "add pgport 198.18.0.1-198.18.0.2,udp:52-54",
		"create geo hash:net", "create geo-all list:set", "add geo-all geo",
	}
	// the country list, swapped in after the rules exist
	geo := "create geo-tmp hash:net\nadd geo-tmp 198.18.0.0/30\nadd geo-tmp 198.18.0.0/31 nomatch\nadd geo-tmp 198.18.0.1\nswap geo-tmp geo\ndestroy geo-tmp\n"
	rules := []struct {
		rule string
		want uint64
	}{
		{"-m set --match-set bft src", 4},
		{"-m set --match-set bft dst", 0},
		{"-m set --match-set bnet dst", 4},
		{"-m set --match-set bport dst", 1}, // udp 53
		{"-m set --match-set old src", 4},
		{"-m set --match-set pg src", 4},
		{"-m set --match-set pg dst", 4},
		{"-m set --match-set pgmiss src", 0},
		{"-m set --match-set pgport src,dst", 1},
		{"-m set --match-set pgport dst,dst", 1},
		{"-m set --match-set geo-all src", 4}, // .1/32 more specific than the nomatch /31
		{"-m set --match-set geo-all dst", 4}, // .2: in the /30, outside the nomatch /31
		{"-m set ! --match-set geo-all src", 0},
	}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool, ipset := tools[label], ipsets[label]
		p := newPktPair(t, "ir"+label[:1])
		for _, c := range sets {
			mustRun(t, p.server, append([]string{ipset}, strings.Fields(c)...)...)
		}
		for _, r := range rules {
			mustRun(t, p.server, append([]string{tool, "-A", "INPUT"}, strings.Fields(r.rule)...)...)
		}
		if r := p.server.Run(geo, ipset, "restore"); r.RC != 0 {
			t.Fatalf("%s: restore: %+v", label, r)
		}
		mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "2", pktServer)
		sendUDP(t, p.client, 53)
		time.Sleep(200 * time.Millisecond)
		c := ruleCounters(t, p.server, tool, "filter", "INPUT")
		if len(c) != len(rules) {
			t.Fatalf("%s: %d counters for %d rules", label, len(c), len(rules))
		}
		got[label] = c
	}
	for i, r := range rules {
		if ref, ours := got["ref"][i], got["ours"][i]; ref != ours || ours != r.want {
			t.Errorf("%s: reference counted %d, xdptables %d, want %d", r.rule, ref, ours, r.want)
		}
	}
}
