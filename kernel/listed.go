package kernel

import (
	"encoding/binary"
	"fmt"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// AppendListed appends to dst the expressions of a rule, without its
// counters, as the kernel lists them back in a rule dump (the
// NFTA_LIST_ELEM elements of NFTA_RULE_EXPRESSIONS): what Rule.AppendListed
// gives for the rule once it is in the kernel. The kernel does not list
// exactly what it was sent (no NLA_F_NESTED, attributes in its own order,
// defaults filled in); the expressions rules are mostly made of are put
// in that form here. Where this misses, the two differ and a reader
// comparing them takes its slower path: it never makes them equal for
// different expressions, as every step is a function of the sent bytes.
//
// ok is false when exprs hold expressions whose listing the kernel
// names itself (anonymous maps, bound chains) or that do not encode.
// Like netlink attributes, the elements start at a multiple of 4 bytes:
// dst is padded with zeros to one first.
func AppendListed(dst []byte, fam Family, exprs []expr.Any) (_ []byte, ok bool) {
	dst = pad4(dst)
	for _, x := range exprs {
		switch x.(type) {
		case *expr.Counter:
			continue
		case AnonMap, BoundChain:
			return dst, false
		}
		start := len(dst)
		var err error
		if dst, err = AppendExpr(dst, fam, x); err != nil {
			return dst[:start], false
		}
		clearNested(dst[start:])
		dst = listedFormOf(dst, start, x)
	}
	return dst, true
}

// listedFormOf is listedForm for the element of x at dst[start:], for
// the kinds the kernel does not list as they were sent.
func listedFormOf(dst []byte, start int, x expr.Any) []byte {
	switch v := x.(type) {
	case *expr.Cmp, *expr.Meta, *expr.Verdict, *expr.Immediate, *expr.Range, *expr.Match, *expr.Target:
		// listed as sent
	case *expr.Payload:
		if v.OperationType != expr.PayloadLoad {
			return listedForm(dst, start)
		}
	default:
		return listedForm(dst, start)
	}
	return dst
}

// EncodeRuleExprs encodes a rule's expressions once for both of their
// uses: it appends to sent the NFTA_RULE_EXPRESSIONS elements a Batch
// sends for them (RuleSpec.Encoded), and to listed what AppendListed
// appends. ok is false, and nothing is appended, when exprs hold
// expressions only a Batch encodes (anonymous maps, bound chains, sets it
// makes sure of) or one that does not encode: the caller then uses
// AppendListed and leaves the encoding to the Batch. sent must start at
// a multiple of 4 bytes.
func EncodeRuleExprs(sent, listed []byte, fam Family, exprs []expr.Any) (_, _ []byte, ok bool) {
	listed = pad4(listed)
	s0, l0 := len(sent), len(listed)
	for _, x := range exprs {
		switch x.(type) {
		case AnonMap, BoundChain, EnsuredLookup, DroppingDynset, boundJump:
			return sent[:s0], listed[:l0], false
		}
		start := len(sent)
		var err error
		if sent, err = AppendExpr(sent, fam, x); err != nil {
			return sent[:s0], listed[:l0], false
		}
		if _, ok := x.(*expr.Counter); ok {
			continue
		}
		at := len(listed)
		listed = append(listed, sent[start:]...)
		clearNested(listed[at:])
		listed = listedFormOf(listed, at, x)
	}
	return sent, listed, true
}

// AppendListed appends the rule's expression elements as the kernel
// listed them, leaving out its counters (see the function AppendListed).
func (r *Rule) AppendListed(dst []byte) ([]byte, bool) {
	dst = pad4(dst)
	ok := eachAttr(r.rawExprs, func(t uint16, elem []byte) bool {
		if t != unix.NFTA_LIST_ELEM {
			return false
		}
		if isCounter(elem) {
			return true
		}
		l := (len(elem) + 4 + 3) &^ 3
		var h [4]byte
		binary.NativeEndian.PutUint16(h[0:2], uint16(len(elem)+4))
		binary.NativeEndian.PutUint16(h[2:4], unix.NFTA_LIST_ELEM)
		dst = append(dst, h[:]...)
		dst = append(dst, elem...)
		for n := len(elem) + 4; n < l; n++ {
			dst = append(dst, 0)
		}
		return true
	})
	return dst, ok
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// CounterValues returns the values of the rule's first counter
// expression, without decoding the others; nil if it has none. A rule
// without one that jumps to a chain bound to it has the counter of that
// chain's last rule (read from the kernel: see boundcounter.go).
func (r *Rule) CounterValues() *Counters {
	if name, ok := r.boundChainOf(); ok {
		return r.conn.boundCounter(r.Family, name)
	}
	if r.decoded {
		return r.Counter
	}
	var out *Counters
	eachAttr(r.rawExprs, func(t uint16, elem []byte) bool {
		if t != unix.NFTA_LIST_ELEM || !isCounter(elem) {
			return true
		}
		eachAttr(elem, func(t uint16, v []byte) bool {
			if t == unix.NFTA_EXPR_DATA {
				// decoded here: an expr.Counter would be one more
				// allocation per rule listed
				if c, ok := decodeCounter(v); ok {
					out = &c
				}
			}
			return true
		})
		return false
	})
	return out
}

// isCounter says whether an expression element is a counter: its name
// comes first, as the kernel lists it (or it is looked for).
func isCounter(elem []byte) bool {
	const head = "\x0c\x00\x01\x00counter\x00"
	if len(elem) >= len(head) && string(elem[:len(head)]) == head {
		return true
	}
	if len(elem) >= 4 && binary.NativeEndian.Uint16(elem[2:4])&nlaTypeMask == unix.NFTA_EXPR_NAME {
		return false // named first, and not a counter
	}
	return elemName(elem) == "counter"
}

// elemName is the NFTA_EXPR_NAME of an expression element, "" if none.
func elemName(elem []byte) string {
	var name []byte
	eachAttr(elem, func(t uint16, v []byte) bool {
		if t == unix.NFTA_EXPR_NAME {
			name = trimNul(v)
			return false
		}
		return true
	})
	return exprName(name)
}

// clearNested clears NLA_F_NESTED in b's attributes, descending into the
// attributes that had it: the kernel lists nests without the flag.
func clearNested(b []byte) {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		if l < 4 || l > len(b) {
			return
		}
		t := binary.NativeEndian.Uint16(b[2:4])
		if t&unix.NLA_F_NESTED != 0 {
			binary.NativeEndian.PutUint16(b[2:4], t&^unix.NLA_F_NESTED)
			clearNested(b[4:l])
		}
		l = min((l+3)&^3, len(b))
		b = b[l:]
	}
}

// listedAttr is one attribute of an expression's data.
type listedAttr struct {
	t uint16
	v []byte
}

// listedForm rewrites the expression element that starts at dst[start:]
// (flags already cleared) into the kernel's listing of it.
func listedForm(dst []byte, start int) []byte {
	elem := dst[start+4:]
	name := elemName(elem)
	switch name {
	case "bitwise", "ct", "fib", "log", "nat", "payload", "reject", "lookup", "dynset", "masq", "redir":
	default:
		return dst
	}
	var data []byte
	eachAttr(elem, func(t uint16, v []byte) bool {
		if t == unix.NFTA_EXPR_DATA {
			data = v
		}
		return true
	})
	var room [12]listedAttr // on the stack: this runs for most rules a restore adds
	attrs := room[:0]
	if !eachAttr(data, func(t uint16, v []byte) bool {
		attrs = append(attrs, listedAttr{t, v})
		return true
	}) {
		return dst
	}
	attrs = fixListed(name, attrs)
	// re-encode: the element is rebuilt after the end of dst, then moved
	e := encoder{buf: dst}
	d := e.exprStart(name)
	for _, a := range attrs {
		e.bytes(a.t, a.v)
	}
	e.exprEnd(d)
	rebuilt := e.buf[len(dst):]
	clearNested(rebuilt)
	return append(dst[:start], rebuilt...)
}

// fixListed puts the attributes of the expression name into the order
// and form the kernel lists them in. (Called directly, not through a
// function value, so that the attributes can stay on listedForm's stack.)
func fixListed(name string, attrs []listedAttr) []listedAttr {
	switch name {
	case "bitwise":
		return listedBitwise(attrs)
	case "ct":
		return listedCt(attrs)
	case "fib":
		return sortedAttrs(attrs)
	case "log":
		return listedLog(attrs)
	case "nat":
		return listedNat(attrs)
	case "payload":
		return listedPayload(attrs)
	case "reject":
		return listedReject(attrs)
	case "lookup":
		return listedLookup(attrs)
	case "dynset":
		return listedDynset(attrs)
	case "masq":
		return withMax(attrs, unix.NFTA_MASQ_REG_PROTO_MIN, unix.NFTA_MASQ_REG_PROTO_MAX)
	case "redir":
		return withMax(attrs, unix.NFTA_REDIR_REG_PROTO_MIN, unix.NFTA_REDIR_REG_PROTO_MAX)
	}
	return attrs
}

func be32Bytes(v uint32) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, v)
	return b
}

