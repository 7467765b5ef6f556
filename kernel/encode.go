package kernel

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"golang.org/x/sys/unix"
)

// encoder appends netlink messages of the nftables subsystem to one buffer,
// so that a batch of 100k rules is one allocation and one send.
type encoder struct {
	buf []byte
	err error
}

// extend lengthens e.buf by n bytes and returns them, as they were
// (callers write all of them). e.buf is resliced in place: assigning an
// append's result to it would store its pointer on every attribute, and
// while the garbage collector marks (most of a large restore, which
// collects often) each such store is a write barrier, a tenth of the
// restore's CPU.
func (e *encoder) extend(n int) []byte {
	l := len(e.buf)
	if cap(e.buf)-l < n {
		e.buf = slices.Grow(e.buf, n)
	}
	e.buf = e.buf[:l+n]
	return e.buf[l:]
}

// padLen is how many zero bytes follow n bytes of an attribute added at
// offset off, so that the buffer ends at a multiple of 4 again.
func padLen(off, n int) int { return (4 - (off+n)%4) % 4 }

func nftType(msg int) uint16 { return uint16(unix.NFNL_SUBSYS_NFTABLES<<8 | msg) }

// begin starts a message and returns its offset; the sequence number is
// filled in at commit time.
func (e *encoder) begin(typ uint16, flags uint16, fam Family, resID uint16) int {
	off := len(e.buf)
	h := e.extend(unix.NLMSG_HDRLEN + 4)
	clear(h)
	binary.NativeEndian.PutUint16(h[4:6], typ)
	binary.NativeEndian.PutUint16(h[6:8], flags|unix.NLM_F_REQUEST)
	h[16] = byte(fam)
	h[17] = unix.NFNETLINK_V0
	binary.BigEndian.PutUint16(h[18:20], resID)
	return off
}

// end closes the message begun at off.
func (e *encoder) end(off int) {
	n := len(e.buf) - off
	binary.NativeEndian.PutUint32(e.buf[off:off+4], uint32(n))
	e.pad()
}

func (e *encoder) pad() {
	clear(e.extend(padLen(len(e.buf), 0)))
}

func (e *encoder) bytes(typ uint16, b []byte) {
	if len(b)+4 > math.MaxUint16 {
		e.fail(fmt.Errorf("netlink attribute %d too large (%d bytes)", typ, len(b)))
		return
	}
	p := padLen(len(e.buf), 4+len(b))
	d := e.extend(4 + len(b) + p)
	binary.NativeEndian.PutUint16(d[0:2], uint16(len(b)+4))
	binary.NativeEndian.PutUint16(d[2:4], typ)
	copy(d[4:], b)
	clear(d[4+len(b):])
}

func (e *encoder) str(typ uint16, s string) {
	if len(s)+5 > math.MaxUint16 {
		e.fail(fmt.Errorf("netlink attribute %d too large (%d bytes)", typ, len(s)+1))
		return
	}
	p := padLen(len(e.buf), 5+len(s))
	d := e.extend(5 + len(s) + p)
	binary.NativeEndian.PutUint16(d[0:2], uint16(len(s)+5))
	binary.NativeEndian.PutUint16(d[2:4], typ)
	copy(d[4:], s)
	clear(d[4+len(s):])
}

func (e *encoder) u32(typ uint16, v uint32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	e.bytes(typ, b[:])
}

func (e *encoder) u64(typ uint16, v uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	e.bytes(typ, b[:])
}

// nest opens a nested attribute and returns its offset for endNest.
func (e *encoder) nest(typ uint16) int {
	off := len(e.buf)
	h := e.extend(4)
	binary.NativeEndian.PutUint16(h[0:2], 0)
	binary.NativeEndian.PutUint16(h[2:4], typ|unix.NLA_F_NESTED)
	return off
}

func (e *encoder) endNest(off int) {
	n := len(e.buf) - off
	if n > math.MaxUint16 {
		e.fail(fmt.Errorf("nested netlink attribute too large (%d bytes)", n))
		n = 0
	}
	binary.NativeEndian.PutUint16(e.buf[off:off+2], uint16(n))
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}
