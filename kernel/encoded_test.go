package kernel

import (
	"bytes"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// TestEncodedRuleSpec: a rule whose expressions EncodeRuleExprs encoded
// is the same batch message as one the batch encodes itself, and the
// listed form it gives is AppendListed's (the rule digest); encoded for
// another family, the batch encodes the expressions again.
func TestEncodedRuleSpec(t *testing.T) {
	for _, es := range [][]expr.Any{
		{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept}},
		{
			&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 6, Len: 4},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte{0x1f, 0xff, 0, 0xff}, Xor: []byte{0, 0, 0, 0}},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0, 0, 0, 6}},
			&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 3},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{198, 51, 100}},
			&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: []byte{0, 10}, ToData: []byte{0, 20}},
			&expr.Counter{Packets: 3, Bytes: 180},
			&expr.Verdict{Kind: expr.VerdictJump, Chain: "filter.KUBE-SVC-ABCDEF"},
		},
		{
			&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte("eth0\x00")},
			&expr.Numgen{Register: 1, Type: unix.NFT_NG_RANDOM, Modulus: 4},
			&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: []byte{1, 0, 0, 0}},
			&expr.Immediate{Register: 1, Data: []byte{0, 0x40, 0, 0}},
			&expr.Meta{Key: expr.MetaKeyMARK, Register: 1, SourceRegister: true},
			&expr.Counter{},
			&expr.Log{Key: 1 << unix.NFTA_LOG_PREFIX, Data: []byte("p: ")},
			&expr.Masq{Random: true},
		},
	} {
		for _, fam := range []Family{IPv4, IPv6} {
			sent, listed, ok := EncodeRuleExprs(nil, []byte("x"), fam, es)
			if !ok {
				t.Fatalf("%v: not encoded", es)
			}
			want, ok := AppendListed([]byte("x"), fam, es)
			if !ok || !bytes.Equal(listed, want) {
				t.Errorf("%v: listed %x, want %x", es, listed, want)
			}
			for _, to := range []Family{IPv4, IPv6} {
				plain, enc := NewBatch(), NewBatch()
				plain.AppendRule(to, "filter.INPUT", RuleSpec{Exprs: es, UserData: []byte{1, 2, 3}})
				enc.AppendRule(to, "filter.INPUT", RuleSpec{Exprs: es, UserData: []byte{1, 2, 3}, Encoded: sent, EncodedFamily: fam})
				if !bytes.Equal(plain.e.buf, enc.e.buf) || plain.e.err != nil || enc.e.err != nil {
					t.Errorf("%v: encoded for %v, sent to %v: batch differs\n%x\n%x", es, fam, to, enc.e.buf, plain.e.buf)
				}
			}
		}
	}
	// what only a batch encodes is left to it
	if sent, listed, ok := EncodeRuleExprs([]byte{}, []byte{}, IPv4, []expr.Any{&expr.Counter{}, boundJump{}}); ok || len(sent) != 0 || len(listed) != 0 {
		t.Errorf("bound jump encoded: %v %x %x", ok, sent, listed)
	}
}
