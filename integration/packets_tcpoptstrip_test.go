package integration

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
	"golang.org/x/sys/unix"
)

// tcpoptCase is a segment for TestPacketsTcpoptstrip: its TCP options,
// data offset (0: from the options) and how many bytes of the header are
// cut off the end.
type tcpoptCase struct {
	opts  string // hex
	doff  int
	cut   int
	frag  bool // sent as a non-first IPv4 fragment
	label string
}

var tcpoptCases = []tcpoptCase{
	{opts: "020405b4020405b401010402", label: "two MSS and SACK-permitted: all NOPed"},
	{opts: "020405b40101020a", label: "an MSS, then one running past the header: the second left alone"},
	{opts: "02000204050401010101", label: "an MSS of length 0 (one byte), an EOL, an MSS"},
	{opts: "020405b4", doff: 8, label: "data offset past the segment: dropped"},
	{opts: "020405b4", doff: 4, label: "data offset 4: dropped"},
	{opts: "01010402", label: "SACK-permitted alone"},
	{opts: "020405b4", cut: 2, label: "header cut short: dropped"},
	{opts: "020405b40101080a0000000100000002", label: "timestamps kept"},
	{opts: "0303070101010101", label: "no option of the kinds"},
	{opts: strings.Repeat("0201", 20), label: "20 one-byte MSS options"},
	{opts: strings.Repeat("0204ffff", 10), label: "10 MSS options"},
	{opts: "020405b4", frag: true, label: "a non-first fragment: left alone"},
}

// TestPacketsTcpoptstrip: -j TCPOPTSTRIP --strip-options mss,sack-permitted
// in the client's mangle POSTROUTING, against xt TCPOPTSTRIP: crafted
// segments (options of every shape, truncated headers, bad data offsets,
// a non-first fragment) must arrive byte for byte the same (checksums
// included) or be dropped alike, and the rule counters must agree.
func TestPacketsTcpoptstrip(t *testing.T) {
	tools := pktTools(t)
	rules := []string{
		"-t mangle -A POSTROUTING -p tcp -d 198.18.0.2 -j TCPOPTSTRIP --strip-options mss,sack-permitted",
		"-t mangle -A POSTROUTING -p tcp -d 198.18.0.2",
	}
	got := map[string][]string{}
	counters := map[string]string{}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "h33t"+label[:1])
		loadRules(t, p.client, tools[label], rules)
		recv := tcpRawReceiver(t, p.server)
		for i, c := range tcpoptCases {
			sent := sendTCPOpts(t, p.client, 41000+i, c)
			got[label] = append(got[label], fmt.Sprintf("%s: sent %v, received %s", c.label, sent, recv(41000+i, !sent || c.frag)))
		}
		counters[label] = fmt.Sprint(ruleCounters(t, p.client, tools[label], "mangle", "POSTROUTING"))
		// a SYN of the client's own TCP stack (checksum offloaded on
		// veth: the rewrite must leave it to be completed)
		listenTCP(t, p.server, 7001)
		inNS(t, p.client, func() {
			d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(pktClient), Port: 41100}}
			c, err := d.Dial("tcp4", net.JoinHostPort(pktServer, "7001"))
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
		})
		got[label] = append(got[label], "a connection's SYN, sequence number and timestamps left out: "+withoutRandom(recv(41100, false)))
	}
	for i := range got["ref"] {
		if got["ref"][i] != got["ours"][i] {
			t.Errorf("reference: %s\nxdptables: %s", got["ref"][i], got["ours"][i])
		}
	}
	if counters["ref"] != counters["ours"] || counters["ours"] != "[12 9]" {
		t.Errorf("counters: reference %s, xdptables %s, want [12 9]", counters["ref"], counters["ours"])
	}
	// the cases prove something only if xt TCPOPTSTRIP did strip
	if r := got["ref"][0]; !strings.Contains(r, "010101010101010101010101") {
		t.Errorf("reference did not strip: %s", r)
	}
	if r := got["ours"][len(tcpoptCases)]; !strings.Contains(r, "010101010101080a") {
		t.Errorf("the SYN's MSS and SACK-permitted not stripped: %s", r)
	}
}

