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

// TestIpsetPacketsPveIPFilter: pve-firewall's ipfilter set of a guest's
// interface (hash:net family inet6 with the guest's EUI-64 link-local
// address, fe80::/10 as a nomatch entry and its global address), matched
// against the guest's IPv6 echo requests from each of its sources, with
// the reference ipset + ip6tables-nft and with xdptables: the link-local
// address the set holds matches inside the nomatch /10, another
// link-local address does not (and does with --return-nomatch, which
// reverses the answer), the global address does; "! --match-set" is
// what pve's rule uses. Counts must be the reference's and the ones
// expected.
func TestIpsetPacketsPveIPFilter(t *testing.T) {
	netns.RequireRoot(t)
	for _, tool := range []string{"ipset", "ip6tables-nft", "ping"} {
		if !netns.Have(tool) {
			t.Skipf("reference %s is not installed", tool)
		}
	}
	tools := map[string][2]string{
		"ref":  {"ipset", "ip6tables-nft"},
		"ours": {filepath.Join(LinkDir(t), "ipset"), filepath.Join(LinkDir(t), "ip6tables")},
	}
	sets := []string{
		"create PVEFW-100-ipfilter-net0-v6 hash:net family inet6 hashsize 64 maxelem 64",
		"add PVEFW-100-ipfilter-net0-v6 fe80::ff:fe00:1", // the guest's MAC 02:00:00:00:00:01
		"add PVEFW-100-ipfilter-net0-v6 fe80::/10 nomatch",
		"add PVEFW-100-ipfilter-net0-v6 2001:db8::1",
	}
	const echo = "-p ipv6-icmp --icmpv6-type echo-request "
	rules := []struct {
		rule string
		want uint64
	}{
		{echo + "-m set --match-set PVEFW-100-ipfilter-net0-v6 src", 4},                    // 2001:db8::1 and fe80::ff:fe00:1
		{echo + "-m set ! --match-set PVEFW-100-ipfilter-net0-v6 src", 2},                  // fe80::99
		{echo + "-m set --match-set PVEFW-100-ipfilter-net0-v6 src --return-nomatch", 2},   // fe80::99: reversed
		{echo + "-m set ! --match-set PVEFW-100-ipfilter-net0-v6 src --return-nomatch", 4}, // the other two
		{echo + "-s fe80::/10 -m set --match-set PVEFW-100-ipfilter-net0-v6 src", 2},
	}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		ipset, ip6tables := tools[label][0], tools[label][1]
		tag := "ip6" + label[:1]
		client, server := netns.New(t, tag+"c"), netns.New(t, tag+"s")
		a := fmt.Sprintf("xa%d%s", os.Getpid()%100000, tag)
		b := fmt.Sprintf("xb%d%s", os.Getpid()%100000, tag)
		mustRun(t, nil, "ip", "link", "add", a, "netns", client.Name, "type", "veth", "peer", "name", b, "netns", server.Name)
		for _, c := range [][]string{
			{"sysctl", "-q", "-w", "net.ipv6.conf." + a + ".accept_dad=0"},
			{"ip", "link", "set", a, "address", "02:00:00:00:00:01"},
			{"ip", "addr", "add", "2001:db8::1/64", "dev", a, "nodad"},
			{"ip", "addr", "add", "fe80::99/64", "dev", a, "nodad"},
			{"ip", "link", "set", a, "up"},
			{"ip", "link", "set", "lo", "up"},
		} {
			mustRun(t, client, c...)
		}
		for _, c := range [][]string{
			{"sysctl", "-q", "-w", "net.ipv6.conf." + b + ".accept_dad=0"},
			{"ip", "link", "set", b, "address", "02:00:00:00:00:02"},
			{"ip", "addr", "add", "2001:db8::2/64", "dev", b, "nodad"},
			{"ip", "link", "set", b, "up"},
			{"ip", "link", "set", "lo", "up"},
		} {
			mustRun(t, server, c...)
		}
		for _, c := range sets {
			mustRun(t, server, append([]string{ipset}, strings.Fields(c)...)...)
		}
		for _, r := range rules {
			mustRun(t, server, append([]string{ip6tables, "-A", "INPUT"}, strings.Fields(r.rule)...)...)
		}
		// the link-local addresses come up without DAD; the auto one
		// may take a moment to be assigned
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(mustRun(t, client, "ip", "-6", "addr", "show", "dev", a), "fe80::ff:fe00:1/64") && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		for _, src := range []string{"2001:db8::1", "fe80::ff:fe00:1", "fe80::99"} {
			dst := "2001:db8::2"
			if strings.HasPrefix(src, "fe80:") {
				src, dst = src+"%"+a, "fe80::ff:fe00:2%"+a
			}
			mustRun(t, client, "ping", "-6", "-n", "-q", "-c", "2", "-i", "0.2", "-W", "2", "-I", src, dst)
		}
		time.Sleep(200 * time.Millisecond)
		got[label] = ruleCounters(t, server, ip6tables, "filter", "INPUT")
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
