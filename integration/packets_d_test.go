package integration

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
	"golang.org/x/sys/unix"
)

// Packet tests for SYNPROXY, NETMAP, TOS and ECN: the same rules are
// loaded with the reference iptables-nft and with xdptables, each in its
// own namespaces, the same traffic is sent, and outcomes and counters
// must agree (and be what the target does). Namespace tags carry "h6".

// TestPacketsSYNPROXY runs the SYNPROXY recipe on the server: the SYN
// is untracked, SYNPROXY answers it with a cookie and, on the client's
// ACK, opens the connection to the listening server itself; INVALID
// packets are dropped. Each client connection must complete, and the
// INPUT counters must equal the reference's.
func TestPacketsSYNPROXY(t *testing.T) {
	tools := pktTools(t)
	rules := []string{
		"-t raw -A PREROUTING -p tcp --syn --dport 80 -j CT --notrack",
		"-A INPUT -p tcp --dport 80 -m conntrack --ctstate INVALID,UNTRACKED -j SYNPROXY --sack-perm --timestamp --wscale 7 --mss 1460",
		"-A INPUT -p tcp --dport 80 -m conntrack --ctstate INVALID -j DROP",
		"-A INPUT -p tcp --dport 80 -m conntrack --ctstate ESTABLISHED",
	}
	const conns = 3
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "h6sp"+label[:1])
		// SYNPROXY needs the ACK of an unknown connection to be INVALID
		mustRun(t, p.server, "sysctl", "-q", "-w", "net.netfilter.nf_conntrack_tcp_loose=0")
		loadRules(t, p.server, tools[label], rules)
		pl := listenPeers(t, p.server, pktServer, 80)
		for i := 0; i < conns; i++ {
			if err := dialOnce(t, p.client, pktServer, 80); err != nil {
				t.Errorf("%s: connection %d through SYNPROXY: %v", label, i, err)
			}
		}
		deadline := time.Now().Add(3 * time.Second)
		for len(pl.list()) < conns && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if n := len(pl.list()); n != conns {
			t.Errorf("%s: server accepted %d connections, want %d", label, n, conns)
		}
		time.Sleep(200 * time.Millisecond)
		got[label] = ruleCounters(t, p.server, tools[label], "filter", "INPUT")
	}
	// the established connections' packets (teardown, retransmissions
	// under load) vary from run to run: only SYNPROXY's and the INVALID
	// drop's counters are compared exactly
	if r, o := got["ref"], got["ours"]; len(r) != 3 || len(o) != 3 || fmt.Sprint(r[:2]) != fmt.Sprint(o[:2]) || (r[2] == 0) != (o[2] == 0) {
		t.Errorf("INPUT counters: reference %v, xdptables %v", r, o)
	}
	// each connection: the SYN and the handshake's ACK reach SYNPROXY
	if c := got["ours"]; len(c) != len(rules)-1 || c[0] != 2*conns || c[2] == 0 {
		t.Errorf("INPUT counters %v, want SYNPROXY at %d and established packets", c, 2*conns)
	}
}

// dialFrom connects from laddr in ns to raddr:port.
func dialFrom(t *testing.T, ns *netns.NS, laddr, raddr string, port int) error {
	t.Helper()
	var err error
	inNS(t, ns, func() {
		d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(laddr)}}
		var c net.Conn
		c, err = d.Dial("tcp4", net.JoinHostPort(raddr, strconv.Itoa(port)))
		if err == nil {
			c.Close()
		}
	})
	return err
}

