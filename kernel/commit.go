package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrGenerationChanged is returned by Commit when the ruleset changed after
// the generation id the batch was built on was read (the kernel answered
// ERESTART). Nothing was applied: re-read, rebuild the batch, commit again.
var ErrGenerationChanged = errors.New("ruleset generation changed")

// OpError is the failure of one operation of a batch.
type OpError struct {
	Index int // the operation's index in the batch
	Op    Op
	Errno unix.Errno // the kernel's answer; 0 when the batch could not be encoded
	Text  string     // the kernel's extended-ack message, if any
	Err   error      // encoding error when Errno is 0
}

func (e *OpError) Error() string {
	var subject string
	switch {
	case e.Op.Set != "":
		subject = "set " + e.Op.Set
	case strings.HasPrefix(e.Op.Kind.String(), "RULE_") && e.Op.Chain != "":
		subject = "rule in chain " + e.Op.Chain
	case e.Op.Chain != "":
		subject = "chain " + e.Op.Chain
	default:
		subject = "table " + e.Op.Family.String() + " " + TableName
	}
	if e.Errno == 0 {
		return fmt.Sprintf("%s failed: %s: %v", e.Op.Kind, subject, e.Err)
	}
	msg := fmt.Sprintf("%s failed (%s): %s", e.Op.Kind, Strerror(e.Errno), subject)
	if e.Text != "" {
		msg += " (" + e.Text + ")"
	}
	return msg
}

// Unwrap gives the errno, so errors.Is(err, unix.EBUSY) works.
func (e *OpError) Unwrap() error {
	if e.Errno != 0 {
		return e.Errno
	}
	return e.Err
}

// CommitError lists the operations the kernel refused, in batch order. The
// kernel goes on checking the rest of a batch after an error, so later
// errors may follow from the first one. errors.As finds the first.
type CommitError struct {
	Errors []*OpError
	// Lost is set when the receive buffer overflowed and some error reports
	// were dropped.
	Lost bool
}

func (e *CommitError) Error() string {
	if len(e.Errors) == 0 {
		return "commit failed: error reports lost (receive buffer overrun)"
	}
	s := e.Errors[0].Error()
	if n := len(e.Errors) - 1; n > 0 {
		s += fmt.Sprintf(" (and %d more errors)", n)
	}
	return s
}

// Unwrap returns the operation errors.
func (e *CommitError) Unwrap() []error {
	out := make([]error, len(e.Errors))
	for i, x := range e.Errors {
		out[i] = x
	}
	return out
}

