package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestIpsetPacketsWildcard: hash:net,iface sets with wildcard entries
// (interface name prefixes), loaded with the reference ipset +
// iptables-nft and with xdptables, each in its own pair of namespaces:
// the server has three links to one client, named eth0, eth1 and
// veth-h57a, one network each. The client pings the server over each;
// every rule of the server's INPUT (src,src: the source address and the
// input interface) and OUTPUT (dst,dst: the replies' destination and
// output interface) counts, and the counters must be the reference's
// and the ones expected; an IPv6 set likewise over the first two links
// (chain "6INPUT": ip6tables' INPUT).
func TestIpsetPacketsWildcard(t *testing.T) {
	tools := pktTools(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	ipsets := map[string]string{"ref": "ipset", "ours": filepath.Join(LinkDir(t), "ipset")}
	links := []struct{ name, net, net6 string }{{"eth0", "198.18.1", "2001:db8:1::"}, {"eth1", "198.18.2", "2001:db8:2::"}, {"veth-h57a", "198.51.100", ""}}
	sets := []string{
		"create w1 hash:net,iface", "add w1 198.18.0.0/15,eth wildcard", "add w1 198.51.100.0/24,veth wildcard",
		// an exact name before the wildcard that holds it
		"create w2 hash:net,iface", "add w2 198.18.0.0/15,eth1 nomatch", "add w2 198.18.0.0/15,eth wildcard",
		// the most specific network decides, whatever its interface
		"create w3 hash:net,iface", "add w3 198.18.0.0/15,eth wildcard", "add w3 198.18.2.0/24,lo",
		"create w4 hash:net,iface", "add w4 198.18.0.0/16,eth0", "add w4 198.18.0.0/16,eth wildcard nomatch",
		"add w4 198.51.100.0/24,veth-h57a wildcard",
		// nested wildcards
		"create w5 hash:net,iface", "add w5 198.51.100.0/24,veth-h57 wildcard", "add w5 198.51.100.0/24,v wildcard nomatch",
		"add w5 198.18.0.0/15,e wildcard",
		// physdev: matches no packet, with or without the flag
		"create w6 hash:net,iface", "add w6 198.18.0.0/15,physdev:eth wildcard", "add w6 198.51.100.0/24,physdev: wildcard",
		// add -exist keeps the stored wildcard name and sets nomatch
		"create w7 hash:net,iface", "add w7 198.18.0.0/15,eth wildcard", "add -exist w7 198.18.0.0/15,eth1 nomatch",
		"add w7 198.51.100.0/24,veth-h57a", "add w7 198.51.100.0/24,veth-h57 wildcard nomatch",
		// a del of eth1 takes the wildcard entry that holds it
		"create w8 hash:net,iface", "add w8 198.18.0.0/15,eth0", "add w8 198.18.0.0/15,et wildcard",
		"del w8 198.18.0.0/15,eth1", "add w8 198.51.100.0/24,veth-h57a wildcard",
		// list:set members with wildcard entries, tried in order
		"create l1 list:set", "add l1 w4", "add l1 w1",
		"create l2 list:set", "add l2 w2", "add l2 w3",
		"create v6 hash:net,iface family inet6", "add v6 2001:db8::/32,eth0 nomatch", "add v6 2001:db8::/32,eth wildcard",
	}
	const pings = 2 // per link
	rules := []struct {
		chain, rule string
		want        uint64
	}{
		{"INPUT", "-p icmp -m set --match-set w1 src,src", 3 * pings},
		{"INPUT", "-p icmp -m set --match-set w1 src,dst", 0}, // no output interface in INPUT
		{"INPUT", "-p icmp -m set ! --match-set w1 src,src", 0},
		{"INPUT", "-p icmp -m set --match-set w2 src,src", pings},                  // eth0
		{"INPUT", "-p icmp -m set --match-set w2 src,src --return-nomatch", pings}, // eth1 (only nomatch entries)
		{"INPUT", "-p icmp -m set ! --match-set w2 src,src", 2 * pings},            // eth1, veth-h57a
		{"INPUT", "-p icmp -m set --match-set w3 src,src", pings},                  // eth0
		{"INPUT", "-p icmp -m set --match-set w4 src,src", 2 * pings},              // eth0, veth-h57a
		{"INPUT", "-p icmp -m set --match-set w4 src,src --return-nomatch", pings}, // eth1
		{"INPUT", "-p icmp -m set --match-set w5 src,src", 3 * pings},
		{"INPUT", "-p icmp -m set --match-set w6 src,src", 0},
		{"INPUT", "-p icmp -m set --match-set w7 src,src", pings}, // veth-h57a
		{"INPUT", "-p icmp -m set ! --match-set w7 src,src --return-nomatch", pings},
		{"INPUT", "-p icmp -m set --match-set w8 src,src", 2 * pings},   // eth0, veth-h57a
		{"INPUT", "-p icmp -m set --match-set l1 src,src", 3 * pings},   // eth1 through w1
		{"INPUT", "-p icmp -m set ! --match-set l2 src,src", 2 * pings}, // eth1, veth-h57a
		{"OUTPUT", "-p icmp -m set --match-set w1 dst,dst", 3 * pings},
		{"OUTPUT", "-p icmp -m set --match-set w2 dst,dst", pings},
		{"OUTPUT", "-p icmp -m set --match-set w4 dst,dst", 2 * pings},
		{"OUTPUT", "-p icmp -m set --match-set w1 dst,src", 0},                                                      // no input interface in OUTPUT
		{"6INPUT", "-p ipv6-icmp --icmpv6-type echo-request -m set --match-set v6 src,src", pings},                  // eth1
		{"6INPUT", "-p ipv6-icmp --icmpv6-type echo-request -m set --match-set v6 src,src --return-nomatch", pings}, // eth0
	}
	tools6 := map[string]string{"ref": "ip6tables-nft", "ours": filepath.Join(LinkDir(t), "ip6tables")}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool, ipset := tools[label], ipsets[label]
		client, server := netns.New(t, "iw"+label[:1]+"c"), netns.New(t, "iw"+label[:1]+"s")
		for i, l := range links {
			// (unique on the host while created; renamed in the server)
			a := fmt.Sprintf("xa%d%s%d", os.Getpid()%100000, label[:1], i)
			b := fmt.Sprintf("xb%d%s%d", os.Getpid()%100000, label[:1], i)
			mustRun(t, nil, "ip", "link", "add", a, "netns", client.Name, "type", "veth", "peer", "name", b, "netns", server.Name)
			mustRun(t, server, "ip", "link", "set", b, "name", l.name)
			mustRun(t, client, "ip", "addr", "add", l.net+".1/24", "dev", a)
			mustRun(t, server, "ip", "addr", "add", l.net+".2/24", "dev", l.name)
			if l.net6 != "" {
				mustRun(t, client, "ip", "addr", "add", l.net6+"1/64", "dev", a, "nodad")
				mustRun(t, server, "ip", "addr", "add", l.net6+"2/64", "dev", l.name, "nodad")
			}
			mustRun(t, client, "ip", "link", "set", a, "up")
			mustRun(t, server, "ip", "link", "set", l.name, "up")
		}
		for _, c := range sets {
			mustRun(t, server, append([]string{ipset}, strings.Fields(c)...)...)
		}
		for _, r := range rules {
			args, err := ShellWords(r.rule)
			if err != nil {
				t.Fatal(err)
			}
			if chain, ok := strings.CutPrefix(r.chain, "6"); ok {
				mustRun(t, server, append([]string{tools6[label], "-A", chain}, args...)...)
				continue
			}
			mustRun(t, server, append([]string{tool, "-A", r.chain}, args...)...)
		}
		for _, l := range links {
			mustRun(t, client, "ping", "-c", fmt.Sprint(pings), "-i", "0.2", "-W", "2", l.net+".2")
			if l.net6 != "" {
				mustRun(t, client, "ping", "-6", "-c", fmt.Sprint(pings), "-i", "0.2", "-W", "2", l.net6+"2")
			}
		}
		time.Sleep(200 * time.Millisecond)
		got[label] = append(ruleCounters(t, server, tool, "filter", "INPUT"), ruleCounters(t, server, tool, "filter", "OUTPUT")...)
		got[label] = append(got[label], ruleCounters(t, server, tools6[label], "filter", "INPUT")...)
		if len(got[label]) != len(rules) {
			t.Fatalf("%s: %d counters for %d rules", label, len(got[label]), len(rules))
		}
	}
	for i, r := range rules {
		ref, ours := got["ref"][i], got["ours"][i]
		if ref != ours || ours != r.want {
			t.Errorf("%s %s: reference counted %d, xdptables %d, want %d", r.chain, r.rule, ref, ours, r.want)
		}
	}
}
