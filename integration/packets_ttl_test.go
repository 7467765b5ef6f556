package integration

import (
	"fmt"
	"testing"
	"time"
)

// TestPacketsTTLIncDec: -j TTL --ttl-dec/--ttl-inc on a router change the
// TTL of forwarded packets with the header checksum kept valid (the
// receiving kernel drops a packet whose checksum is wrong), saturating at
// 0 and 255; -j HL --hl-dec does the same for IPv6. The same rules and
// pings run with the reference and with xdptables; the counters of the
// -m ttl / -m hl rules that see the result must agree. -Z on the router
// rebuilds the rules (and their maps): they keep working.
func TestPacketsTTLIncDec(t *testing.T) {
	tools := pktTools(t)
	router := []string{
		"-t mangle -A FORWARD -p icmp -d " + natServer + " -j TTL --ttl-dec 10",
		"-t mangle -A FORWARD -p icmp -s " + natServer + " -j TTL --ttl-inc 250",
		"-t mangle -A POSTROUTING -p udp --dport 9 -j TTL --ttl-dec 100",
	}
	server := []string{
		"-A INPUT -p icmp -m ttl --ttl-eq 53",
		"-A INPUT -p udp --dport 9 -m ttl --ttl-eq 0",
		"-A INPUT -m ttl --ttl-eq 63",
	}
	// the echo replies and the port unreachable for the datagram
	client := []string{"-A INPUT -p icmp -m ttl --ttl-eq 255"}
	got := map[string]string{}
	for _, label := range []string{"ref", "ours"} {
		tool := tools[label]
		n := newNatTriple(t, "tt"+label[:1])
		mustRun(t, n.server, "ip", "route", "add", "default", "via", natRouterB)
		loadRules(t, n.router, tool, router)
		loadRules(t, n.server, tool, server)
		loadRules(t, n.client, tool, client)
		ping := func() {
			mustRun(t, n.client, "ping", "-c", "2", "-i", "0.2", "-W", "2", natServer)
			// one UDP datagram the router's POSTROUTING takes to TTL 0
			mustRun(t, n.client, "bash", "-c", "echo x > /dev/udp/"+natServer+"/9")
			time.Sleep(200 * time.Millisecond)
		}
		ping()
		mustRun(t, n.router, tool, "-t", "mangle", "-Z")
		zeroed := fmt.Sprint(ruleCounters(t, n.router, tool, "mangle", "FORWARD"))
		ping()
		got[label] = fmt.Sprint(ruleCounters(t, n.server, tool, "filter", "INPUT"),
			ruleCounters(t, n.client, tool, "filter", "INPUT"), zeroed,
			ruleCounters(t, n.router, tool, "mangle", "FORWARD"),
			ruleCounters(t, n.router, tool, "mangle", "POSTROUTING"))
	}
	if got["ref"] != got["ours"] {
		t.Errorf("counters: reference %s, xdptables %s", got["ref"], got["ours"])
	}
	if want := "[4 2 0] [6][0 0][2 3] [1]"; got["ours"] != want {
		t.Errorf("counters %s, want %s", got["ours"], want)
	}
}

// TestPacketsHLDec: ip6tables -j HL --hl-dec seen by -m hl.
func TestPacketsHLDec(t *testing.T) {
	tools := pktTools(t)
	got := map[string]string{}
	for _, label := range []string{"ref", "ours"} {
		tool := tools[label]
		tool6 := tool[:len(tool)-len("iptables")] + "ip6tables"
		if label == "ref" {
			tool6 = "ip6tables-nft"
		}
		p := newPktPair(t, "hl"+label[:1])
		mustRun(t, p.client, "ip", "-6", "addr", "add", "2001:db8:77::1/64", "dev", p.clientDev, "nodad")
		mustRun(t, p.server, "ip", "-6", "addr", "add", "2001:db8:77::2/64", "dev", p.serverDev, "nodad")
		loadRules(t, p.server, tool6, []string{
			"-t mangle -A PREROUTING -p ipv6-icmp --icmpv6-type echo-request -j HL --hl-dec 60",
			"-A INPUT -p ipv6-icmp -m hl --hl-eq 4",
			"-A INPUT -p ipv6-icmp -m hl --hl-eq 64",
		})
		mustRun(t, p.client, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", "2001:db8:77::2")
		time.Sleep(100 * time.Millisecond)
		got[label] = fmt.Sprint(ruleCounters(t, p.server, tool6, "filter", "INPUT"))
	}
	if got["ref"] != got["ours"] {
		t.Errorf("counters: reference %s, xdptables %s", got["ref"], got["ours"])
	}
	if got["ours"] != "[2 0]" {
		t.Errorf("counters %s, want [2 0]", got["ours"])
	}
}
