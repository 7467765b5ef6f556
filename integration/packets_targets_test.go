package integration

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// Packet tests for the targets: the same rules are loaded with the
// reference iptables-nft and with xdptables, each in its own namespaces,
// the same traffic is sent, and outcomes and counters must agree.

// dialOnce connects from ns to addr:port and returns the error.
func dialOnce(t *testing.T, ns *netns.NS, addr string, port int) error {
	t.Helper()
	var err error
	inNS(t, ns, func() {
		var c net.Conn
		c, err = net.DialTimeout("tcp4", net.JoinHostPort(addr, strconv.Itoa(port)), 2*time.Second)
		if err == nil {
			c.Close()
		}
	})
	return err
}

// peerLog is a listener in ns on addr:port that records the remote
// address of each accepted connection.
type peerLog struct {
	mu    sync.Mutex
	peers []string
}

func (p *peerLog) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.peers...)
}

func listenPeers(t *testing.T, ns *netns.NS, addr string, port int) *peerLog {
	t.Helper()
	var l net.Listener
	inNS(t, ns, func() {
		var err error
		l, err = net.Listen("tcp4", net.JoinHostPort(addr, strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { l.Close() })
	pl := &peerLog{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			pl.mu.Lock()
			pl.peers = append(pl.peers, host)
			pl.mu.Unlock()
			c.Close()
		}
	}()
	return pl
}

func loadRules(t *testing.T, ns *netns.NS, tool string, rules []string) {
	t.Helper()
	for _, r := range rules {
		args, err := ShellWords(r)
		if err != nil {
			t.Fatal(err)
		}
		mustRun(t, ns, append([]string{tool}, args...)...)
	}
}

// TestPacketsTargets checks REJECT (ICMP port unreachable and TCP
// reset both make connect fail with "connection refused"), MARK seen by
// -m mark in a later chain, CT --notrack seen as UNTRACKED, TTL
// --ttl-set seen by -m ttl, LOG, NFLOG and REDIRECT, on a client/server
// pair.
func TestPacketsTargets(t *testing.T) {
	tools := pktTools(t)
	rules := []string{
		"-A INPUT -p tcp --dport 81 -j REJECT",
		"-A INPUT -p tcp --dport 82 -j REJECT --reject-with tcp-reset",
		"-A INPUT -p tcp --dport 83 -j REJECT --reject-with icmp-admin-prohibited",
		"-A INPUT -p tcp --syn --dport 80 -j LOG --log-prefix \"xdpt \" --log-level 7",
		"-A INPUT -p tcp --syn --dport 80 -j NFLOG --nflog-group 9",
		"-A INPUT -p tcp --syn -m mark --mark 0x5/0xff",
		"-A INPUT -m conntrack --ctstate UNTRACKED",
		"-A INPUT -p tcp --syn -m ttl --ttl-eq 99",
		"-t mangle -A PREROUTING -p tcp --dport 80 -j MARK --set-xmark 0x5/0xff",
		"-t mangle -A PREROUTING -p tcp --dport 80 -j TTL --ttl-set 99",
		"-t raw -A PREROUTING -p icmp -j CT --notrack",
		"-t nat -A PREROUTING -p tcp --dport 84 -j REDIRECT --to-ports 80",
	}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool := tools[label]
		p := newPktPair(t, "tg"+label[:1])
		loadRules(t, p.server, tool, rules)
		listenTCP(t, p.server, 80)
		if err := dialOnce(t, p.client, pktServer, 80); err != nil {
			t.Errorf("%s: port 80: %v", label, err)
		}
		for _, port := range []int{81, 82} {
			if err := dialOnce(t, p.client, pktServer, port); !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("%s: port %d: %v, want connection refused", label, port, err)
			}
		}
		// admin prohibited: EHOSTUNREACH for connect
		if err := dialOnce(t, p.client, pktServer, 83); err == nil {
			t.Errorf("%s: port 83 connected through REJECT", label)
		}
		if err := dialOnce(t, p.client, pktServer, 84); err != nil {
			t.Errorf("%s: port 84 (REDIRECT to 80): %v", label, err)
		}
		mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "2", pktServer)
		time.Sleep(200 * time.Millisecond)
		got[label] = ruleCounters(t, p.server, tool, "filter", "INPUT")
	}
	if fmt.Sprint(got["ref"]) != fmt.Sprint(got["ours"]) {
		t.Errorf("INPUT counters: reference %v, xdptables %v", got["ref"], got["ours"])
	}
	c := got["ours"]
	// SYNs to port 80: one direct, one redirected from 84 (LOG and
	// NFLOG see both; MARK and TTL run in mangle PREROUTING before the
	// redirect, on the direct one); three untracked pings
	want := "[1 1 1 2 2 1 3 1]"
	if fmt.Sprint(c) != want {
		t.Errorf("INPUT counters %v, want %s", c, want)
	}
}

