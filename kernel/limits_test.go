package kernel

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Netlink limits (issue 7): dumps interrupted by concurrent commits, a
// receive buffer too small for a dump, replies dropped by a full buffer.
// Whatever happens, a read is complete or fails with an error: never a
// silently partial answer, never a hang.

// fillChain commits n rules to filter.INPUT in one batch.
func fillChain(t *testing.T, c *Conn, n int) string {
	t.Helper()
	in := ChainName("filter", "INPUT")
	base, _ := BuiltinChain("filter", "INPUT")
	b := NewBatch()
	b.AddTable(IPv4)
	b.AddChain(IPv4, in, ChainSpec{Base: &base})
	for i := 0; i < n; i++ {
		b.AppendRule(IPv4, in, RuleSpec{Exprs: []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{198, 18, byte(i >> 8), byte(i)}},
			&expr.Counter{},
			&expr.Verdict{Kind: expr.VerdictDrop},
		}, UserData: []byte(fmt.Sprintf("rule %d", i))})
	}
	commit(t, c, b)
	return in
}

// checkComplete fails unless rules are exactly the n rules of fillChain,
// in order.
func checkComplete(t *testing.T, rules []Rule, n int) {
	t.Helper()
	if len(rules) != n {
		t.Fatalf("dump returned %d rules, want %d (silently partial)", len(rules), n)
	}
	for i, r := range rules {
		if want := fmt.Sprintf("rule %d", i); string(r.UserData) != want {
			t.Fatalf("rule %d has userdata %q, want %q", i, r.UserData, want)
		}
	}
}

// hammer commits in a loop on its own connection (a chain created and
// deleted) until stop is closed; it returns the number of commits.
func hammer(t *testing.T, nsName string, stop <-chan struct{}) *atomic.Int64 {
	t.Helper()
	f, err := os.Open("/run/netns/" + nsName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(WithNetNS(int(f.Fd())))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b := NewBatch()
			if i%2 == 0 {
				b.AddChain(IPv4, ChainName("raw", "HAMMER"), ChainSpec{})
			} else {
				b.DelChain(IPv4, ChainName("raw", "HAMMER"))
			}
			if err := c.Commit(b, 0); err == nil {
				n.Add(1)
			}
		}
	}()
	t.Cleanup(func() { wg.Wait(); c.Close() })
	return &n
}

// TestDumpInterrupted dumps a big chain while another connection commits
// in a loop: the kernel flags the dumps NLM_F_DUMP_INTR; each read must be
// complete (after retries) or fail with ErrGenerationChanged.
func TestDumpInterrupted(t *testing.T) {
	c, ns := newNS(t)
	// 100k rules with XDPT_SCALE=1: each read then takes minutes, as
	// every attempt dumps the whole chain before it is found interrupted
	n := 20000
	if os.Getenv("XDPT_SCALE") != "" {
		n = 100000
	}
	in := fillChain(t, c, n)
	stop := make(chan struct{})
	commits := hammer(t, ns.Name, stop)
	defer close(stop)
	complete, failed := 0, 0
	for i := 0; i < 2; i++ {
		rules, err := c.Rules(IPv4, in)
		if err != nil {
			if !errors.Is(err, ErrGenerationChanged) {
				t.Fatalf("dump failed with an unexpected error: %v", err)
			}
			failed++
			continue
		}
		checkComplete(t, rules, n)
		complete++
	}
	// the small dumps of other reads are retried and come through
	for i := 0; i < 50; i++ {
		if _, err := c.Chains(IPv4); err != nil && !errors.Is(err, ErrGenerationChanged) {
			t.Fatalf("chains: %v", err)
		}
	}
	t.Logf("%d rules, %d concurrent commits: %d dumps complete, %d reported interrupted", n, commits.Load(), complete, failed)
	if commits.Load() == 0 {
		t.Fatal("the hammer never committed")
	}
}

// TestDumpTinyRcvbuf reads a big chain through a receive buffer far
// smaller than the dump: the kernel waits for the reader, nothing is lost.
func TestDumpTinyRcvbuf(t *testing.T) {
	c, _ := newNS(t)
	const n = 20000
	in := fillChain(t, c, n)
	if err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1); err != nil {
		t.Fatal(err)
	}
	c.rcvbuf, _ = unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	t.Logf("SO_RCVBUF now %d bytes", c.rcvbuf)
	rules, err := c.Rules(IPv4, in)
	if err != nil {
		t.Fatal(err)
	}
	checkComplete(t, rules, n)
}

