package kernel

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Sets are marshalled by github.com/google/nftables (key types, interval
// ends, timeouts, userdata): its Conn is pointed at a recorder instead of a
// socket and the recorded messages join our batch.

// maxElemMsg bounds the payload of one NEWSETELEM/DELSETELEM message: the
// element list is one netlink attribute, which holds at most 64 KiB.
const maxElemMsg = 60 << 10

// record runs fn on a google/nftables Conn that records what it would send
// and returns the messages between the batch begin and end.
func record(fn func(cc *nftables.Conn) error) ([]netlink.Message, error) {
	r, _ := recorders.Get().(*recorder)
	if r == nil {
		var err error
		if r, err = newRecorder(); err != nil {
			return nil, err
		}
	}
	r.got = nil
	if err := fn(r.cc); err != nil {
		return nil, err // (r is dropped: it may hold part of a message)
	}
	if err := r.cc.Flush(); err != nil {
		return nil, err
	}
	got := r.got
	r.got = nil
	recorders.Put(r)
	if len(got) < 2 {
		return nil, nil
	}
	return got[1 : len(got)-1], nil // drop BATCH_BEGIN and BATCH_END
}

// recorder is a google/nftables Conn whose lasting connection records
// what it is sent. It is reused: each new connection seeded a random
// source of its own (10 µs), a tenth of the CPU time of a restore of
// many small sets.
type recorder struct {
	cc  *nftables.Conn
	got []netlink.Message
}

var recorders sync.Pool

func newRecorder() (*recorder, error) {
	r := &recorder{}
	cc, err := nftables.New(nftables.AsLasting(), nftables.WithTestDial(func(req []netlink.Message) ([]netlink.Message, error) {
		r.got = append(r.got, req...)
		return nil, nil
	}))
	if err != nil {
		return nil, err
	}
	r.cc = cc
	return r, nil
}

// ours returns a copy of s that belongs to our table in fam.
func ours(fam Family, s *nftables.Set) *nftables.Set {
	c := *s
	c.Table = &nftables.Table{Name: TableName, Family: nftables.TableFamily(fam)}
	return &c
}

// AddSet creates the named set s (its Table is ignored: the set goes into
// our table in fam). exclusive fails with EEXIST when it exists.
func (b *Batch) AddSet(fam Family, s *nftables.Set, exclusive bool) int {
	idx := b.addOp(Op{Kind: OpSetAdd, Family: fam, Set: s.Name})
	msgs, err := record(func(cc *nftables.Conn) error { return cc.AddSet(ours(fam, s), nil) })
	if err != nil {
		return b.fail(idx, fmt.Errorf("set %s: %w", s.Name, err))
	}
	var extra uint16
	if exclusive {
		extra = unix.NLM_F_EXCL
	}
	b.appendLibMessages(idx, msgs, extra)
	b.tookUnseen() // (an existing set takes none: see Handles)
	return idx
}

// MaxGCInterval is the longest garbage collection interval a set can
// have (NFTA_SET_GC_INTERVAL: 32-bit milliseconds, about 49 days).
const MaxGCInterval = time.Duration(math.MaxUint32) * time.Millisecond

// AddSetLongGC is AddSet for a set whose elements never expire, created
// with the timeout flag and the longest garbage collection interval.
// The kernel's interval sets (rbtree, pipapo) scan all their elements
// for expired ones in the first commit that changes them after each GC
// interval, one second when the set has none: without this, most single
// element changes of a set untouched for a second walk the whole set.
// Elements sent without a timeout never expire.
func (b *Batch) AddSetLongGC(fam Family, s *nftables.Set, exclusive bool) int {
	c := *s
	c.HasTimeout = true
	idx := b.addOp(Op{Kind: OpSetAdd, Family: fam, Set: s.Name})
	msgs, err := record(func(cc *nftables.Conn) error { return cc.AddSet(ours(fam, &c), nil) })
	if err != nil {
		return b.fail(idx, fmt.Errorf("set %s: %w", s.Name, err))
	}
	for i := range msgs {
		if msgs[i].Header.Type&0xff != unix.NFT_MSG_NEWSET {
			continue
		}
		attr := make([]byte, 8)
		binary.NativeEndian.PutUint16(attr[0:2], 8)
		binary.NativeEndian.PutUint16(attr[2:4], unix.NFTA_SET_GC_INTERVAL)
		binary.BigEndian.PutUint32(attr[4:8], uint32(MaxGCInterval/time.Millisecond))
		msgs[i].Data = append(msgs[i].Data[:len(msgs[i].Data):len(msgs[i].Data)], attr...)
	}
	var extra uint16
	if exclusive {
		extra = unix.NLM_F_EXCL
	}
	b.appendLibMessages(idx, msgs, extra)
	b.tookUnseen()
	return idx
}

// DelSet deletes a set with its elements (EBUSY while a rule uses it).
func (b *Batch) DelSet(fam Family, name string) int {
	idx := b.addOp(Op{Kind: OpSetDel, Family: fam, Set: name})
	off := b.msg(idx, unix.NFT_MSG_DELSET, 0, fam)
	b.e.str(unix.NFTA_SET_TABLE, TableName)
	b.e.str(unix.NFTA_SET_NAME, name)
	return b.done(idx, off)
}

// FlushSet deletes all elements of a set.
func (b *Batch) FlushSet(fam Family, name string) int {
	idx := b.addOp(Op{Kind: OpSetFlush, Family: fam, Set: name})
	off := b.msg(idx, unix.NFT_MSG_DELSETELEM, 0, fam)
	b.e.str(unix.NFTA_SET_ELEM_LIST_TABLE, TableName)
	b.e.str(unix.NFTA_SET_ELEM_LIST_SET, name)
	return b.done(idx, off)
}

// AddSetElements adds elements to set s (created earlier, possibly in this
// batch), split into as many messages as the attribute size limit needs,
// all in this batch. exclusive fails with EEXIST on an element that exists.
func (b *Batch) AddSetElements(fam Family, s *nftables.Set, elems []nftables.SetElement, exclusive bool) int {
	idx := b.addOp(Op{Kind: OpSetElemAdd, Family: fam, Set: s.Name})
	var extra uint16
	if exclusive {
		extra = unix.NLM_F_EXCL
	}
	return b.elements(idx, ours(fam, s), elems, extra, (*nftables.Conn).SetAddElements)
}

// DelSetElements deletes elements from set s, split like AddSetElements.
// An absent element fails with ENOENT.
func (b *Batch) DelSetElements(fam Family, s *nftables.Set, elems []nftables.SetElement) int {
	idx := b.addOp(Op{Kind: OpSetElemDel, Family: fam, Set: s.Name})
	return b.elements(idx, ours(fam, s), elems, 0, (*nftables.Conn).SetDeleteElements)
}

func (b *Batch) elements(idx int, s *nftables.Set, elems []nftables.SetElement, extra uint16,
	op func(*nftables.Conn, *nftables.Set, []nftables.SetElement) error) int {
	chunk := 1024
	for len(elems) > 0 {
		// Splitting is harmless: the kernel adds elements one by one, and
		// all messages are in the same transaction.
		n := min(chunk, len(elems))
		msgs, err := record(func(cc *nftables.Conn) error { return op(cc, s, elems[:n]) })
		if err != nil {
			return b.fail(idx, fmt.Errorf("set %s: %w", s.Name, err))
		}
		if size := msgsSize(msgs); size > maxElemMsg {
			if n <= 1 {
				return b.fail(idx, fmt.Errorf("set %s: one element needs %d bytes", s.Name, size))
			}
			chunk = max(1, n/2)
			continue
		}
		b.appendLibMessages(idx, msgs, extra)
		elems = elems[n:]
	}
	return idx
}

func msgsSize(msgs []netlink.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Data)
	}
	return n
}
