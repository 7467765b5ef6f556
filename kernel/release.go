package kernel

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// What a committed transaction deleted (elements, rules, sets, chains) is
// freed by the kernel after an RCU grace period, from a work item. Closing
// the last reference to a netlink socket that has talked to nf_tables
// waits for that work: nf_tables' NETLINK_URELEASE notifier flushes it,
// holding the commit mutex. A grace period is 10-20 ms (more on a loaded
// machine), so a command that deleted something would end that much after
// its change was done: `ipset del` took three times as long as `ipset add`,
// all of it in close(2). The wait is for the namespace's pending work, not
// only the closing command's: a command that starts within a grace period
// of another one's delete waits for the rest of it at its close.
//
// Release lets a process that is about to exit leave that wait to a keeper
// instead: a child (this binary again, see IsReleaseKeeper) that inherits
// the sockets, waits for a grace period of its own (membarrier), by when
// the kernel's work is done or nearly, and exits, closing them. The commit
// mutex is then held only briefly, so a next command is not kept waiting
// either. While it waits, the keeper takes the sockets of the commands that
// end meanwhile in its network namespace (over an abstract unix socket,
// which is per namespace), and waits one more grace period for them, so
// that those do not wait for the rest of its grace period, nor start a
// keeper of their own. Nothing about the ruleset is pending: the change is
// committed and visible before Release; only the freeing of memory is.

// keeperArg is the argument by which the binary started by Release knows
// its task.
const keeperArg = "--netlink-release-keeper"

// membarrierCmdGlobal is MEMBARRIER_CMD_GLOBAL: returns after an RCU grace
// period (synchronize_rcu).
const membarrierCmdGlobal = 1