// withoutRandom zeroes the sequence number and the values of a TCP
// timestamp option (kind 8, length 10) in the segment given as hex: they
// differ from one connection to the next.
func withoutRandom(seg string) string {
	b, err := hex.DecodeString(seg)
	if err != nil || len(b) < 20 {
		return seg
	}
	copy(b[4:8], make([]byte, 4))
	end := int(b[12]>>4) * 4
	for i := 20; i < end && i < len(b); {
		switch {
		case b[i] == 0:
			i = end
		case b[i] == 1:
			i++
		case i+1 >= len(b) || b[i+1] < 2:
			i = end
		default:
			if b[i] == 8 && b[i+1] == 10 && i+10 <= len(b) {
				copy(b[i+2:i+10], make([]byte, 8))
			}
			i += int(b[i+1])
		}
	}
	return hex.EncodeToString(b)
}

// tcpoptSYN is c's SYN segment from sport to port 7001 with options
// opts, its checksum left zero.
func tcpoptSYN(c tcpoptCase, opts []byte, sport int) []byte {
	doff := c.doff
	if doff == 0 {
		doff = (20 + len(opts)) / 4
	}
	tcp := make([]byte, 20, 20+len(opts))
	binary.BigEndian.PutUint16(tcp[0:], uint16(sport))
	binary.BigEndian.PutUint16(tcp[2:], 7001)
	binary.BigEndian.PutUint32(tcp[4:], 1)
	tcp[12] = byte(doff << 4)
	tcp[13] = 0x02 // SYN
	binary.BigEndian.PutUint16(tcp[14:], 8192)
	tcp = append(tcp, opts...)
	return tcp[:len(tcp)-c.cut]
}

// sendTCPOpts sends c from pktClient:sport to pktServer:7001 through a
// raw socket; false when netfilter dropped it (EPERM).
func sendTCPOpts(t *testing.T, ns *netns.NS, sport int, c tcpoptCase) bool {
	t.Helper()
	opts, err := hex.DecodeString(c.opts)
	if err != nil {
		t.Fatal(err)
	}
	sent := true
	inNS(t, ns, func() {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		src, dst := net.ParseIP(pktClient).To4(), net.ParseIP(pktServer).To4()
		tcp := tcpoptSYN(c, opts, sport)
		pseudo := append(append(append([]byte{}, src...), dst...), 0, unix.IPPROTO_TCP, byte(len(tcp)>>8), byte(len(tcp)))
		binary.BigEndian.PutUint16(tcp[16:], inetChecksum(append(pseudo, tcp...)))
		pkt := make([]byte, 20, 20+len(tcp))
		pkt[0] = 0x45
		binary.BigEndian.PutUint16(pkt[2:], uint16(20+len(tcp)))
		binary.BigEndian.PutUint16(pkt[4:], uint16(sport))
		if c.frag {
			binary.BigEndian.PutUint16(pkt[6:], 3) // offset 24 bytes, last fragment
		}
		pkt[8], pkt[9] = 64, unix.IPPROTO_TCP
		copy(pkt[12:], src)
		copy(pkt[16:], dst)
		pkt = append(pkt, tcp...)
		sa := &unix.SockaddrInet4{}
		copy(sa.Addr[:], dst)
		if err := unix.Sendto(fd, pkt, 0, sa); errors.Is(err, unix.EPERM) {
			sent = false
		} else if err != nil {
			t.Fatal(err)
		}
	})
	return sent
}

// tcpRawReceiver opens a raw TCP socket in ns, which gets a copy of every
// TCP segment the server receives; the returned function gives the TCP
// header and data of the segment from sport as hex ("none" after a short
// wait, or at once when none is expected: a dropped segment, a lone
// fragment that never reassembles).
func tcpRawReceiver(t *testing.T, ns *netns.NS) func(sport int, none bool) string {
	var fd int
	inNS(t, ns, func() {
		var err error
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_TCP); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { unix.Close(fd) })
	tv := unix.NsecToTimeval((300 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	return func(sport int, none bool) string {
		if none {
			return "none"
		}
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				return "none"
			}
			ihl := int(buf[0]&0x0f) * 4
			if n < ihl+4 || int(binary.BigEndian.Uint16(buf[ihl:])) != sport {
				continue // the server's own segments, earlier ones
			}
			return hex.EncodeToString(buf[ihl:n])
		}
	}
}

const (
	optClient6 = "2001:db8:33::1"
	optServer6 = "2001:db8:33::2"
)

