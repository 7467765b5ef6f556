package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Conn is a netlink socket of the netfilter family, bound in one network
// namespace. Its methods serialize on a mutex, since replies on a shared
// socket would otherwise interleave.
type Conn struct {
	mu     sync.Mutex
	fd     int
	seq    uint32
	rbuf   []byte
	sndbuf int
	rcvbuf int
	// pending says a committed transaction left the kernel memory to
	// free after a grace period (see Release)
	pending bool
	// requests counts the GET requests sent (Requests)
	requests int
	// auxc is a second socket, for reads asked for during a dump of
	// this one (boundcounter.go)
	auxMu sync.Mutex
	auxc  *auxConn
}

// Option configures Open.
type Option func(*options)

type options struct {
	netns int
}

// WithNetNS opens the socket inside the network namespace referred to by fd
// (for example an open /run/netns/NAME or /proc/PID/ns/net). The calling
// thread's namespace is not changed.
func WithNetNS(fd int) Option {
	return func(o *options) { o.netns = fd }
}

// Open opens a netlink socket to nf_tables.
func Open(opts ...Option) (*Conn, error) {
	o := options{netns: -1}
	for _, opt := range opts {
		opt(&o)
	}
	fd, err := socketIn(o.netns)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	c := &Conn{fd: fd, rbuf: make([]byte, 64<<10)}
	if err := c.setup(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return c, nil
}

func (c *Conn) setup() error {
	if err := unix.Bind(c.fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink bind: %w", err)
	}
	// Errors need only the header of the offending message (for its
	// sequence number), not a copy of a possibly large rule.
	_ = unix.SetsockoptInt(c.fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	// Extended acks carry the kernel's explanation, when it gives one.
	_ = unix.SetsockoptInt(c.fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	var err error
	if c.sndbuf, err = unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_SNDBUF); err != nil {
		return fmt.Errorf("netlink getsockopt: %w", err)
	}
	if c.rcvbuf, err = unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUF); err != nil {
		return fmt.Errorf("netlink getsockopt: %w", err)
	}
	c.seq = uint32(unix.Getpid()) << 8 // tells our messages apart in strace/nlmon traces
	return nil
}

// socketIn creates the netlink socket, inside the namespace netns when it is
// not negative. A socket stays in the namespace it was created in, so it is
// enough to create it on a thread that entered the namespace. That thread is
// locked and never unlocked: Go discards it when the goroutine ends, so no
// thread in the wrong namespace ever returns to the scheduler.
func socketIn(netns int) (int, error) {
	open := func() (int, error) {
		return unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	}
	if netns < 0 {
		return open()
	}
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(netns, unix.CLONE_NEWNET); err != nil {
			ch <- result{-1, fmt.Errorf("setns: %w", err)}
			return
		}
		fd, err := open()
		ch <- result{fd, err}
	}()
	r := <-ch
	return r.fd, r.err
}

// Close closes the socket.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	c.auxMu.Lock()
	if a := c.auxc; a != nil && a.c != nil {
		a.c.Close()
	}
	c.auxMu.Unlock()
	return err
}

func (c *Conn) nextSeq(n uint32) uint32 {
	first := c.seq + 1
	c.seq += n
	if c.seq < first { // wrapped: restart so a batch's range is contiguous
		c.seq = n
		first = 1
	}
	return first
}

// growBuffers raises the socket buffers to at least snd and rcv bytes. The
// FORCE variants ignore the system-wide maximum (root only); when they are
// refused the ordinary ones are tried, and a too small send buffer then
// shows up as EMSGSIZE from the send.
func (c *Conn) growBuffers(snd, rcv int) {
	set := func(force, plain int, want int, cur *int) {
		if want <= *cur {
			return
		}
		// The kernel doubles the value it is given.
		half := want/2 + 1
		if unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, force, half) != nil {
			_ = unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, plain, half)
		}
		if v, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, plain); err == nil {
			*cur = v
		}
	}
	set(unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, snd, &c.sndbuf)
	set(unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, rcv, &c.rcvbuf)
}

