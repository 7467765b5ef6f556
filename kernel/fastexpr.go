package kernel

import (
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// encodeExpr writes the expressions rules are mostly made of straight
// into the batch buffer, byte for byte what expr.Marshal produces (see
// TestFastExprMatchesLibrary), without its intermediate allocations.
// It reports false for anything else; the caller then uses expr.Marshal.
//
// Two expressions are intentionally not what the library produces. A
// counter leaves out a zero value (see below). And a masq with ToPorts:
// the library then sends the port registers without NFTA_MASQ_FLAGS, and the kernel, missing NF_NAT_RANGE_PROTO_SPECIFIED,
// ignores the ports; we send the flags (PROTO_SPECIFIED plus random,
// random-fully, persistent) as nft does. The kernel lists both back and
// the library decodes them into the same Masq, so read-back comparisons
// (which re-marshal both sides with the library, dropping the flags of a
// masq with ports) still see equal expressions.
func (e *encoder) encodeExpr(x expr.Any) bool {
	switch v := x.(type) {
	case FlaggedNAT:
		e.nat(v.NATExpr(), v.ExtraNATFlags())
	case TCPOptionReset:
		// neither register: the kernel's "reset tcp option" (strip ops),
		// which takes no offset, length or flags either
		d := e.exprStart("exthdr")
		e.bytes(unix.NFTA_EXTHDR_TYPE, []byte{v.ResetKind()})
		e.u32(unix.NFTA_EXTHDR_OP, unix.NFT_EXTHDR_OP_TCPOPT)
		e.exprEnd(d)
	case *expr.Masq:
		e.masq(v)
	case *expr.Payload:
		if v.OperationType != expr.PayloadLoad || v.CsumType != 0 {
			return false
		}
		d := e.exprStart("payload")
		e.u32(unix.NFTA_PAYLOAD_DREG, v.DestRegister)
		e.u32(unix.NFTA_PAYLOAD_BASE, uint32(v.Base))
		e.u32(unix.NFTA_PAYLOAD_OFFSET, v.Offset)
		e.u32(unix.NFTA_PAYLOAD_LEN, v.Len)
		e.exprEnd(d)
	case *expr.Cmp:
		d := e.exprStart("cmp")
		e.u32(unix.NFTA_CMP_SREG, v.Register)
		e.u32(unix.NFTA_CMP_OP, uint32(v.Op))
		e.dataValue(unix.NFTA_CMP_DATA, v.Data)
		e.exprEnd(d)
	case *expr.Meta:
		d := e.exprStart("meta")
		e.u32(unix.NFTA_META_KEY, uint32(v.Key))
		if v.SourceRegister {
			e.u32(unix.NFTA_META_SREG, v.Register)
		} else {
			e.u32(unix.NFTA_META_DREG, v.Register)
		}
		e.exprEnd(d)
	case *expr.Counter:
		// a value of zero is left out (the kernel starts a counter at
		// zero and lists both values either way): 24 bytes less per rule
		// to copy into the kernel and to parse there, almost every rule
		// of a restore having a zero counter
		d := e.exprStart("counter")
		if v.Bytes != 0 {
			e.u64(unix.NFTA_COUNTER_BYTES, v.Bytes)
		}
		if v.Packets != 0 {
			e.u64(unix.NFTA_COUNTER_PACKETS, v.Packets)
		}
		e.exprEnd(d)
	case *expr.Verdict:
		d := e.exprStart("immediate")
		e.u32(unix.NFTA_IMMEDIATE_DREG, unix.NFT_REG_VERDICT)
		imm := e.nest(unix.NFTA_IMMEDIATE_DATA)
		vd := e.nest(unix.NFTA_DATA_VERDICT)
		e.u32(unix.NFTA_VERDICT_CODE, uint32(v.Kind))
		if v.Chain != "" {
			e.str(unix.NFTA_VERDICT_CHAIN, v.Chain)
		}
		e.endNest(vd)
		e.endNest(imm)
		e.exprEnd(d)
	case *expr.Range:
		d := e.exprStart("range")
		if v.Register > 0 {
			e.u32(unix.NFTA_RANGE_SREG, v.Register)
		}
		e.u32(unix.NFTA_RANGE_OP, uint32(v.Op))
		if len(v.FromData) > 0 {
			e.dataValue(unix.NFTA_RANGE_FROM_DATA, v.FromData)
		}
		if len(v.ToData) > 0 {
			e.dataValue(unix.NFTA_RANGE_TO_DATA, v.ToData)
		}
		e.exprEnd(d)
	case *expr.Numgen:
		if v.Type != unix.NFT_NG_INCREMENTAL && v.Type != unix.NFT_NG_RANDOM {
			return false // the library's error
		}
		d := e.exprStart("numgen")
		e.u32(unix.NFTA_NG_DREG, v.Register)
		e.u32(unix.NFTA_NG_MODULUS, v.Modulus)
		e.u32(unix.NFTA_NG_TYPE, v.Type)
		e.u32(unix.NFTA_NG_OFFSET, v.Offset)
		e.exprEnd(d)
	case *expr.Bitwise:
		d := e.exprStart("bitwise")
		e.u32(unix.NFTA_BITWISE_SREG, v.SourceRegister)
		e.u32(unix.NFTA_BITWISE_DREG, v.DestRegister)
		e.u32(unix.NFTA_BITWISE_LEN, v.Len)
		e.dataValue(unix.NFTA_BITWISE_MASK, v.Mask)
		e.dataValue(unix.NFTA_BITWISE_XOR, v.Xor)
		e.exprEnd(d)
	default:
		return false
	}
	return true
}

// masq encodes a masq expression; see encodeExpr for how it departs from
// the library when ports are given.
func (e *encoder) masq(v *expr.Masq) {
	d := e.exprStart("masq")
	flags := natRangeFlags(v.Random, v.FullyRandom, v.Persistent, v.ToPorts)
	if flags != 0 {
		e.u32(unix.NFTA_MASQ_FLAGS, flags)
	}
	if v.ToPorts {
		e.u32(unix.NFTA_MASQ_REG_PROTO_MIN, v.RegProtoMin)
		if v.RegProtoMax != 0 {
			e.u32(unix.NFTA_MASQ_REG_PROTO_MAX, v.RegProtoMax)
		}
	}
	e.exprEnd(d)
}

// natRangeFlags are the NF_NAT_RANGE_* flags masq and nat share.
func natRangeFlags(random, fullyRandom, persistent, specified bool) uint32 {
	var flags uint32
	if random {
		flags |= unix.NF_NAT_RANGE_PROTO_RANDOM
	}
	if fullyRandom {
		flags |= unix.NF_NAT_RANGE_PROTO_RANDOM_FULLY
	}
	if persistent {
		flags |= unix.NF_NAT_RANGE_PERSISTENT
	}
	if specified {
		flags |= unix.NF_NAT_RANGE_PROTO_SPECIFIED
	}
	return flags
}

// FlaggedNAT is a nat expression with NF_NAT_RANGE_* flags the library
// cannot send (it encodes random, fully-random, persistent, netmap and
// proto-specified only), such as NF_NAT_RANGE_PROTO_OFFSET. It is sent as
// the library would send the nat expression, with the flags added; the
// kernel lists them back.
type FlaggedNAT interface {
	expr.Any
	NATExpr() *expr.NAT
	ExtraNATFlags() uint32
}

// TCPOptionReset is nft's `reset tcp option KIND`: an exthdr expression
// with neither source nor destination register, which overwrites the
// first option of the kind in the TCP header with NOPs (updating the
// checksum) and drops the packet when that option runs past the header.
// The library cannot send it (it always sends a destination register);
// the kernel lists it back as an exthdr of the kind with op tcpopt and
// nothing else, which the library decodes as an expr.Exthdr without
// registers, and the embedded Exthdr (Type, Op) marshals as that.
type TCPOptionReset interface {
	expr.Any
	ResetKind() uint8
}

// nat encodes v as the library does, with extra flags.
func (e *encoder) nat(v *expr.NAT, extra uint32) {
	d := e.exprStart("nat")
	e.u32(unix.NFTA_NAT_TYPE, uint32(v.Type))
	e.u32(unix.NFTA_NAT_FAMILY, v.Family)
	if v.RegAddrMin != 0 {
		e.u32(unix.NFTA_NAT_REG_ADDR_MIN, v.RegAddrMin)
		if v.RegAddrMax != 0 {
			e.u32(unix.NFTA_NAT_REG_ADDR_MAX, v.RegAddrMax)
		}
	}
	if v.RegProtoMin != 0 {
		e.u32(unix.NFTA_NAT_REG_PROTO_MIN, v.RegProtoMin)
		if v.RegProtoMax != 0 {
			e.u32(unix.NFTA_NAT_REG_PROTO_MAX, v.RegProtoMax)
		}
	}
	flags := extra | natRangeFlags(v.Random, v.FullyRandom, v.Persistent, v.Specified)
	if v.Prefix {
		flags |= unix.NF_NAT_RANGE_NETMAP
	}
	if flags != 0 {
		e.u32(unix.NFTA_NAT_FLAGS, flags)
	}
	e.exprEnd(d)
}

// exprStart opens NFTA_LIST_ELEM { NFTA_EXPR_NAME, NFTA_EXPR_DATA { and
// returns the offsets exprEnd closes.
func (e *encoder) exprStart(name string) [2]int {
	el := e.nest(unix.NFTA_LIST_ELEM)
	e.str(unix.NFTA_EXPR_NAME, name)
	return [2]int{el, e.nest(unix.NFTA_EXPR_DATA)}
}

func (e *encoder) exprEnd(d [2]int) {
	e.endNest(d[1])
	e.endNest(d[0])
}

// dataValue writes typ { NFTA_DATA_VALUE { b } }.
func (e *encoder) dataValue(typ uint16, b []byte) {
	n := e.nest(typ)
	e.bytes(unix.NFTA_DATA_VALUE, b)
	e.endNest(n)
}
