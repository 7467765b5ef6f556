package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Targeted set reads for ipset: one set's metadata, one element, or a
// streamed dump of a set's elements that never holds the whole set.

const (
	nftaSetElemKeyEnd      = 10 // NFTA_SET_ELEM_KEY_END
	nftaSetElemExpressions = 11 // NFTA_SET_ELEM_EXPRESSIONS
	nftaSetHandle          = 0x10
)

// Set returns the metadata of the named set of our table in fam; ok is
// false when it (or the table) does not exist.
func (c *Conn) Set(fam Family, name string) (info SetInfo, ok bool, err error) {
	msgs, err := c.request(unix.NFT_MSG_GETSET, false, fam, func(e *encoder) {
		e.str(unix.NFTA_SET_TABLE, TableName)
		e.str(unix.NFTA_SET_NAME, name)
	})
	if errors.Is(err, unix.ENOENT) {
		return SetInfo{}, false, nil
	}
	if err != nil {
		return SetInfo{}, false, fmt.Errorf("get set %s: %w", name, err)
	}
	if len(msgs) == 0 {
		return SetInfo{}, false, nil
	}
	// a GETSET of one set is answered with one message
	ad, err := decoder(msgs[0])
	if err != nil {
		return SetInfo{}, false, err
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_SET_NAME:
			info.Name = ad.String()
		case nftaSetHandle:
			info.Handle = ad.Uint64()
		case unix.NFTA_SET_USERDATA:
			info.Comment = udataString(ad.Bytes(), 7)
		}
	}
	if err := ad.Err(); err != nil {
		return SetInfo{}, false, err
	}
	return info, info.Name == name, nil
}

// GetSetElement asks the kernel for the element of set that matches key
// (for an interval set: the interval holding key; keyEnd, when not nil,
// is the end of a range key of a concatenated interval set). ok is false
// when there is none.
func (c *Conn) GetSetElement(fam Family, set string, key, keyEnd []byte) (el nftables.SetElement, ok bool, err error) {
	return c.getSetElement(fam, set, key, keyEnd, false)
}

// GetIntervalEnd asks the kernel for the end element of the interval
// of an interval set that holds key: the closest end element above key.
// ok is false when there is none.
func (c *Conn) GetIntervalEnd(fam Family, set string, key []byte) (el nftables.SetElement, ok bool, err error) {
	el, ok, err = c.getSetElement(fam, set, key, nil, true)
	return el, ok && el.IntervalEnd, err
}

func (c *Conn) getSetElement(fam Family, set string, key, keyEnd []byte, end bool) (el nftables.SetElement, ok bool, err error) {
	msgs, err := c.request(unix.NFT_MSG_GETSETELEM, false, fam, func(e *encoder) {
		e.str(unix.NFTA_SET_ELEM_LIST_TABLE, TableName)
		e.str(unix.NFTA_SET_ELEM_LIST_SET, set)
		l := e.nest(unix.NFTA_SET_ELEM_LIST_ELEMENTS)
		item := e.nest(unix.NFTA_LIST_ELEM)
		if end {
			e.u32(unix.NFTA_SET_ELEM_FLAGS, unix.NFT_SET_ELEM_INTERVAL_END)
		}
		k := e.nest(unix.NFTA_SET_ELEM_KEY)
		e.bytes(unix.NFTA_DATA_VALUE, key)
		e.endNest(k)
		if keyEnd != nil {
			k := e.nest(nftaSetElemKeyEnd)
			e.bytes(unix.NFTA_DATA_VALUE, keyEnd)
			e.endNest(k)
		}
		e.endNest(item)
		e.endNest(l)
	})
	if errors.Is(err, unix.ENOENT) {
		return el, false, nil
	}
	if err != nil {
		return el, false, fmt.Errorf("get element of set %s: %w", set, err)
	}
	found := false
	for _, m := range msgs {
		if err := eachElem(m.Data, func(e *nftables.SetElement) error {
			if !found {
				el, found = *e, true
			}
			return nil
		}); err != nil {
			return el, false, err
		}
	}
	return el, found, nil
}

// ErrDumpRestart is returned by SetElements' callback side when the dump
// was interrupted and starts over: the caller drops what it got so far.
var ErrDumpRestart = errors.New("set dump restarted")

// SetElements streams the elements of the named set of our table in fam
// to fn, one dump message at a time (the element passed is reused). When
// the kernel marks the dump interrupted the dump is repeated: restart is
// then called before the elements come again.
func (c *Conn) SetElements(fam Family, set string, restart func(), fn func(*nftables.SetElement) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for attempt := 0; ; attempt++ {
		again, err := c.setElementsOnce(fam, set, fn)
		if err != nil {
			return err
		}
		if !again {
			return nil
		}
		if attempt >= 16 {
			return fmt.Errorf("dump of set %s kept being interrupted: %w", set, ErrGenerationChanged)
		}
		if restart != nil {
			restart()
		}
	}
}