// TestPacketsNETMAP: on the router, NETMAP in POSTROUTING maps the
// client's network onto the server's keeping the host part (the server
// sees 198.18.1.5 for 198.18.0.5), and NETMAP in PREROUTING maps a
// destination network onto the server's (198.51.100.2 reaches
// 198.18.1.2).
func TestPacketsNETMAP(t *testing.T) {
	tools := pktTools(t)
	cases := []struct {
		name        string
		rule        string
		from, dial  string
		serverRoute []string
		peer        string
	}{
		{"src", "-t nat -A POSTROUTING -s 198.18.0.0/24 -j NETMAP --to 198.18.1.0/24",
			"198.18.0.5", natServer, []string{"198.18.1.5", "via", natRouterB}, "198.18.1.5"},
		{"dst", "-t nat -A PREROUTING -d 198.51.100.0/24 -j NETMAP --to 198.18.1.0/24",
			natClient, "198.51.100.2", []string{"198.18.0.0/24", "via", natRouterB}, natClient},
	}
	for _, tc := range cases {
		counts := map[string]string{}
		for _, label := range []string{"ref", "ours"} {
			n := newNatTriple(t, "h6n"+tc.name[:1]+label[:1])
			if tc.from != natClient {
				mustRun(t, n.client, "ip", "addr", "add", tc.from+"/32", "dev", clientDev(t, n.client))
			}
			mustRun(t, n.server, append([]string{"ip", "route", "add"}, tc.serverRoute...)...)
			loadRules(t, n.router, tools[label], []string{tc.rule})
			pl := listenPeers(t, n.server, natServer, 80)
			if err := dialFrom(t, n.client, tc.from, tc.dial, 80); err != nil {
				t.Errorf("%s/%s: %v", tc.name, label, err)
			}
			time.Sleep(100 * time.Millisecond)
			if got := strings.Join(pl.list(), ","); got != tc.peer {
				t.Errorf("%s/%s: server saw %q, want %s", tc.name, label, got, tc.peer)
			}
			chain := "POSTROUTING"
			if tc.name == "dst" {
				chain = "PREROUTING"
			}
			counts[label] = fmt.Sprint(ruleCounters(t, n.router, tools[label], "nat", chain))
		}
		if counts["ref"] != counts["ours"] {
			t.Errorf("%s: nat counters: reference %s, xdptables %s", tc.name, counts["ref"], counts["ours"])
		}
	}
}

// clientDev is the name of the client's veth in a natTriple.
func clientDev(t *testing.T, ns *netns.NS) string {
	t.Helper()
	for _, l := range strings.Split(mustRun(t, ns, "ip", "-o", "link", "show"), "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && strings.HasPrefix(f[1], "xna") {
			return strings.TrimSuffix(strings.SplitN(f[1], "@", 2)[0], ":")
		}
	}
	t.Fatal("no client veth")
	return ""
}

// tosCase is one UDP datagram sent from a source port with a TOS byte
// (IP_TOS of the sending socket), rewritten by the client's mangle
// OUTPUT rule for that port, and the TOS the server must receive.
type tosCase struct {
	rule      string // after "-t mangle -A OUTPUT -p udp --sport PORT"
	sent, got byte
}

var tosCases = []tosCase{
	{"-j TOS --set-tos 0x10", 0xc3, 0x10},
	{"-j TOS --set-tos 0x10/0x3f", 0xc3, 0xd0},
	{"-j TOS --set-tos Minimize-Cost", 0xc3, 0xc2},
	{"-j TOS --set-tos 0x1f/0x0f", 0xc3, 0xdf},
	{"-j TOS --and-tos 0x0f", 0xc3, 0x03},
	{"-j TOS --or-tos 0x10", 0xc3, 0xd3},
	{"-j TOS --xor-tos 0xff", 0xc3, 0x3c},
	{"-j TOS --set-tos 0x00/0x00", 0xc3, 0xc3},
	{"-j ECN --ecn-ip-ect 1", 0xc3, 0xc1},
	{"-j ECN --ecn-ip-ect 2", 0xc0, 0xc2},
	{"-j ECN --ecn-ip-ect 0", 0xb9, 0xb8},
	{"-j ECN --ecn-ip-ect 3", 0xb8, 0xbb},
}

// TestPacketsTOS: TOS (every form) and ECN --ecn-ip-ect rewrite the TOS
// byte of the client's UDP datagrams; the server reads it with
// IP_RECVTOS, which also proves the IPv4 header checksum was updated
// (ip_rcv drops a datagram whose header checksum is wrong). A filter
// rule per case on the server counts the datagrams whose DSCP is the
// expected one.
func TestPacketsTOS(t *testing.T) {
	tools := pktTools(t)
	const base = 9100
	var rules, srvRules []string
	for i, c := range tosCases {
		rules = append(rules, fmt.Sprintf("-t mangle -A OUTPUT -p udp --sport %d %s", base+i, c.rule))
		srvRules = append(srvRules, fmt.Sprintf("-A INPUT -p udp --sport %d -m dscp --dscp 0x%02x", base+i, c.got>>2))
	}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "h6to"+label[:1])
		loadRules(t, p.client, tools[label], rules)
		loadRules(t, p.server, tools[label], srvRules)
		recv := udpTosServer(t, p.server, 9000)
		for i, c := range tosCases {
			udpSendTos(t, p.client, base+i, 9000, c.sent)
		}
		seen := recv(len(tosCases))
		for i, c := range tosCases {
			tos, ok := seen[base+i]
			switch {
			case !ok:
				t.Errorf("%s: %s (sent 0x%02x): datagram not received", label, c.rule, c.sent)
			case tos != c.got:
				t.Errorf("%s: %s (sent 0x%02x): received TOS 0x%02x, want 0x%02x", label, c.rule, c.sent, tos, c.got)
			}
		}
		got[label] = ruleCounters(t, p.server, tools[label], "filter", "INPUT")
	}
	if fmt.Sprint(got["ref"]) != fmt.Sprint(got["ours"]) {
		t.Errorf("server INPUT counters: reference %v, xdptables %v", got["ref"], got["ours"])
	}
	for i, n := range got["ours"] {
		if n != 1 {
			t.Errorf("server rule %q counted %d, want 1", srvRules[i], n)
		}
	}
}

