package translate

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
)

// ChainName is the nft chain that holds an iptables chain.
func ChainName(table, chain string) string { return table + "." + chain }

// SplitChainName undoes ChainName.
func SplitChainName(name string) (table, chain string, ok bool) {
	return strings.Cut(name, ".")
}

// ErrUnsupported is returned for rules that have no nftables translation.
var ErrUnsupported = errors.New("not supported by the nftables backend")

// Exprs translates r, a rule of the iptables table, into expressions.
// The counter starts at r.Counters when given. The chain is not known:
// hook-restricted matches translate as in a chain where they are allowed
// (use ExprsIn for rules going to the kernel).
func Exprs(table string, r *compat.Rule) ([]expr.Any, error) {
	return ExprsIn(table, "", r)
}

// ExprsIn translates r, a rule of chain in the iptables table.
func ExprsIn(table, chain string, r *compat.Rule) ([]expr.Any, error) {
	return exprsIn(table, chain, r, foldAll)
}

// foldForm is how an IPv4 rule's protocol, first-fragment and address
// tests are laid out. Rules written by earlier builds have the earlier
// forms: FromKernel accepts each.
type foldForm uint8

const (
	// foldNone: each test apart
	foldNone foldForm = iota
	// foldProto: the protocol and first-fragment tests folded into one
	// (foldProtoFragment), the address tests apart
	foldProto
	// foldAll: the address tests that follow folded in too (foldAddrs)
	foldAll
)

// exprsIn is ExprsIn, with the tests laid out as fold says.
func exprsIn(table, chain string, r *compat.Rule, fold foldForm) ([]expr.Any, error) {
	out := make([]expr.Any, 0, 12) // most rules: one allocation
	ctx := &compat.NftContext{Family: r.Family, Rule: r, Table: table, Chain: chain}
	out = append(out, ifaceExprs(expr.MetaKeyIIFNAME, r.InIface, r.InInv)...)
	out = append(out, ifaceExprs(expr.MetaKeyOIFNAME, r.OutIface, r.OutInv)...)
	protoAt := -1
	if r.ProtoSet {
		protoAt = len(out)
		out = append(out, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: cmpOp(r.ProtoInv), Register: 1, Data: []byte{r.Proto}})
	}
	srcOff, dstOff := uint32(12), uint32(16)
	if r.Family == compat.IPv6 {
		srcOff, dstOff = 8, 24
	}
	out = appendAddrExprs(out, srcOff, r.Src, r.SrcInv)
	out = appendAddrExprs(out, dstOff, r.Dst, r.DstInv)
	if r.Frag != compat.FragAny {
		op := expr.CmpOpNeq
		if r.Frag == compat.FragNone {
			op = expr.CmpOpEq
		}
		out = append(out,
			&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 6, Len: 2},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 2, Mask: []byte{0x1f, 0xff}, Xor: []byte{0, 0}},
			&expr.Cmp{Op: op, Register: 1, Data: []byte{0, 0}})
	}
	foldAt := -1
	if fold != foldNone && protoAt >= 0 && r.Family == compat.IPv4 && !r.ProtoInv && foldable(r) {
		foldAt = protoAt
	}
	return appendMatches(out, table, ctx, r, r.Matches, foldAt, fold == foldAll)
}

