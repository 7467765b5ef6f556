package integration

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/integration/netns"
)

// TestPacketsConnsecmark: CONNSECMARK --save and --restore in mangle
// PREROUTING against xt_CONNSECMARK. Without an LSM nothing sets
// security marks, so a helper table of the test's own (priority -160,
// after conntrack, before mangle) gives packets with TOS 0x10 the mark 7
// and those with TOS 0x20 the mark 9, and counts, after the security
// table, the packets whose connection and whose packet carry 7 or 9.
// One flow: no mark (nothing to copy), mark 7 (saved to the
// connection), no mark (restored from it), mark 9 (the connection keeps
// 7, the packet keeps 9); a second flow without marks.
func TestPacketsConnsecmark(t *testing.T) {
	tools := pktTools(t)
	rules := []string{
		"-t mangle -A PREROUTING -p udp --dport 7001 -j CONNSECMARK --save",
		"-t mangle -A PREROUTING -p udp --dport 7001 -j CONNSECMARK --restore",
	}
	sends := []struct {
		sport int
		tos   byte
	}{{40000, 0}, {40000, 0x10}, {40000, 0}, {40000, 0x20}, {40001, 0}}
	// ct secmark 7, meta secmark 7, ct secmark 9, meta secmark 9
	want := []uint64{3, 2, 0, 1}
	got := map[string][]uint64{}
	iptCounts := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "cs"+label[:1])
		conn := secmarkHelper(t, p.server)
		loadRules(t, p.server, tools[label], rules)
		for _, s := range sends {
			udpSendTos(t, p.client, s.sport, 7001, s.tos)
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		got[label] = secmarkCounts(t, conn)
		iptCounts[label] = ruleCounters(t, p.server, tools[label], "mangle", "PREROUTING")
	}
	for _, label := range []string{"ref", "ours"} {
		if fmt.Sprint(got[label]) != fmt.Sprint(want) {
			t.Errorf("%s: marks counted %v, want %v", label, got[label], want)
		}
	}
	if fmt.Sprint(iptCounts["ref"]) != fmt.Sprint(iptCounts["ours"]) || fmt.Sprint(iptCounts["ours"]) != "[5 5]" {
		t.Errorf("rule counters: ref %v, ours %v, want [5 5]", iptCounts["ref"], iptCounts["ours"])
	}
}

// secmarkHelper makes the test's table in ns: a chain that sets the
// security mark from the TOS byte and one that counts marks.
func secmarkHelper(t *testing.T, ns *netns.NS) *nftables.Conn {
	t.Helper()
	fd, err := os.Open("/run/netns/" + ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fd.Close() })
	c, err := nftables.New(nftables.WithNetNSFd(int(fd.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	tb := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "secmarktest"})
	pre := c.AddChain(&nftables.Chain{Name: "pre", Table: tb, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityRef(-160)})
	for _, m := range []struct{ tos, mark uint32 }{{0x10, 7}, {0x20, 9}} {
		c.AddRule(&nftables.Rule{Table: tb, Chain: pre, Exprs: []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 1, Len: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{byte(m.tos)}},
			&expr.Immediate{Register: 1, Data: binaryutil.NativeEndian.PutUint32(m.mark)},
			&expr.Meta{Key: expr.MetaKeySECMARK, SourceRegister: true, Register: 1},
		}})
	}
	in := c.AddChain(&nftables.Chain{Name: "count", Table: tb, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityRef(200)})
	for _, mark := range []uint32{7, 9} {
		c.AddRule(&nftables.Rule{Table: tb, Chain: in, Exprs: []expr.Any{
			&expr.Ct{Key: expr.CtKeySECMARK, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(mark)},
			&expr.Counter{},
		}})
		c.AddRule(&nftables.Rule{Table: tb, Chain: in, Exprs: []expr.Any{
			&expr.Meta{Key: expr.MetaKeySECMARK, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(mark)},
			&expr.Counter{},
		}})
	}
	if err := c.Flush(); err != nil {
		t.Fatalf("secmark helper table: %v", err)
	}
	return c
}

// secmarkCounts reads the counting chain's packet counters.
func secmarkCounts(t *testing.T, c *nftables.Conn) []uint64 {
	t.Helper()
	rules, err := c.GetRules(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "secmarktest"}, &nftables.Chain{Name: "count"})
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, r := range rules {
		for _, e := range r.Exprs {
			if ctr, ok := e.(*expr.Counter); ok {
				out = append(out, ctr.Packets)
			}
		}
	}
	return out
}