func (c *Conn) send(b []byte) error {
	if c.fd < 0 {
		return errors.New("kernel: connection closed")
	}
	c.growBuffers(len(b)+4096, 0)
	for {
		err := unix.Sendto(c.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("netlink send: %w", err)
		}
		return nil
	}
}

// recv reads one datagram and returns the messages in it. A receive buffer
// overrun (ENOBUFS) is returned as the error; the caller decides whether to
// read on.
func (c *Conn) recv() ([]syscall.NetlinkMessage, error) { return c.recvFlags(0) }

// recvFlags is recv with extra flags: MSG_DONTWAIT returns EAGAIN when
// nothing is queued.
func (c *Conn) recvFlags(flags int) ([]syscall.NetlinkMessage, error) {
	for {
		n, _, err := unix.Recvfrom(c.fd, c.rbuf, unix.MSG_PEEK|unix.MSG_TRUNC|flags)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n > len(c.rbuf) {
			c.rbuf = make([]byte, n)
		}
		n, _, err = unix.Recvfrom(c.fd, c.rbuf, flags)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		msgs, err := syscall.ParseNetlinkMessage(c.rbuf[:n])
		if err != nil {
			return nil, fmt.Errorf("netlink parse: %w", err)
		}
		// The buffer is reused: give callers their own copies.
		for i := range msgs {
			msgs[i].Data = append([]byte(nil), msgs[i].Data...)
		}
		return msgs, nil
	}
}

// recvReply reads one datagram of the answer to a GET and returns the
// messages in it, without asking for its size first as recv does (one
// system call instead of two): a datagram larger than the buffer is cut
// off, errTruncated, and the request is asked again (recvRaw grows the
// buffer for it). The replies to GETs are far below the 64 KiB buffer.
func (c *Conn) recvReply() ([]syscall.NetlinkMessage, error) {
	b, err := c.recvRaw()
	if err != nil {
		return nil, err
	}
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return nil, fmt.Errorf("netlink parse: %w", err)
	}
	// The buffer is reused: give callers their own copies.
	for i := range msgs {
		msgs[i].Data = append([]byte(nil), msgs[i].Data...)
	}
	return msgs, nil
}

// drain discards the datagrams queued on the socket, without waiting.
func (c *Conn) drain() {
	for i := 0; i < 1<<20; i++ {
		_, _, err := unix.Recvfrom(c.fd, c.rbuf, unix.MSG_DONTWAIT)
		if err != nil && err != unix.EINTR && err != unix.ENOBUFS {
			return // EAGAIN: empty
		}
	}
}

// nlError decodes an NLMSG_ERROR payload: the errno (0 is an ack), the
// sequence number of the message it answers, and the extended-ack text.
func nlError(m syscall.NetlinkMessage) (errno unix.Errno, seq uint32, text string) {
	if len(m.Data) < 4+unix.NLMSG_HDRLEN {
		return unix.EBADMSG, m.Header.Seq, ""
	}
	code := int32(binary.NativeEndian.Uint32(m.Data[:4]))
	seq = binary.NativeEndian.Uint32(m.Data[4+8 : 4+12])
	origLen := binary.NativeEndian.Uint32(m.Data[4:8])
	rest := m.Data[4+unix.NLMSG_HDRLEN:]
	if m.Header.Flags&unix.NLM_F_CAPPED == 0 && int(origLen) >= unix.NLMSG_HDRLEN {
		rest = rest[min(nlmAlign(int(origLen)-unix.NLMSG_HDRLEN), len(rest)):]
	}
	if m.Header.Flags&unix.NLM_F_ACK_TLVS != 0 {
		text = extAckText(rest)
	}
	return unix.Errno(-code), seq, text
}

func extAckText(b []byte) string {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[:2]))
		t := binary.NativeEndian.Uint16(b[2:4]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
		if l < 4 || l > len(b) {
			return ""
		}
		if t == unix.NLMSGERR_ATTR_MSG {
			s := b[4:l]
			for len(s) > 0 && s[len(s)-1] == 0 {
				s = s[:len(s)-1]
			}
			return string(s)
		}
		b = b[min(nlmAlign(l), len(b)):]
	}
	return ""
}

func nlmAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }
