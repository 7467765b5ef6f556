package integration

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// The IPv6 side of the translate tests, and translations of single
// commands: what `xdptables translate` prints, loaded with `nft -f`,
// must give the ruleset and the packet verdicts xdptables gives.

const (
	pktClient6 = "2001:db8::1"
	pktServer6 = "2001:db8::2"
)

// addV6 gives both ends of a pair their IPv6 addresses.
func addV6(t *testing.T, p *pktPair) {
	t.Helper()
	for _, side := range []struct {
		ns   *netns.NS
		addr string
	}{{p.client, pktClient6}, {p.server, pktServer6}} {
		out := mustRun(t, side.ns, "ip", "-o", "link", "show", "type", "veth")
		f := strings.Fields(out)
		if len(f) < 2 {
			t.Fatalf("no veth in %s: %q", side.ns.Name, out)
		}
		dev, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		mustRun(t, side.ns, "ip", "addr", "add", side.addr+"/64", "dev", dev, "nodad")
	}
}

const translatePacketRules6 = `*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A INPUT -s 2001:db8::1/128 -p tcp -m tcp --dport 7001 -j ACCEPT
-A INPUT -p tcp -m tcp --dport 7002 -j DROP
-A INPUT -p tcp -m tcp --dport 7003 -j REJECT --reject-with tcp-reset
-A INPUT -p tcp -m tcp --dport 7004 -m set --match-set tr6blk src -j DROP
-A INPUT -p tcp -m tcp --dport 7005 -m set --match-set tr6net src -j DROP
-A INPUT -p tcp -m tcp --dport 7006 -m set --match-set tr6wide src -j DROP
-A INPUT -p ipv6-icmp -m length --length 150:250 -j DROP
COMMIT
`

// tr6net holds the client's /64 with the client itself "nomatch";
// tr6wide the same /64 without it; tr6blk the client.
const translatePacketSets6 = `create tr6blk hash:ip family inet6 hashsize 1024 maxelem 65536
add tr6blk 2001:db8::1
create tr6net hash:net family inet6 hashsize 1024 maxelem 65536
add tr6net 2001:db8::/64
add tr6net 2001:db8::1 nomatch
create tr6wide hash:net family inet6 hashsize 1024 maxelem 65536
add tr6wide 2001:db8::/64
`

