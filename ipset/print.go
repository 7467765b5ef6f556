package ipset

import (
	"strconv"
	"strings"
)

// orderForListing puts list:set sets after all others, as ipset does.
func orderForListing(sets []*Set) []*Set {
	var out, lists []*Set
	for _, s := range sets {
		if s.Type.List {
			lists = append(lists, s)
		} else {
			out = append(out, s)
		}
	}
	return append(out, lists...)
}

// MemSize is the "Size in memory" ipset would report for s. It has no
// nftables equivalent; this estimate follows ipset's hash layout
// (header + buckets + per-entry size) closely enough for a reader.
func (st *State) MemSize(s *Set) int {
	switch {
	case s.Type.List:
		return 120 + 8*len(s.Entries)
	case s.Type.Bitmap:
		return 120 + 8*len(s.Entries)
	}
	per := 16
	if s.Family == Inet6 {
		per = 40
	}
	if s.HasTimeout {
		per += 8
	}
	if s.Counters {
		per += 16
	}
	if s.Comment {
		per += 8
	}
	return 200 + per*len(s.Entries) + 8*((len(s.Entries)+3)/4)
}

// Write prints the sets selected by c (list or save) from st.
func (st *State) Write(b *strings.Builder, c *Command, sets []*Set) {
	mode := c.Opts.Output
	if mode == "" {
		mode = OutputPlain
		if c.Op == OpSave {
			mode = OutputSave
		}
	}
	if mode == OutputXML {
		b.WriteString("<ipsets>\n")
	}
	for i, s := range sets {
		entries := s.Entries
		if c.Opts.Sorted {
			entries = s.Sorted()
		}
		switch mode {
		case OutputSave:
			if c.Opts.Names {
				b.WriteString(s.Name + "\n")
				continue
			}
			b.WriteString("create " + s.Name + " " + s.Type.Name + " " + strings.Join(s.HeaderOptions(), " ") + "\n")
			for _, en := range entries {
				b.WriteString("add " + s.Name + " " + s.FormatElem(en.Elem))
				if o := s.EntryOptions(en); len(o) > 0 {
					b.WriteString(" " + strings.Join(o, " "))
				}
				b.WriteString("\n")
			}
		case OutputPlain:
			if c.Opts.Names {
				b.WriteString(s.Name + "\n")
				continue
			}
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString("Name: " + s.Name + "\nType: " + s.Type.Name + "\nRevision: " + strconv.Itoa(s.Type.Revision) +
				"\nHeader: " + strings.Join(s.HeaderOptions(), " ") + "\nSize in memory: " + strconv.Itoa(st.MemSize(s)) +
				"\nReferences: " + strconv.Itoa(st.refs(s)) + "\nNumber of entries: " + strconv.Itoa(len(s.Entries)) + "\n")
			if c.Opts.Terse {
				continue
			}
			b.WriteString("Members:\n")
			for _, en := range entries {
				b.WriteString(s.FormatElem(en.Elem))
				if o := s.EntryOptions(en); len(o) > 0 {
					b.WriteString(" " + strings.Join(o, " "))
				}
				b.WriteString("\n")
			}
		case OutputXML:
			if c.Opts.Names {
				b.WriteString("<ipset name=\"" + s.Name + "\"/>\n")
				continue
			}
			b.WriteString("<ipset name=\"" + s.Name + "\">\n<type>" + s.Type.Name + "</type>\n<revision>" +
				strconv.Itoa(s.Type.Revision) + "</revision>\n<header>" + xmlOptions(s.HeaderOptions()) +
				"\n<memsize>" + strconv.Itoa(st.MemSize(s)) + "</memsize>\n<references>" + strconv.Itoa(st.refs(s)) +
				"</references>\n<numentries>" + strconv.Itoa(len(s.Entries)) + "</numentries>\n</header>\n")
			if !c.Opts.Terse {
				b.WriteString("<members>\n")
				for _, en := range entries {
					b.WriteString("<member><elem>" + s.FormatElem(en.Elem) + "</elem>" + xmlOptions(s.EntryOptions(en)) + "</member>\n")
				}
				b.WriteString("</members>\n")
			}
			b.WriteString("</ipset>\n")
		}
	}
	if mode == OutputXML {
		b.WriteString("</ipsets>\n")
	}
}

// flags are the options without a value.
var flags = map[string]bool{"counters": true, "comment": true, "skbinfo": true, "nomatch": true, "forceadd": true}

func xmlOptions(o []string) string {
	var b strings.Builder
	for i := 0; i < len(o); i++ {
		k := o[i]
		if flags[k] && (k != "comment" || i+1 >= len(o) || !strings.HasPrefix(o[i+1], "\"")) {
			b.WriteString("<" + k + "/>")
			continue
		}
		i++
		b.WriteString("<" + k + ">" + o[i] + "</" + k + ">")
	}
	return b.String()
}

// Select returns the sets a list/save command prints, in listing order.
func (st *State) Select(c *Command) ([]*Set, *Error) {
	if len(c.Args) > 0 {
		s := st.Find(c.Args[0])
		if s == nil {
			return nil, errorf(MsgNoSet)
		}
		return []*Set{s}, nil
	}
	return orderForListing(st.Sets), nil
}
