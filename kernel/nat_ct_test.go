package kernel

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// libMarshal is how read-back comparisons see an expression.
func libMarshal(t *testing.T, x expr.Any) []byte {
	t.Helper()
	b, err := expr.Marshal(byte(IPv4), x)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMasqPortsEncoding: a masq with ports is encoded with
// NFTA_MASQ_FLAGS carrying NF_NAT_RANGE_PROTO_SPECIFIED (the library
// leaves the flags out); without ports it is byte for byte the library's.
func TestMasqPortsEncoding(t *testing.T) {
	for _, m := range []*expr.Masq{{}, {Random: true}, {FullyRandom: true, Persistent: true}} {
		var got, want encoder
		want.bytes(unix.NFTA_LIST_ELEM|unix.NLA_F_NESTED, libMarshal(t, m))
		if !got.encodeExpr(m) || !bytes.Equal(got.buf, want.buf) {
			t.Errorf("%+v: ours %x, library %x", m, got.buf, want.buf)
		}
	}
	m := &expr.Masq{ToPorts: true, RegProtoMin: 3, RegProtoMax: 4, FullyRandom: true}
	var got encoder
	got.encodeExpr(m)
	var data []byte
	if err := forEachExpr(got.buf, func(name string, d []byte) error { data = d; return nil }); err != nil {
		t.Fatal(err)
	}
	back := &expr.Masq{}
	if err := expr.Unmarshal(byte(IPv4), data, back); err != nil {
		t.Fatal(err)
	}
	if !back.ToPorts || back.RegProtoMin != 3 || back.RegProtoMax != 4 || !back.FullyRandom {
		t.Errorf("decoded %+v", back)
	}
	flags := []byte{0, 0, 0, unix.NF_NAT_RANGE_PROTO_SPECIFIED | unix.NF_NAT_RANGE_PROTO_RANDOM_FULLY}
	if !bytes.Contains(data, flags) {
		t.Errorf("no flags attribute in %x", data)
	}
}

// TestMasqPortsAndCtSetInKernel: the kernel takes a masq with ports and
// ct sets, lists them back (nft shows the port range and ct mark set),
// and the reader decodes them into expressions that compare equal, by
// the library's marshalling, with what was sent; a masq without ports
// does not compare equal to one with.
func TestMasqPortsAndCtSetInKernel(t *testing.T) {
	c, ns := newNS(t)
	b := NewBatch()
	addBuiltins(b, IPv4)
	post := ChainName("nat", "POSTROUTING")
	masq := []expr.Any{
		&expr.Immediate{Register: 3, Data: []byte{0x04, 0x00}},
		&expr.Immediate{Register: 4, Data: []byte{0xff, 0xff}},
		&expr.Masq{ToPorts: true, RegProtoMin: 3, RegProtoMax: 4, Random: true},
	}
	b.AppendRule(IPv4, post, RuleSpec{Exprs: masq})
	fwd := ChainName("filter", "FORWARD")
	ctSet := []expr.Any{
		&expr.Ct{Key: expr.CtKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte{0x0f, 0xff, 0xff, 0xff}, Xor: []byte{0x10, 0, 0, 0}},
		&expr.Ct{Key: expr.CtKeyMARK, Register: 1, SourceRegister: true},
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Ct{Key: expr.CtKeyMARK, Register: 1, SourceRegister: true},
	}
	b.AppendRule(IPv4, fwd, RuleSpec{Exprs: ctSet})
	commit(t, c, b)

	listed := nft(t, ns, "list", "chain", "ip", TableName, post)
	if !strings.Contains(listed, "masquerade to :1024-65535 random") {
		t.Errorf("nft lists:\n%s", listed)
	}
	listed = nft(t, ns, "list", "chain", "ip", TableName, fwd)
	if !strings.Contains(listed, "ct mark set ct mark & 0xffffff1f | 0x00000010") || !strings.Contains(listed, "ct mark set meta mark") {
		t.Errorf("nft lists:\n%s", listed)
	}

	for _, tc := range []struct {
		chain string
		sent  []expr.Any
	}{{post, masq}, {fwd, ctSet}} {
		rules, err := c.Rules(IPv4, tc.chain)
		if err != nil || len(rules) != 1 {
			t.Fatalf("%s: %d rules, %v", tc.chain, len(rules), err)
		}
		got := rules[0].Exprs
		if len(rules[0].Unsupported) != 0 || len(got) != len(tc.sent) {
			t.Fatalf("%s: read %#v (unsupported %v)", tc.chain, got, rules[0].Unsupported)
		}
		for i := range got {
			if !bytes.Equal(libMarshal(t, got[i]), libMarshal(t, tc.sent[i])) {
				t.Errorf("%s: expression %d read back as %#v, sent %#v", tc.chain, i, got[i], tc.sent[i])
			}
		}
	}
	rules, _ := c.Rules(IPv4, post)
	if bytes.Equal(libMarshal(t, rules[0].Exprs[2]), libMarshal(t, &expr.Masq{Random: true})) {
		t.Error("masq with ports compares equal to masq without")
	}
	rules, _ = c.Rules(IPv4, fwd)
	if ct := rules[0].Exprs[2].(*expr.Ct); !ct.SourceRegister {
		t.Error("ct set read back as a load")
	}
}