// udpSendTos sends one datagram from pktClient:sport to pktServer:dport
// with the socket's IP_TOS set to tos.
func udpSendTos(t *testing.T, ns *netns.NS, sport, dport int, tos byte) {
	t.Helper()
	inNS(t, ns, func() {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, int(tos)); err != nil {
			t.Fatal(err)
		}
		la := &unix.SockaddrInet4{Port: sport}
		copy(la.Addr[:], net.ParseIP(pktClient).To4())
		if err := unix.Bind(fd, la); err != nil {
			t.Fatal(err)
		}
		ra := &unix.SockaddrInet4{Port: dport}
		copy(ra.Addr[:], net.ParseIP(pktServer).To4())
		if err := unix.Sendto(fd, []byte("tos"), 0, ra); err != nil {
			t.Fatal(err)
		}
	})
}

// udpTosServer listens on pktServer:port with IP_RECVTOS; the returned
// function waits for n datagrams (at most 3 seconds) and returns the
// TOS received by source port.
func udpTosServer(t *testing.T, ns *netns.NS, port int) func(n int) map[int]byte {
	t.Helper()
	var fd int
	inNS(t, ns, func() {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS, 1); err != nil {
			t.Fatal(err)
		}
		sa := &unix.SockaddrInet4{Port: port}
		copy(sa.Addr[:], net.ParseIP(pktServer).To4())
		if err := unix.Bind(fd, sa); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { unix.Close(fd) })
	return func(n int) map[int]byte {
		tv := unix.NsecToTimeval(int64(300 * time.Millisecond))
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		out := map[int]byte{}
		deadline := time.Now().Add(3 * time.Second)
		buf, oob := make([]byte, 64), make([]byte, 128)
		for len(out) < n && time.Now().Before(deadline) {
			_, oobn, _, from, err := unix.Recvmsg(fd, buf, oob, 0)
			if err != nil {
				continue
			}
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) > 0 {
					if sa, ok := from.(*unix.SockaddrInet4); ok {
						out[sa.Port] = m.Data[0]
					}
				}
			}
		}
		return out
	}
}

