package integration

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestPacketsSCTP: -m sctp ports and chunk types on hand-made SCTP
// packets (a raw socket in the client; xt_sctp does not look at the
// checksum): the counters agree with the reference.
func TestPacketsSCTP(t *testing.T) {
	tools := pktTools(t)
	rules := []string{
		"-A INPUT -p sctp --dport 3868",
		"-A INPUT -p sctp -m sctp --sport 1024:65535 ! --dport 3868",
		"-A INPUT -p sctp -m sctp --chunk-types any INIT",
		"-A INPUT -p sctp -m sctp --chunk-types only DATA:E",
		"-A INPUT -p sctp -m sctp ! --chunk-types any ABORT:T",
		"-A INPUT -p sctp -m sctp --chunk-types all DATA,SACK",
	}
	// chunk: type, flags (length 4 + padding to 16 bytes)
	packets := []struct {
		sport, dport uint16
		chunks       [][2]byte
	}{
		{5000, 3868, [][2]byte{{1, 0}}},         // INIT
		{5000, 9, [][2]byte{{0, 1}}},            // DATA with E
		{80, 9, [][2]byte{{0, 3}, {3, 0}}},      // DATA with B,E + SACK
		{5000, 3868, [][2]byte{{6, 1}}},         // ABORT with T
		{5000, 3868, [][2]byte{{6, 0}, {1, 0}}}, // ABORT without T, INIT
	}
	got := map[string]string{}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "sc"+label[:1])
		loadRules(t, p.server, tools[label], rules)
		for _, pk := range packets {
			var b []byte
			b = binary.BigEndian.AppendUint16(b, pk.sport)
			b = binary.BigEndian.AppendUint16(b, pk.dport)
			b = append(b, 0, 0, 0, 1, 0, 0, 0, 0) // verification tag, checksum
			for _, c := range pk.chunks {
				b = append(b, c[0], c[1], 0, 16)
				b = append(b, make([]byte, 12)...)
			}
			sendRaw(t, p.client, unix.IPPROTO_SCTP, pktServer, b)
		}
		time.Sleep(100 * time.Millisecond)
		got[label] = fmt.Sprint(ruleCounters(t, p.server, tools[label], "filter", "INPUT"))
	}
	if got["ref"] != got["ours"] {
		t.Errorf("counters: reference %s, xdptables %s", got["ref"], got["ours"])
	}
	if want := "[3 1 2 1 4 1]"; got["ours"] != want {
		t.Errorf("counters %s, want %s", got["ours"], want)
	}
}

// sendRaw sends payload as one IPv4 packet of protocol proto from ns.
func sendRaw(t *testing.T, ns *netns.NS, proto int, dst string, payload []byte) {
	t.Helper()
	inNS(t, ns, func() {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, proto)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		a := netip.MustParseAddr(dst).As4()
		if err := unix.Sendto(fd, payload, 0, &unix.SockaddrInet4{Addr: a}); err != nil {
			t.Fatal(err)
		}
	})
}