// TestPacketsTcpoptstrip6: the same for ip6tables, whose bound chain
// tells non-first fragments by the fragment header.
func TestPacketsTcpoptstrip6(t *testing.T) {
	tools := pktTools(t)
	rules := []string{
		"-t mangle -A POSTROUTING -p tcp -d " + optServer6 + " -j TCPOPTSTRIP --strip-options mss,sack-permitted",
		"-t mangle -A POSTROUTING -p tcp -d " + optServer6,
	}
	got := map[string][]string{}
	counters := map[string]string{}
	for _, label := range []string{"ref", "ours"} {
		tool := strings.Replace(tools[label], "iptables", "ip6tables", 1)
		p := newPktPair(t, "h33s"+label[:1])
		mustRun(t, p.client, "ip", "addr", "add", optClient6+"/64", "dev", p.clientDev, "nodad")
		mustRun(t, p.server, "ip", "addr", "add", optServer6+"/64", "dev", p.serverDev, "nodad")
		loadRules(t, p.client, tool, rules)
		recv := tcpRawReceiver6(t, p.server)
		for i, c := range tcpoptCases {
			sent := sendTCPOpts6(t, p.client, 42000+i, c)
			got[label] = append(got[label], fmt.Sprintf("%s: sent %v, received %s", c.label, sent, recv(42000+i, !sent || c.frag)))
		}
		counters[label] = fmt.Sprint(ruleCounters(t, p.client, tool, "mangle", "POSTROUTING"))
	}
	for i := range tcpoptCases {
		if got["ref"][i] != got["ours"][i] {
			t.Errorf("reference: %s\nxdptables: %s", got["ref"][i], got["ours"][i])
		}
	}
	if counters["ref"] != counters["ours"] || counters["ours"] != "[12 9]" {
		t.Errorf("counters: reference %s, xdptables %s, want [12 9]", counters["ref"], counters["ours"])
	}
	if r := got["ref"][0]; !strings.Contains(r, "010101010101010101010101") {
		t.Errorf("reference did not strip: %s", r)
	}
}

// sendTCPOpts6 is sendTCPOpts over IPv6 (a non-first fragment carries a
// fragment header with offset 24).
func sendTCPOpts6(t *testing.T, ns *netns.NS, sport int, c tcpoptCase) bool {
	t.Helper()
	opts, err := hex.DecodeString(c.opts)
	if err != nil {
		t.Fatal(err)
	}
	sent := true
	inNS(t, ns, func() {
		fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_RAW)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		src, dst := net.ParseIP(optClient6).To16(), net.ParseIP(optServer6).To16()
		tcp := tcpoptSYN(c, opts, sport)
		pseudo := append(append(append([]byte{}, src...), dst...), 0, 0, byte(len(tcp)>>8), byte(len(tcp)), 0, 0, 0, unix.IPPROTO_TCP)
		binary.BigEndian.PutUint16(tcp[16:], inetChecksum(append(pseudo, tcp...)))
		payload, next := tcp, byte(unix.IPPROTO_TCP)
		if c.frag {
			frag := []byte{unix.IPPROTO_TCP, 0, 0, 24, 0, 0, byte(sport >> 8), byte(sport)} // offset 3 x 8, last
			payload, next = append(frag, tcp...), unix.IPPROTO_FRAGMENT
		}
		pkt := make([]byte, 40, 40+len(payload))
		pkt[0] = 0x60
		binary.BigEndian.PutUint16(pkt[4:], uint16(len(payload)))
		pkt[6], pkt[7] = next, 64
		copy(pkt[8:], src)
		copy(pkt[24:], dst)
		pkt = append(pkt, payload...)
		sa := &unix.SockaddrInet6{}
		copy(sa.Addr[:], dst)
		if err := unix.Sendto(fd, pkt, 0, sa); errors.Is(err, unix.EPERM) {
			sent = false
		} else if err != nil {
			t.Fatal(err)
		}
	})
	return sent
}

// tcpRawReceiver6 is tcpRawReceiver over IPv6 (raw IPv6 sockets deliver
// the TCP segment without the IP header).
func tcpRawReceiver6(t *testing.T, ns *netns.NS) func(sport int, none bool) string {
	var fd int
	inNS(t, ns, func() {
		var err error
		if fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_TCP); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { unix.Close(fd) })
	tv := unix.NsecToTimeval((300 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	return func(sport int, none bool) string {
		if none {
			return "none"
		}
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				return "none"
			}
			if n < 4 || int(binary.BigEndian.Uint16(buf)) != sport {
				continue
			}
			return hex.EncodeToString(buf[:n])
		}
	}
}
