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

// testFlaggedNAT is a FlaggedNAT with the extra flags given.
type testFlaggedNAT struct {
	*expr.NAT
	extra uint32
}

func (n *testFlaggedNAT) NATExpr() *expr.NAT    { return n.NAT }
func (n *testFlaggedNAT) ExtraNATFlags() uint32 { return n.extra }

// TestFlaggedNATEncoding: a FlaggedNAT is the library's nat expression,
// byte for byte, with its extra flags ORed into NFTA_NAT_FLAGS (added
// when the library sends none).
func TestFlaggedNATEncoding(t *testing.T) {
	for _, n := range []*expr.NAT{
		{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 3, RegProtoMax: 4, Specified: true},
		{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV6, RegAddrMin: 1, RegAddrMax: 2, RegProtoMin: 3, Random: true, FullyRandom: true, Persistent: true, Specified: true},
		{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegAddrMax: 2, Prefix: true},
		{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4},
	} {
		for _, extra := range []uint32{0, unix.NF_NAT_RANGE_PROTO_OFFSET} {
			want := *n
			lib, err := expr.Marshal(byte(IPv4), &want)
			if err != nil {
				t.Fatal(err)
			}
			var got encoder
			if !got.encodeExpr(&testFlaggedNAT{n, extra}) {
				t.Fatal("FlaggedNAT not handled")
			}
			var w encoder
			w.bytes(unix.NFTA_LIST_ELEM|unix.NLA_F_NESTED, lib)
			if extra == 0 {
				if !bytes.Equal(got.buf, w.buf) {
					t.Errorf("%+v:\n ours %x\n lib  %x", n, got.buf, w.buf)
				}
				continue
			}
			if g, l := natFlagsIn(t, got.buf), natFlagsIn(t, w.buf); g != l|extra {
				t.Errorf("%+v: flags 0x%x, want 0x%x", n, g, l|extra)
			}
		}
	}
}

// natFlagsIn is NFTA_NAT_FLAGS of the encoded nat expression b (a list
// element: name, then the data), 0 when absent.
func natFlagsIn(t *testing.T, b []byte) uint32 {
	t.Helper()
	var flags uint32
	eachAttr(b[4:], func(typ uint16, v []byte) bool {
		if typ&^unix.NLA_F_NESTED != unix.NFTA_EXPR_DATA {
			return true
		}
		eachAttr(v, func(typ uint16, v []byte) bool {
			if typ == unix.NFTA_NAT_FLAGS {
				flags = uint32(v[0])<<24 | uint32(v[1])<<16 | uint32(v[2])<<8 | uint32(v[3])
			}
			return true
		})
		return true
	})
	return flags
}

// testReset is a TCPOptionReset.
type testReset struct{ *expr.Exthdr }

func (r *testReset) ResetKind() uint8 { return r.Type }

// TestTCPOptionResetEncoding: a TCPOptionReset is an exthdr expression
// with its kind and op tcpopt only (the kernel's strip operation takes
// neither register, nor offset, length or flags), and it decodes back as
// the library's Exthdr of that kind.
func TestTCPOptionResetEncoding(t *testing.T) {
	var e encoder
	if !e.encodeExpr(&testReset{&expr.Exthdr{Op: expr.ExthdrOpTcpopt, Type: 30}}) {
		t.Fatal("TCPOptionReset not handled")
	}
	b := e.buf
	var name string
	attrs := map[uint16][]byte{}
	eachAttr(b[4:], func(typ uint16, v []byte) bool {
		switch typ &^ unix.NLA_F_NESTED {
		case unix.NFTA_EXPR_NAME:
			name = string(bytes.TrimRight(v, "\x00"))
		case unix.NFTA_EXPR_DATA:
			eachAttr(v, func(typ uint16, v []byte) bool {
				attrs[typ] = v
				return true
			})
		}
		return true
	})
	if name != "exthdr" || len(attrs) != 2 || !bytes.Equal(attrs[unix.NFTA_EXTHDR_TYPE], []byte{30}) ||
		!bytes.Equal(attrs[unix.NFTA_EXTHDR_OP], []byte{0, 0, 0, unix.NFT_EXTHDR_OP_TCPOPT}) {
		t.Errorf("encoded %s %x", name, attrs)
	}
}