func (c *Conn) setElementsOnce(fam Family, set string, fn func(*nftables.SetElement) error) (again bool, err error) {
	var e encoder
	off := e.begin(nftType(unix.NFT_MSG_GETSETELEM), unix.NLM_F_DUMP, fam, 0)
	e.str(unix.NFTA_SET_ELEM_LIST_TABLE, TableName)
	e.str(unix.NFTA_SET_ELEM_LIST_SET, set)
	e.end(off)
	if e.err != nil {
		return false, e.err
	}
	seq := c.nextSeq(1)
	binary.NativeEndian.PutUint32(e.buf[8:12], seq)
	if err := c.send(e.buf); err != nil {
		return false, err
	}
	c.growBuffers(0, 4<<20)
	intr, failed := false, error(nil)
	var seen []uint64 // a fingerprint of each element, to find repeats
	for {
		msgs, err := c.recvNoCopy()
		if err == unix.ENOBUFS {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("netlink receive: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq {
				continue
			}
			if m.Header.Flags&unix.NLM_F_DUMP_INTR != 0 {
				intr = true
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if errno, _, text := nlError(m); errno != 0 {
					return false, fmt.Errorf("dump set %s: %w", set, withText(errno, text))
				}
			case unix.NLMSG_DONE:
				if len(m.Data) >= 4 {
					if code := int32(binary.NativeEndian.Uint32(m.Data[:4])); code < 0 {
						return false, fmt.Errorf("dump set %s: %w", set, unix.Errno(-code))
					}
				}
				if failed == nil && !intr && hasDup(seen) {
					// The kernel resumes a dump by walking the set from
					// its start and skipping what it sent; while the hash
					// table is being resized (after a large change) that
					// gives some elements twice and misses others, and the
					// dump is not flagged interrupted. Read it again.
					intr = true
				}
				return intr && failed == nil, failed
			default:
				if failed == nil && !intr {
					failed = eachElem(m.Data, func(el *nftables.SetElement) error {
						seen = append(seen, elemPrint(el))
						return fn(el)
					})
				}
			}
		}
	}
}

// recvNoCopy is recv without copying: the messages are only valid until
// the next read.
func (c *Conn) recvNoCopy() ([]syscall.NetlinkMessage, error) {
	for {
		n, _, err := unix.Recvfrom(c.fd, c.rbuf, unix.MSG_PEEK|unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n > len(c.rbuf) {
			c.rbuf = make([]byte, n)
		}
		n, _, err = unix.Recvfrom(c.fd, c.rbuf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return syscall.ParseNetlinkMessage(c.rbuf[:n])
	}
}

// tlv walks netlink attributes.
func tlv(b []byte, fn func(typ uint16, v []byte) error) error {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[:2]))
		t := binary.NativeEndian.Uint16(b[2:4]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
		if l < 4 || l > len(b) {
			return errors.New("malformed netlink attribute")
		}
		if err := fn(t, b[4:l]); err != nil {
			return err
		}
		b = b[min(nlmAlign(l), len(b)):]
	}
	return nil
}

func dataValue(b []byte) []byte {
	var v []byte
	_ = tlv(b, func(t uint16, x []byte) error {
		if t == unix.NFTA_DATA_VALUE {
			v = x
		}
		return nil
	})
	return v
}

