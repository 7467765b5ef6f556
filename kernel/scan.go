package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrDumpInterrupted says a rule dump that ScanRules was streaming was
// interrupted by a ruleset change (or overran the receive buffer): what
// fn saw is not one consistent state. It wraps ErrGenerationChanged;
// read again from the start.
var ErrDumpInterrupted = fmt.Errorf("rule dump interrupted: %w", ErrGenerationChanged)

// ScanRules dumps the rules of one chain of our table in chain order, or
// of every chain when chain is "", and calls fn for each rule as soon as
// the datagram holding it arrives: nothing is collected. The Rule, its
// UserData and everything Decode gives are only valid during the call
// (they point into the receive buffer); Clone keeps a rule. An error from
// fn ends the dump (the rest is read and dropped) and is returned. A
// missing chain gives no rules and no error.
//
// When the kernel interrupts the dump (the ruleset changed under it, or
// the receive buffer overran), what fn saw is not one state: restart is
// called, for the caller to drop it, and the dump starts over. A nil
// restart makes ScanRules return ErrDumpInterrupted instead.
func (c *Conn) ScanRules(fam Family, chain string, restart func(), fn func(r *Rule) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for attempt := 0; ; attempt++ {
		fnErr, err := c.scanRulesOnce(fam, chain, fn)
		if err == nil {
			return fnErr
		}
		if err == ErrDumpInterrupted {
			if restart == nil {
				return err
			}
			if attempt < 16 {
				restart()
				continue
			}
			err = fmt.Errorf("netlink dump kept being interrupted: %w", ErrGenerationChanged)
		}
		what := "list rules"
		if chain != "" {
			what += " of chain " + chain
		}
		return fmt.Errorf("%s: %w", what, err)
	}
}

// scanRulesOnce runs one dump: fnErr is fn's error (or a rule that could
// not be parsed), err the dump's.
func (c *Conn) scanRulesOnce(fam Family, chain string, fn func(r *Rule) error) (fnErr, err error) {
	var e encoder
	off := e.begin(nftType(unix.NFT_MSG_GETRULE), unix.NLM_F_DUMP, fam, 0)
	e.str(unix.NFTA_RULE_TABLE, TableName)
	if chain != "" {
		e.str(unix.NFTA_RULE_CHAIN, chain)
	}
	e.end(off)
	if e.err != nil {
		return nil, e.err
	}
	seq := c.nextSeq(1)
	binary.NativeEndian.PutUint32(e.buf[8:12], seq)
	if err := c.send(e.buf); err != nil {
		return nil, err
	}
	var (
		intr, overrun bool
		r             Rule
		lastChain     string
	)
	for {
		b, err := c.recvRaw()
		if err == unix.ENOBUFS {
			overrun = true
			continue
		}
		if err == errTruncated {
			// the lost part may have held NLMSG_DONE: read the rest
			// of the dump without waiting, and start over
			c.drain()
			return nil, ErrDumpInterrupted
		}
		if err != nil {
			return nil, fmt.Errorf("netlink receive: %w", err)
		}
		for len(b) >= unix.NLMSG_HDRLEN {
			l := int(binary.NativeEndian.Uint32(b[0:4]))
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return nil, fmt.Errorf("netlink parse: %w", syscall.EINVAL)
			}
			m := syscall.NetlinkMessage{Data: b[unix.NLMSG_HDRLEN:l]}
			m.Header.Len = uint32(l)
			m.Header.Type = binary.NativeEndian.Uint16(b[4:6])
			m.Header.Flags = binary.NativeEndian.Uint16(b[6:8])
			m.Header.Seq = binary.NativeEndian.Uint32(b[8:12])
			b = b[min(nlmAlign(l), len(b)):]
			if m.Header.Seq != seq {
				continue // left over from an earlier, abandoned exchange
			}
			if m.Header.Flags&unix.NLM_F_DUMP_INTR != 0 {
				intr = true
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if errno, _, text := nlError(m); errno != 0 {
					return nil, withText(errno, text)
				}
			case unix.NLMSG_DONE:
				if len(m.Data) >= 4 {
					if code := int32(binary.NativeEndian.Uint32(m.Data[:4])); code < 0 {
						return nil, unix.Errno(-code)
					}
				}
				if intr || overrun {
					return nil, ErrDumpInterrupted
				}
				return fnErr, nil
			case nftType(unix.NFT_MSG_NEWRULE):
				if fnErr != nil || intr || overrun {
					continue // read to the end, without looking
				}
				ok, err := parseRule(fam, m.Data, &r, &lastChain)
				if err != nil {
					fnErr = err
					continue
				}
				if ok {
					r.conn = c
					fnErr = fn(&r)
				}
			}
		}
	}
}

