package kernel

import (
	"os"
	"strconv"
	"testing"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// Only batches that delete or replace something leave the kernel memory to
// free after a grace period: those are the ones whose socket Release hands
// to a keeper (a batch of creates must not cost a process start).
func TestLeavesWork(t *testing.T) {
	el := []nftables.SetElement{{Key: []byte{198, 18, 7, 0}}}
	set := &nftables.Set{Name: "ipset.s", KeyType: nftables.TypeIPAddr}
	cases := []struct {
		name  string
		build func(b *Batch)
		want  bool
	}{
		{"element adds", func(b *Batch) {
			b.AddTable(IPv4)
			b.AddElements(IPv4, "ipset.s", false, el, true)
		}, false},
		{"new set", func(b *Batch) { b.AddSet(IPv4, set, true) }, false},
		{"new rule and chain", func(b *Batch) {
			b.AddChain(IPv4, "filter.X", ChainSpec{Exclusive: true})
			b.AppendRule(IPv4, "filter.X", RuleSpec{})
		}, false},
		{"element delete", func(b *Batch) {
			b.AddElements(IPv4, "ipset.s", false, el, false)
			b.DelElements(IPv4, "ipset.s", el)
		}, true},
		{"set flush", func(b *Batch) { b.FlushSet(IPv4, "ipset-count.s") }, true},
		{"set delete", func(b *Batch) { b.DelSet(IPv4, "ipset.s") }, true},
		{"rule delete", func(b *Batch) { b.DelRule(IPv4, "filter.INPUT", 7) }, true},
		{"chain re-created", func(b *Batch) { b.AddChain(IPv4, "filter", ChainSpec{}) }, true},
		{"rule and its index entry", func(b *Batch) {
			b.AppendRule(IPv4, "filter.INPUT", RuleSpec{})
			b.DestroyIndex(IPv4, "filter", []IndexKey{{1}})
		}, false},
		{"index state flushed", func(b *Batch) { b.FlushSet(IPv4, IndexStateSet) }, true},
	}
	for _, c := range cases {
		b := NewBatch()
		c.build(b)
		if got := b.leavesWork(); got != c.want {
			t.Errorf("%s: leavesWork %v, want %v", c.name, got, c.want)
		}
	}
}

func TestIsReleaseKeeper(t *testing.T) {
	for _, args := range [][]string{
		{"xdptables"},
		{"ipset", "del", "s", "198.18.7.0"},
		{"xdptables", keeperArg, "x"},
	} {
		if IsReleaseKeeper(args) {
			t.Errorf("IsReleaseKeeper(%q): true", args)
		}
	}
	if !IsReleaseKeeper([]string{"xdptables", keeperArg}) {
		t.Error("IsReleaseKeeper of Release's arguments: false")
	}
}

// A keeper takes the sockets that commands hand it while it waits, and
// waits once more for them; without any it ends after one wait. A
// process without a keeper gets a refusal (and closes its sockets itself).
func TestKeeperTakesSockets(t *testing.T) {
	keeperAddr = "\x00xdptables-test-keeper-" + strconv.Itoa(os.Getpid())
	if handToKeeper([]int{0}) {
		t.Fatal("handToKeeper with no keeper: true")
	}
	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(ln, &unix.SockaddrUnix{Name: keeperAddr}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 8); err != nil {
		t.Fatal(err)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	waits := 0
	taken := keep(ln, func() {
		waits++
		if waits == 1 {
			// a command ending during the first grace period
			if !handToKeeper([]int{p[0], p[1]}) {
				t.Error("handToKeeper with a keeper listening: false")
			}
		}
	})
	unix.Close(ln)
	if taken != 2 || waits != 2 {
		t.Errorf("keeper took %d sockets in %d waits, want 2 in 2", taken, waits)
	}
	if handToKeeper([]int{0}) {
		t.Error("handToKeeper after the keeper closed: true")
	}
	if n := keep(-1, func() { waits++ }); n != 0 || waits != 3 {
		t.Errorf("keeper without a listening socket: took %d, %d waits; want 0, 3", n, waits)
	}
}

// Release of several connections hands all their sockets to the keeper
// in one message (one keeper for a command's sockets, whichever of them
// committed) and closes them all; nil and closed connections are
// skipped.
func TestReleaseTogether(t *testing.T) {
	keeperAddr = "\x00xdptables-test-keeper-together-" + strconv.Itoa(os.Getpid())
	var cs []*Conn
	for range 2 {
		c, err := Open()
		if err != nil {
			t.Skipf("no netfilter netlink socket here: %v", err)
		}
		cs = append(cs, c)
	}
	closed, err := Open()
	if err != nil {
		t.Skipf("no netfilter netlink socket here: %v", err)
	}
	closed.Close()
	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrUnix{Name: keeperAddr}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 8); err != nil {
		t.Fatal(err)
	}
	if err := Release(cs[0], nil, closed, cs[1]); err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		if c.fd >= 0 {
			t.Errorf("connection %d not closed by Release", i)
		}
	}
	conn, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(conn)
	var got []int
	for {
		oob := make([]byte, unix.CmsgSpace(4*8))
		n, oobn, _, _, err := unix.Recvmsg(conn, make([]byte, 1), oob, unix.MSG_DONTWAIT)
		if err != nil || n == 0 && oobn == 0 {
			break
		}
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		var fds []int
		for _, m := range msgs {
			f, _ := unix.ParseUnixRights(&m)
			fds = append(fds, f...)
		}
		got = append(got, len(fds))
		for _, f := range fds {
			if dom, err := unix.GetsockoptInt(f, unix.SOL_SOCKET, unix.SO_PROTOCOL); err != nil || dom != unix.NETLINK_NETFILTER {
				t.Errorf("handed fd is not a netfilter netlink socket (protocol %d, %v)", dom, err)
			}
			unix.Close(f)
		}
	}
	if len(got) != 1 || got[0] != 2 {
		t.Errorf("keeper got messages with %v sockets, want one with 2", got)
	}
}

// Under a loop of commands a keeper lives as long as the loop: each socket
// it takes is closed after one more grace period, not held to its exit
// (it held two or three descriptors a command, thousands in a loop).
func TestKeeperClosesWhatWaited(t *testing.T) {
	keeperAddr = "\x00xdptables-test-keeper-closes-" + strconv.Itoa(os.Getpid())
	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrUnix{Name: keeperAddr}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 8); err != nil {
		t.Fatal(err)
	}
	// closed reports whether every write end of pipe r is closed (EOF).
	closed := func(r int) bool {
		n, err := unix.Read(r, make([]byte, 1))
		return n == 0 && err == nil
	}
	const rounds = 5
	var readers []int
	waits := 0
	taken := keep(ln, func() {
		waits++
		if waits >= 3 {
			// handed during wait waits-2, taken after it, waited wait waits-1
			if r := readers[waits-3]; !closed(r) {
				t.Errorf("wait %d: the socket handed during wait %d is still held", waits, waits-2)
			}
		}
		if waits <= rounds {
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
				t.Fatal(err)
			}
			if !handToKeeper([]int{p[1]}) {
				t.Errorf("wait %d: handToKeeper with a keeper listening: false", waits)
			}
			unix.Close(p[1])
			readers = append(readers, p[0])
		}
	})
	if taken != rounds || waits != rounds+1 {
		t.Errorf("keeper took %d sockets in %d waits, want %d in %d", taken, waits, rounds, rounds+1)
	}
	for i, r := range readers {
		if !closed(r) {
			t.Errorf("the socket handed during wait %d is held after the keeper's last round", i+1)
		}
		unix.Close(r)
	}
}