// appendMatches appends the expressions of ms, the rule's matches from
// some point on, then its counter and target. A -m set on a list:set
// (compat.SetMatch.NftListExprs) takes the rest of the rule into a chain
// bound to it: "return" where the match fails, then the rest, counter
// included (kernel.Rule.CounterValues finds it there). The rest runs
// once, after the members' tests; -j RETURN and -g cannot be expressed
// (from the bound chain they would return to the rule's chain). foldAt
// (-1: none) is where out's protocol test starts when it is to be folded
// with the first-fragment test (foldProtoFragment), and addrs whether the
// address tests that follow are folded in as well (foldAddrs).
func appendMatches(out []expr.Any, table string, ctx *compat.NftContext, r *compat.Rule, ms []compat.Match, foldAt int, addrs bool) ([]expr.Any, error) {
	for i, m := range ms {
		if sm, ok := m.(*compat.SetMatch); ok {
			list, count, unless, err := sm.NftListExprs(ctx)
			if err != nil {
				return nil, fmt.Errorf("match %q: %w", m.Name(), err)
			}
			if list {
				if t, ok := r.Target.(*compat.ChainTarget); ok && (t.Goto || t.Chain == compat.VerdictReturn) {
					// from the bound chain they would return to the
					// rule's chain, not from it
					return nil, fmt.Errorf("match %q: %w", m.Name(), compat.Errorf(compat.StatusParameter, "Set %s is a list:set: the nftables backend cannot match it in a rule with -j RETURN or -g.", sm.SetName))
				}
				rest, err := appendMatches(nil, table, ctx, r, ms[i+1:], -1, false)
				if err != nil {
					return nil, err
				}
				if slices.ContainsFunc(rest, func(x expr.Any) bool { _, ok := x.(kernel.BoundChain); return ok }) {
					// (the kernel takes no chain bound in a bound chain)
					return nil, fmt.Errorf("match %q: %w", m.Name(), compat.Errorf(compat.StatusParameter, "Set %s is a list:set: the nftables backend cannot match it in a rule with another list:set match or a target that needs a chain of its own (TPROXY, ECN, SET, TCPOPTSTRIP).", sm.SetName))
				}
				rules := count
				for _, c := range unless {
					rules = append(rules, append(append([]expr.Any(nil), c...), &expr.Verdict{Kind: expr.VerdictReturn}))
				}
				rules = append(rules, rest)
				return append(out, &compat.BoundJump{Verdict: &expr.Verdict{Kind: expr.VerdictJump}, Rules: rules}), nil
			}
		}
		n, ok := m.(compat.NftExpresser)
		if !ok {
			return nil, fmt.Errorf("match %q: %w", m.Name(), ErrUnsupported)
		}
		es, err := n.NftExprs(ctx)
		if err != nil {
			if err == compat.ErrNoNative {
				err = ErrUnsupported // a refusal that says why keeps its words
			}
			return nil, fmt.Errorf("match %q: %w", m.Name(), err)
		}
		out = append(out, es...)
	}
	if foldAt >= 0 {
		var f *foldedTest
		out, f = foldProtoFragment(out, foldAt)
		if f != nil && addrs {
			out = foldAddrs(out, foldAt, f)
		}
	}
	// the counter and a verdict are one allocation (every rule has a
	// counter, most a verdict)
	tail := &ruleTail{}
	c := &tail.counter
	if r.Counters != nil {
		c.Packets, c.Bytes = r.Counters.Packets, r.Counters.Bytes
	}
	out = append(out, c)
	if r.Target == nil {
		return out, nil
	}
	if ct, ok := r.Target.(*compat.ChainTarget); ok {
		return append(out, verdictExpr(&tail.verdict, table, ct)), nil
	}
	n, ok := r.Target.(compat.NftExpresser)
	if !ok {
		return nil, fmt.Errorf("target %q: %w", r.Target.Name(), ErrUnsupported)
	}
	es, err := n.NftExprs(ctx)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", r.Target.Name(), err)
	}
	return append(out, es...), nil
}

// foldProtoFragment folds an IPv4 rule's protocol test (meta l4proto,
// cmp eq P at es[at]) and its first-fragment test (frag-off & 0x1fff ==
// 0, which -p tcp/udp/icmp matches and ! -f add) into one test of the
// four header bytes from the fragment offset to the protocol: frag-off,
// ttl, protocol & 0x1fff00ff == 0x000000P. In an ip-family chain the
// kernel's l4proto is the header's protocol byte, so the test is the
// same; it is 3 expressions instead of 5, which the kernel looks up,
// validates and allocates for every rule of a restore (and evaluates for
// every packet), and 80 bytes less per rule in the batch. Without both
// tests es is returned as it is, and no test.
func foldProtoFragment(es []expr.Any, at int) ([]expr.Any, *foldedTest) {
	if at+2 > len(es) {
		return es, nil
	}
	m, ok := es[at].(*expr.Meta)
	if !ok || m.Key != expr.MetaKeyL4PROTO || m.SourceRegister || m.Register != 1 {
		return es, nil
	}
	pc, ok := es[at+1].(*expr.Cmp)
	if !ok || pc.Op != expr.CmpOpEq || pc.Register != 1 || len(pc.Data) != 1 {
		return es, nil
	}
	for j := at + 2; j+3 <= len(es); j++ {
		if !isFirstFragmentTest(es[j : j+3]) {
			continue
		}
		if j+3 < len(es) && readsRegister(es[j+3]) {
			// what follows would read the test's register
			return es, nil
		}
		f := &foldedTest{mask: [foldedMax]byte{0x1f, 0xff, 0, 0xff}, data: [foldedMax]byte{0, 0, 0, pc.Data[0]}}
		f.load = expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: foldedOffset, Len: 4}
		f.and = expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: f.mask[:4], Xor: f.xor[:4]}
		f.cmp = expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: f.data[:4]}
		// in place: the three expressions take the protocol test's two
		// places and the first of the fragment test's three
		copy(es[at+3:], es[at+2:j])
		es[at], es[at+1], es[at+2] = &f.load, &f.and, &f.cmp
		n := copy(es[j+1:], es[j+3:])
		clear(es[j+1+n:])
		return es[:j+1+n], f
	}
	return es, nil
}