// Strerror returns the C library's text for errno ("Device or resource
// busy"), the form iptables prints; Go's own texts are lower case.
func Strerror(errno unix.Errno) string {
	s := errno.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Commit sends the batch as one transaction. With genid not zero the kernel
// applies it only if the ruleset generation is still genid; otherwise it
// returns ErrGenerationChanged. A refused operation gives a *CommitError
// (wrapping *OpError values); on any error nothing was applied. An empty
// batch sends nothing. The batch can be committed again (on another
// generation, for example) but is normally rebuilt after a re-read.
func (c *Conn) Commit(b *Batch, genid uint32) error {
	return c.commit(b, genid, true)
}

// Check sends the batch without its end: the kernel checks every
// operation as for a commit, reports the ones it refuses, and then
// aborts the transaction (nft --check). Nothing is ever applied; errors
// are those of Commit.
func (c *Conn) Check(b *Batch) error {
	return c.commit(b, 0, false)
}

func (c *Conn) commit(b *Batch, genid uint32, apply bool) error {
	if b.e.err != nil {
		return &CommitError{Errors: []*OpError{{Index: b.errOp, Op: b.Op(b.errOp), Err: b.e.err}}}
	}
	if len(b.ops) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()

	n := uint32(len(b.msgOff))
	first := c.nextSeq(n + 3)
	beginSeq, endSeq, syncSeq := first, first+n+1, first+n+2

	buf := b.e.buf
	h := buf[:beginLen]
	binary.NativeEndian.PutUint32(h[0:4], beginLen)
	binary.NativeEndian.PutUint16(h[4:6], unix.NFNL_MSG_BATCH_BEGIN)
	binary.NativeEndian.PutUint16(h[6:8], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(h[8:12], beginSeq)
	binary.NativeEndian.PutUint32(h[12:16], 0)
	h[16], h[17] = unix.AF_UNSPEC, unix.NFNETLINK_V0
	binary.BigEndian.PutUint16(h[18:20], unix.NFNL_SUBSYS_NFTABLES)
	binary.NativeEndian.PutUint16(h[20:22], 8)
	binary.NativeEndian.PutUint16(h[22:24], unix.NFNL_BATCH_GENID)
	binary.BigEndian.PutUint32(h[24:28], genid)
	for i, off := range b.msgOff {
		binary.NativeEndian.PutUint32(buf[off+8:off+12], first+1+uint32(i))
	}
	echoSeq, echo := b.echoRequest()
	var end [unix.NLMSG_HDRLEN + 4]byte
	binary.NativeEndian.PutUint32(end[0:4], uint32(len(end)))
	binary.NativeEndian.PutUint16(end[4:6], unix.NFNL_MSG_BATCH_END)
	binary.NativeEndian.PutUint16(end[6:8], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(end[8:12], endSeq)
	binary.BigEndian.PutUint16(end[18:20], unix.NFNL_SUBSYS_NFTABLES)
	msg := buf
	if apply {
		msg = append(buf, end[:]...)
		b.e.buf = msg[:len(buf)] // keep the batch reusable; end is past its length
	}

	// Every refused message is answered with an error; size the receive
	// buffer so that even a batch that fails everywhere reports it all.
	want := int(n)*1024 + 1<<20
	if want > 256<<20 {
		want = 256 << 20
	}
	c.growBuffers(len(msg)+4096, want)
	if err := c.send(msg); err != nil {
		return fmt.Errorf("commit: %w", err)
	}

	// The kernel processes the batch while the send is in progress and
	// queues its error reports before returning, and it sends nothing for
	// messages that succeed. A GETGEN sent now is answered after all of
	// them, which tells us when to stop reading.
	var g encoder
	off := g.begin(nftType(unix.NFT_MSG_GETGEN), 0, unix.NFPROTO_UNSPEC, 0)
	g.end(off)
	binary.NativeEndian.PutUint32(g.buf[8:12], syncSeq)
	if err := c.send(g.buf); err != nil {
		return fmt.Errorf("commit: %w", err)
	}

	markers := []uint32{syncSeq}
	var opErrs []*OpError
	seen := map[int]bool{} // an operation split into messages may fail in several
	var batchErr error
	lost := false
	remark := false
	for done := false; !done; {
		flags := 0
		if remark {
			flags = unix.MSG_DONTWAIT
		}
		msgs, err := c.recvFlags(flags)
		if err == unix.ENOBUFS {
			// Error reports were dropped, and the GETGEN answer may
			// have been too. Read what is queued, then ask again, so
			// that an answer surely comes.
			lost = true
			remark = true
			continue
		}
		if err == unix.EAGAIN && remark {
			remark = false
			syncSeq = c.nextSeq(1)
			markers = append(markers, syncSeq)
			binary.NativeEndian.PutUint32(g.buf[8:12], syncSeq)
			if err := c.send(g.buf); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("commit: netlink receive: %w", err)
		}
		for _, m := range msgs {
			if slices.Contains(markers, m.Header.Seq) {
				// the answer to one of the GETGEN markers: the kernel
				// sent everything about the batch before it
				done = true
				continue
			}
			if m.Header.Type != unix.NLMSG_ERROR {
				if echo {
					b.echo(m, echoSeq)
				}
				continue
			}
			errno, seq, text := nlError(m)
			if errno == 0 {
				continue
			}
			switch {
			case seq == beginSeq || seq == endSeq:
				if errno == unix.ERESTART {
					batchErr = ErrGenerationChanged
				} else if batchErr == nil {
					batchErr = fmt.Errorf("commit: %w", withText(errno, text))
				}
			case seq > beginSeq && seq < endSeq:
				idx := int(b.msgOp[seq-first-1])
				if seen[idx] {
					continue
				}
				seen[idx] = true
				opErrs = append(opErrs, &OpError{Index: idx, Op: b.Op(idx), Errno: errno, Text: text})
			}
		}
	}
	if batchErr != nil {
		return batchErr
	}
	if len(opErrs) > 0 || lost {
		sort.SliceStable(opErrs, func(i, j int) bool { return opErrs[i].Index < opErrs[j].Index })
		return &CommitError{Errors: opErrs, Lost: lost}
	}
	// (an aborted transaction, a Check's, frees what it made before the
	// kernel answers)
	c.pending = c.pending || apply && b.leavesWork()
	return nil
}