func TestTranslatePackets6(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	tmp := t.TempDir()
	rules, sets := filepath.Join(tmp, "rules"), filepath.Join(tmp, "sets")
	if err := os.WriteFile(rules, []byte(translatePacketRules6), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sets, []byte(translatePacketSets6), 0o644); err != nil {
		t.Fatal(err)
	}
	script, stderr, rc := translateOut(t, "--ipsets", sets, "ip6tables-restore", rules)
	if rc != 0 {
		t.Fatalf("translate: rc %d: %s", rc, stderr)
	}
	if strings.Contains(script, "# uses xtables") || strings.Contains(script, "not translated") || !strings.Contains(script, "table ip6 xdptables") {
		t.Fatalf("every rule should translate natively into table ip6 xdptables:\n%s", script)
	}
	ours, theirs := newPktPair(t, "t6x"), newPktPair(t, "t6n")
	addV6(t, ours)
	addV6(t, theirs)
	mustRun(t, ours.server, filepath.Join(dir, "ipset"), "restore", "-f", sets)
	mustRun(t, ours.server, filepath.Join(dir, "ip6tables-restore"), rules)
	if r := theirs.server.Run(script, "nft", "-f", "-"); r.RC != 0 {
		t.Fatalf("nft -f: %s\n%s", r.Stderr, script)
	}
	if a, b := nftRules(t, ours.server, false), nftRules(t, theirs.server, false); !reflect.DeepEqual(a, b) {
		t.Errorf("rulesets with sets differ\nxdptables:\n%s\ntranslation:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	ports := []int{7001, 7002, 7003, 7004, 7005, 7006}
	want := map[int]string{7001: "open", 7002: "timeout", 7003: "refused", 7004: "timeout", 7005: "open", 7006: "timeout"}
	for _, p := range []*pktPair{ours, theirs} {
		for _, port := range ports {
			listenTCP6(t, p.server, port)
		}
	}
	for _, port := range ports {
		a, b := tcpVerdict6(t, ours.client, port), tcpVerdict6(t, theirs.client, port)
		if a != b || a != want[port] {
			t.Errorf("port %d: xdptables %s, translation %s, want %s", port, a, b, want[port])
		}
	}
	// 40 bytes of IPv6 header and 8 of ICMPv6 header: -s 60 is 108
	// bytes (answered), -s 160 is 208 (dropped)
	for _, size := range []int{60, 160} {
		a := ours.client.Run("", "ping", "-6", "-c", "1", "-W", "1", "-s", strconv.Itoa(size), pktServer6).RC == 0
		b := theirs.client.Run("", "ping", "-6", "-c", "1", "-W", "1", "-s", strconv.Itoa(size), pktServer6).RC == 0
		if a != b || a != (size == 60) {
			t.Errorf("ping -6 -s %d: xdptables answered %v, translation answered %v", size, a, b)
		}
	}
}

func listenTCP6(t *testing.T, ns *netns.NS, port int) {
	t.Helper()
	var l net.Listener
	inNS(t, ns, func() {
		var err error
		l, err = net.Listen("tcp6", net.JoinHostPort(pktServer6, strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
	})
	acceptAndClose(t, l)
}

func tcpVerdict6(t *testing.T, ns *netns.NS, port int) string {
	t.Helper()
	res := ""
	inNS(t, ns, func() {
		c, err := net.DialTimeout("tcp6", net.JoinHostPort(pktServer6, strconv.Itoa(port)), time.Second)
		switch {
		case err == nil:
			c.Close()
			res = "open"
		case strings.Contains(err.Error(), "refused"):
			res = "refused"
		default:
			res = "timeout"
		}
	})
	return res
}

// TestTranslateCommands: single commands, translated one by one and
// loaded with nft -f in order, build the ruleset the same commands build
// when xdptables runs them.
func TestTranslateCommands(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	cmds := [][]string{
		{"iptables", "-N", "WEB"},
		{"iptables", "-A", "WEB", "-p", "tcp", "-m", "multiport", "--dports", "80,443", "-j", "ACCEPT"},
		{"iptables", "-A", "INPUT", "-s", "198.51.100.0/24", "-j", "WEB"},
		{"iptables", "-I", "INPUT", "-i", "lo", "-j", "ACCEPT"},
		{"iptables", "-P", "INPUT", "DROP"},
		{"iptables", "-t", "nat", "-A", "POSTROUTING", "-s", "198.18.0.0/15", "-j", "MASQUERADE"},
		{"iptables", "-t", "raw", "-A", "PREROUTING", "-s", "203.0.113.0/24", "-j", "DROP"},
		{"ip6tables", "-N", "SSH"},
		{"ip6tables", "-A", "SSH", "-s", "2001:db8::/32", "-j", "ACCEPT"},
		{"ip6tables", "-A", "INPUT", "-p", "tcp", "--dport", "22", "-j", "SSH"},
		{"ip6tables", "-P", "FORWARD", "DROP"},
	}
	ours, nf := netns.New(t, "tcx"), netns.New(t, "tcn")
	compat := 0
	for _, c := range cmds {
		if r := ours.Run("", append([]string{filepath.Join(dir, c[0])}, c[1:]...)...); r.RC != 0 {
			t.Fatalf("%s: %s", strings.Join(c, " "), r.Stderr)
		}
		script, stderr, rc := translateOut(t, c...)
		if rc != 0 {
			t.Fatalf("translate %s: rc %d: %s", strings.Join(c, " "), rc, stderr)
		}
		if r := nf.Run(script, "nft", "-f", "-"); r.RC != 0 {
			t.Fatalf("nft -f of the translation of %s: %s\n%s", strings.Join(c, " "), r.Stderr, script)
		}
		if strings.Contains(script, "# uses xtables extensions") {
			compat++
		}
	}
	// multiport runs as nft_compat, which a script cannot hold: the
	// translation says so and leaves that one rule out
	if compat != 1 {
		t.Errorf("%d translations left a rule out, want 1 (multiport)", compat)
	}
	if a, b := nftRules(t, ours, true), nftRules(t, nf, false); !reflect.DeepEqual(a, b) {
		t.Errorf("rulesets differ\nxdptables:\n%s\ntranslation:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}
