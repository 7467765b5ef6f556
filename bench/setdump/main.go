// Command setdump is the reading side of bench/setlayout.sh (root): it
// dumps the elements of nftables sets of `table ip xdptables` with
// NFT_MSG_GETSETELEM, as ipset list and save do, and reports what the
// kernel's dump cost:
//
//	setdump SET...
//
// One line per set and a total: elements, datagrams, bytes per element,
// wall time and the process's system CPU time. The kernel produces the
// dump inside our recvmsg calls, so its work is our system time. Each
// datagram holds at most 32 KiB (the kernel caps the skb of a dump at
// that, whatever the receive buffer), and for every datagram the kernel
// walks the set from its start, skipping what it sent before: the
// datagram count and the bytes per element decide how that cost grows.
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

const table = "xdptables"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: setdump SET...")
		os.Exit(2)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		fail(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		fail(err)
	}
	var tot result
	for i, set := range os.Args[1:] {
		r, err := dump(fd, uint32(i+1), set)
		if err != nil {
			fail(fmt.Errorf("%s: %w", set, err))
		}
		if len(os.Args) <= 18 {
			r.print(set)
		}
		tot.add(r)
	}
	tot.print(fmt.Sprintf("total (%d sets)", len(os.Args)-1))
}

type result struct {
	elems, datagrams, bytes int
	wall, sys               time.Duration
}

func (r *result) add(o result) {
	r.elems += o.elems
	r.datagrams += o.datagrams
	r.bytes += o.bytes
	r.wall += o.wall
	r.sys += o.sys
}

func (r result) print(name string) {
	per := 0.0
	if r.elems > 0 {
		per = float64(r.bytes) / float64(r.elems)
	}
	fmt.Printf("%s: elems=%d datagrams=%d bytes/elem=%.1f wall=%.3fs sys=%.3fs\n",
		name, r.elems, r.datagrams, per, r.wall.Seconds(), r.sys.Seconds())
}

func sysTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		fail(err)
	}
	return time.Duration(ru.Stime.Nano())
}

func attr(b []byte, typ uint16, v []byte) []byte {
	l := 4 + len(v)
	b = binary.NativeEndian.AppendUint16(b, uint16(l))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func dump(fd int, seq uint32, set string) (result, error) {
	var r result
	msg := make([]byte, 16, 128)
	msg = append(msg, unix.NFPROTO_IPV4, unix.NFNETLINK_V0, 0, 0) // nfgenmsg
	msg = attr(msg, unix.NFTA_SET_ELEM_LIST_TABLE, append([]byte(table), 0))
	msg = attr(msg, unix.NFTA_SET_ELEM_LIST_SET, append([]byte(set), 0))
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_GETSETELEM)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(msg[8:], seq)
	t0, s0 := time.Now(), sysTime()
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return r, err
	}
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return r, err
		}
		r.datagrams++
		r.bytes += n
		msgs, err := parse(buf[:n])
		if err != nil {
			return r, err
		}
		for _, m := range msgs {
			switch m.typ {
			case unix.NLMSG_DONE:
				r.wall, r.sys = time.Since(t0), sysTime()-s0
				return r, nil
			case unix.NLMSG_ERROR:
				if code := int32(binary.NativeEndian.Uint32(m.data[:4])); code < 0 {
					return r, unix.Errno(-code)
				}
			default:
				r.elems += countElems(m.data)
			}
		}
	}
}

type nlmsg struct {
	typ  uint16
	data []byte
}

func parse(b []byte) ([]nlmsg, error) {
	var out []nlmsg
	for len(b) >= 16 {
		l := int(binary.NativeEndian.Uint32(b[0:]))
		if l < 16 || l > len(b) {
			return nil, fmt.Errorf("bad netlink message length %d", l)
		}
		out = append(out, nlmsg{binary.NativeEndian.Uint16(b[4:]), b[16:l]})
		b = b[min((l+3)&^3, len(b)):]
	}
	return out, nil
}

// countElems counts the elements of a NEWSETELEM message (after its
// nfgenmsg): the attributes nested in NFTA_SET_ELEM_LIST_ELEMENTS.
func countElems(b []byte) int {
	if len(b) < 4 {
		return 0
	}
	n := 0
	each(b[4:], func(typ uint16, v []byte) {
		if typ == unix.NFTA_SET_ELEM_LIST_ELEMENTS {
			each(v, func(uint16, []byte) { n++ })
		}
	})
	return n
}

func each(b []byte, fn func(uint16, []byte)) {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:]))
		if l < 4 || l > len(b) {
			return
		}
		fn(binary.NativeEndian.Uint16(b[2:])&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER), b[4:l])
		b = b[min((l+3)&^3, len(b)):]
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "setdump:", err)
	os.Exit(1)
}
