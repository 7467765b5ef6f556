package kernel

import (
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// elemCounter writes an element's counter expression with its initial
// values (NFTA_SET_ELEM_EXPR { counter { bytes, packets } }), as ipset's
// add with packets and bytes sets them.
func (e *encoder) elemCounter(c *expr.Counter) {
	x := e.nest(unix.NFTA_SET_ELEM_EXPR)
	e.str(unix.NFTA_EXPR_NAME, "counter")
	d := e.nest(unix.NFTA_EXPR_DATA)
	e.u64(unix.NFTA_COUNTER_BYTES, c.Bytes)
	e.u64(unix.NFTA_COUNTER_PACKETS, c.Packets)
	e.endNest(d)
	e.endNest(x)
}
