package integration

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/kernel"
	"golang.org/x/sys/unix"
)

// TestCtTimeoutProbe: kernel.Conn.HasCtTimeout sees the timeout policies
// of its namespace, and -j CT --timeout with a policy the namespace does
// not have fails as iptables-nft's does (the kernel's ENOENT, status 4).
// With a policy it has, iptables-nft's rule is taken and xdptables
// refuses it for want of an exact form (docs/extensions.md).
func TestCtTimeoutProbe(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") {
		t.Fatal("reference iptables-nft is not installed")
	}
	dir := LinkDir(t)
	ref, ours := netns.New(t, "ctr"), netns.New(t, "cto")
	for _, ns := range []*netns.NS{ref, ours} {
		newCtTimeout(t, ns, "pol")
	}
	conn := digestConn(t, ours)
	for name, want := range map[string]bool{"pol": true, "nosuch": false} {
		has, err := conn.HasCtTimeout(kernel.IPv4, name)
		if err != nil || has != want {
			t.Errorf("HasCtTimeout(%s): %v %v, want %v", name, has, err, want)
		}
	}
	args := []string{"-t", "raw", "-A", "PREROUTING", "-p", "tcp", "-j", "CT", "--timeout"}
	a := ref.Run("", append(append([]string{"iptables-nft"}, args...), "nosuch")...)
	b := ours.Run("", append(append([]string{filepath.Join(dir, "iptables-nft")}, args...), "nosuch")...)
	if a != b || a.RC != 4 {
		t.Errorf("no such policy: reference %+v, xdptables %+v", a, b)
	}
	a = ref.Run("", append(append([]string{"iptables-nft"}, args...), "pol")...)
	b = ours.Run("", append(append([]string{filepath.Join(dir, "iptables-nft")}, args...), "pol")...)
	if a.RC != 0 || b.RC != 1 || !strings.Contains(b.Stderr, "no exact equivalent of --timeout") {
		t.Errorf("policy: reference %+v, xdptables %+v", a, b)
	}
}

// newCtTimeout makes the TCP conntrack timeout policy name in ns
// (nfnetlink_cttimeout, as `nfct add timeout name inet tcp established
// 100` does).
func newCtTimeout(t *testing.T, ns *netns.NS, name string) {
	t.Helper()
	inNS(t, ns, func() {
		c, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ae := netlink.NewAttributeEncoder()
		ae.ByteOrder = binary.BigEndian
		ae.String(1, name)                                                         // CTA_TIMEOUT_NAME
		ae.Uint16(2, unix.AF_INET)                                                 // CTA_TIMEOUT_L3PROTO
		ae.Uint8(3, unix.IPPROTO_TCP)                                              // CTA_TIMEOUT_L4PROTO
		ae.Nested(4|unix.NLA_F_NESTED, func(nae *netlink.AttributeEncoder) error { // CTA_TIMEOUT_DATA
			nae.ByteOrder = binary.BigEndian
			nae.Uint32(3, 100) // CTA_TIMEOUT_TCP_ESTABLISHED
			return nil
		})
		attrs, err := ae.Encode()
		if err != nil {
			t.Fatal(err)
		}
		req := netlink.Message{
			Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_CTNETLINK_TIMEOUT << 8), Flags: netlink.Request | netlink.Acknowledge | netlink.Create},
			Data:   append([]byte{unix.AF_UNSPEC, 0, 0, 0}, attrs...),
		}
		if _, err := c.Execute(req); err != nil {
			t.Fatalf("new timeout policy %s: %v", name, err)
		}
	})
}
