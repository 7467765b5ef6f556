package integration

import (
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPacketsMasqueradePorts: -j MASQUERADE --to-ports maps the source
// port into the range. The client binds source ports outside it, so a
// kernel that ignored the ports (masq without
// NF_NAT_RANGE_PROTO_SPECIFIED) would keep them.
func TestPacketsMasqueradePorts(t *testing.T) {
	tools := pktTools(t)
	const lo, hi = 40000, 40100
	for _, label := range []string{"ref", "ours"} {
		n := newNatTriple(t, "mp"+label[:1])
		loadRules(t, n.router, tools[label], []string{"-t nat -A POSTROUTING -s 198.18.0.0/24 -p tcp -j MASQUERADE --to-ports 40000-40100"})
		var mu sync.Mutex
		var peers []*net.TCPAddr
		var l net.Listener
		inNS(t, n.server, func() {
			var err error
			if l, err = net.Listen("tcp4", net.JoinHostPort(natServer, "80")); err != nil {
				t.Fatal(err)
			}
		})
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				peers = append(peers, c.RemoteAddr().(*net.TCPAddr))
				mu.Unlock()
				c.Close()
			}
		}()
		for i := 0; i < 3; i++ {
			inNS(t, n.client, func() {
				d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(natClient), Port: 50001 + i}}
				c, err := d.Dial("tcp4", net.JoinHostPort(natServer, "80"))
				if err != nil {
					t.Errorf("%s: dial %d: %v", label, i, err)
					return
				}
				c.Close()
			})
		}
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		if len(peers) != 3 {
			t.Errorf("%s: server saw %d connections, want 3", label, len(peers))
		}
		for _, p := range peers {
			if p.IP.String() != natRouterB || p.Port < lo || p.Port > hi {
				t.Errorf("%s: server saw %s, want %s with a port in %d-%d", label, p, natRouterB, lo, hi)
			}
		}
		mu.Unlock()
	}
}

// TestPacketsFragmentPorts sends non-first IPv4 fragments of protocols
// TCP and UDP whose data bytes read like ports 16705 (0x4141): as
// iptables documents (and iptables-legacy does), no port or tcp flag
// rule may count them, while a bare -p rule does. iptables-nft 1.8.9's
// native port match counts them (it reads the data as a header): the
// reference's counts are logged, not compared.
func TestPacketsFragmentPorts(t *testing.T) {
	tools := pktTools(t)
	rules := []struct {
		rule string
		want uint64
	}{
		{"-p tcp", 1},
		{"-p tcp --dport 16705", 0},
		{"-p tcp ! --dport 1", 0},
		{"-p tcp --sport 16705", 0},
		{"-p tcp -m tcp", 0},
		{"-p tcp --tcp-flags SYN SYN", 0},
		{"-p tcp -f", 1},
		{"-p tcp -f --dport 16705", 0},
		{"-p udp", 1},
		{"-p udp --dport 16705", 0},
		{"-p udp ! --sport 1:2", 0},
	}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "fp"+label[:1])
		for _, r := range rules {
			args, _ := ShellWords(r.rule)
			mustRun(t, p.server, append([]string{tools[label], "-t", "raw", "-A", "PREROUTING"}, args...)...)
		}
		inNS(t, p.client, func() {
			sendFragmentProto(t, unix.IPPROTO_TCP)
			sendFragmentProto(t, unix.IPPROTO_UDP)
		})
		time.Sleep(200 * time.Millisecond)
		got[label] = ruleCounters(t, p.server, tools[label], "raw", "PREROUTING")
	}
	for i, r := range rules {
		if got["ours"][i] != r.want {
			t.Errorf("%s: xdptables counted %d, want %d (reference %d)", r.rule, got["ours"][i], r.want, got["ref"][i])
		} else if got["ref"][i] != r.want {
			t.Logf("%s: reference counted %d (iptables-nft reads fragment data as ports)", r.rule, got["ref"][i])
		}
	}
}

// sendFragmentProto writes one IPv4 packet of protocol proto, fragment
// offset 64 bytes, 16 data bytes of 'A', through a raw socket.
func sendFragmentProto(t *testing.T, proto byte) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	pkt := make([]byte, 20+16)
	pkt[0] = 0x45
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	binary.BigEndian.PutUint16(pkt[4:], 0x4321+uint16(proto))
	binary.BigEndian.PutUint16(pkt[6:], 8) // offset 8 × 8 bytes, no MF
	pkt[8], pkt[9] = 64, proto
	copy(pkt[12:], net.ParseIP(pktClient).To4())
	copy(pkt[16:], net.ParseIP(pktServer).To4())
	for i := 20; i < len(pkt); i++ {
		pkt[i] = 'A'
	}
	sa := &unix.SockaddrInet4{}
	copy(sa.Addr[:], net.ParseIP(pktServer).To4())
	if err := unix.Sendto(fd, pkt, 0, sa); err != nil {
		t.Fatal(err)
	}
}

// TestPacketsConnmarkZone: the native CONNMARK forms (--set-xmark under
// a mask, --set-mark, --save-mark) set the conntrack mark as xt's
// CONNMARK does, seen by -m connmark on the next packets of the flow;
// CT --zone puts the flow's conntrack entry in the zone. Two pings of
// 3 echo requests each (one ICMP flow per ping).
func TestPacketsConnmarkZone(t *testing.T) {
	tools := pktTools(t)
	rules := []string{
		"-t raw -A PREROUTING -p icmp -j CT --zone 7",
		"-t mangle -A PREROUTING -p icmp -j MARK --set-mark 0x900",
		"-t mangle -A PREROUTING -p icmp -m connmark --mark 0x0 -j CONNMARK --save-mark",
		"-t mangle -A PREROUTING -p icmp -j CONNMARK --set-xmark 0x5/0xf",
		"-t mangle -A PREROUTING -p icmp -j CONNMARK --or-mark 0x30",
		"-A INPUT -p icmp -m connmark --mark 0x935",
		"-A INPUT -p icmp -m connmark --mark 0x900/0xf00",
		"-A INPUT -p icmp -m connmark ! --mark 0x935",
	}
	want := []uint64{6, 6, 0}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "cz"+label[:1])
		loadRules(t, p.server, tools[label], rules)
		for i := 0; i < 2; i++ {
			mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "2", pktServer)
		}
		got := ruleCounters(t, p.server, tools[label], "filter", "INPUT")
		for i, w := range want {
			if i >= len(got) || got[i] != w {
				t.Errorf("%s: %s counted %v, want %d", label, rules[5+i], got, w)
			}
		}
		out := p.server.Run("", "cat", "/proc/net/nf_conntrack")
		if !strings.Contains(out.Stdout, "icmp") || !strings.Contains(out.Stdout, "zone=7") || !strings.Contains(out.Stdout, "mark=2357") {
			t.Errorf("%s: conntrack table without an icmp entry in zone 7 with mark 0x935:\n%s", label, out.Stdout)
		}
	}
}
