package integration

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestPacketsCgroupClusterConnlabel: the xt compat matches of
// matches_d.txt on real traffic, reference and xdptables side by side.
// The client pings the server three times. On the client's OUTPUT every
// ping socket is in the cgroup v2 root (and so under --path /) and has
// net_cls class id 0. On the server's INPUT a one-node cluster owns
// every connection, and connlabel sets bit 3 on the connection, which a
// later rule then sees (and, for the later pings, an earlier one). (dccp, nfacct and osf need DCCP packets, an
// nfacct object or loaded fingerprints: their kernel side is only
// checked by the corpus, at commit.)
func TestPacketsCgroupClusterConnlabel(t *testing.T) {
	tools := pktTools(t)
	clientRules := []struct {
		rule string
		want uint64
	}{
		{"-p icmp --icmp-type 8 -m cgroup --path /", 3},
		{"-p icmp --icmp-type 8 -m cgroup ! --path /", 0},
		{"-p icmp --icmp-type 8 -m cgroup --cgroup 0", 3},
		{"-p icmp --icmp-type 8 -m cgroup ! --cgroup 0", 0},
		{"-p icmp --icmp-type 8 -m cgroup --cgroup 7", 0},
	}
	serverRules := []struct {
		rule string
		want uint64
	}{
		{"-p icmp --icmp-type 8 -m cluster --cluster-total-nodes 1 --cluster-local-node 1 --cluster-hash-seed 0", 3},
		{"-p icmp --icmp-type 8 -m cluster --cluster-total-nodes 1 ! --cluster-local-node 1 --cluster-hash-seed 0", 0},
		// the three pings are one connection: the first has no label yet
		{"-p icmp --icmp-type 8 -m connlabel --label 3", 2},
		{"-p icmp --icmp-type 8 -m connlabel ! --label 3", 1},
		{"-p icmp --icmp-type 8 -m connlabel --label 3 --set", 3},
		{"-p icmp --icmp-type 8 -m connlabel --label 3", 3},
		{"-p icmp --icmp-type 8 -m connlabel --label 4", 0},
	}
	got := map[string][2][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool := tools[label]
		p := newPktPair(t, "h9cg"+label[:1])
		for _, r := range clientRules {
			args, _ := ShellWords(r.rule)
			mustRun(t, p.client, append([]string{tool, "-A", "OUTPUT"}, args...)...)
		}
		for _, r := range serverRules {
			args, _ := ShellWords(r.rule)
			mustRun(t, p.server, append([]string{tool, "-A", "INPUT"}, args...)...)
		}
		mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "2", pktServer)
		got[label] = [2][]uint64{ruleCounters(t, p.client, tool, "filter", "OUTPUT"), ruleCounters(t, p.server, tool, "filter", "INPUT")}
	}
	for i, r := range clientRules {
		if got["ref"][0][i] != got["ours"][0][i] || got["ours"][0][i] != r.want {
			t.Errorf("client %s: reference %d, xdptables %d, want %d", r.rule, got["ref"][0][i], got["ours"][0][i], r.want)
		}
	}
	for i, r := range serverRules {
		if got["ref"][1][i] != got["ours"][1][i] || got["ours"][1][i] != r.want {
			t.Errorf("server %s: reference %d, xdptables %d, want %d", r.rule, got["ref"][1][i], got["ours"][1][i], r.want)
		}
	}
}