// sendTCP writes one IPv4 TCP segment from pktClient:sport to
// pktServer:dport through a raw socket: a SYN with the given extra flags
// and a correct checksum unless badSum, or, with short, only the first
// 16 bytes of the header.
func sendTCP(t *testing.T, ns *netns.NS, sport, dport int, flags byte, badSum, short bool) {
	t.Helper()
	inNS(t, ns, func() {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		src, dst := net.ParseIP(pktClient).To4(), net.ParseIP(pktServer).To4()
		tcp := make([]byte, 20)
		binary.BigEndian.PutUint16(tcp[0:], uint16(sport))
		binary.BigEndian.PutUint16(tcp[2:], uint16(dport))
		binary.BigEndian.PutUint32(tcp[4:], 0x01020304)
		tcp[12] = 5 << 4
		tcp[13] = 0x02 | flags // SYN
		binary.BigEndian.PutUint16(tcp[14:], 64240)
		// checksum over the pseudo-header and the segment
		var sum uint32
		pseudo := append(append(append([]byte{}, src...), dst...), 0, unix.IPPROTO_TCP, 0, 20)
		for _, b := range [][]byte{pseudo, tcp} {
			for i := 0; i+1 < len(b); i += 2 {
				sum += uint32(binary.BigEndian.Uint16(b[i:]))
			}
		}
		for sum>>16 != 0 {
			sum = sum&0xffff + sum>>16
		}
		cs := ^uint16(sum)
		if badSum {
			cs ^= 0x5a5a
		}
		binary.BigEndian.PutUint16(tcp[16:], cs)
		if short {
			tcp = tcp[:16]
		}
		pkt := make([]byte, 20, 20+len(tcp))
		pkt[0] = 0x45
		binary.BigEndian.PutUint16(pkt[2:], uint16(20+len(tcp)))
		pkt[8], pkt[9] = 64, unix.IPPROTO_TCP
		copy(pkt[12:], src)
		copy(pkt[16:], dst)
		pkt = append(pkt, tcp...)
		sa := &unix.SockaddrInet4{}
		copy(sa.Addr[:], dst)
		if err := unix.Sendto(fd, pkt, 0, sa); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPacketsECN sends crafted SYNs (raw socket, so their TCP checksum
// is complete and the server verifies it) through ECN rules in the
// server's mangle PREROUTING: --ecn-tcp-remove clears ECE and CWR,
// --ecn-tcp-cwr 1 sets CWR, both with the TCP checksum updated, which
// the server's SYN-ACK proves; a SYN with a bad checksum gets no answer
// (the check is real), and a segment too short for a TCP header is
// dropped by ECN, as xt ECN drops it. Counters must equal the
// reference's and the expected ones.
func TestPacketsECN(t *testing.T) {
	tools := pktTools(t)
	srv := []string{
		"-t mangle -A PREROUTING -p tcp -s 198.18.0.1",
		"-t mangle -A PREROUTING -p tcp --dport 80 -j ECN --ecn-tcp-remove",
		"-t mangle -A PREROUTING -p tcp --dport 81 -j ECN --ecn-tcp-cwr 1",
		"-t mangle -A PREROUTING -p tcp -s 198.18.0.1 -d 198.18.0.2 -j ECN --ecn-tcp-ece 0",
		// the flags byte of the crafted SYNs (no IP options): SYN alone,
		// SYN|ECE|CWR, SYN|CWR
		"-A INPUT -p tcp --dport 80 -m string --algo bm --hex-string |02| --from 33 --to 34",
		"-A INPUT -p tcp --dport 80 -m string --algo bm --hex-string |c2| --from 33 --to 34",
		"-A INPUT -p tcp --dport 81 -m string --algo bm --hex-string |82| --from 33 --to 34",
		"-A INPUT -p tcp -s 198.18.0.1",
		"-A OUTPUT -p tcp --sport 80 --tcp-flags SYN,ACK SYN,ACK",
		"-A OUTPUT -p tcp --sport 81 --tcp-flags SYN,ACK SYN,ACK",
	}
	// mangle: everything from the client (3 SYNs, the truncated
	// segment, the client's 2 RSTs answering the SYN-ACKs), ECN on port
	// 80 (2 SYNs, 1 RST), on 81 (SYN, RST), ECE for all 6; INPUT: the
	// flags as rewritten, and all but the truncated segment; OUTPUT:
	// the 2 SYN-ACKs
	want := "[6 3 2 6] [2 0 1 5 1 1]"
	got := map[string]string{}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "h6ec"+label[:1])
		loadRules(t, p.server, tools[label], srv)
		listenTCP(t, p.server, 80)
		listenTCP(t, p.server, 81)
		sendTCP(t, p.client, 40001, 80, 0xc0, false, false) // ECE|CWR: cleared, answered
		sendTCP(t, p.client, 40002, 80, 0xc0, true, false)  // bad checksum: not answered
		sendTCP(t, p.client, 40003, 81, 0, false, false)    // CWR set, answered
		sendTCP(t, p.client, 40004, 82, 0, false, true)     // truncated: dropped by ECN
		time.Sleep(300 * time.Millisecond)
		mangle := ruleCounters(t, p.server, tools[label], "mangle", "PREROUTING")
		in := ruleCounters(t, p.server, tools[label], "filter", "INPUT")
		out := ruleCounters(t, p.server, tools[label], "filter", "OUTPUT")
		got[label] = fmt.Sprint(mangle, " ", append(in, out...))
	}
	if got["ref"] != got["ours"] {
		t.Errorf("counters: reference %s, xdptables %s", got["ref"], got["ours"])
	}
	if got["ours"] != want {
		t.Errorf("counters %s, want %s", got["ours"], want)
	}
}

const (
	tosClient6 = "2001:db8:6::1"
	tosServer6 = "2001:db8:6::2"
)

// tosCases6 rewrite the IPv6 traffic class, which straddles the first
// two bytes of the header.
var tosCases6 = []tosCase{
	{"-j TOS --set-tos 0x10", 0xc3, 0x10},
	{"-j TOS --set-tos 0x10/0x3f", 0xc3, 0xd0},
	{"-j TOS --set-tos Maximize-Throughput", 0xff, 0xc8},
	{"-j TOS --and-tos 0xf0", 0x5a, 0x50},
	{"-j TOS --or-tos 0x0f", 0x50, 0x5f},
	{"-j TOS --xor-tos 0xa5", 0xff, 0x5a},
}

// TestPacketsTOSTarget6: TOS on IPv6 rewrites the traffic class of the
// client's UDP datagrams (flow label and version untouched, or the
// datagram would not arrive); the server reads it with IPV6_RECVTCLASS.
func TestPacketsTOSTarget6(t *testing.T) {
	tools := pktTools(t)
	tools6 := map[string]string{"ref": "ip6tables-nft", "ours": strings.TrimSuffix(tools["ours"], "iptables") + "ip6tables"}
	const base = 9200
	var rules []string
	for i, c := range tosCases6 {
		rules = append(rules, fmt.Sprintf("-t mangle -A OUTPUT -p udp --sport %d %s", base+i, c.rule))
	}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "h6t6"+label[:1])
		for _, x := range []struct {
			ns   *netns.NS
			addr string
		}{{p.client, tosClient6}, {p.server, tosServer6}} {
			dev := ""
			for _, l := range strings.Split(mustRun(t, x.ns, "ip", "-o", "link", "show"), "\n") {
				if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[1], "x") {
					dev = strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0]
				}
			}
			mustRun(t, x.ns, "ip", "addr", "add", x.addr+"/64", "dev", dev, "nodad")
		}
		loadRules(t, p.client, tools6[label], rules)
		recv := udpTclassServer(t, p.server, 9000)
		for i, c := range tosCases6 {
			udpSendTclass(t, p.client, base+i, 9000, c.sent)
		}
		seen := recv(len(tosCases6))
		for i, c := range tosCases6 {
			tc, ok := seen[base+i]
			switch {
			case !ok:
				t.Errorf("%s: %s (sent 0x%02x): datagram not received", label, c.rule, c.sent)
			case tc != c.got:
				t.Errorf("%s: %s (sent 0x%02x): received traffic class 0x%02x, want 0x%02x", label, c.rule, c.sent, tc, c.got)
			}
		}
		got[label] = ruleCounters(t, p.client, tools6[label], "mangle", "OUTPUT")
	}
	if fmt.Sprint(got["ref"]) != fmt.Sprint(got["ours"]) {
		t.Errorf("client mangle OUTPUT counters: reference %v, xdptables %v", got["ref"], got["ours"])
	}
}

