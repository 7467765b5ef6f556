package integration

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestPacketsDNATShifted: a DNAT shifted port map (netavark's rule for a
// published port range, --to-destination ADDR:MIN-MAX/BASE) sends each
// destination port of the rule's --dport range to MIN + (port - BASE) %
// (MAX - MIN + 1) on the server, with the reference's xt_DNAT and with
// xdptables' map (compat.NATTarget.shiftedPortMap). The base is one
// below the range and the range is shorter than the --dport range, so
// both the offset and the wrap show.
func TestPacketsDNATShifted(t *testing.T) {
	tools := pktTools(t)
	rules := []string{
		"-t nat -A PREROUTING -p tcp --dport 19000:19005 -j DNAT --to-destination 198.18.1.2:9000-9002/18999",
		"-t nat -A POSTROUTING -d 198.18.1.2 -j SNAT --to-source 198.18.1.1",
	}
	want := "19000>9001 19001>9002 19002>9000 19003>9001 19004>9002 19005>9000"
	got := map[string]string{}
	for _, label := range []string{"ref", "ours"} {
		n := newNatTriple(t, "ds"+label[:1])
		loadRules(t, n.router, tools[label], rules)
		ports := listenPorts(t, n.server, natServer, 9000, 9001, 9002)
		s := ""
		for p := 19000; p <= 19005; p++ {
			if err := dialOnce(t, n.client, natRouterA, p); err != nil {
				t.Errorf("%s: port %d: %v", label, p, err)
				continue
			}
			if s != "" {
				s += " "
			}
			s += fmt.Sprintf("%d>%d", p, ports.next(t))
		}
		got[label] = s
	}
	if got["ref"] != want {
		t.Errorf("reference: %s, want %s", got["ref"], want)
	}
	if got["ours"] != got["ref"] {
		t.Errorf("xdptables: %s, reference %s", got["ours"], got["ref"])
	}
}

// portLog is listeners in a namespace on several ports that report the
// port of each connection accepted, in order.
type portLog struct {
	got chan int
}

func listenPorts(t *testing.T, ns *netns.NS, addr string, ports ...int) *portLog {
	t.Helper()
	pl := &portLog{got: make(chan int, 64)}
	for _, port := range ports {
		var l net.Listener
		inNS(t, ns, func() {
			var err error
			l, err = net.Listen("tcp4", net.JoinHostPort(addr, strconv.Itoa(port)))
			if err != nil {
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
				c.Close()
				pl.got <- port
			}
		}()
	}
	return pl
}

// next is the port of the next connection accepted (0 after 30s
// without). The connection was made before next is called: the bound is
// for the listener's goroutine to run, which takes seconds on a loaded
// machine.
func (p *portLog) next(t *testing.T) int {
	select {
	case port := <-p.got:
		return port
	case <-time.After(30 * time.Second):
		t.Error("no connection reached the server")
		return 0
	}
}