// eachElem decodes the elements of one NEWSETELEM message (after the
// nfgenmsg header). Key bytes alias the message buffer.
func eachElem(data []byte, fn func(*nftables.SetElement) error) error {
	if len(data) < 4 {
		return errors.New("short nfnetlink message")
	}
	var el nftables.SetElement
	var ctr expr.Counter
	return tlv(data[4:], func(t uint16, v []byte) error {
		if t != unix.NFTA_SET_ELEM_LIST_ELEMENTS {
			return nil
		}
		return tlv(v, func(t uint16, v []byte) error {
			if t != unix.NFTA_LIST_ELEM {
				return nil
			}
			el = nftables.SetElement{}
			err := tlv(v, func(t uint16, v []byte) error {
				switch t {
				case unix.NFTA_SET_ELEM_KEY:
					el.Key = dataValue(v)
				case nftaSetElemKeyEnd:
					el.KeyEnd = dataValue(v)
				case unix.NFTA_SET_ELEM_FLAGS:
					if len(v) >= 4 {
						el.IntervalEnd = binary.BigEndian.Uint32(v)&unix.NFT_SET_ELEM_INTERVAL_END != 0
					}
				case unix.NFTA_SET_ELEM_TIMEOUT:
					if len(v) >= 8 {
						el.Timeout = time.Duration(binary.BigEndian.Uint64(v)) * time.Millisecond
					}
				case unix.NFTA_SET_ELEM_EXPIRATION:
					if len(v) >= 8 {
						el.Expires = time.Duration(binary.BigEndian.Uint64(v)) * time.Millisecond
					}
				case unix.NFTA_SET_ELEM_USERDATA:
					el.Comment = udataString(v, 0) // NFTNL_UDATA_SET_ELEM_COMMENT
				case unix.NFTA_SET_ELEM_EXPR, nftaSetElemExpressions:
					if c, ok := counterOf(v, t == nftaSetElemExpressions); ok {
						ctr = c
						el.Counter = &ctr
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			return fn(&el)
		})
	})
}

// counterOf finds a counter expression in NFTA_SET_ELEM_EXPR (one
// expression) or NFTA_SET_ELEM_EXPRESSIONS (a list of them).
func counterOf(v []byte, list bool) (c expr.Counter, ok bool) {
	one := func(v []byte) {
		name := ""
		var data []byte
		_ = tlv(v, func(t uint16, x []byte) error {
			switch t {
			case unix.NFTA_EXPR_NAME:
				name = string(x)
				for len(name) > 0 && name[len(name)-1] == 0 {
					name = name[:len(name)-1]
				}
			case unix.NFTA_EXPR_DATA:
				data = x
			}
			return nil
		})
		if name != "counter" {
			return
		}
		ok = true
		_ = tlv(data, func(t uint16, x []byte) error {
			if len(x) < 8 {
				return nil
			}
			switch t {
			case unix.NFTA_COUNTER_BYTES:
				c.Bytes = binary.BigEndian.Uint64(x)
			case unix.NFTA_COUNTER_PACKETS:
				c.Packets = binary.BigEndian.Uint64(x)
			}
			return nil
		})
	}
	if !list {
		one(v)
		return
	}
	_ = tlv(v, func(t uint16, x []byte) error {
		if t == unix.NFTA_LIST_ELEM {
			one(x)
		}
		return nil
	})
	return
}

// AddElements adds elements to the named set of our table in fam (created
// earlier, possibly in this batch), encoded straight into the batch
// (the same attributes google/nftables marshals: key, key end, interval
// end flag, timeout, comment) and split into messages below the
// attribute size limit. exclusive fails with EEXIST on an element that
// exists. hasTimeout says whether element timeouts are sent.
func (b *Batch) AddElements(fam Family, set string, hasTimeout bool, elems []nftables.SetElement, exclusive bool) int {
	idx := b.addOp(Op{Kind: OpSetElemAdd, Family: fam, Set: set})
	flags := uint16(unix.NLM_F_CREATE)
	if exclusive {
		flags |= unix.NLM_F_EXCL
	}
	return b.elemMessages(idx, unix.NFT_MSG_NEWSETELEM, flags, fam, set, hasTimeout, elems)
}

// DelElements deletes elements (by key, key end and interval end flag)
// from the named set; an absent element fails with ENOENT.
func (b *Batch) DelElements(fam Family, set string, elems []nftables.SetElement) int {
	idx := b.addOp(Op{Kind: OpSetElemDel, Family: fam, Set: set})
	return b.elemMessages(idx, unix.NFT_MSG_DELSETELEM, 0, fam, set, false, elems)
}

func (b *Batch) elemMessages(idx, typ int, flags uint16, fam Family, set string, timeouts bool, elems []nftables.SetElement) int {
	b.Grow(len(elems)*48, 0)
	return b.elemSeq(idx, typ, flags, fam, set, timeouts, func(yield func(*nftables.SetElement) bool) {
		for i := range elems {
			if !yield(&elems[i]) {
				return
			}
		}
	})
}

// AddElementsSeq is AddElements with the elements given one at a time
// (each may be reused for the next: it is encoded before the next
// comes), so that a large set never exists as SetElement values.
func (b *Batch) AddElementsSeq(fam Family, set string, hasTimeout bool, elems iter.Seq[*nftables.SetElement], exclusive bool) int {
	idx := b.addOp(Op{Kind: OpSetElemAdd, Family: fam, Set: set})
	flags := uint16(unix.NLM_F_CREATE)
	if exclusive {
		flags |= unix.NLM_F_EXCL
	}
	return b.elemSeq(idx, unix.NFT_MSG_NEWSETELEM, flags, fam, set, hasTimeout, elems)
}

// DelElementsSeq is DelElements with the elements given one at a time.
func (b *Batch) DelElementsSeq(fam Family, set string, elems iter.Seq[*nftables.SetElement]) int {
	idx := b.addOp(Op{Kind: OpSetElemDel, Family: fam, Set: set})
	return b.elemSeq(idx, unix.NFT_MSG_DELSETELEM, 0, fam, set, false, elems)
}

// ElementSize is the number of bytes AddElementsSeq encodes for an
// element with a key (and key end) of keyLen bytes, an optional timeout
// and a comment of commentLen bytes (0: none); with the message headers
// it needs a little more, about 1 %.
func ElementSize(keyLen, keyEndLen int, intervalEnd, timeout bool, commentLen int) int {
	n := 4 + 4 + 4 + nlmAlign(keyLen)
	if keyEndLen > 0 {
		n += 4 + 4 + nlmAlign(keyEndLen)
	}
	if intervalEnd {
		n += 8
	}
	if timeout {
		n += 12
	}
	if commentLen > 0 {
		n += 4 + nlmAlign(min(commentLen, 254)+3)
	}
	return n
}

func (b *Batch) elemSeq(idx, typ int, flags uint16, fam Family, set string, timeouts bool, elems iter.Seq[*nftables.SetElement]) int {
	off, list, start, n := -1, 0, 0, 0
	closeMsg := func() {
		b.e.endNest(list)
		b.done(idx, off)
		off = -1
	}
	for v := range elems {
		if off >= 0 && len(b.e.buf)-start >= maxElemMsg {
			closeMsg()
		}
		if off < 0 {
			off = b.msg(idx, typ, flags, fam)
			b.e.str(unix.NFTA_SET_ELEM_LIST_SET, set)
			b.e.str(unix.NFTA_SET_ELEM_LIST_TABLE, TableName)
			list = b.e.nest(unix.NFTA_SET_ELEM_LIST_ELEMENTS)
			start, n = len(b.e.buf), 0
		}
		n++
		item := b.e.nest(uint16(n))
		if v.IntervalEnd {
			b.e.u32(unix.NFTA_SET_ELEM_FLAGS, unix.NFT_SET_ELEM_INTERVAL_END)
		}
		k := b.e.nest(unix.NFTA_SET_ELEM_KEY)
		b.e.bytes(unix.NFTA_DATA_VALUE, v.Key)
		b.e.endNest(k)
		if len(v.KeyEnd) > 0 {
			k := b.e.nest(nftaSetElemKeyEnd)
			b.e.bytes(unix.NFTA_DATA_VALUE, v.KeyEnd)
			b.e.endNest(k)
		}
		if timeouts && v.Timeout != 0 {
			b.e.u64(unix.NFTA_SET_ELEM_TIMEOUT, uint64(v.Timeout.Milliseconds()))
		}
		if v.Counter != nil && typ == unix.NFT_MSG_NEWSETELEM {
			b.e.elemCounter(v.Counter)
		}
		if c := v.Comment; c != "" && typ == unix.NFT_MSG_NEWSETELEM {
			c = c[:min(len(c), 254)] // one length byte, with the NUL
			b.e.commentUdata(c)
		}
		b.e.endNest(item)
	}
	if off >= 0 {
		closeMsg()
	}
	return idx
}

// elemPrint is an element's identity for hasDup: the key itself when it
// is short (no two keys share it), else a 64-bit FNV-1a hash of it.
func elemPrint(el *nftables.SetElement) uint64 {
	var flag uint64
	if el.IntervalEnd {
		flag = 1
	}
	if len(el.Key)+len(el.KeyEnd) <= 6 {
		v := uint64(len(el.Key))<<1 | flag
		for _, b := range el.Key {
			v = v<<8 | uint64(b)
		}
		for _, b := range el.KeyEnd {
			v = v<<8 | uint64(b)
		}
		return v | 1<<63
	}
	h := uint64(14695981039346656037) ^ flag
	for _, part := range [][]byte{el.Key, {0xff, byte(len(el.Key))}, el.KeyEnd} {
		for _, b := range part {
			h ^= uint64(b)
			h *= 1099511628211
		}
	}
	return h &^ (1 << 63)
}

// hasDup reports whether a fingerprint occurs twice (it sorts prints).
func hasDup(prints []uint64) bool {
	slices.Sort(prints)
	for i := 1; i < len(prints); i++ {
		if prints[i] == prints[i-1] {
			return true
		}
	}
	return false
}

// commentUdata encodes NFTA_SET_ELEM_USERDATA holding the comment c
// (NFTNL_UDATA_SET_ELEM_COMMENT, NUL-terminated; len(c) < 255).
func (e *encoder) commentUdata(c string) {
	var h [6]byte
	binary.NativeEndian.PutUint16(h[0:2], uint16(4+2+len(c)+1))
	binary.NativeEndian.PutUint16(h[2:4], unix.NFTA_SET_ELEM_USERDATA)
	h[4], h[5] = 0, byte(len(c)+1)
	e.buf = append(e.buf, h[:]...)
	e.buf = append(e.buf, c...)
	e.buf = append(e.buf, 0)
	e.pad()
}