func hasAttr(attrs []listedAttr, t uint16) int {
	for i, a := range attrs {
		if a.t == t {
			return i
		}
	}
	return -1
}

// listedBitwise: the kernel lists the operation (boolean: 0) after the
// length.
func listedBitwise(attrs []listedAttr) []listedAttr {
	const nftaBitwiseOp = 6
	if hasAttr(attrs, nftaBitwiseOp) >= 0 {
		return attrs
	}
	i := hasAttr(attrs, unix.NFTA_BITWISE_LEN)
	if i < 0 {
		return attrs
	}
	// insert in place (attrs has room: listedForm)
	attrs = append(attrs, listedAttr{})
	copy(attrs[i+2:], attrs[i+1:])
	attrs[i+1] = listedAttr{nftaBitwiseOp, zero32[:]}
	return attrs
}

var zero32 [4]byte

// listedCt: register, key, then the rest.
func listedCt(attrs []listedAttr) []listedAttr {
	var out []listedAttr
	for _, t := range []uint16{unix.NFTA_CT_DREG, unix.NFTA_CT_SREG, unix.NFTA_CT_KEY} {
		if i := hasAttr(attrs, t); i >= 0 {
			out = append(out, attrs[i])
		}
	}
	for _, a := range attrs {
		if a.t != unix.NFTA_CT_DREG && a.t != unix.NFTA_CT_SREG && a.t != unix.NFTA_CT_KEY {
			out = append(out, a)
		}
	}
	return out
}