// foldedTest is the expressions of foldProtoFragment's test and their
// bytes, allocated together; foldAddrs widens it.
type foldedTest struct {
	load            expr.Payload
	and             expr.Bitwise
	cmp             expr.Cmp
	mask, xor, data [foldedMax]byte
}

const (
	// foldedOffset is where the folded test's bytes start in the IPv4
	// header: the fragment offset
	foldedOffset = 6
	// foldedMax is the most bytes it covers: up to the end of the
	// destination address (one 16-byte register)
	foldedMax = 20 - foldedOffset
)

// foldAddrs folds the IPv4 address tests that follow foldProtoFragment's
// test t at es[at] (each a source or destination address or prefix compared
// for equality, as appendAddrExprs or addrExprs make it) into that test:
// one load of the header from the fragment offset to the end of the last
// address, one mask and one compare, instead of two or three expressions
// more per address. The packets it matches are the same. A large
// restore's kernel time is mostly per expression (the kernel looks each
// expression's type up by name, parses and allocates it), and the packet
// path evaluates fewer of them too; nft lists the folded test as the
// header fields it tests (ip daddr ...).
func foldAddrs(es []expr.Any, at int, t *foldedTest) []expr.Any {
	end := foldedOffset + int(t.load.Len)
	k := at + 3
	folded := false
	for k+2 <= len(es) {
		p, ok := es[k].(*expr.Payload)
		if !ok || p.OperationType != expr.PayloadLoad || p.Base != expr.PayloadBaseNetworkHeader || p.DestRegister != 1 || p.CsumType != 0 ||
			(p.Offset != 12 && p.Offset != 16) || p.Len == 0 || p.Len > 4 || int(p.Offset) < end {
			break
		}
		n := 1
		var mask []byte
		if b, ok := es[k+1].(*expr.Bitwise); ok {
			if b.SourceRegister != 1 || b.DestRegister != 1 || b.Len != p.Len || len(b.Mask) != int(p.Len) || !allZero(b.Xor) || len(b.Xor) != int(p.Len) {
				break
			}
			mask, n = b.Mask, 2
		}
		if k+n >= len(es) {
			break
		}
		c, ok := es[k+n].(*expr.Cmp)
		if !ok || c.Op != expr.CmpOpEq || c.Register != 1 || len(c.Data) != int(p.Len) {
			break
		}
		if k+n+1 < len(es) && readsRegister(es[k+n+1]) {
			break // what follows would read the address test's register
		}
		outside := false // bits the mask clears: the test matches nothing
		for i := range mask {
			outside = outside || c.Data[i]&^mask[i] != 0
		}
		if outside {
			break
		}
		at := int(p.Offset) - foldedOffset
		for i := range int(p.Len) {
			m := byte(0xff)
			if mask != nil {
				m = mask[i]
			}
			t.mask[at+i], t.data[at+i] = m, c.Data[i]
		}
		end = int(p.Offset + p.Len)
		k += n + 1
		folded = true
	}
	if !folded {
		return es
	}
	l := uint32(end - foldedOffset)
	t.load.Len, t.and.Len = l, l
	t.and.Mask, t.and.Xor, t.cmp.Data = t.mask[:l], t.xor[:l], t.data[:l]
	n := copy(es[at+3:], es[k:])
	clear(es[at+3+n:])
	return es[:at+3+n]
}

// foldable says whether r's protocol and first-fragment tests may be
// folded: when its matches are tcp, udp and comment and its target a
// verdict or a chain (most rules of a large ruleset). Other matches and
// targets (icmp, DNAT with ports, REJECT with tcp-reset...) read the
// protocol from the l4proto test in nft syntax (`xdptables translate`
// prints their rules for nft -f, which would otherwise add its own
// protocol test or refuse them).
func foldable(r *compat.Rule) bool {
	switch t := r.Target.(type) {
	case nil:
	case *compat.ChainTarget:
		if t.Chain == compat.VerdictQueue {
			return false
		}
	default:
		return false
	}
	for _, m := range r.Matches {
		switch m.Name() {
		case "tcp", "udp", "comment":
		default:
			return false
		}
	}
	return true
}

