package kernel

import (
	"encoding/binary"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// decodeFast decodes the expressions rules are mostly made of without the
// library's generic decoder, giving exactly what expr.Unmarshal gives
// (attributes it ignores are ignored here too; see
// TestFastDecodeMatchesLibrary). It reports false for anything else.
func decodeFast(name string, data []byte) (expr.Any, bool) {
	switch name {
	case "payload":
		p := &expr.Payload{}
		ok := eachAttr(data, func(t uint16, v []byte) bool {
			switch t {
			case unix.NFTA_PAYLOAD_DREG:
				p.DestRegister = be32(v)
			case unix.NFTA_PAYLOAD_BASE:
				p.Base = expr.PayloadBase(be32(v))
			case unix.NFTA_PAYLOAD_OFFSET:
				p.Offset = be32(v)
			case unix.NFTA_PAYLOAD_LEN:
				p.Len = be32(v)
			case unix.NFTA_PAYLOAD_SREG, unix.NFTA_PAYLOAD_CSUM_TYPE, unix.NFTA_PAYLOAD_CSUM_OFFSET, unix.NFTA_PAYLOAD_CSUM_FLAGS:
				return false // writes: leave them to the library
			}
			return true
		})
		return p, ok
	case "cmp":
		c := &expr.Cmp{}
		ok := eachAttr(data, func(t uint16, v []byte) bool {
			switch t {
			case unix.NFTA_CMP_SREG:
				c.Register = be32(v)
			case unix.NFTA_CMP_OP:
				c.Op = expr.CmpOp(be32(v))
			case unix.NFTA_CMP_DATA:
				c.Data = firstValue(v)
			}
			return true
		})
		return c, ok
	case "meta":
		m := &expr.Meta{}
		ok := eachAttr(data, func(t uint16, v []byte) bool {
			switch t {
			case unix.NFTA_META_SREG:
				m.Register, m.SourceRegister = be32(v), true
			case unix.NFTA_META_DREG:
				m.Register = be32(v)
			case unix.NFTA_META_KEY:
				m.Key = expr.MetaKey(be32(v))
			}
			return true
		})
		return m, ok
	case "counter":
		c, ok := decodeCounter(data)
		return &expr.Counter{Bytes: c.Bytes, Packets: c.Packets}, ok
	case "range":
		r := &expr.Range{}
		ok := eachAttr(data, func(t uint16, v []byte) bool {
			switch t {
			case unix.NFTA_RANGE_OP:
				r.Op = expr.CmpOp(be32(v))
			case unix.NFTA_RANGE_SREG:
				r.Register = be32(v)
			case unix.NFTA_RANGE_FROM_DATA:
				r.FromData = firstValue(v)
			case unix.NFTA_RANGE_TO_DATA:
				r.ToData = firstValue(v)
			}
			return true
		})
		return r, ok
	case "bitwise":
		b := &expr.Bitwise{}
		ok := eachAttr(data, func(t uint16, v []byte) bool {
			switch t {
			case unix.NFTA_BITWISE_SREG:
				b.SourceRegister = be32(v)
			case unix.NFTA_BITWISE_DREG:
				b.DestRegister = be32(v)
			case unix.NFTA_BITWISE_LEN:
				b.Len = be32(v)
			case unix.NFTA_BITWISE_MASK:
				b.Mask = lastValue(v)
			case unix.NFTA_BITWISE_XOR:
				b.Xor = lastValue(v)
			}
			return true
		})
		return b, ok
	case "immediate":
		// only verdicts: data immediates are left to the library
		vd := &expr.Verdict{}
		isVerdict := false
		ok := eachAttr(data, func(t uint16, v []byte) bool {
			switch t {
			case unix.NFTA_IMMEDIATE_DREG:
				if be32(v) != unix.NFT_REG_VERDICT {
					return false
				}
			case unix.NFTA_IMMEDIATE_DATA:
				return eachAttr(v, func(t uint16, v []byte) bool {
					if t != unix.NFTA_DATA_VERDICT {
						return false
					}
					isVerdict = true
					return eachAttr(v, func(t uint16, v []byte) bool {
						switch t {
						case unix.NFTA_VERDICT_CODE:
							vd.Kind = expr.VerdictKind(int32(be32(v)))
						case unix.NFTA_VERDICT_CHAIN:
							vd.Chain = cString(v)
						}
						return true
					})
				})
			}
			return true
		})
		return vd, ok && isVerdict
	}
	return nil, false
}

// eachAttr calls fn for every attribute in b (type without flag bits);
// false from fn, or a malformed attribute, ends it with false.
func eachAttr(b []byte, fn func(t uint16, v []byte) bool) bool {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		if l < 4 || l > len(b) {
			return false
		}
		if !fn(binary.NativeEndian.Uint16(b[2:4])&nlaTypeMask, b[4:l]) {
			return false
		}
		l = (l + 3) &^ 3
		if l > len(b) {
			l = len(b)
		}
		b = b[l:]
	}
	return len(b) == 0
}

// firstValue is the NFTA_DATA_VALUE of a data attribute when it comes
// first, as the library reads cmp and range data.
func firstValue(v []byte) []byte {
	var out []byte
	first := true
	eachAttr(v, func(t uint16, d []byte) bool {
		if first && t == unix.NFTA_DATA_VALUE {
			out = d
		}
		first = false
		return true
	})
	return out
}

// lastValue is the last NFTA_DATA_VALUE, as the library reads bitwise data.
func lastValue(v []byte) []byte {
	var out []byte
	eachAttr(v, func(t uint16, d []byte) bool {
		if t == unix.NFTA_DATA_VALUE {
			out = d
		}
		return true
	})
	return out
}

func be32(v []byte) uint32 {
	if len(v) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}

func be64(v []byte) uint64 {
	if len(v) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func cString(v []byte) string {
	for i, c := range v {
		if c == 0 {
			return string(v[:i])
		}
	}
	return string(v)
}

// nlaTypeMask strips NLA_F_NESTED and NLA_F_NET_BYTEORDER from a type.
const nlaTypeMask = ^uint16(unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)

// decodeCounter reads the attributes of a counter expression.
func decodeCounter(data []byte) (Counters, bool) {
	var c Counters
	ok := eachAttr(data, func(t uint16, v []byte) bool {
		switch t {
		case unix.NFTA_COUNTER_BYTES:
			c.Bytes = be64(v)
		case unix.NFTA_COUNTER_PACKETS:
			c.Packets = be64(v)
		}
		return true
	})
	return c, ok
}
