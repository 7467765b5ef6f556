package kernel

import (
	"bytes"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// A rule may keep its counter in a chain bound to it rather than among
// its own expressions: -m set on a list:set puts the rest of the rule,
// counter included, after the members' tests in the bound chain
// (translate). The counter is then the one of the bound chain's last
// rule (or of the chain that one jumps to, and so on). Reading it takes
// another dump, which may be asked for while a dump of the rule's own
// chain is under way (the rule is read back as it arrives): it goes
// through a second socket in the same network namespace.

// auxConn is the second socket of c, opened on first use.
type auxConn struct {
	once sync.Once
	c    *Conn
	err  error
}

// aux returns c's second socket, in the network namespace of c's.
func (c *Conn) aux() (*Conn, error) {
	c.auxMu.Lock()
	if c.auxc == nil {
		c.auxc = &auxConn{}
	}
	a := c.auxc
	c.auxMu.Unlock()
	a.once.Do(func() {
		// (c.mu may be held: a dump of c is under way; fd is set at
		// Open and changes only in Close)
		fd := c.fd
		// SIOCGSKNS: the namespace of the socket, whatever the
		// calling thread's is now
		ns, err := unix.IoctlRetInt(fd, unix.SIOCGSKNS)
		if err != nil {
			a.err = fmt.Errorf("namespace of the netlink socket: %w", err)
			return
		}
		defer unix.Close(ns)
		a.c, a.err = Open(WithNetNS(ns))
	})
	return a.c, a.err
}

// boundChainOf returns the bound chain a rule jumps to, if it has no
// counter of its own.
func (r *Rule) boundChainOf() (string, bool) {
	if r.conn == nil || !bytes.Contains(r.rawExprs, []byte("__chain")) {
		return "", false
	}
	hasCounter := false
	eachAttr(r.rawExprs, func(t uint16, elem []byte) bool {
		if t == unix.NFTA_LIST_ELEM && isCounter(elem) {
			hasCounter = true
			return false
		}
		return true
	})
	if hasCounter {
		return "", false
	}
	if name, ok := r.JumpTarget(); ok && IsBoundChainName(name) {
		return name, true
	}
	return "", false
}

// boundCounter returns the counter of the last rule of the bound chain
// (following its own bound chain when it has none), nil when there is
// none or it cannot be read.
func (c *Conn) boundCounter(fam Family, chain string) *Counters {
	a, err := c.aux()
	if err != nil {
		return nil
	}
	var last *Rule
	err = a.ScanRules(fam, chain, func() { last = nil }, func(r *Rule) error {
		k := r.Clone()
		k.conn = a
		last = &k
		return nil
	})
	if err != nil || last == nil {
		return nil
	}
	return last.CounterValues()
}
