package setengine

import (
	"errors"
	"io"

	"github.com/google/nftables"

	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// Streamed list and save. ipset streams its listing; so does this: the
// members of a set are decoded and printed one by one, never held as
// entries. Where the header counts the members (plain, xml) one set's
// printed members are kept as text until the count is known; save goes
// straight to w. Sorted output needs all entries and takes the general
// path (ok false).
func (e *Engine) List(c *ipset.Command, w ipset.StringWriter) (err error, ok bool) {
	if c.Opts.Sorted {
		return nil, false
	}
	o := scope([]*ipset.Command{c})
	o.elems = false
	st, lerr := e.load(o)
	if lerr != nil {
		return kernelErr(lerr), true
	}
	sets, ierr := st.Select(c)
	if ierr != nil {
		return ierr, true
	}
	ipset.WriteStart(w, c)
	// (buf and keys are reused from set to set: with thousands of small
	// sets a fresh first piece per set was most of the work)
	var buf chunks
	var keys keyPages
	var line []byte
	for i, s := range sets {
		// Common sets print their members straight from the keys.
		fast := ipset.FastMembers(c, s)
		fam := kernel.IPv4
		if s.Family == ipset.Inet6 {
			fam = kernel.IPv6
		}
		entries := s.Entries
		if s.Type.Bitmap {
			// At most 65536 members, which ipset lists in order.
			if err := e.readEntries(fam, s); err != nil {
				return kernelErr(err), true
			}
			entries = s.Sorted()
		}
		if s.Type.List || s.Type.Bitmap {
			// Small, and read already (list:set in stored order).
			if st.WriteSetHead(w, c, s, i, len(entries)) {
				for _, en := range entries {
					ipset.WriteMember(w, c, s, en)
				}
				ipset.WriteSetEnd(w, c)
			}
			continue
		}
		if !ipset.WantMembers(c) {
			n := 0
			switch {
			case ipset.MembersNeedCount(c) && s.Sharded() && !s.HasTimeout:
				// The stored count is exact without timeouts.
				var err error
				if n, err = e.storedCount(fam, s); err != nil {
					return kernelErr(err), true
				}
			case ipset.MembersNeedCount(c):
				if err := e.eachEntry(fam, s, func() { n = 0 }, func(el *nftables.SetElement) error {
					if _, ok := s.DecodeEntry(*el); ok {
						n++
					}
					return nil
				}); err != nil {
					return kernelErr(err), true
				}
			}
			st.WriteSetHead(w, c, s, i, n)
			continue
		}
		count := -1 // the number of members, when known before the dump
		switch {
		case !ipset.MembersNeedCount(c):
			count = 0 // not printed
		case s.Sharded() && !s.HasTimeout && !fewShards(s):
			// The stored count is exact without timeouts. (A set with
			// few shards made holds few entries: counted as they come,
			// one dump less.)
			var err error
			if count, err = e.storedCount(fam, s); err != nil {
				return kernelErr(err), true
			}
		}
		if count >= 0 {
			// save, and sets whose count is known: header, then members
			// as they come. What was written cannot be taken back: a
			// dump the kernel restarts (the set changed meanwhile) after
			// that is an error.
			flushed, lost := false, false
			st.WriteSetHead(w, c, s, i, count)
			buf.Reset()
			err := e.eachEntry(fam, s, func() { lost = lost || flushed; buf.Reset() }, func(el *nftables.SetElement) error {
				if lost {
					return errors.New("set changed while it was saved")
				}
				if fast {
					var ok bool
					if line, ok = ipset.AppendMember(line[:0], c, s, el.Key); ok {
						buf.Write(line)
					}
				} else if en, ok := s.DecodeEntry(*el); ok {
					ipset.WriteMember(&buf, c, s, en)
				}
				if buf.Len() > 64<<10 {
					buf.flush(w)
					flushed = true
				}
				return nil
			})
			if err != nil {
				return kernelErr(err), true
			}
			buf.flush(w)
			ipset.WriteSetEnd(w, c)
			continue
		}
		n := 0
		buf.Reset()
		if fast {
			// Only the keys are kept until the count is known: a few
			// bytes a member instead of its text.
			kl := ipset.MemberKeyLen(s)
			keys.reset()
			err := e.eachEntry(fam, s, keys.reset, func(el *nftables.SetElement) error {
				if len(el.Key) >= kl {
					keys.add(el.Key[:kl])
				}
				return nil
			})
			if err != nil {
				return kernelErr(err), true
			}
			if st.WriteSetHead(w, c, s, i, keys.n) {
				keys.each(kl, func(k []byte) {
					line, _ = ipset.AppendMember(line[:0], c, s, k)
					buf.Write(line)
					if buf.Len() > 64<<10 {
						buf.flush(w)
					}
				})
				buf.flush(w)
				ipset.WriteSetEnd(w, c)
			}
			continue
		}
		err := e.eachEntry(fam, s, func() { n = 0; buf.Reset() }, func(el *nftables.SetElement) error {
			if en, ok := s.DecodeEntry(*el); ok {
				n++
				ipset.WriteMember(&buf, c, s, en)
			}
			return nil
		})
		if err != nil {
			return kernelErr(err), true
		}
		if st.WriteSetHead(w, c, s, i, n) {
			buf.flush(w)
			ipset.WriteSetEnd(w, c)
		}
		buf.Reset()
	}
	ipset.WriteEnd(w, c)
	return nil, true
}

// chunks is an output buffer in 1 MiB pieces: unlike one growing
// slice it never holds twice what it keeps while growing.
type chunks struct {
	full [][]byte
	cur  []byte
	n    int
}

const chunkSize = 1 << 20

func (c *chunks) WriteString(s string) (int, error) {
	for len(s) > 0 {
		if c.cur == nil || len(c.cur) == cap(c.cur) {
			c.next()
		}
		k := min(len(s), cap(c.cur)-len(c.cur))
		c.cur = append(c.cur, s[:k]...)
		s = s[k:]
		c.n += k
	}
	return len(s), nil
}

// Write is WriteString of a byte slice.
func (c *chunks) Write(b []byte) (int, error) {
	for len(b) > 0 {
		if c.cur == nil || len(c.cur) == cap(c.cur) {
			c.next()
		}
		k := min(len(b), cap(c.cur)-len(c.cur))
		c.cur = append(c.cur, b[:k]...)
		b = b[k:]
		c.n += k
	}
	return len(b), nil
}

// next starts a new piece.
func (c *chunks) next() {
	if c.cur != nil {
		c.full = append(c.full, c.cur)
	}
	size := chunkSize
	if c.full == nil {
		size = 128 << 10 // save flushes at 64 KiB
	}
	c.cur = make([]byte, 0, size)
}

func (c *chunks) Len() int { return c.n }

// Reset empties c; it keeps its first piece for what comes next.
func (c *chunks) Reset() {
	if len(c.full) > 0 {
		c.cur = c.full[0]
	}
	if c.cur != nil {
		c.cur = c.cur[:0]
	}
	c.full, c.n = nil, 0
}

// flush writes what c holds to w and empties c.
func (c *chunks) flush(w ipset.StringWriter) {
	write := func(b []byte) { w.WriteString(string(b)) }
	if bw, ok := w.(io.Writer); ok {
		write = func(b []byte) { bw.Write(b) }
	}
	for _, b := range c.full {
		write(b)
	}
	if c.cur != nil {
		write(c.cur)
	}
	c.Reset()
}

// keyPages keeps fixed-size keys in 1 MiB pages.
type keyPages struct {
	pages [][]byte
	n     int
}

// reset empties p; it keeps its first page for what comes next.
func (p *keyPages) reset() {
	if len(p.pages) > 0 {
		p.pages = p.pages[:1]
		p.pages[0] = p.pages[0][:0]
	}
	p.n = 0
}

func (p *keyPages) add(k []byte) {
	if len(p.pages) == 0 || cap(p.pages[len(p.pages)-1])-len(p.pages[len(p.pages)-1]) < len(k) {
		p.pages = append(p.pages, make([]byte, 0, chunkSize/len(k)*len(k)))
	}
	last := &p.pages[len(p.pages)-1]
	*last = append(*last, k...)
	p.n++
}

// each calls fn with every key (of kl bytes) in order.
func (p *keyPages) each(kl int, fn func([]byte)) {
	for _, pg := range p.pages {
		for i := 0; i+kl <= len(pg); i += kl {
			fn(pg[i : i+kl])
		}
	}
}