// isFirstFragmentTest says whether es are frag-off & 0x1fff == 0.
func isFirstFragmentTest(es []expr.Any) bool {
	p, ok := es[0].(*expr.Payload)
	if !ok || p.OperationType != expr.PayloadLoad || p.Base != expr.PayloadBaseNetworkHeader || p.Offset != 6 || p.Len != 2 || p.DestRegister != 1 || p.CsumType != 0 {
		return false
	}
	b, ok := es[1].(*expr.Bitwise)
	if !ok || b.SourceRegister != 1 || b.DestRegister != 1 || b.Len != 2 || !bytes.Equal(b.Mask, []byte{0x1f, 0xff}) || !bytes.Equal(b.Xor, []byte{0, 0}) {
		return false
	}
	c, ok := es[2].(*expr.Cmp)
	return ok && c.Op == expr.CmpOpEq && c.Register == 1 && bytes.Equal(c.Data, []byte{0, 0})
}

// readsRegister says whether x may read a register it did not load.
func readsRegister(x expr.Any) bool {
	switch v := x.(type) {
	case *expr.Payload:
		return v.OperationType != expr.PayloadLoad
	case *expr.Meta:
		return v.SourceRegister
	case *expr.Counter, *expr.Verdict, *expr.Match, *expr.Target, *expr.Numgen:
		return false
	}
	return true
}

func cmpOp(inv bool) expr.CmpOp {
	if inv {
		return expr.CmpOpNeq
	}
	return expr.CmpOpEq
}

// ifaceExprs: "eth0" compares strlen+1 bytes (with the NUL), "eth+"
// compares the prefix; "+" alone matches every name and loads only, and
// "! -i +" compares with a name no interface can have, as iptables-nft
// does.
func ifaceExprs(key expr.MetaKey, name string, inv bool) []expr.Any {
	if name == "" {
		return nil
	}
	load := &expr.Meta{Key: key, Register: 1}
	if name == "+" && inv {
		return []expr.Any{load, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte("INVAL/D\x00")}}
	}
	if name == "+" {
		return []expr.Any{load}
	}
	data := []byte(name)
	if strings.HasSuffix(name, "+") {
		data = data[:len(data)-1]
	} else {
		data = append(data, 0)
	}
	return []expr.Any{load, &expr.Cmp{Op: cmpOp(inv), Register: 1, Data: data}}
}

// addrTest is the expressions of a test of a byte-aligned prefix and
// the bytes it compares, allocated together: most rules of a large
// ruleset have one or two (one allocation instead of four each).
type addrTest struct {
	load expr.Payload
	cmp  expr.Cmp
	addr [16]byte
}

// appendAddrExprs appends addrExprs(off, n, inv) to out.
func appendAddrExprs(out []expr.Any, off uint32, n compat.Net, inv bool) []expr.Any {
	if n.IsAny() || !n.Addr.IsValid() {
		return append(out, addrExprs(off, n, inv)...)
	}
	bits := n.Bits()
	if bits <= 0 || bits%8 != 0 {
		return append(out, addrExprs(off, n, inv)...)
	}
	t := &addrTest{}
	if n.Addr.Is4() {
		a := n.Addr.As4()
		copy(t.addr[:], a[:])
	} else {
		t.addr = n.Addr.As16()
	}
	l := uint32(bits / 8)
	t.load = expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: l}
	t.cmp = expr.Cmp{Op: cmpOp(inv), Register: 1, Data: t.addr[:l:l]}
	return append(out, &t.load, &t.cmp)
}

// addrExprs: a byte-aligned prefix loads only its bytes; other masks
// load the whole address and apply a bitwise AND.
func addrExprs(off uint32, n compat.Net, inv bool) []expr.Any {
	if n.IsAny() && inv {
		// "! -s 0.0.0.0/0": iptables-nft compares no bytes at all, which
		// the kernel refuses (EINVAL); so does it here
		return []expr.Any{
			&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 0},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{}},
		}
	}
	if n.IsAny() {
		return nil
	}
	addr := n.Addr.AsSlice()
	bits := n.Bits()
	if bits > 0 && bits%8 == 0 {
		l := uint32(bits / 8)
		return []expr.Any{
			&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: l},
			&expr.Cmp{Op: cmpOp(inv), Register: 1, Data: addr[:l]},
		}
	}
	l := uint32(len(addr))
	return []expr.Any{
		&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: l},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: l, Mask: n.Mask.AsSlice(), Xor: make([]byte, l)},
		&expr.Cmp{Op: cmpOp(inv), Register: 1, Data: addr},
	}
}

// verdictExpr is the expression of a verdict or chain target: v, filled
// in, or for QUEUE a queue expression.
func verdictExpr(v *expr.Verdict, table string, t *compat.ChainTarget) expr.Any {
	switch t.Chain {
	case compat.VerdictAccept:
		*v = expr.Verdict{Kind: expr.VerdictAccept}
	case compat.VerdictDrop:
		*v = expr.Verdict{Kind: expr.VerdictDrop}
	case compat.VerdictReturn:
		*v = expr.Verdict{Kind: expr.VerdictReturn}
	case compat.VerdictQueue:
		return &expr.Queue{Num: 0}
	default:
		*v = expr.Verdict{Kind: expr.VerdictJump, Chain: ChainName(table, t.Chain)}
		if t.Goto {
			v.Kind = expr.VerdictGoto
		}
	}
	return v
}

