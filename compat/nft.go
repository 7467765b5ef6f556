package compat

import (
	"encoding/binary"
	"errors"

	"github.com/google/nftables/expr"
)

// ErrNoNative says an extension instance has no native translation.
var ErrNoNative = errors.New("no native nftables translation")

// PortExprs loads the 16-bit port at transport offset off and compares
// it with r: "cmp eq" for a single port, "cmp lte" for a range from 0,
// "range" otherwise; negation flips the operator. Any port: nothing;
// not any port (! 0:65535, which no packet meets, as in xt_tcp/xt_udp;
// iptables-nft 1.8.9 leaves it out: docs/extensions.md): "range neq 0
// 65535".
func PortExprs(off uint32, r PortRange) []expr.Any {
	if r.IsAny() {
		return nil
	}
	load := &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: off, Len: 2}
	be := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
	eq, neq := expr.CmpOpEq, expr.CmpOpNeq
	if r.Invert {
		eq, neq = neq, eq
	}
	_ = neq
	switch {
	case r.Min == r.Max:
		return []expr.Any{load, &expr.Cmp{Op: eq, Register: 1, Data: be(r.Min)}}
	case r.Min == 0 && !r.Invert:
		return []expr.Any{load, &expr.Cmp{Op: expr.CmpOpLte, Register: 1, Data: be(r.Max)}}
	case r.Max == 0xffff && !r.Invert:
		return []expr.Any{load, &expr.Cmp{Op: expr.CmpOpGte, Register: 1, Data: be(r.Min)}}
	}
	return []expr.Any{load, &expr.Range{Op: eq, Register: 1, FromData: be(r.Min), ToData: be(r.Max)}}
}

// NftContext carries what an extension needs to build its nftables
// expressions.
type NftContext struct {
	Family Family
	Rule   *Rule
	// Table is the iptables table the rule lives in.
	Table string
	// Chain is the iptables chain the rule lives in ("" when unknown):
	// matches the kernel allows only in some hooks use it (see
	// InHooks).
	Chain string
}

// NftExpresser is implemented by matches and targets that have a native
// nftables translation. Data goes through register 1, verdicts through
// register 0, as iptables-nft does.
type NftExpresser interface {
	NftExprs(ctx *NftContext) ([]expr.Any, error)
}

// KernelReg returns the number the kernel lists a 32-bit register
// (NFT_REG32_00 = 8 and up) under: one that starts a 16-byte register is
// dumped as NFT_REG_1..4. Rules are compared with what the kernel lists,
// so expressions use that number.
func KernelReg(r32 uint32) uint32 {
	if r32 >= 8 && (r32-8)%4 == 0 {
		return (r32-8)/4 + 1
	}
	return r32
}

// ValueMap maps the value in the lookup's source register through a
// fixed table into its destination register: a lookup in a constant
// anonymous map that is created with the rule and goes away with it
// (kernel.AnonMap). Keys and Values are the table's entries, KeyLen and
// DataLen their sizes in bytes. With DataLen 0 it is an anonymous set
// (no Values): the lookup tests that the register holds one of Keys.
type ValueMap struct {
	*expr.Lookup
	KeyLen, DataLen uint32
	Keys, Values    [][]byte
}

// AnonMapDef returns the lookup and the map.
func (m *ValueMap) AnonMapDef() (*expr.Lookup, uint32, uint32, [][]byte, [][]byte) {
	return m.Lookup, m.KeyLen, m.DataLen, m.Keys, m.Values
}

// byteMap is the ValueMap of f over all 256 byte values, from register 1
// into register 1.
func byteMap(f func(b int) int) *ValueMap {
	m := &ValueMap{Lookup: &expr.Lookup{SourceRegister: 1, DestRegister: 1, IsDestRegSet: true}, KeyLen: 1, DataLen: 1}
	for b := 0; b < 256; b++ {
		m.Keys = append(m.Keys, []byte{byte(b)})
		m.Values = append(m.Values, []byte{byte(f(b))})
	}
	return m
}

// BoundJump jumps to a chain that is created with the rule and goes away
// with it, holding Rules (kernel.BoundChain): one iptables rule whose
// effect needs more than one nftables rule stays one kernel rule.
type BoundJump struct {
	*expr.Verdict
	Rules [][]expr.Any
}

// BoundRules returns the rules of the bound chain.
func (j *BoundJump) BoundRules() [][]expr.Any { return j.Rules }
