package setengine

import (
	"errors"
	"io"

	"github.com/google/nftables"

	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// Streamed list and save: the members of a set are decoded and printed
// one by one, never held as entries. The header comes first and
// depends on all of them (the number of members, and the hashsize and
// "Size in memory" ipset's hash table would have, ipset.Footprint), so
// one set's members are kept as keys (sets ipset.FastMembers prints) or
// as printed text until the header is written. Sorted output needs all
// entries and takes the general path (ok false).
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
		// The header (its hashsize and "Size in memory", which follow
		// from the members' places in ipset's hash table, and the
		// number of members) needs every member first: they are kept
		// (their keys, or their printed text) until it is written.
		want := ipset.WantMembers(c)
		if !want && !ipset.MembersNeedCount(c) {
			st.WriteSetHead(w, c, s, i, 0) // the name alone
			continue
		}
		fp := s.NewFootprint()
		buf.Reset()
		keys.reset()
		var err error
		again := false
		// (wildcard entries are printed after the others: ListOrder)
		var held []*ipset.Entry
		if fast {
			// Only the keys are kept: a few bytes a member instead
			// of its text.
			kl := ipset.MemberKeyLen(s)
			err = e.eachEntry(fam, s, func() { keys.reset(); fp.Reset() }, func(el *nftables.SetElement) error {
				if len(el.Key) >= kl {
					fp.AddKey(el.Key[:kl])
					if want {
						keys.add(el.Key[:kl])
					}
				}
				return nil
			})
		} else {
			// The printed text is kept up to textLimit; past it the
			// members are read again after the header, printed as
			// they come (a large set then costs a second dump, not
			// its text in memory).
			err = e.eachEntry(fam, s, func() { buf.Reset(); fp.Reset(); again = false; held = held[:0] }, func(el *nftables.SetElement) error {
				if en, ok := s.DecodeEntry(*el); ok {
					fp.AddEntry(en)
					if want && !again && s.HeldBack(en) {
						held = append(held, en)
					} else if want && !again {
						ipset.WriteMember(&buf, c, s, en)
						if buf.Len() > textLimit {
							buf.Reset()
							again = true
						}
					}
				}
				return nil
			})
		}
		if err != nil {
			return kernelErr(err), true
		}
		s.ShowFootprint(fp)
		if !st.WriteSetHead(w, c, s, i, fp.Len()) {
			continue
		}
		if again {
			// What was written cannot be taken back: a dump the kernel
			// restarts (the set changed meanwhile) after that is an
			// error.
			flushed, lost := false, false
			held = held[:0]
			err := e.eachEntry(fam, s, func() { lost = lost || flushed; buf.Reset(); held = held[:0] }, func(el *nftables.SetElement) error {
				if lost {
					return errors.New("set changed while it was listed")
				}
				if en, ok := s.DecodeEntry(*el); ok && s.HeldBack(en) {
					held = append(held, en)
				} else if ok {
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
		}
		if fast {
			kl := ipset.MemberKeyLen(s)
			keys.each(kl, func(k []byte) {
				line, _ = ipset.AppendMember(line[:0], c, s, k)
				buf.Write(line)
				if buf.Len() > 64<<10 {
					buf.flush(w)
				}
			})
		}
		for _, en := range ipset.SortHeldBack(s, held) {
			ipset.WriteMember(&buf, c, s, en)
		}
		buf.flush(w)
		ipset.WriteSetEnd(w, c)
		buf.Reset()
	}
	ipset.WriteEnd(w, c)
	return nil, true
}

// textLimit is the most printed text of one set List keeps while it
// counts the set's members for the header.
const textLimit = 8 << 20

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