// TestPacketsDCCP: -m dccp ports, packet types and options on hand-made
// DCCP packets (a raw socket in the client; xt_dccp does not look at the
// checksum): the counters agree with the reference.
func TestPacketsDCCP(t *testing.T) {
	tools := pktTools(t)
	rules := []string{
		"-A INPUT -p dccp -m dccp --dport 6000",
		"-A INPUT -p dccp --sport 1024:65535 ! --dport 6000",
		"-A INPUT -p dccp -m dccp --dccp-types REQUEST,ACK",
		"-A INPUT -p dccp -m dccp ! --dccp-types DATA",
		"-A INPUT -p dccp -m dccp --dccp-option 5",
		"-A INPUT -p dccp -m dccp ! --dccp-option 5",
	}
	// generic header with 48-bit sequence numbers (X=1, 16 bytes), the
	// type's own part (REQUEST: service code, ACK: acknowledgement), then
	// options
	packets := []struct {
		sport, dport uint16
		typ          byte
		ext, opts    []byte
	}{
		{5000, 6000, 2, nil, nil},                            // DATA
		{5000, 6001, 0, make([]byte, 4), nil},                // REQUEST
		{80, 6000, 2, nil, []byte{5, 2, 0, 0}},               // DATA with option 5
		{5000, 6000, 3, make([]byte, 8), []byte{0, 0, 0, 0}}, // ACK, padding
	}
	got := map[string]string{}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "h9dc"+label[:1])
		loadRules(t, p.server, tools[label], rules)
		for _, pk := range packets {
			var b []byte
			b = binary.BigEndian.AppendUint16(b, pk.sport)
			b = binary.BigEndian.AppendUint16(b, pk.dport)
			doff := (16 + len(pk.ext) + len(pk.opts)) / 4
			b = append(b, byte(doff), 0, 0, 0, pk.typ<<1|1, 0, 0, 0, 0, 0, 0, 1)
			b = append(b, pk.ext...)
			b = append(b, pk.opts...)
			sendRaw(t, p.client, unix.IPPROTO_DCCP, pktServer, b)
		}
		time.Sleep(100 * time.Millisecond)
		got[label] = fmt.Sprint(ruleCounters(t, p.server, tools[label], "filter", "INPUT"))
	}
	if got["ref"] != got["ours"] {
		t.Errorf("counters: reference %s, xdptables %s", got["ref"], got["ours"])
	}
	if want := "[3 1 2 2 1 3]"; got["ours"] != want {
		t.Errorf("counters: xdptables %s, want %s", got["ours"], want)
	}
}

// TestPacketsNfacct: -m nfacct counts into the accounting object (made
// here over nfnetlink_acct, as `nfacct add` does) and matches: three
// pings leave 3 packets in the object and on the rule, for both.
func TestPacketsNfacct(t *testing.T) {
	tools := pktTools(t)
	rules := []string{
		"-A INPUT -p icmp --icmp-type 8 -m nfacct --nfacct-name h9ping",
		"-A INPUT -p icmp --icmp-type 0 -m nfacct --nfacct-name h9other",
	}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "h9na"+label[:1])
		nfacctRequest(t, p.server, 0, "h9ping") // NFNL_MSG_ACCT_NEW
		nfacctRequest(t, p.server, 0, "h9other")
		loadRules(t, p.server, tools[label], rules)
		mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "2", pktServer)
		if got := fmt.Sprint(ruleCounters(t, p.server, tools[label], "filter", "INPUT")); got != "[3 0]" {
			t.Errorf("%s: rule counters %s, want [3 0]", label, got)
		}
		if n := nfacctRequest(t, p.server, 1, "h9ping"); n != 3 { // NFNL_MSG_ACCT_GET
			t.Errorf("%s: nfacct object h9ping counted %d packets, want 3", label, n)
		}
	}
}

// nfacctRequest sends an nfnetlink_acct request of type msg for the
// object name in ns and returns the packet count of the answer (0 when
// there is none).
func nfacctRequest(t *testing.T, ns *netns.NS, msg uint16, name string) uint64 {
	t.Helper()
	var pkts uint64
	inNS(t, ns, func() {
		c, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ae := netlink.NewAttributeEncoder()
		ae.String(1, name) // NFACCT_NAME
		attrs, err := ae.Encode()
		if err != nil {
			t.Fatal(err)
		}
		flags := netlink.Request | netlink.Acknowledge
		if msg == 0 {
			flags |= netlink.Create
		}
		req := netlink.Message{
			Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_ACCT<<8 | msg), Flags: flags},
			Data:   append([]byte{unix.AF_UNSPEC, 0, 0, 0}, attrs...), // struct nfgenmsg
		}
		replies, err := c.Execute(req)
		if err != nil {
			t.Fatalf("nfacct %s: %v", name, err)
		}
		for _, r := range replies {
			if len(r.Data) < 4 {
				continue
			}
			ad, err := netlink.NewAttributeDecoder(r.Data[4:])
			if err != nil {
				t.Fatal(err)
			}
			ad.ByteOrder = binary.BigEndian
			for ad.Next() {
				if ad.Type() == 2 { // NFACCT_PKTS
					pkts = ad.Uint64()
				}
			}
		}
	})
	return pkts
}
