package kernel

import (
	"bytes"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// TestFastExprMatchesLibrary: every expression encodeExpr handles is
// byte for byte the library's, with two intended exceptions: a counter
// leaves out zero values (TestCounterZeroValuesLeftOut), and a masq with
// ports (ToPorts) also carries NFTA_MASQ_FLAGS: see encodeExpr and
// TestMasqPortsEncoding / TestMasqPortsAndCtSetInKernel.
func TestFastExprMatchesLibrary(t *testing.T) {
	for _, x := range []expr.Any{
		&expr.Masq{},
		&expr.Masq{Random: true, Persistent: true},
		&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 3},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{1, 2, 3}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte("eth0\x00")},
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1, SourceRegister: true},
		&expr.Counter{Bytes: 1 << 40, Packets: 7},
		&expr.Verdict{Kind: expr.VerdictAccept},
		&expr.Verdict{Kind: expr.VerdictDrop},
		&expr.Verdict{Kind: expr.VerdictReturn},
		&expr.Verdict{Kind: expr.VerdictJump, Chain: "filter.KUBE-SVC-ABCDEF"},
		&expr.Verdict{Kind: expr.VerdictGoto, Chain: "nat.x"},
		&expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: []byte{0, 10}, ToData: []byte{0, 20}},
		&expr.Range{Op: expr.CmpOpNeq, Register: 1, FromData: []byte{1, 2, 3, 4}, ToData: []byte{1, 2, 3, 9}},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte{255, 255, 240, 0}, Xor: []byte{0, 0, 0, 0}},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{0x17}, Xor: []byte{0}},
		&expr.Numgen{Register: 1, Type: unix.NFT_NG_RANDOM, Modulus: 4},
		&expr.Numgen{Register: 2, Type: unix.NFT_NG_INCREMENTAL, Modulus: 10, Offset: 3},
	} {
		lib, err := expr.Marshal(byte(IPv4), x)
		if err != nil {
			t.Fatal(err)
		}
		var want encoder
		want.bytes(unix.NFTA_LIST_ELEM|unix.NLA_F_NESTED, lib)
		var got encoder
		if !got.encodeExpr(x) {
			t.Fatalf("%T not handled", x)
		}
		if !bytes.Equal(got.buf, want.buf) {
			t.Errorf("%T %+v:\n ours %x\n lib  %x", x, x, got.buf, want.buf)
		}
	}
}

// TestCounterZeroValuesLeftOut: a counter sends only its non-zero values
// (the kernel starts at zero without them), so the zero counter of almost
// every restored rule costs 24 bytes less; the library decodes what is
// sent to the same counter.
func TestCounterZeroValuesLeftOut(t *testing.T) {
	for _, c := range []struct {
		x    expr.Counter
		size int
	}{
		{expr.Counter{}, 20},
		{expr.Counter{Packets: 3}, 32},
		{expr.Counter{Bytes: 300}, 32},
		{expr.Counter{Bytes: 300, Packets: 3}, 44},
	} {
		var e encoder
		if !e.encodeExpr(&c.x) {
			t.Fatal("counter not handled")
		}
		if len(e.buf) != c.size {
			t.Errorf("%+v: %d bytes, want %d: %x", c.x, len(e.buf), c.size, e.buf)
		}
		// NFTA_LIST_ELEM, NFTA_EXPR_NAME "counter", NFTA_EXPR_DATA
		var got expr.Counter
		if err := expr.Unmarshal(byte(IPv4), e.buf[20:], &got); err != nil {
			t.Fatal(err)
		}
		if got != c.x {
			t.Errorf("%+v: decoded as %+v", c.x, got)
		}
	}
}
