package kernel

import (
	"bytes"
	"syscall"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

func TestBuiltinChains(t *testing.T) {
	tests := []struct {
		table, chain string
		want         BaseChain
	}{
		{"filter", "INPUT", BaseChain{HookInput, 0, TypeFilter}},
		{"filter", "FORWARD", BaseChain{HookForward, 0, TypeFilter}},
		{"filter", "OUTPUT", BaseChain{HookOutput, 0, TypeFilter}},
		{"nat", "PREROUTING", BaseChain{HookPrerouting, -100, TypeNAT}},
		{"nat", "INPUT", BaseChain{HookInput, 100, TypeNAT}},
		{"nat", "OUTPUT", BaseChain{HookOutput, -100, TypeNAT}},
		{"nat", "POSTROUTING", BaseChain{HookPostrouting, 100, TypeNAT}},
		{"mangle", "PREROUTING", BaseChain{HookPrerouting, -150, TypeFilter}},
		{"mangle", "OUTPUT", BaseChain{HookOutput, -150, TypeRoute}},
		{"mangle", "POSTROUTING", BaseChain{HookPostrouting, -150, TypeFilter}},
		{"raw", "PREROUTING", BaseChain{HookPrerouting, -300, TypeFilter}},
		{"raw", "OUTPUT", BaseChain{HookOutput, -300, TypeFilter}},
		{"security", "FORWARD", BaseChain{HookForward, 150, TypeFilter}},
	}
	for _, tt := range tests {
		got, ok := BuiltinChain(tt.table, tt.chain)
		if !ok || got != tt.want {
			t.Errorf("BuiltinChain(%s, %s) = %+v, %v; want %+v", tt.table, tt.chain, got, ok, tt.want)
		}
	}
	if _, ok := BuiltinChain("nat", "FORWARD"); ok {
		t.Error("nat FORWARD must not be built-in")
	}
	if _, ok := BuiltinChain("filter", "DOCKER"); ok {
		t.Error("filter DOCKER must not be built-in")
	}
	n := 0
	for _, tb := range IptablesTables() {
		n += len(BuiltinChains(tb))
	}
	if n != 17 {
		t.Errorf("%d built-in chains, want 17", n)
	}
}

func TestChainName(t *testing.T) {
	if got := ChainName("nat", "DOCKER"); got != "nat.DOCKER" {
		t.Errorf("ChainName = %q", got)
	}
	for _, tt := range []struct {
		in           string
		table, chain string
		ok           bool
	}{
		{"filter.INPUT", "filter", "INPUT", true},
		{"nat.my.chain", "nat", "my.chain", true},
		{"bogus.INPUT", "", "", false},
		{"filter.", "", "", false},
		{"INPUT", "", "", false},
	} {
		tb, ch, ok := SplitChainName(tt.in)
		if tb != tt.table || ch != tt.chain || ok != tt.ok {
			t.Errorf("SplitChainName(%q) = %q, %q, %v", tt.in, tb, ch, ok)
		}
	}
}

// TestRuleEncodingMatchesLibrary checks our rule message against the one
// google/nftables builds for the same rule (same attribute order when there
// is no handle or position).
func TestRuleEncodingMatchesLibrary(t *testing.T) {
	exprs := []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{10, 0, 0, 1}},
		// a zero counter is shorter than the library's on purpose
		// (TestCounterZeroValuesLeftOut)
		&expr.Counter{Bytes: 64, Packets: 1},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
	ud := []byte("comment")
	b := NewBatch()
	b.AppendRule(IPv4, "filter.INPUT", RuleSpec{Exprs: exprs, UserData: ud})
	msgs := parseBatch(t, b)
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	lib, err := record(func(cc *nftables.Conn) error {
		cc.AddRule(&nftables.Rule{
			Table:    &nftables.Table{Name: TableName, Family: nftables.TableFamilyIPv4},
			Chain:    &nftables.Chain{Name: "filter.INPUT"},
			Exprs:    exprs,
			UserData: ud,
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lib) != 1 || !bytes.Equal(lib[0].Data, msgs[0].Data) {
		t.Errorf("encoding differs from google/nftables:\n ours %x\n lib  %x", msgs[0].Data, lib[0].Data)
	}
	if got, want := msgs[0].Header.Flags, uint16(unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_APPEND); got != want {
		t.Errorf("flags %#x, want %#x", got, want)
	}
}

func parseBatch(t *testing.T, b *Batch) []syscall.NetlinkMessage {
	t.Helper()
	msgs, err := syscall.ParseNetlinkMessage(b.e.buf[beginLen:])
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestSetElementsAreSplit(t *testing.T) {
	s := &nftables.Set{Name: "blocklist", KeyType: nftables.TypeIPAddr}
	elems := make([]nftables.SetElement, 50000)
	for i := range elems {
		elems[i].Key = []byte{10, byte(i >> 16), byte(i >> 8), byte(i)}
	}
	b := NewBatch()
	b.AddSet(IPv4, s, false)
	idx := b.AddSetElements(IPv4, s, elems, false)
	if b.e.err != nil {
		t.Fatal(b.e.err)
	}
	msgs := parseBatch(t, b)
	if len(msgs) < 3 {
		t.Fatalf("%d messages: elements not split", len(msgs))
	}
	for i, m := range msgs {
		if len(m.Data) > 64<<10 {
			t.Errorf("message %d: %d bytes", i, len(m.Data))
		}
		if i > 0 && int(b.msgOp[i]) != idx {
			t.Errorf("message %d belongs to op %d, want %d", i, b.msgOp[i], idx)
		}
		if m.Header.Flags&(unix.NLM_F_ACK|unix.NLM_F_ECHO) != 0 {
			t.Errorf("message %d asks for ack/echo", i)
		}
	}
	t.Logf("50000 elements in %d messages, %d bytes", len(msgs)-1, b.Size())
}

func TestOpErrorText(t *testing.T) {
	for _, tt := range []struct {
		e    OpError
		want string
	}{
		{OpError{Op: Op{Kind: OpRuleAppend, Chain: "filter.INPUT"}, Errno: unix.EINVAL},
			"RULE_APPEND failed (Invalid argument): rule in chain filter.INPUT"},
		{OpError{Op: Op{Kind: OpChainDel, Chain: "filter.C1"}, Errno: unix.EBUSY},
			"CHAIN_DEL failed (Device or resource busy): chain filter.C1"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}
