package integration

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// TestPacketsSNATOffset: SNAT --to-source A:MIN-MAX/BASE runs nf_nat's
// offset mode with base 0 (xt SNAT keeps no base port): the first port
// tried is MIN + sport % (MAX-MIN+1), and on a clash with an existing
// mapping to the same destination the next one. UDP datagrams from fixed
// client ports through the router must reach the server from the same
// ports with the reference and with xdptables.
func TestPacketsSNATOffset(t *testing.T) {
	tools := pktTools(t)
	rules := []string{"-t nat -A POSTROUTING -p udp -j SNAT --to-source 198.18.1.1:20000-20009/1234"}
	// 40001 and 40011 both map to 20001 first: the second clashes
	sports := []int{40001, 40003, 40011, 40019, 1}
	want := "198.18.1.1:20001,198.18.1.1:20003,198.18.1.1:20002,198.18.1.1:20009,198.18.1.1:20001"
	// the last one (sport 1) goes to another server port: no clash
	dports := []int{9999, 9999, 9999, 9999, 9998}
	got := map[string]string{}
	for _, label := range []string{"ref", "ours"} {
		n := newNatTriple(t, "so"+label[:1])
		loadRules(t, n.router, tools[label], rules)
		var conns []*net.UDPConn
		inNS(t, n.server, func() {
			for _, p := range []int{9999, 9998} {
				c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(natServer), Port: p})
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
			}
		})
		for _, c := range conns {
			defer c.Close()
		}
		var seen []string
		for i, sp := range sports {
			inNS(t, n.client, func() {
				c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(natClient), Port: sp})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := c.WriteToUDP([]byte("x"), &net.UDPAddr{IP: net.ParseIP(natServer), Port: dports[i]}); err != nil {
					t.Fatal(err)
				}
			})
			srv := conns[0]
			if dports[i] == 9998 {
				srv = conns[1]
			}
			buf := make([]byte, 16)
			srv.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, from, err := srv.ReadFromUDP(buf)
			if err != nil {
				t.Fatalf("%s: datagram from client port %d: %v", label, sp, err)
			}
			seen = append(seen, fmt.Sprintf("%s:%d", from.IP, from.Port))
		}
		got[label] = strings.Join(seen, ",")
	}
	if got["ref"] != got["ours"] {
		t.Errorf("server saw\nref  %s\nours %s", got["ref"], got["ours"])
	}
	if got["ref"] != want {
		t.Errorf("reference: server saw %s, want %s", got["ref"], want)
	}
}