// ruleTail is a rule's counter and its verdict (verdictExpr fills v),
// allocated together.
type ruleTail struct {
	counter expr.Counter
	verdict expr.Verdict
}

// Userdata TLV types. 0 is nft's rule comment, shown by `nft list`.
const (
	udComment      = 0
	udRuleSpec     = 0xa0 // exact rule specification (after "-A CHAIN")
	udRuleSpecZlib = 0xa1 // the same, deflated with specDict
	udDigest       = 0xa2 // digest of the rule: see digest
)

// specDict primes the compressor with words rule texts are made of, so
// that long rules (kube-proxy's comments and chains) fit the kernel's
// 256-byte userdata.
var specDict = []byte(" -m comment --comment \" -m conntrack --ctstate RELATED,ESTABLISHED,NEW -m tcp --dport -m udp --sport" +
	" -m multiport --dports -m addrtype --dst-type LOCAL -m statistic --mode random --probability 0.50000000000" +
	" -m mark --mark 0x4000/0x4000 -j MARK --set-xmark -j DNAT --to-destination -j MASQUERADE --random-fully" +
	" -j KUBE-SEP- -j KUBE-SVC- -j KUBE-MARK-MASQ -j REJECT --reject-with icmp-port-unreachable -j ACCEPT -j DROP -j RETURN" +
	" -p tcp -p udp -s -d -i -o ! kubernetes service cluster IP default/ kube-system/ -j LOG --log-prefix ")

// maxUserdata is the kernel's NFT_USERDATA_MAXLEN.
const maxUserdata = 256

// ErrTooLong is returned when a rule's text does not fit the kernel's
// userdata limit.
var ErrTooLong = errors.New("rule specification too long for rule userdata")

// UserData returns the userdata that records r's canonical text.
func UserData(r *compat.Rule) ([]byte, error) {
	return userData(compat.ExactSpec(r))
}

func userData(spec string) ([]byte, error) {
	// (the record's type and length bytes count: the kernel refuses
	// userdata over maxUserdata bytes with ERANGE)
	if len(spec) <= maxUserdata-2 {
		// with room for the digest UserDataFor adds
		ud := make([]byte, 0, 2+len(spec)+2+digestRecLen)
		return append(append(ud, udRuleSpec, byte(len(spec))), spec...), nil
	}
	var buf bytes.Buffer
	w, err := flate.NewWriterDict(&buf, flate.BestCompression, specDict)
	if err != nil {
		return nil, err
	}
	w.Write([]byte(spec))
	w.Close()
	if buf.Len() > maxUserdata-2 {
		return nil, ErrTooLong
	}
	return append([]byte{udRuleSpecZlib, byte(buf.Len())}, buf.Bytes()...), nil
}

// UserDataFor returns the userdata of r, a rule of chain in the iptables
// table, that es (ExprsIn's translation of r) go to the kernel with: r's
// canonical text and, when the kernel's listing of es can be foretold
// and there is room, their digest, with which reading the rule back
// skips translating it again (ReadRule), and, when the text is also what
// -S prints, parsing it (ReadSaveSpec).
func UserDataFor(f compat.Family, table, chain string, r *compat.Rule, es []expr.Any) ([]byte, error) {
	return UserDataForText(f, table, chain, r, es, compat.ExactSpec(r))
}

// UserDataForText is UserDataFor for a caller that has r's exact text
// (compat.ExactSpec) at hand.
func UserDataForText(f compat.Family, table, chain string, r *compat.Rule, es []expr.Any, spec string) ([]byte, error) {
	ud, _, err := userDataEncoding(f, table, chain, r, es, spec, nil)
	return ud, err
}

// UserDataEncoding is UserDataForText that also encodes es as a batch
// sends them, appended to sent (kernel.EncodeRuleExprs), in the same
// pass that takes the digest: sent is returned as it was when es are
// left for the batch to encode.
func UserDataEncoding(f compat.Family, table, chain string, r *compat.Rule, es []expr.Any, spec string, sent []byte) (ud, _ []byte, err error) {
	return userDataEncoding(f, table, chain, r, es, spec, sent)
}