// TestReplyDroppedByFullBuffer fills a tiny receive buffer with unread
// replies so that the kernel drops the answer to the next request and
// reports ENOBUFS: the request is repeated, it does not wait forever for
// an answer that will never come.
func TestReplyDroppedByFullBuffer(t *testing.T) {
	c, _ := newNS(t)
	fillChain(t, c, 10)
	if err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1); err != nil {
		t.Fatal(err)
	}
	c.rcvbuf, _ = unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	// unanswered GETGEN requests: their replies fill the buffer, the
	// later ones are dropped and the socket is marked ENOBUFS
	var e encoder
	off := e.begin(nftType(unix.NFT_MSG_GETGEN), unix.NLM_F_ACK, unix.NFPROTO_UNSPEC, 0)
	e.end(off)
	for i := 0; i < 64; i++ {
		if err := unix.Sendto(c.fd, e.buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		gen uint32
		err error
	}
	done := make(chan result, 1)
	go func() {
		g, err := c.GenID()
		done <- result{g, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("GenID after an overrun: %v", r.err)
		}
	case <-time.After(10 * time.Second):
		// unblock the reader before failing: closing the socket ends recv
		unix.Shutdown(c.fd, unix.SHUT_RDWR)
		t.Fatal("GenID hangs after its reply was dropped (ENOBUFS)")
	}
	// and the connection still works for dumps
	if rules, err := c.Rules(IPv4, ChainName("filter", "INPUT")); err != nil || len(rules) != 10 {
		t.Fatalf("after the overrun: %d rules, %v", len(rules), err)
	}
}

// TestCommitErrorsOverrun commits a batch failing in every rule through a
// receive buffer that cannot hold the error reports (as when the buffer
// cannot be raised): the commit ends with an error marked Lost, it does
// not wait forever for a GETGEN answer the kernel dropped.
func TestCommitErrorsOverrun(t *testing.T) {
	c, _ := newNS(t)
	fillChain(t, c, 1)
	if err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1); err != nil {
		t.Fatal(err)
	}
	c.rcvbuf = 1 << 30 // keeps Commit from raising it
	const n = 20000
	b := NewBatch()
	for i := 0; i < n; i++ {
		b.AppendRule(IPv4, "filter.NOPE", RuleSpec{Exprs: drop()})
	}
	gen, err := c.GenID()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Commit(b, gen) }()
	select {
	case err := <-done:
		var ce *CommitError
		if !errors.As(err, &ce) || !ce.Lost {
			t.Fatalf("got %v, want a CommitError with Lost set", err)
		}
		t.Logf("%d of %d errors reported, lost=%v: %v", len(ce.Errors), n, ce.Lost, err)
	case <-time.After(20 * time.Second):
		unix.Shutdown(c.fd, unix.SHUT_RDWR)
		t.Fatal("Commit hangs after the receive buffer overran")
	}
	if _, err := c.GenID(); err != nil {
		t.Fatalf("connection unusable after the overrun: %v", err)
	}
}

// TestElemPrintDup: hasDup finds a repeated element, and elements that
// differ (in key, key end or interval-end flag) never look the same.
func TestElemPrintDup(t *testing.T) {
	els := []nftables.SetElement{
		{Key: []byte{10, 0, 0, 1}},
		{Key: []byte{10, 0, 0, 2}},
		{Key: []byte{10, 0, 0, 1}, IntervalEnd: true},
		{Key: []byte{10, 0}, KeyEnd: []byte{0, 1}},
		{Key: []byte{10, 0, 0, 1}, KeyEnd: []byte{10, 0, 0, 9}},
		{Key: make([]byte, 16)},
		{Key: append(make([]byte, 15), 1)},
	}
	var prints []uint64
	for i := range els {
		prints = append(prints, elemPrint(&els[i]))
	}
	if hasDup(slices.Clone(prints)) {
		t.Fatalf("distinct elements share a print: %x", prints)
	}
	if !hasDup(append(prints, elemPrint(&nftables.SetElement{Key: []byte{10, 0, 0, 2}}))) {
		t.Fatal("a repeated element was not found")
	}
}
