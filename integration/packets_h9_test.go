package integration

import (
	"testing"
)

// TestPacketsCgroupClusterConnlabel: the xt compat matches of
// matches_d.txt on real traffic, reference and xdptables side by side.
// The client pings the server three times. On the client's OUTPUT every
// ping socket is in the cgroup v2 root (and so under --path /) and has
// net_cls class id 0. On the server's INPUT a one-node cluster owns
// every connection, and connlabel sets bit 3 on the connection, which a
// later rule then sees (and, for the later pings, an earlier one). (dccp, nfacct and osf need DCCP packets, an
// nfacct object or loaded fingerprints: their kernel side is only
// checked by the corpus, at commit.)
func TestPacketsCgroupClusterConnlabel(t *testing.T) {
	tools := pktTools(t)
	clientRules := []struct {
		rule string
		want uint64
	}{
		{"-p icmp --icmp-type 8 -m cgroup --path /", 3},
		{"-p icmp --icmp-type 8 -m cgroup ! --path /", 0},
		{"-p icmp --icmp-type 8 -m cgroup --cgroup 0", 3},
		{"-p icmp --icmp-type 8 -m cgroup ! --cgroup 0", 0},
		{"-p icmp --icmp-type 8 -m cgroup --cgroup 7", 0},
	}
	serverRules := []struct {
		rule string
		want uint64
	}{
		{"-p icmp --icmp-type 8 -m cluster --cluster-total-nodes 1 --cluster-local-node 1 --cluster-hash-seed 0", 3},
		{"-p icmp --icmp-type 8 -m cluster --cluster-total-nodes 1 ! --cluster-local-node 1 --cluster-hash-seed 0", 0},
		// the three pings are one connection: the first has no label yet
		{"-p icmp --icmp-type 8 -m connlabel --label 3", 2},
		{"-p icmp --icmp-type 8 -m connlabel ! --label 3", 1},
		{"-p icmp --icmp-type 8 -m connlabel --label 3 --set", 3},
		{"-p icmp --icmp-type 8 -m connlabel --label 3", 3},
		{"-p icmp --icmp-type 8 -m connlabel --label 4", 0},
	}
	got := map[string][2][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool := tools[label]
		p := newPktPair(t, "h9cg"+label[:1])
		for _, r := range clientRules {
			args, _ := ShellWords(r.rule)
			mustRun(t, p.client, append([]string{tool, "-A", "OUTPUT"}, args...)...)
		}
		for _, r := range serverRules {
			args, _ := ShellWords(r.rule)
			mustRun(t, p.server, append([]string{tool, "-A", "INPUT"}, args...)...)
		}
		mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "2", pktServer)
		got[label] = [2][]uint64{ruleCounters(t, p.client, tool, "filter", "OUTPUT"), ruleCounters(t, p.server, tool, "filter", "INPUT")}
	}
	for i, r := range clientRules {
		if got["ref"][0][i] != got["ours"][0][i] || got["ours"][0][i] != r.want {
			t.Errorf("client %s: reference %d, xdptables %d, want %d", r.rule, got["ref"][0][i], got["ours"][0][i], r.want)
		}
	}
	for i, r := range serverRules {
		if got["ref"][1][i] != got["ours"][1][i] || got["ours"][1][i] != r.want {
			t.Errorf("server %s: reference %d, xdptables %d, want %d", r.rule, got["ref"][1][i], got["ours"][1][i], r.want)
		}
	}
}
