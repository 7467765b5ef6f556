package kernel

import (
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
// all of it in close(2).
//
// Release lets a process that is about to exit leave that wait to a child
// instead: the child (this binary again, see IsReleaseKeeper) inherits the
// sockets, waits for a grace period of its own (membarrier), by when the
// kernel's work is done or nearly, and exits, closing them. The commit
// mutex is then held only briefly, so a next command is not kept waiting
// either. Nothing about the ruleset is pending: the change is committed and
// visible before Release; only the freeing of memory is.

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

// Release closes c like Close. When a transaction committed on c left the
// kernel memory to free after a grace period, the sockets are handed to a
// child process that closes them once that is done, so that the caller
// does not wait; Release is for a process that exits right after it (the
// child is reaped when it has). When the child cannot be started, Release
// is Close.
func (c *Conn) Release() error {
	c.mu.Lock()
	pending, fd := c.pending, c.fd
	c.mu.Unlock()
	if pending && fd >= 0 {
		files := []uintptr{^uintptr(0), ^uintptr(0), ^uintptr(0), uintptr(fd)}
		c.auxMu.Lock()
		if a := c.auxc; a != nil && a.c != nil && a.c.fd >= 0 {
			files = append(files, uintptr(a.c.fd))
		}
		c.auxMu.Unlock()
		// (-1: closed in the child; the sockets become its 3 and 4)
		_, _ = syscall.ForkExec("/proc/self/exe", []string{"xdptables", keeperArg}, &syscall.ProcAttr{Env: []string{}, Files: files})
	}
	return c.Close()
}

// IsReleaseKeeper reports whether args (os.Args) are those Release starts
// this binary with; the program should then call KeepReleased and exit.
func IsReleaseKeeper(args []string) bool {
	return len(args) == 2 && args[1] == keeperArg
}

// KeepReleased waits for an RCU grace period; the sockets Release handed
// over close when the process exits.
func KeepReleased() {
	// (an error, e.g. with nohz_full, leaves the wait to the close)
	_, _, _ = unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdGlobal, 0, 0)
}