func sortedAttrs(attrs []listedAttr) []listedAttr {
	out := append([]listedAttr{}, attrs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].t < out[j-1].t; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// listedLog: the prefix first.
func listedLog(attrs []listedAttr) []listedAttr {
	i := hasAttr(attrs, unix.NFTA_LOG_PREFIX)
	if i <= 0 {
		return attrs
	}
	out := []listedAttr{attrs[i]}
	out = append(out, attrs[:i]...)
	return append(out, attrs[i+1:]...)
}

// listedNat: the kernel adds the "address/port given" flags for the
// registers it was sent, and lists the flags when any are set.
func listedNat(attrs []listedAttr) []listedAttr {
	var flags uint32
	fi := hasAttr(attrs, unix.NFTA_NAT_FLAGS)
	if fi >= 0 {
		flags = be32(attrs[fi].v)
	}
	if hasAttr(attrs, unix.NFTA_NAT_REG_ADDR_MIN) >= 0 {
		flags |= unix.NF_NAT_RANGE_MAP_IPS
	}
	if hasAttr(attrs, unix.NFTA_NAT_REG_PROTO_MIN) >= 0 {
		flags |= unix.NF_NAT_RANGE_PROTO_SPECIFIED
	}
	out := withMax(attrs, unix.NFTA_NAT_REG_ADDR_MIN, unix.NFTA_NAT_REG_ADDR_MAX)
	out = withMax(out, unix.NFTA_NAT_REG_PROTO_MIN, unix.NFTA_NAT_REG_PROTO_MAX)
	fi = hasAttr(out, unix.NFTA_NAT_FLAGS)
	switch {
	case fi >= 0:
		out[fi].v = be32Bytes(flags)
	case flags != 0:
		out = append(out, listedAttr{unix.NFTA_NAT_FLAGS, be32Bytes(flags)})
	}
	return out
}

// listedPayload: a payload write lists its checksum type, offset and
// flags, zero when not given.
func listedPayload(attrs []listedAttr) []listedAttr {
	if hasAttr(attrs, unix.NFTA_PAYLOAD_SREG) < 0 {
		return attrs
	}
	var out []listedAttr
	for _, t := range []uint16{unix.NFTA_PAYLOAD_SREG, unix.NFTA_PAYLOAD_BASE, unix.NFTA_PAYLOAD_OFFSET, unix.NFTA_PAYLOAD_LEN} {
		if i := hasAttr(attrs, t); i >= 0 {
			out = append(out, attrs[i])
		}
	}
	for _, t := range []uint16{unix.NFTA_PAYLOAD_CSUM_TYPE, unix.NFTA_PAYLOAD_CSUM_OFFSET, unix.NFTA_PAYLOAD_CSUM_FLAGS} {
		if i := hasAttr(attrs, t); i >= 0 {
			out = append(out, attrs[i])
		} else {
			out = append(out, listedAttr{t, be32Bytes(0)})
		}
	}
	return out
}

// listedReject: a TCP reset lists no ICMP code.
func listedReject(attrs []listedAttr) []listedAttr {
	i := hasAttr(attrs, unix.NFTA_REJECT_TYPE)
	if i < 0 || be32(attrs[i].v) != unix.NFT_REJECT_TCP_RST {
		return attrs
	}
	var out []listedAttr
	for _, a := range attrs {
		if a.t != unix.NFTA_REJECT_ICMP_CODE {
			out = append(out, a)
		}
	}
	return out
}

// listedLookup: set, source and destination registers, flags (always);
// the set ID is not listed.
func listedLookup(attrs []listedAttr) []listedAttr {
	var out []listedAttr
	for _, t := range []uint16{unix.NFTA_LOOKUP_SET, unix.NFTA_LOOKUP_SREG, unix.NFTA_LOOKUP_DREG} {
		if i := hasAttr(attrs, t); i >= 0 {
			out = append(out, attrs[i])
		}
	}
	if i := hasAttr(attrs, unix.NFTA_LOOKUP_FLAGS); i >= 0 {
		out = append(out, attrs[i])
	} else {
		out = append(out, listedAttr{unix.NFTA_LOOKUP_FLAGS, be32Bytes(0)})
	}
	return out
}

// ListedRule returns the Rule the kernel would list for a rule of chain
// added with exprs and userdata, as far as AppendListed foretells the
// listing (counters as given): for reading rules back without a kernel,
// in tests.
func ListedRule(fam Family, chain string, exprs []expr.Any, userdata []byte) (Rule, error) {
	var raw []byte
	for _, x := range exprs {
		start := len(raw)
		var err error
		if _, ok := x.(*expr.Counter); ok {
			raw, err = AppendExpr(raw, fam, x)
			clearNested(raw[start:])
		} else {
			var ok bool
			if raw, ok = AppendListed(raw, fam, []expr.Any{x}); !ok {
				err = fmt.Errorf("listing of %T not known", x)
			}
		}
		if err != nil {
			return Rule{}, err
		}
	}
	r := Rule{Family: fam, Chain: chain, UserData: userdata, rawExprs: raw}
	return r.Clone(), nil
}

// withMax: a range given by its minimum register alone is listed with
// the same register as its maximum, right after it.
func withMax(attrs []listedAttr, minT, maxT uint16) []listedAttr {
	i := hasAttr(attrs, minT)
	if i < 0 || hasAttr(attrs, maxT) >= 0 {
		return attrs
	}
	out := append([]listedAttr{}, attrs[:i+1]...)
	out = append(out, listedAttr{maxT, attrs[i].v})
	return append(out, attrs[i+1:]...)
}

// listedDynset: key and data registers, operation, set name, timeout
// (always), the rest, flags; the set ID is not listed.
func listedDynset(attrs []listedAttr) []listedAttr {
	var out []listedAttr
	for _, t := range []uint16{unix.NFTA_DYNSET_SREG_KEY, unix.NFTA_DYNSET_SREG_DATA, unix.NFTA_DYNSET_OP, unix.NFTA_DYNSET_SET_NAME} {
		if i := hasAttr(attrs, t); i >= 0 {
			out = append(out, attrs[i])
		}
	}
	if i := hasAttr(attrs, unix.NFTA_DYNSET_TIMEOUT); i >= 0 {
		out = append(out, attrs[i])
	} else {
		out = append(out, listedAttr{unix.NFTA_DYNSET_TIMEOUT, make([]byte, 8)})
	}
	for _, a := range attrs {
		switch a.t {
		case unix.NFTA_DYNSET_SREG_KEY, unix.NFTA_DYNSET_SREG_DATA, unix.NFTA_DYNSET_OP, unix.NFTA_DYNSET_SET_NAME,
			unix.NFTA_DYNSET_TIMEOUT, unix.NFTA_DYNSET_SET_ID, unix.NFTA_DYNSET_FLAGS:
		default:
			out = append(out, a)
		}
	}
	if i := hasAttr(attrs, unix.NFTA_DYNSET_FLAGS); i >= 0 {
		out = append(out, attrs[i])
	}
	return out
}