func udpSendTclass(t *testing.T, ns *netns.NS, sport, dport int, tclass byte) {
	t.Helper()
	inNS(t, ns, func() {
		fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, int(tclass)); err != nil {
			t.Fatal(err)
		}
		la := &unix.SockaddrInet6{Port: sport}
		copy(la.Addr[:], net.ParseIP(tosClient6).To16())
		if err := unix.Bind(fd, la); err != nil {
			t.Fatal(err)
		}
		ra := &unix.SockaddrInet6{Port: dport}
		copy(ra.Addr[:], net.ParseIP(tosServer6).To16())
		if err := unix.Sendto(fd, []byte("tclass"), 0, ra); err != nil {
			t.Fatal(err)
		}
	})
}

func udpTclassServer(t *testing.T, ns *netns.NS, port int) func(n int) map[int]byte {
	t.Helper()
	var fd int
	inNS(t, ns, func() {
		var err error
		fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1); err != nil {
			t.Fatal(err)
		}
		sa := &unix.SockaddrInet6{Port: port}
		copy(sa.Addr[:], net.ParseIP(tosServer6).To16())
		if err := unix.Bind(fd, sa); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { unix.Close(fd) })
	return func(n int) map[int]byte {
		tv := unix.NsecToTimeval(int64(300 * time.Millisecond))
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		out := map[int]byte{}
		deadline := time.Now().Add(3 * time.Second)
		buf, oob := make([]byte, 64), make([]byte, 128)
		for len(out) < n && time.Now().Before(deadline) {
			_, oobn, _, from, err := unix.Recvmsg(fd, buf, oob, 0)
			if err != nil {
				continue
			}
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_TCLASS && len(m.Data) >= 4 {
					if sa, ok := from.(*unix.SockaddrInet6); ok {
						out[sa.Port] = byte(binary.NativeEndian.Uint32(m.Data))
					}
				}
			}
		}
		return out
	}
}