// userDataEncoding is UserDataForText, and UserDataEncoding when sent is
// not nil.
func userDataEncoding(f compat.Family, table, chain string, r *compat.Rule, es []expr.Any, spec string, sent []byte) (_, _ []byte, err error) {
	ud, err := userData(spec)
	if err != nil || len(ud)+2+digestRecLen > maxUserdata {
		return ud, sent, err
	}
	var flags byte
	if compat.ExactIsCanonical(r) {
		flags |= digestSaveText
	} else {
		var sb strings.Builder
		sb.Grow(len(spec))
		compat.WriteRuleSpec(&sb, r, false)
		if sb.String() == spec {
			flags |= digestSaveText
		}
	}
	bp := digestBufs.Get().(*[]byte)
	defer putDigestBuf(bp)
	b := digestInput((*bp)[:0], f, table, chain, ud, flags)
	ok := false
	if sent != nil {
		sent, b, ok = kernel.EncodeRuleExprs(sent, b, kernel.Family(f), es)
	}
	if !ok {
		b, ok = kernel.AppendListed(b, kernel.Family(f), es)
	}
	*bp = b
	if !ok {
		return ud, sent, nil
	}
	sum := sha256.Sum256(b)
	ud = append(ud, udDigest, digestRecLen)
	ud = append(ud, sum[:digestLen]...)
	return append(ud, flags), sent, nil
}

// The digest record: digestLen bytes of the SHA-256 of digestInput and
// the rule's listed expressions, then a byte of flags (in the digest too).
const (
	digestLen    = 8
	digestRecLen = digestLen + 1
	// digestSaveText: the stored text is the -S text of the rule (the
	// exact text and the canonical one are the same)
	digestSaveText = 1
)

// buildStamp names this build of xdptables in every digest: a rule that
// another build wrote does not match, and is read the careful way
// (translated again and compared, printed from the parsed rule), as that
// build may have translated or printed it differently. The command sets
// it to the executable's build ID (SetBuild); without it, the version and
// what the Go toolchain recorded about the build stand in.
var buildStamp = sync.OnceValue(func() string {
	stamp := "xdptables " + compat.Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		stamp += " " + bi.Main.Version + " " + bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision", "vcs.time", "vcs.modified":
				stamp += " " + s.Value
			}
		}
	}
	return stamp
})

// SetBuild names the running build for the digests in rule userdata (see
// buildStamp); id is called once, when the first digest is taken, and
// "" from it keeps the default. Call it before any rule is read or
// written.
func SetBuild(id func() string) {
	def := buildStamp
	buildStamp = sync.OnceValue(func() string {
		if s := id(); s != "" {
			return "xdptables " + compat.Version + " build " + s
		}
		return def()
	})
}

// digestBufs holds buffers to take digests over (one per rule written or
// read would be garbage).
var digestBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func putDigestBuf(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		*bp = (*bp)[:0]
		digestBufs.Put(bp)
	}
}

// digestInput appends what a rule's digest is taken of, up to its
// expressions: the rule's place (family, table, chain: a rule moved
// elsewhere is checked by translating it), its stored text (the
// userdata's text record as stored) and the digest's flags.
func digestInput(dst []byte, f compat.Family, table, chain string, ud []byte, flags byte) []byte {
	dst = append(dst, "xdptables rule 1\x00"...)
	dst = append(dst, buildStamp()...)
	dst = append(dst, 0)
	dst = append(dst, byte(f))
	dst = append(dst, table...)
	dst = append(dst, 0)
	dst = append(dst, chain...)
	dst = append(dst, 0)
	if rec, ok := specRecord(ud); ok {
		dst = append(dst, rec...)
	}
	return append(dst, 0, flags)
}

// specRecord returns the TLV record of ud that holds the rule text.
func specRecord(ud []byte) ([]byte, bool) {
	for len(ud) >= 2 {
		t, l := ud[0], int(ud[1])
		if len(ud) < 2+l {
			return nil, false
		}
		if t == udRuleSpec || t == udRuleSpecZlib {
			return ud[:2+l], true
		}
		ud = ud[2+l:]
	}
	return nil, false
}

// specText returns the rule specification stored in userdata.
func specText(ud []byte) (string, bool) {
	if spec, ok := findTLV(ud, udRuleSpec); ok {
		return string(spec), true
	}
	z, ok := findTLV(ud, udRuleSpecZlib)
	if !ok {
		return "", false
	}
	out, err := io.ReadAll(io.LimitReader(flate.NewReaderDict(bytes.NewReader(z), specDict), 1<<16))
	if err != nil {
		return "", false
	}
	return string(out), true
}

// ErrForeign says a kernel rule was not written by xdptables (or was
// changed since): it is reported, never guessed at.
var ErrForeign = errors.New("rule was not written by xdptables")