// leavesWork reports whether committing b leaves the kernel work that
// waits for a grace period: anything but creating tables, sets, rules and
// elements (a create-if-absent of an existing chain leaves some). The
// rule index's destroys of keys are left out, as in frees: most of those
// keys are absent, which frees nothing.
func (b *Batch) leavesWork() bool {
	for i, r := range b.ops {
		switch r.kind {
		case OpTableAdd, OpSetAdd, OpSetElemAdd, OpRuleAppend, OpRuleInsert, OpChainUserAdd:
		case OpSetElemDel:
			if !strings.HasPrefix(b.Op(i).Set, IndexSet("")) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// keeperAddr is the abstract unix socket a keeper takes sockets on.
var keeperAddr = "\x00xdptables-netlink-keeper"

// Release closes c like Close, without waiting for the kernel's work: when
// a keeper is alive in the namespace it takes the sockets; otherwise, when
// a transaction committed on c left the kernel memory to free after a
// grace period, a keeper is started for them. Release is for a process
// that exits right after it (a keeper it started is reaped when it has).
// When no keeper can take the sockets, Release is Close.
func (c *Conn) Release() error { return Release(c) }

// Release releases the connections cs together, as Conn.Release does one
// (nil and closed ones are skipped): one keeper takes all their sockets,
// started when a transaction committed on any of them left work. A
// process that reads through a second connection (a parser's lookups)
// releases it with the one that committed: closed alone after that
// commit, it would wait for the grace period the other one hands over.
func Release(cs ...*Conn) error {
	var fds []int
	pending := false
	for _, c := range cs {
		if c == nil {
			continue
		}
		c.mu.Lock()
		if c.fd >= 0 {
			fds = append(fds, c.fd)
			pending = pending || c.pending
		}
		c.mu.Unlock()
		c.auxMu.Lock()
		if a := c.auxc; a != nil && a.c != nil && a.c.fd >= 0 {
			fds = append(fds, a.c.fd)
		}
		c.auxMu.Unlock()
	}
	if len(fds) == 0 {
		return nil
	}
	if !handToKeeper(fds) && pending {
		startKeeper(fds)
	}
	var err error
	for _, c := range cs {
		if c != nil {
			if cerr := c.Close(); err == nil {
				err = cerr
			}
		}
	}
	return err
}

// startKeeper starts this binary as the keeper of fds, which become its
// descriptors 3, 4, ...; it gets no other descriptor of ours. Its stdio is
// closed, and so are the descriptors this process inherited open across
// exec (a pipe at 5 or 7 from a shell or a caller's ExtraFiles): a caller
// reading one of them to EOF must not wait for the keeper, which lives as
// long as commands keep coming. Marking them close-on-exec changes only
// this process's descriptor table, and it is about to exit.
func startKeeper(fds []int) {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) != nil {
		// (before Linux 5.11)
		if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
			for _, e := range ents {
				if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= 3 {
					unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
				}
			}
		}
	}
	// (-1: closed in the child; ForkExec clears close-on-exec of those
	// it passes)
	files := []uintptr{^uintptr(0), ^uintptr(0), ^uintptr(0)}
	for _, f := range fds {
		files = append(files, uintptr(f))
	}
	_, _ = syscall.ForkExec("/proc/self/exe", []string{"xdptables", keeperArg}, &syscall.ProcAttr{Env: []string{}, Files: files})
}

// handToKeeper passes fds to a keeper of this namespace run by our own
// user (a socket of root's must not go to a process that merely took the
// name), reporting whether one took them.
func handToKeeper(fds []int) bool {
	// (non-blocking: a keeper whose backlog is full is no keeper)
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer unix.Close(s)
	if unix.Connect(s, &unix.SockaddrUnix{Name: keeperAddr}) != nil {
		return false
	}
	cred, err := unix.GetsockoptUcred(s, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || int(cred.Uid) != os.Geteuid() {
		return false
	}
	return unix.Sendmsg(s, []byte{1}, unix.UnixRights(fds...), nil, 0) == nil
}

// IsReleaseKeeper reports whether args (os.Args) are those Release starts
// this binary with; the program should then call KeepReleased and exit.
func IsReleaseKeeper(args []string) bool {
	return len(args) == 2 && args[1] == keeperArg
}

// KeepReleased waits for an RCU grace period, taking meanwhile the sockets
// of other commands that end (handToKeeper), and then one more grace
// period for those; the sockets close when the process exits.
func KeepReleased() {
	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err == nil && (unix.Bind(ln, &unix.SockaddrUnix{Name: keeperAddr}) != nil || unix.Listen(ln, 64) != nil) {
		// (another keeper has the name: it takes the others' sockets)
		unix.Close(ln)
		err = syscall.EADDRINUSE
	}
	if err != nil {
		ln = -1
	}
	keep(ln, func() {
		// (an error, e.g. with nohz_full, leaves the wait to the close)
		_, _, _ = unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdGlobal, 0, 0)
	})
}

// keep runs the keeper's rounds on listening socket ln (-1: none): a
// grace period (wait), then the sockets that arrived meanwhile are taken;
// when there were any, another round. A socket taken is closed after the
// round that follows it, having waited its own grace period: under a loop
// of commands the keeper lives as long as the loop, and must not hold the
// sockets of all of them (two or three descriptors a command, up to
// RLIMIT_NOFILE). A connection is closed once it has delivered or its
// sender has gone; one whose sender has not sent yet stays for the next
// round (or until the process exits, with what it then carries).
func keep(ln int, wait func()) (taken int) {
	var conns, held []int
	oob := make([]byte, unix.CmsgSpace(4*8))
	for {
		wait()
		// (those taken before this wait have waited a grace period)
		for _, f := range held {
			unix.Close(f)
		}
		held = held[:0]
		if ln < 0 {
			return taken
		}
		before := taken
		for {
			c, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		open := conns[:0]
		for _, c := range conns {
			done := false
			for {
				n, oobn, _, _, err := unix.Recvmsg(c, make([]byte, 1), oob, 0)
				if err != nil {
					break // (nothing more yet)
				}
				if n == 0 && oobn == 0 { // (the sender has gone)
					done = true
					break
				}
				msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
				for _, m := range msgs {
					fds, _ := unix.ParseUnixRights(&m)
					held = append(held, fds...)
					taken += len(fds)
				}
				// (a sender sends once: handToKeeper)
				done = true
			}
			if done {
				unix.Close(c)
			} else {
				open = append(open, c)
			}
		}
		conns = open
		if taken == before {
			return taken
		}
	}
}
