package integration

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestPacketsTPROXY: -j TPROXY diverts a connection to a transparent
// listener on another port (the client sees its connection to the
// original address accepted), and drops packets for which no socket is
// found (no later rule sees them), as xt TPROXY does; -Z rebuilds the
// rule (and the chain bound to it) and it keeps working. The same with
// the reference and with xdptables.
func TestPacketsTPROXY(t *testing.T) {
	tools := pktTools(t)
	const vip = "203.0.113.5"
	rules := []string{
		"-t mangle -A PREROUTING -p tcp -d " + vip + " --dport 80 -j TPROXY --on-port 8080 --on-ip " + pktServer + " --tproxy-mark 0x1/0x1",
		"-t mangle -A PREROUTING -p tcp -d " + vip + " --dport 81 -j TPROXY --on-port 8181 --tproxy-mark 0x1/0x1",
		"-t mangle -A PREROUTING -p tcp -d " + vip,
	}
	for _, label := range []string{"ref", "ours"} {
		tool := tools[label]
		p := newPktPair(t, "tp"+label[:1])
		mustRun(t, p.server, "ip", "rule", "add", "fwmark", "0x1/0x1", "lookup", "100")
		mustRun(t, p.server, "ip", "route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", "100")
		mustRun(t, p.client, "ip", "route", "add", "203.0.113.0/24", "via", pktServer)
		loadRules(t, p.server, tool, rules)
		listenTransparent(t, p, 8080)
		for round := 0; round < 2; round++ {
			if err := dialOnce(t, p.client, vip, 80); err != nil {
				t.Errorf("%s round %d: port 80 through TPROXY: %v", label, round, err)
			}
			if err := dialShort(t, p.client, vip, 81); err == nil {
				t.Errorf("%s round %d: port 81 connected without a socket to divert to", label, round)
			}
			c := ruleCounters(t, p.server, tool, "mangle", "PREROUTING")
			if len(c) != 3 || c[0] == 0 || c[1] == 0 || c[2] != 0 {
				t.Errorf("%s round %d: counters %v, want [>0 >0 0]", label, round, c)
			}
			mustRun(t, p.server, tool, "-t", "mangle", "-Z")
			if c := ruleCounters(t, p.server, tool, "mangle", "PREROUTING"); fmt.Sprint(c) != "[0 0 0]" {
				t.Errorf("%s: after -Z: %v", label, c)
			}
		}
	}
}

// listenTransparent accepts (and closes) connections on a transparent
// socket of the server on port.
func listenTransparent(t *testing.T, p *pktPair, port int) {
	t.Helper()
	var l net.Listener
	inNS(t, p.server, func() {
		lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_TRANSPARENT, 1)
			})
			if err != nil {
				return err
			}
			return serr
		}}
		var err error
		l, err = lc.Listen(context.Background(), "tcp4", fmt.Sprintf("0.0.0.0:%d", port))
		if err != nil {
			t.Fatal(err)
		}
	})
	acceptAndClose(t, l)
}

// dialShort tries one connection with a short timeout.
func dialShort(t *testing.T, ns *netns.NS, addr string, port int) error {
	t.Helper()
	var err error
	inNS(t, ns, func() {
		var c net.Conn
		c, err = net.DialTimeout("tcp4", net.JoinHostPort(addr, fmt.Sprint(port)), 700*time.Millisecond)
		if err == nil {
			c.Close()
		}
	})
	return err
}