// ReadRule rebuilds the iptables rule a kernel rule of chain was written
// from; ErrForeign when xdptables did not write it (or it changed since).
// A rule whose userdata holds a digest (UserDataFor) that matches its
// expressions as listed is read from its text alone; any other is
// translated again and compared (FromKernel). The counter values are the
// kernel's.
func ReadRule(f compat.Family, table, chain string, kr *kernel.Rule) (*compat.Rule, error) {
	r, _, err := readRule(f, table, chain, kr)
	return r, err
}

func readRule(f compat.Family, table, chain string, kr *kernel.Rule) (r *compat.Rule, fast bool, err error) {
	if DigestMatches(f, table, chain, kr) {
		r, err := StoredRule(f, table, chain, kr.UserData)
		if err != nil {
			return nil, true, err
		}
		if c := kr.CounterValues(); c != nil {
			r.Counters = &compat.Counters{Packets: c.Packets, Bytes: c.Bytes}
		}
		return r, true, nil
	}
	if err := kr.Decode(); err != nil {
		return nil, false, err
	}
	if len(kr.Unsupported) > 0 {
		return nil, false, ErrForeign
	}
	r, err = FromKernel(f, table, chain, kr.Exprs, kr.UserData)
	if err == nil && r.Counters == nil {
		// (kept in a chain bound to the rule: -m set on a list:set)
		if c := kr.CounterValues(); c != nil {
			r.Counters = &compat.Counters{Packets: c.Packets, Bytes: c.Bytes}
		}
	}
	return r, false, err
}

// HasDigest says whether userdata holds a digest (UserDataFor).
func HasDigest(userdata []byte) bool {
	_, ok := findTLV(userdata, udDigest)
	return ok
}

// DigestMatches says whether kr's userdata holds a digest and it is the
// digest of kr's text and expressions as the kernel lists them, in
// chain of the iptables table: then the rule is read from its text alone.
func DigestMatches(f compat.Family, table, chain string, kr *kernel.Rule) bool {
	_, ok := matchingDigest(f, table, chain, kr)
	return ok
}

// matchingDigest returns the flags of kr's digest when it matches.
func matchingDigest(f compat.Family, table, chain string, kr *kernel.Rule) (byte, bool) {
	d, ok := findTLV(kr.UserData, udDigest)
	if !ok || len(d) != digestRecLen {
		return 0, false
	}
	flags := d[digestLen]
	bp := digestBufs.Get().(*[]byte)
	defer putDigestBuf(bp)
	b := digestInput((*bp)[:0], f, table, chain, kr.UserData, flags)
	b, ok = kr.AppendListed(b)
	*bp = b
	if !ok {
		return 0, false
	}
	sum := sha256.Sum256(b)
	return flags, bytes.Equal(sum[:digestLen], d[:digestLen])
}

// ReadSaveSpec returns, for a rule of chain whose digest matches and whose
// stored text is its -S text, that text (the rule specification after
// "-A CHAIN", as compat.WriteRuleSpec writes it without counters) and the
// kernel's counter values, without parsing it. ok is false for any other
// rule: read it with ReadRule.
func ReadSaveSpec(f compat.Family, table, chain string, kr *kernel.Rule) (spec string, counters *compat.Counters, ok bool) {
	flags, ok := matchingDigest(f, table, chain, kr)
	if !ok || flags&digestSaveText == 0 {
		return "", nil, false
	}
	spec, ok = specText(kr.UserData)
	if !ok {
		return "", nil, false
	}
	if c := kr.CounterValues(); c != nil {
		counters = &compat.Counters{Packets: c.Packets, Bytes: c.Bytes}
	}
	return spec, counters, true
}

// FromKernel rebuilds the rule of chain from its userdata and checks it
// against the kernel's expressions. The counter values are taken from
// the kernel's counter expression.
func FromKernel(f compat.Family, table, chain string, exprs []expr.Any, userdata []byte) (*compat.Rule, error) {
	r, err := StoredRule(f, table, chain, userdata)
	if err != nil {
		return nil, err
	}
	renamedTarget(table, r, exprs)
	want, err := ExprsIn(table, chain, r)
	if err != nil {
		return nil, ErrForeign
	}
	var counter *expr.Counter
	for _, e := range exprs {
		if c, ok := e.(*expr.Counter); ok {
			counter = c
		}
	}
	if !SameExprs(f, want, exprs) {
		// written before the address tests were folded in, or before
		// the protocol and first-fragment tests were (a form that is
		// the same length as the newer one is the same)
		found, n := false, len(want)
		for _, form := range []foldForm{foldProto, foldNone} {
			old, err := exprsIn(table, chain, r, form)
			if err != nil {
				return nil, ErrForeign
			}
			if found = len(old) != n && SameExprs(f, old, exprs); found {
				break
			}
			n = len(old)
		}
		if !found {
			return nil, ErrForeign
		}
	}
	if counter != nil {
		r.Counters = &compat.Counters{Packets: counter.Packets, Bytes: counter.Bytes}
	}
	return r, nil
}

