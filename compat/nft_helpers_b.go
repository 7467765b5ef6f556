package compat

import (
	"encoding/binary"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// Expression builders shared by the NftExprs methods of the matches of
// match_*.go (group b). Data goes through register 1. Values the kernel
// keeps in host order (meta, fib, numgen results) are compared with
// "cmp eq/neq" only, or on their low byte: nftables' ordered compares are
// memcmp and need big-endian data, and the byteorder expression that would
// convert is one the kernel reader cannot decode.

// payloadLoad loads l bytes at off of base into register 1.
func payloadLoad(base expr.PayloadBase, off, l uint32) *expr.Payload {
	return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: base, Offset: off, Len: l}
}

func nhLoad(off, l uint32) *expr.Payload { return payloadLoad(expr.PayloadBaseNetworkHeader, off, l) }
func thLoad(off, l uint32) *expr.Payload { return payloadLoad(expr.PayloadBaseTransportHeader, off, l) }

func metaLoad(key expr.MetaKey) *expr.Meta { return &expr.Meta{Key: key, Register: 1} }

// cmpReg compares register 1 with data: eq, or neq when inv.
func cmpReg(inv bool, data []byte) *expr.Cmp {
	op := expr.CmpOpEq
	if inv {
		op = expr.CmpOpNeq
	}
	return &expr.Cmp{Op: op, Register: 1, Data: data}
}

// rangeReg tests register 1 against the big-endian interval [lo, hi]:
// one "cmp" when lo == hi, else "range"; inv negates. A reversed
// interval never matches ("range eq") or always matches ("range neq"),
// as the xtables range matches behave.
func rangeReg(inv bool, lo, hi []byte) expr.Any {
	if string(lo) == string(hi) {
		return cmpReg(inv, lo)
	}
	op := expr.CmpOpEq
	if inv {
		op = expr.CmpOpNeq
	}
	return &expr.Range{Op: op, Register: 1, FromData: lo, ToData: hi}
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// host32 is a u32 as the kernel stores it in a register (x86_64: little
// endian).
func host32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// xtBlob builds an xtables info structure in the kernel's layout for
// x86_64: host byte order, natural alignment, sent padded to 8 bytes.
type xtBlob struct{ b []byte }

func (x *xtBlob) align(n int) {
	for len(x.b)%n != 0 {
		x.b = append(x.b, 0)
	}
}

func (x *xtBlob) u8(v uint8) { x.b = append(x.b, v) }

func (x *xtBlob) u16(v uint16) {
	x.align(2)
	x.b = binary.NativeEndian.AppendUint16(x.b, v)
}

func (x *xtBlob) u32(v uint32) {
	x.align(4)
	x.b = binary.NativeEndian.AppendUint32(x.b, v)
}

func (x *xtBlob) u64(v uint64) {
	x.align(8)
	x.b = binary.NativeEndian.AppendUint64(x.b, v)
}

// raw appends v in a fixed field of n bytes (cut or zero-filled).
func (x *xtBlob) raw(v []byte, n int) {
	f := make([]byte, n)
	copy(f, v)
	x.b = append(x.b, f...)
}

// compatMatch is the nft_compat "match" expression carrying the xtables
// match name at revision rev with the info blob of x.
func compatMatch(name string, rev uint32, x *xtBlob) expr.Any {
	x.align(8)
	info := xt.Unknown(x.b)
	return &expr.Match{Name: name, Rev: rev, Info: &info}
}
