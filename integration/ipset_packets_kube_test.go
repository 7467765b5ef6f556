package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestIpsetPacketsKubeIPVS: the sets kube-proxy's IPVS mode makes and the
// -m set lookups of its rules (hash:ip,port "dst,dst", hash:ip,port,ip
// "dst,dst,src" and "src,dst,dst", hash:ip,port,net "dst,dst,src" with a
// nomatch entry, with and without --return-nomatch (which reverses the
// answer: the nomatch entry matches, the plain ones do not) and negated,
// bitmap:port "dst" with and without -p, which takes TCP and UDP ports
// alike and no ICMP), loaded with the reference ipset + iptables-nft and
// with xdptables, each in its own pair of namespaces; the same TCP SYNs,
// UDP datagrams and pings are sent and each counting rule's count must
// be the reference's and the one expected.
func TestIpsetPacketsKubeIPVS(t *testing.T) {
	tools := pktTools(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	ipsets := map[string]string{"ref": "ipset", "ours": filepath.Join(LinkDir(t), "ipset")}
	sets := []string{
		"create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 comment",
		`add KUBE-CLUSTER-IP 198.18.0.2,tcp:443 comment default/kubernetes:https`,
		"add KUBE-CLUSTER-IP 198.18.0.2,udp:53",
		"add KUBE-CLUSTER-IP 198.18.0.9,tcp:80",
		"create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536",
		"add KUBE-LOOP-BACK 198.18.0.2,tcp:8080,198.18.0.1",
		"add KUBE-LOOP-BACK 198.18.0.2,tcp:8081,198.18.0.2",
		"create KUBE-LOAD-BALANCER-SOURCE-CIDR hash:ip,port,net family inet hashsize 1024 maxelem 65536",
		"add KUBE-LOAD-BALANCER-SOURCE-CIDR 198.18.0.2,tcp:80,198.18.0.0/24",
		"add KUBE-LOAD-BALANCER-SOURCE-CIDR 198.18.0.2,tcp:80,198.18.0.0/30 nomatch",
		"add KUBE-LOAD-BALANCER-SOURCE-CIDR 198.18.0.2,tcp:81,198.18.0.0/24",
		"create KUBE-LB-SRC-IP hash:ip,port,ip family inet hashsize 1024 maxelem 65536",
		"add KUBE-LB-SRC-IP 198.18.0.1,tcp:8443,198.18.0.2",
		"create KUBE-NODE-PORT-TCP bitmap:port range 0-65535",
		"add KUBE-NODE-PORT-TCP 30080",
		"create KUBE-NODE-PORT-UDP bitmap:port range 0-65535",
		"add KUBE-NODE-PORT-UDP 30053",
		"create KUBE-HEALTH-CHECK-NODE-PORT bitmap:port range 0-65535",
		"add KUBE-HEALTH-CHECK-NODE-PORT 32000",
		"create KUBE-EXTERNAL-IP hash:ip,port family inet hashsize 1024 maxelem 65536",
		"add KUBE-EXTERNAL-IP 198.18.0.2,tcp:30080",
	}
	rules := []struct {
		rule string
		want uint64
	}{
		{"-m set --match-set KUBE-CLUSTER-IP dst,dst", 2},                                              // tcp 443, udp 53
		{"-m set --match-set KUBE-CLUSTER-IP dst,src", 0},                                              // (source ports are 40000+)
		{"-m set --match-set KUBE-LOOP-BACK dst,dst,src", 1},                                           // 8080 from .1
		{"-m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src", 1},                           // 81 (80: the client is in the nomatch /30)
		{"-m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src --return-nomatch", 1},          // 80 only: the answer reversed
		{"-p tcp -m set ! --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src", 7},                  // every SYN but 81's
		{"-p tcp -m set ! --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src --return-nomatch", 7}, // all but 80's
		{"-m set --match-set KUBE-LB-SRC-IP src,dst,dst", 1},                                           // 8443
		{"-m set --match-set KUBE-LB-SRC-IP dst,dst,src", 0},
		{"-p tcp -m set --match-set KUBE-NODE-PORT-TCP dst", 1},
		{"-m set --match-set KUBE-NODE-PORT-TCP dst", 2}, // tcp and udp 30080
		{"-p udp -m set --match-set KUBE-NODE-PORT-UDP dst", 1},
		{"-m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst", 1},
		{"-p icmp -m set ! --match-set KUBE-NODE-PORT-TCP dst", 2}, // no port: never in a bitmap:port
		{"-m set --match-set KUBE-EXTERNAL-IP dst,dst", 1},         // tcp 30080 (not udp)
	}
	syns := []struct{ sport, dport int }{{40001, 443}, {40002, 8080}, {40003, 8081}, {40004, 80}, {40005, 81}, {40006, 8443}, {40007, 30080}, {40008, 32000}}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool, ipset := tools[label], ipsets[label]
		p := newPktPair(t, "ik"+label[:1])
		for _, c := range sets {
			args, err := ShellWords(c)
			if err != nil {
				t.Fatal(err)
			}
			mustRun(t, p.server, append([]string{ipset}, args...)...)
		}
		for _, r := range rules {
			mustRun(t, p.server, append([]string{tool, "-A", "INPUT"}, strings.Fields(r.rule)...)...)
		}
		for _, s := range syns {
			sendTCP(t, p.client, s.sport, s.dport, 0, false, false)
		}
		for _, port := range []int{53, 30080, 30053} {
			sendUDP(t, p.client, port)
		}
		mustRun(t, p.client, "ping", "-c", "2", "-i", "0.2", "-W", "2", pktServer)
		time.Sleep(200 * time.Millisecond)
		got[label] = ruleCounters(t, p.server, tool, "filter", "INPUT")
		if len(got[label]) != len(rules) {
			t.Fatalf("%s: %d counters for %d rules", label, len(got[label]), len(rules))
		}
	}
	for i, r := range rules {
		if ref, ours := got["ref"][i], got["ours"][i]; ref != ours || ours != r.want {
			t.Errorf("%s: reference counted %d, xdptables %d, want %d", r.rule, ref, ours, r.want)
		}
	}
}
