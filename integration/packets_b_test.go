package integration

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestPacketsB sends the same packets through the group-b matches twice:
// once with the rules loaded by the reference iptables-nft (xtables
// matches) and once by xdptables (mostly native nftables), each in its own
// pair of namespaces joined by a veth. The rule counters of both must be
// the same, and some are checked against the packets sent.
func TestPacketsB(t *testing.T) {
	netns.RequireRoot(t)
	for _, tool := range []string{"iptables-nft", "ping", "ip"} {
		if !netns.Have(tool) {
			t.Skipf("%s is not installed", tool)
		}
	}
	dir := LinkDir(t)
	haveSetpriv := netns.Have("setpriv")
	if !haveSetpriv {
		t.Log("setpriv is not installed: the owner case for another uid is skipped")
	}

	// client (A) OUTPUT rules and server (B) INPUT rules; no targets, so
	// every rule sees every packet and only counts.
	clientRules := [][]string{
		{"-A", "OUTPUT", "-p", "icmp", "-m", "owner", "--uid-owner", "0"},
		{"-A", "OUTPUT", "-p", "icmp", "-m", "owner", "--uid-owner", "65534"},
		{"-A", "OUTPUT", "-p", "icmp", "-m", "owner", "!", "--uid-owner", "65534"},
		{"-A", "OUTPUT", "-p", "icmp", "-m", "owner", "--uid-owner", "0", "--gid-owner", "0"},
		{"-A", "OUTPUT", "-p", "icmp", "-m", "owner", "--socket-exists"},
		{"-A", "OUTPUT", "-p", "icmp", "-m", "dscp", "--dscp-class", "EF"},
		{"-A", "OUTPUT", "-p", "icmp", "-m", "addrtype", "--src-type", "LOCAL", "--limit-iface-out"},
	}
	serverRules := [][]string{
		{"-A", "INPUT", "-p", "icmp", "-m", "length", "--length", "100:200"},
		{"-A", "INPUT", "-p", "icmp", "-m", "length", "!", "--length", "100:200"},
		{"-A", "INPUT", "-p", "icmp", "-m", "length", "--length", "78"},
		{"-A", "INPUT", "-p", "icmp", "-m", "ttl", "--ttl-lt", "10"},
		{"-A", "INPUT", "-p", "icmp", "-m", "ttl", "--ttl-eq", "64"},
		{"-A", "INPUT", "-p", "icmp", "-m", "ttl", "!", "--ttl-eq", "64"},
		{"-A", "INPUT", "-p", "icmp", "-m", "ttl", "--ttl-gt", "5"},
		{"-A", "INPUT", "-m", "iprange", "--src-range", "198.18.0.1-198.18.0.3"},
		{"-A", "INPUT", "-m", "iprange", "!", "--src-range", "198.18.0.5-198.18.0.9"},
		{"-A", "INPUT", "-m", "iprange", "--dst-range", "198.18.0.255-198.18.0.255"},
		{"-A", "INPUT", "-m", "iprange", "--src-range", "198.18.0.9-198.18.0.1"},
		{"-A", "INPUT", "-p", "icmp", "-m", "addrtype", "--dst-type", "LOCAL"},
		{"-A", "INPUT", "-p", "icmp", "-m", "addrtype", "--dst-type", "BROADCAST"},
		{"-A", "INPUT", "-p", "icmp", "-m", "addrtype", "!", "--dst-type", "LOCAL"},
		{"-A", "INPUT", "-p", "icmp", "-m", "addrtype", "--dst-type", "LOCAL,BROADCAST", "--limit-iface-in"},
		{"-A", "INPUT", "-p", "icmp", "-m", "addrtype", "--src-type", "UNICAST", "--dst-type", "LOCAL,MULTICAST"},
		{"-A", "INPUT", "-p", "icmp", "-m", "pkttype", "--pkt-type", "unicast"},
		{"-A", "INPUT", "-p", "icmp", "-m", "pkttype", "--pkt-type", "broadcast"},
		{"-A", "INPUT", "-p", "icmp", "-m", "pkttype", "!", "--pkt-type", "broadcast"},
		{"-A", "INPUT", "-p", "icmp", "-m", "statistic", "--mode", "nth", "--every", "3", "--packet", "1"},
		{"-A", "INPUT", "-p", "icmp", "-m", "statistic", "--mode", "nth", "!", "--every", "4", "--packet", "0"},
		{"-A", "INPUT", "-p", "icmp", "-m", "statistic", "--mode", "random", "--probability", "0"},
		{"-A", "INPUT", "-p", "icmp", "-m", "statistic", "--mode", "random", "--probability", "1"},
		{"-A", "INPUT", "-p", "icmp", "-m", "statistic", "--mode", "random", "!", "--probability", "0"},
		{"-A", "INPUT", "-p", "icmp", "-m", "dscp", "--dscp", "0x2e"},
		{"-A", "INPUT", "-p", "icmp", "-m", "dscp", "!", "--dscp", "0x2e"},
		{"-A", "INPUT", "-p", "icmp", "-m", "dscp", "--dscp", "0"},
		{"-A", "INPUT", "-p", "tcp", "-m", "mac", "--mac-source", "02:00:00:00:00:01"},
		{"-A", "INPUT", "-p", "tcp", "-m", "mac", "!", "--mac-source", "02:00:00:00:00:01"},
		{"-A", "INPUT", "-p", "tcp", "-m", "tcpmss", "--mss", "1000:1460"},
		{"-A", "INPUT", "-p", "tcp", "-m", "string", "--string", "xdpt-payload", "--algo", "bm"},
		{"-A", "INPUT", "-p", "icmp", "-m", "quota", "--quota", "300"},
	}
	server6Rules := [][]string{
		{"-A", "INPUT", "-d", "2001:db8::2", "-m", "hl", "--hl-eq", "5"},
		{"-A", "INPUT", "-d", "2001:db8::2", "-m", "hl", "--hl-gt", "5"},
		{"-A", "INPUT", "-d", "2001:db8::2", "-m", "length", "--length", "100:200"},
		{"-A", "INPUT", "-d", "2001:db8::2", "-m", "length", "--length", "20:120"},
		{"-A", "INPUT", "-d", "2001:db8::2", "-m", "dscp", "--dscp", "0x2e"},
		{"-A", "INPUT", "-d", "2001:db8::2", "-m", "iprange", "--src-range", "2001:db8::1-2001:db8::3"},
	}

	type side struct {
		client, server *netns.NS
		saves          [3]string
	}
	run := func(tag, iptables string) *side {
		s := &side{client: netns.New(t, tag+"a"), server: netns.New(t, tag+"b")}
		ip6tables := strings.Replace(iptables, "iptables", "ip6tables", 1)
		veth := "xb" + tag
		sh := func(args ...string) {
			t.Helper()
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
			}
		}
		sh("ip", "link", "add", veth+"a", "netns", s.client.Name, "type", "veth", "peer", "name", veth+"b", "netns", s.server.Name)
		for _, c := range [][]string{
			{"ip", "link", "set", "lo", "up"},
			{"ip", "link", "set", veth + "a", "address", "02:00:00:00:00:01"},
			{"ip", "addr", "add", "198.18.0.1/24", "brd", "198.18.0.255", "dev", veth + "a"},
			{"ip", "addr", "add", "2001:db8::1/64", "dev", veth + "a", "nodad"},
			{"ip", "link", "set", veth + "a", "up"},
			{"sysctl", "-q", "-w", "net.ipv4.ping_group_range=0 2147483647"},
		} {
			if r := s.client.Run("", c...); r.RC != 0 {
				t.Fatalf("client %v: %s", c, r.Stderr)
			}
		}
		for _, c := range [][]string{
			{"ip", "link", "set", "lo", "up"},
			{"ip", "addr", "add", "198.18.0.2/24", "brd", "198.18.0.255", "dev", veth + "b"},
			{"ip", "addr", "add", "2001:db8::2/64", "dev", veth + "b", "nodad"},
			{"ip", "link", "set", veth + "b", "up"},
			{"sysctl", "-q", "-w", "net.ipv4.icmp_echo_ignore_broadcasts=0"},
		} {
			if r := s.server.Run("", c...); r.RC != 0 {
				t.Fatalf("server %v: %s", c, r.Stderr)
			}
		}
		load := func(ns *netns.NS, tool string, rules [][]string) {
			for _, r := range rules {
				if res := ns.Run("", append([]string{tool}, r...)...); res.RC != 0 {
					t.Fatalf("%s %s: %s", tool, strings.Join(r, " "), res.Stderr)
				}
			}
		}
		load(s.client, iptables, clientRules)
		load(s.server, iptables, serverRules)
		load(s.server, ip6tables, server6Rules)

		c := s.client
		ping := func(args ...string) {
			t.Helper()
			if r := c.Run("", append([]string{"ping", "-n", "-q", "-W", "1", "-i", "0.2"}, args...)...); r.RC != 0 {
				t.Errorf("%s: ping %v: rc %d %s%s", tag, args, r.RC, r.Stdout, r.Stderr)
			}
		}
		ping("-c", "3", "-s", "50", "198.18.0.2")          // 78 bytes
		ping("-c", "4", "-s", "150", "198.18.0.2")         // 178 bytes
		ping("-c", "2", "-t", "5", "198.18.0.2")           // TTL 5
		ping("-c", "2", "-Q", "0xb8", "198.18.0.2")        // DSCP EF
		ping("-c", "2", "-b", "198.18.0.255")              // broadcast
		ping("-6", "-c", "2", "-t", "5", "2001:db8::2")    // hop limit 5
		ping("-6", "-c", "2", "-s", "100", "2001:db8::2")  // 148 bytes
		ping("-6", "-c", "2", "-Q", "0xb8", "2001:db8::2") // DSCP EF
		if haveSetpriv {
			// an ICMP datagram socket owned by nobody
			r := c.Run("", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
				"ping", "-n", "-q", "-W", "1", "-i", "0.2", "-c", "2", "198.18.0.2")
			if r.RC != 0 {
				t.Errorf("%s: ping as nobody: %s%s", tag, r.Stdout, r.Stderr)
			}
		}
		// a TCP handshake with a payload to a listener on the server
		if netns.Have("python3") {
			srv := exec.Command("ip", "netns", "exec", s.server.Name, "python3", "-c",
				"import socket\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\ns.bind(('198.18.0.2',5001))\ns.listen(1)\ns.settimeout(120)\nc,_=s.accept()\nc.recv(100)\nc.close()")
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			// connect only once the listener is up, so that no SYN is
			// refused and retried (its accept waits up to 2 min: the
			// client's python starts late on a loaded machine)
			for i := 0; i < 100; i++ {
				if r := s.server.Run("", "ss", "-Hltn", "sport = :5001"); strings.Contains(r.Stdout, "5001") {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			cli := "import socket,time\nfor i in range(50):\n  try:\n    c=socket.create_connection(('198.18.0.2',5001),timeout=2); break\n  except OSError: time.sleep(0.1)\nc.sendall(b'hello xdpt-payload')\nc.close()"
			if r := c.Run("", "python3", "-c", cli); r.RC != 0 {
				t.Errorf("%s: tcp client: %s", tag, r.Stderr)
			}
			_ = srv.Wait()
		}
		for i, sv := range []struct {
			ns   *netns.NS
			tool string
		}{{s.client, iptables}, {s.server, iptables}, {s.server, ip6tables}} {
			r := sv.ns.Run("", sv.tool+"-save", "-c", "-t", "filter")
			if r.RC != 0 {
				t.Fatalf("%s-save: %s", sv.tool, r.Stderr)
			}
			s.saves[i] = normalizeSave(r.Stdout)
		}
		return s
	}
	ref := run("r", "iptables-nft")
	ours := run("o", filepath.Join(dir, "iptables-nft"))
	for i, name := range []string{"client iptables", "server iptables", "server ip6tables"} {
		if ref.saves[i] != ours.saves[i] {
			t.Errorf("%s counters differ\n--reference--\n%s--xdptables--\n%s", name, ref.saves[i], ours.saves[i])
		}
	}

	// a few absolute checks on our side (the policy lines carry other
	// traffic; rule lines only what they match)
	want := map[string]string{
		"-A INPUT -p icmp -m length --length 78":                                  "3",
		"-A INPUT -p icmp -m ttl --ttl-lt 10":                                     "2",
		"-A INPUT -p icmp -m statistic --mode random --probability 0.00000000000": "0",
		"-A INPUT -p icmp -m dscp --dscp 0x2e":                                    "2",
		"-A INPUT -p icmp -m pkttype --pkt-type broadcast":                        "2",
		"-A INPUT -p icmp -m addrtype --dst-type BROADCAST":                       "2",
		"-A INPUT -p tcp -m mac ! --mac-source 02:00:00:00:00:01":                 "0",
		"-A INPUT -d 2001:db8::2/128 -m hl --hl-eq 5":                             "2",
	}
	if haveSetpriv {
		want["-A OUTPUT -p icmp -m owner --uid-owner 65534"] = "2"
		want["-A OUTPUT -p icmp -m owner --uid-owner 0"] = "13"
	}
	t.Logf("xdptables client counters:\n%s", ours.saves[0])
	counted := regexp.MustCompile(`(?m)^\[(\d+):\d+\] (.*)$`)
	got := map[string]string{}
	for _, s := range ours.saves {
		for _, m := range counted.FindAllStringSubmatch(s, -1) {
			got[m[2]] = m[1]
		}
	}
	for rule, n := range want {
		if got[rule] != n {
			t.Errorf("%s: counted %q packets, want %s", rule, got[rule], n)
		}
	}
}