// recvRaw reads one datagram into the connection's buffer and returns it;
// it is overwritten by the next receive. Dump datagrams are at most 32 KiB
// (the kernel's cap), so the 64 KiB buffer takes them without asking for
// the size first; a larger one would be cut off: that is reported as
// errTruncated, with the buffer grown to fit it the next time.
func (c *Conn) recvRaw() ([]byte, error) {
	for {
		n, _, err := unix.Recvfrom(c.fd, c.rbuf, unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n > len(c.rbuf) {
			c.rbuf = make([]byte, max(n, 64<<10))
			return nil, errTruncated
		}
		return c.rbuf[:n], nil
	}
}

// errTruncated says a datagram did not fit the receive buffer.
var errTruncated = errors.New("netlink datagram truncated")

// parseRule fills r from a NEWRULE payload, its slices pointing into data;
// it reports false for a rule of another table. lastChain keeps the
// previous chain name so that a chain's rules share one string.
func parseRule(fam Family, data []byte, r *Rule, lastChain *string) (bool, error) {
	if len(data) < 4 {
		return false, fmt.Errorf("decode rule: short nfnetlink message")
	}
	*r = Rule{Family: fam}
	ours := false
	ok := eachAttr(data[4:], func(t uint16, v []byte) bool {
		switch t {
		case unix.NFTA_RULE_TABLE:
			ours = bytes.Equal(trimNul(v), []byte(TableName))
		case unix.NFTA_RULE_CHAIN:
			name := trimNul(v)
			if string(name) != *lastChain {
				*lastChain = string(name)
			}
			r.Chain = *lastChain
		case unix.NFTA_RULE_HANDLE:
			r.Handle = be64(v)
		case unix.NFTA_RULE_POSITION:
			r.Position = be64(v)
		case unix.NFTA_RULE_USERDATA:
			r.UserData = v
		case unix.NFTA_RULE_EXPRESSIONS:
			r.rawExprs = v
		}
		return true
	})
	if !ok {
		return false, fmt.Errorf("decode rule: malformed attributes")
	}
	return ours, nil
}

func trimNul(v []byte) []byte {
	if i := bytes.IndexByte(v, 0); i >= 0 {
		return v[:i]
	}
	return v
}

// Clone returns a copy of r that owns its bytes (one allocation for the
// userdata and the expressions), not decoded yet.
func (r *Rule) Clone() Rule {
	out := Rule{Family: r.Family, Chain: r.Chain, Handle: r.Handle, Position: r.Position, conn: r.conn}
	buf := make([]byte, len(r.UserData)+len(r.rawExprs))
	n := copy(buf, r.UserData)
	copy(buf[n:], r.rawExprs)
	if r.UserData != nil {
		out.UserData = buf[:n:n]
	}
	if r.rawExprs != nil {
		out.rawExprs = buf[n:]
	}
	return out
}

// arenaChunk is the size of the chunks CloneTo allocates.
const arenaChunk = 64 << 10

// CloneTo is Clone with r's bytes appended to the arena *a: rules
// read in a row share one allocation per chunk instead of one each, and
// a caller done with every rule cloned into *a may truncate it to reuse
// its last chunk. A rule that does not fit the chunk's room starts a new
// chunk; the rules in the old one keep it.
func (r *Rule) CloneTo(a *[]byte) Rule {
	out := Rule{Family: r.Family, Chain: r.Chain, Handle: r.Handle, Position: r.Position, conn: r.conn}
	n := len(r.UserData) + len(r.rawExprs)
	if cap(*a)-len(*a) < n {
		*a = make([]byte, 0, max(n, arenaChunk))
	}
	start := len(*a)
	*a = append(*a, r.UserData...)
	mid := len(*a)
	*a = append(*a, r.rawExprs...)
	end := len(*a)
	if r.UserData != nil {
		out.UserData = (*a)[start:mid:mid]
	}
	if r.rawExprs != nil {
		out.rawExprs = (*a)[mid:end:end]
	}
	return out
}
