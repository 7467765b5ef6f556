package compat

import (
	"encoding/binary"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// Helpers shared by the nftables translations of the icmp, icmp6,
// multiport, conntrack, state, limit, hashlimit, recent, mark and connmark
// matches.

// hostU32 is v in host byte order, the order of the kernel's meta mark,
// ct mark, ct state and ct status words.
func hostU32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// xtMatch is an nft_compat match carrying an xtables match's info blob
// as the kernel lays its struct out (x86_64), padded to 8 bytes as
// XT_ALIGN wants. The blob goes out and comes back as xt.Unknown, so
// the read-back comparison is byte for byte.
func xtMatch(name string, rev uint32, info []byte) *expr.Match {
	for len(info)%8 != 0 {
		info = append(info, 0)
	}
	u := xt.Unknown(info)
	return &expr.Match{Name: name, Rev: rev, Info: &u}
}

// maskedCmpExprs compares the 32-bit host-order word in register 1 with
// v under mask (no bitwise for a full mask): eq, or neq when inv.
func maskedCmpExprs(v, mask uint32, inv bool) []expr.Any {
	var out []expr.Any
	if mask != 0xffffffff {
		out = append(out, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: hostU32(mask), Xor: hostU32(0)})
	}
	op := expr.CmpOpEq
	if inv {
		op = expr.CmpOpNeq
	}
	return append(out, &expr.Cmp{Op: op, Register: 1, Data: hostU32(v)})
}

// anyBitExprs tests whether the 32-bit host-order word in register 1
// has any bit of mask set (none when inv).
func anyBitExprs(mask uint32, inv bool) []expr.Any {
	op := expr.CmpOpNeq
	if inv {
		op = expr.CmpOpEq
	}
	return []expr.Any{
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: hostU32(mask), Xor: hostU32(0)},
		&expr.Cmp{Op: op, Register: 1, Data: hostU32(0)},
	}
}

// firstFragmentExprs makes an IPv4 rule skip non-first fragments, as
// every xtables match that reads the transport header does (it returns
// false when fragoff != 0, also when inverted). nftables does not: on a
// non-first fragment `meta l4proto` still names the protocol and a
// transport-header payload load reads the fragment's data bytes as if
// they were the header (measured on Linux 6.18), so a native
// transport-header test needs this guard in front of it. A rule with
// `! -f` already carries the same test.
func firstFragmentExprs(r *Rule) []expr.Any {
	if r.Family != IPv4 || r.Frag == FragNone {
		return nil
	}
	t := &firstFragmentTest{mask: [2]byte{0x1f, 0xff}}
	t.load = expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 6, Len: 2}
	t.and = expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 2, Mask: t.mask[:], Xor: t.xor[:]}
	t.cmp = expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: t.data[:]}
	t.es = [3]expr.Any{&t.load, &t.and, &t.cmp}
	return t.es[:]
}

// firstFragmentTest is firstFragmentExprs' expressions, their bytes and
// the list, allocated together (one allocation instead of eight: most
// rules of a large ruleset have the test).
type firstFragmentTest struct {
	load            expr.Payload
	and             expr.Bitwise
	cmp             expr.Cmp
	mask, xor, data [2]byte
	es              [3]expr.Any
}

// ruleProtoIs reports whether the rule is restricted to protocol p by a
// plain (not inverted) -p, which xtables matches bound to one protocol
// require.
func ruleProtoIs(r *Rule, p uint8) bool { return r.ProtoSet && !r.ProtoInv && r.Proto == p }

// putAddr16 writes a into the 16-byte union nf_inet_addr at b.
func putAddr16(b []byte, a []byte) { copy(b[:16], a) }

// iptables hooks by built-in chain name.
var builtinHook = map[string]uint8{"PREROUTING": 0, "INPUT": 1, "FORWARD": 2, "OUTPUT": 3, "POSTROUTING": 4}

// InHooks reports whether the rule's chain is a built-in chain of one
// of the given hooks (bits 1<<NF_INET_*), or unknown. A user chain
// reports false: the kernel checks an xtables extension there only when
// a jump from a base chain binds it to hooks, so an extension the
// kernel restricts to some hooks keeps its xtables form in user chains,
// and the kernel accepts or refuses it, at the jump, as it does
// iptables-nft's.
func (ctx *NftContext) InHooks(hooks uint8) bool {
	if ctx == nil || ctx.Chain == "" {
		return true
	}
	h, ok := builtinHook[ctx.Chain]
	return ok && hooks&(1<<h) != 0
}

// Hook masks for InHooks.
const (
	hookPre  = 1 << 0
	hookIn   = 1 << 1
	hookFwd  = 1 << 2
	hookOut  = 1 << 3
	hookPost = 1 << 4
)
