package kernel

import (
	"bytes"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// exprData returns the NFTA_EXPR_DATA payload the library encodes for x,
// plus optional extra attributes as the kernel adds them to dumps.
func exprData(t *testing.T, x expr.Any, extra []byte) []byte {
	t.Helper()
	data, err := expr.MarshalExprData(byte(IPv4), x)
	if err != nil {
		t.Fatal(err)
	}
	return append(data, extra...)
}

func TestFastDecodeMatchesLibrary(t *testing.T) {
	var pad, bitwiseOp encoder
	pad.u64(unix.NFTA_COUNTER_PAD, 0)
	bitwiseOp.u32(6, 0) // NFTA_BITWISE_OP, dumped by current kernels
	for _, c := range []struct {
		name  string
		x     expr.Any
		extra []byte
	}{
		{"payload", &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4}, nil},
		{"cmp", &expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{1, 2, 3}}, nil},
		{"meta", &expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1}, nil},
		{"meta", &expr.Meta{Key: expr.MetaKeyMARK, Register: 1, SourceRegister: true}, nil},
		{"counter", &expr.Counter{Bytes: 1 << 40, Packets: 7}, pad.buf},
		{"range", &expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: []byte{0, 10}, ToData: []byte{0, 20}}, nil},
		{"bitwise", &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte{255, 255, 240, 0}, Xor: []byte{0, 0, 0, 0}}, bitwiseOp.buf},
		{"immediate", &expr.Verdict{Kind: expr.VerdictDrop}, nil},
		{"immediate", &expr.Verdict{Kind: expr.VerdictJump, Chain: "filter.KUBE-SVC-X"}, nil},
		{"immediate", &expr.Verdict{Kind: expr.VerdictReturn}, nil},
	} {
		data := exprData(t, c.x, c.extra)
		fast, ok := decodeFast(c.name, data)
		if !ok {
			t.Fatalf("%s %+v: not decoded", c.name, c.x)
		}
		lib := newExpr(c.name)
		if c.name == "immediate" {
			lib = &expr.Verdict{}
		}
		if err := expr.Unmarshal(byte(IPv4), data, lib); err != nil {
			t.Fatal(err)
		}
		a, _ := AppendExpr(nil, IPv4, fast)
		b, _ := AppendExpr(nil, IPv4, lib)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: fast %+v, library %+v", c.name, fast, lib)
		}
	}
	// what the fast path leaves to the library
	for _, c := range []struct {
		name string
		x    expr.Any
	}{
		{"payload", &expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 8, Len: 1, CsumType: expr.CsumTypeInet, CsumOffset: 10}},
		{"immediate", &expr.Immediate{Register: 1, Data: []byte{1, 2, 3, 4}}},
	} {
		if _, ok := decodeFast(c.name, exprData(t, c.x, nil)); ok {
			t.Errorf("%s %+v decoded by the fast path", c.name, c.x)
		}
	}
}
