package kernel

import (
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// AppendExpr appends the netlink encoding of one rule expression (as a
// list element) to dst: the fast encoder for the common kinds, the
// library otherwise. Comparing two encodings compares expressions.
func AppendExpr(dst []byte, fam Family, x expr.Any) ([]byte, error) {
	e := encoder{buf: dst}
	if e.encodeExpr(x) {
		return e.buf, e.err
	}
	data, err := expr.Marshal(byte(fam), x)
	if err != nil {
		return dst, err
	}
	e.bytes(unix.NFTA_LIST_ELEM|unix.NLA_F_NESTED, data)
	return e.buf, e.err
}