// natTriple is client — router — server: the client routes through
// the router; the server knows only its own subnet, so replies reach
// the client only through the router's source NAT.
type natTriple struct {
	client, router, server *netns.NS
}

const (
	natClient  = "198.18.0.1"
	natRouterA = "198.18.0.2"
	natRouterB = "198.18.1.1"
	natServer  = "198.18.1.2"
)

func newNatTriple(t *testing.T, tag string) *natTriple {
	t.Helper()
	n := &natTriple{client: netns.New(t, tag+"c"), router: netns.New(t, tag+"r"), server: netns.New(t, tag+"s")}
	id := os.Getpid() % 10000
	a1, a2 := fmt.Sprintf("xna%d%s", id, tag), fmt.Sprintf("xnb%d%s", id, tag)
	b1, b2 := fmt.Sprintf("xnc%d%s", id, tag), fmt.Sprintf("xnd%d%s", id, tag)
	mustRun(t, nil, "ip", "link", "add", a1, "netns", n.client.Name, "type", "veth", "peer", "name", a2, "netns", n.router.Name)
	mustRun(t, nil, "ip", "link", "add", b1, "netns", n.router.Name, "type", "veth", "peer", "name", b2, "netns", n.server.Name)
	mustRun(t, n.client, "ip", "addr", "add", natClient+"/24", "dev", a1)
	mustRun(t, n.router, "ip", "addr", "add", natRouterA+"/24", "dev", a2)
	mustRun(t, n.router, "ip", "addr", "add", natRouterB+"/24", "dev", b1)
	mustRun(t, n.server, "ip", "addr", "add", natServer+"/24", "dev", b2)
	for _, x := range []struct {
		ns  *netns.NS
		dev string
	}{{n.client, a1}, {n.router, a2}, {n.router, b1}, {n.server, b2}} {
		mustRun(t, x.ns, "ip", "link", "set", x.dev, "up")
		mustRun(t, x.ns, "ip", "link", "set", "lo", "up")
	}
	mustRun(t, n.client, "ip", "route", "add", "default", "via", natRouterA)
	mustRun(t, n.router, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
	return n
}

// TestPacketsNAT: MASQUERADE and SNAT make the server see the router's
// address; DNAT on the router reaches the server through the router's
// address.
func TestPacketsNAT(t *testing.T) {
	tools := pktTools(t)
	cases := []struct {
		name  string
		rules []string
		dial  string
		port  int
		peer  string // what the server must see; "" = must fail
	}{
		{"none", nil, natServer, 80, ""},
		{"masquerade", []string{"-t nat -A POSTROUTING -s 198.18.0.0/24 -j MASQUERADE"}, natServer, 80, natRouterB},
		{"snat", []string{"-t nat -A POSTROUTING -p tcp -j SNAT --to-source 198.18.1.1:20000-20010"}, natServer, 80, natRouterB},
		{"dnat", []string{
			"-t nat -A PREROUTING -p tcp --dport 8080 -j DNAT --to-destination 198.18.1.2:80",
			"-t nat -A POSTROUTING -d 198.18.1.2 -j SNAT --to-source 198.18.1.1",
		}, natRouterA, 8080, natRouterB},
	}
	for _, tc := range cases {
		for _, label := range []string{"ref", "ours"} {
			n := newNatTriple(t, tc.name[:2]+label[:1])
			loadRules(t, n.router, tools[label], tc.rules)
			pl := listenPeers(t, n.server, natServer, 80)
			err := dialOnce(t, n.client, tc.dial, tc.port)
			time.Sleep(100 * time.Millisecond)
			switch {
			case tc.peer == "" && err == nil:
				t.Errorf("%s/%s: connected without NAT", tc.name, label)
			case tc.peer != "" && err != nil:
				t.Errorf("%s/%s: %v", tc.name, label, err)
			case tc.peer != "" && strings.Join(pl.list(), ",") != tc.peer:
				t.Errorf("%s/%s: server saw %v, want %s", tc.name, label, pl.list(), tc.peer)
			}
		}
	}
}