// StoredRule parses the rule text UserData stored, without checking it
// against the kernel's expressions (FromKernel does); ErrForeign when
// there is none or it does not parse as one rule.
func StoredRule(f compat.Family, table, chain string, userdata []byte) (*compat.Rule, error) {
	spec, ok := specText(userdata)
	if !ok {
		return nil, ErrForeign
	}
	cmd, err := compat.Parse(f, append([]string{"-A", chain}, compat.RestoreWords(spec)...), compat.ParseOptions{Table: table, KernelChain: true})
	if err != nil || len(cmd.Rules) != 1 {
		return nil, ErrForeign
	}
	return cmd.Rules[0], nil
}

// renamedTarget follows a rename of r's jump/goto target: `iptables -E`
// renames the kernel chain, and the kernel updates the verdicts of the
// rules that jump to it, while their userdata keeps the old name.
func renamedTarget(table string, r *compat.Rule, exprs []expr.Any) {
	t, ok := r.Target.(*compat.ChainTarget)
	if !ok || len(exprs) == 0 {
		return
	}
	v, ok := exprs[len(exprs)-1].(*expr.Verdict)
	if !ok || (v.Kind != expr.VerdictJump && v.Kind != expr.VerdictGoto) {
		return
	}
	tb, chain, ok := SplitChainName(v.Chain)
	if ok && tb == table && chain != t.Chain && (v.Kind == expr.VerdictGoto) == t.Goto {
		r.Target = &compat.ChainTarget{Chain: chain, Goto: t.Goto}
	}
}

func findTLV(ud []byte, typ byte) ([]byte, bool) {
	for len(ud) >= 2 {
		t, l := ud[0], int(ud[1])
		if len(ud) < 2+l {
			return nil, false
		}
		if t == typ {
			return ud[2 : 2+l], true
		}
		ud = ud[2+l:]
	}
	return nil, false
}

// SameExprs compares two expression lists by their netlink encoding,
// ignoring counter values.
func SameExprs(f compat.Family, a, b []expr.Any) bool {
	if len(a) != len(b) {
		return false
	}
	var ba, bb [512]byte
	for i := range a {
		ea, eb := a[i], b[i]
		if _, ok := ea.(*expr.Counter); ok {
			if _, ok := eb.(*expr.Counter); ok {
				continue
			}
			return false
		}
		if j, ok := ea.(kernel.BoundChain); ok {
			if jb, ok := eb.(kernel.BoundChain); ok {
				ra, rb := j.BoundRules(), jb.BoundRules()
				if len(ra) != len(rb) {
					return false
				}
				for k := range ra {
					if !SameExprs(f, ra[k], rb[k]) {
						return false
					}
				}
				continue
			}
			// the kernel names the chain it made with the rule
			v, ok := eb.(*expr.Verdict)
			if !ok || v.Kind != expr.VerdictJump || !kernel.IsBoundChainName(v.Chain) {
				return false
			}
			continue
		}
		if m, ok := ea.(kernel.AnonMap); ok {
			if mb, ok := eb.(kernel.AnonMap); ok {
				if !sameAnonMap(f, m, mb) {
					return false
				}
				continue
			}
			// the kernel names the map it made with the rule
			l, ok := eb.(*expr.Lookup)
			if !ok || !kernel.IsAnonMapName(l.SetName) || l.SetID != 0 {
				return false
			}
			c, _, _, _, _ := m.AnonMapDef()
			cp := *c
			cp.SetName = l.SetName
			ea = &cp
		}
		ma, err1 := kernel.AppendExpr(ba[:0], kernel.Family(f), ea)
		mb, err2 := kernel.AppendExpr(bb[:0], kernel.Family(f), eb)
		if err1 != nil || err2 != nil || !bytes.Equal(ma, mb) {
			return false
		}
	}
	return true
}

// sameAnonMap compares two anonymous maps: lookup and entries.
func sameAnonMap(f compat.Family, a, b kernel.AnonMap) bool {
	la, ka, da, keysA, valsA := a.AnonMapDef()
	lb, kb, db, keysB, valsB := b.AnonMapDef()
	if ka != kb || da != db || len(keysA) != len(keysB) || !SameExprs(f, []expr.Any{la}, []expr.Any{lb}) {
		return false
	}
	for i := range keysA {
		if !bytes.Equal(keysA[i], keysB[i]) || !bytes.Equal(valsA[i], valsB[i]) {
			return false
		}
	}
	return true
}

// StoredSpec returns the rule text UserData stored, without parsing it.
func StoredSpec(userdata []byte) (string, bool) {
	return specText(userdata)
}
