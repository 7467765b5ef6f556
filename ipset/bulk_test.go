package ipset

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
)

func collect(seq func(func(*nftables.SetElement) bool)) []nftables.SetElement {
	var out []nftables.SetElement
	for el := range seq {
		c := *el
		c.Key = append([]byte(nil), el.Key...)
		out = append(out, c)
	}
	return out
}

func flat(ns NftSet) []nftables.SetElement {
	var out []nftables.SetElement
	for _, e := range ns.Elems {
		for _, p := range e.Parts {
			p.Key = append([]byte(nil), p.Key...)
			out = append(out, p)
		}
	}
	return out
}

// randomElem is an element argument of a type, often nested or
// repeated (the address space is small).
func randomElem(r *rand.Rand, typ string, v6 bool) string {
	addr := func(bits int) string {
		if v6 {
			return fmt.Sprintf("2001:db8::%x:%x/%d", r.IntN(4), r.IntN(64), 96+bits)
		}
		return fmt.Sprintf("10.%d.%d.%d/%d", r.IntN(2), r.IntN(4), r.IntN(256), bits)
	}
	host := func() string { return strings.Split(addr(32), "/")[0] }
	if r.IntN(40) == 0 {
		// more separators than the type has, or one at the end
		return host() + []string{",80", ",", ",1,2,3", ",tcp:80,"}[r.IntN(4)]
	}
	if r.IntN(30) == 0 {
		// the null address (the kernel refuses it as a key of some
		// types), an ICMP protocol of the other family
		null := "0.0.0.0"
		if v6 {
			null = "::"
		}
		switch typ {
		case "hash:ip", "hash:net":
			return null
		case "hash:ip,port":
			return []string{null + ",80", host() + ",icmp:ping", host() + ",icmpv6:ping"}[r.IntN(3)]
		case "hash:ip,mark":
			return null + ",0x1"
		case "hash:ip,mac":
			return null + ",02:00:00:00:00:01"
		}
	}
	switch typ {
	case "hash:net":
		if r.IntN(10) == 0 && !v6 {
			return fmt.Sprintf("10.0.%d.%d-10.0.%d.%d", r.IntN(2), r.IntN(256), 2+r.IntN(2), r.IntN(256))
		}
		return addr([]int{1, 8, 14, 16, 20, 24, 28, 31, 32}[r.IntN(9)])
	case "hash:ip,port":
		return fmt.Sprintf("%s,%s:%d", host(), []string{"tcp", "udp", "sctp"}[r.IntN(3)], r.IntN(4))
	case "hash:ip,mark":
		return fmt.Sprintf("%s,0x%x", host(), r.IntN(3))
	case "hash:ip,mac":
		return fmt.Sprintf("%s,02:00:00:00:00:%02x", host(), r.IntN(3))
	case "hash:mac":
		return fmt.Sprintf("02:00:00:00:%02x:%02x", r.IntN(2), r.IntN(50))
	}
	if r.IntN(20) == 0 && !v6 {
		return fmt.Sprintf("10.0.0.%d/30", r.IntN(256))
	}
	return host()
}

// TestBulkMatchesModel: adds on a Bulk give the errors State.Exec gives,
// and the same nftables elements as the model's sets.
func TestBulkMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 120 {
		typ := []string{"hash:net", "hash:net", "hash:ip", "hash:ip,port", "hash:ip,mark", "hash:ip,mac", "hash:mac"}[round%7]
		v6 := round%3 == 1 && typ != "hash:mac"
		create := "create s " + typ + " maxelem 300"
		if v6 {
			create += " family inet6"
		}
		timeout := round%4 == 2
		if timeout {
			create += " timeout 100"
		}
		comment := round%5 == 3
		if comment {
			create += " comment"
		}
		exist := round%2 == 0
		st := &State{}
		c, perr := ParseArgs(SplitLine(create))
		if perr != nil {
			t.Fatal(perr)
		}
		if _, err := st.Exec(c); err != nil {
			t.Fatal(err)
		}
		s := st.Sets[0]
		if !BulkSupported(s) {
			t.Fatalf("%s: not supported", typ)
		}
		b := NewBulk(s)
		for i := range 400 {
			line := "add s " + randomElem(r, typ, v6)
			if typ == "hash:net" && r.IntN(4) == 0 {
				line += " nomatch"
			}
			if timeout && r.IntN(2) == 0 {
				line += fmt.Sprintf(" timeout %d", r.IntN(3))
			}
			if comment && r.IntN(2) == 0 {
				line += fmt.Sprintf(" comment \"c %d\"", r.IntN(3))
			}
			c, perr := ParseArgs(SplitLine(line))
			if perr != nil {
				t.Fatal(perr)
			}
			c.Opts.Exist = exist
			_, want := st.Exec(c)
			got, ok := b.Add(c.Args, exist)
			if !ok {
				t.Fatalf("%s: %s: not handled", create, line)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: line %d %q: error %v, model %v", create, i, line, got, want)
			}
		}
		if b.Len() != len(s.Entries) || b.HasNomatch() != s.HasNomatch() {
			t.Fatalf("%s: %d entries (nomatch %v), model %d (%v)", create, b.Len(), b.HasNomatch(), len(s.Entries), s.HasNomatch())
		}
		ns := s.NftSetsNoIDs()
		if got, want := collect(b.Entries()), flat(ns[len(ns)-1]); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: entries differ:\n%v\n%v", create, got, want)
		}
		if s.Type.Net() {
			if got, want := collect(b.Pieces()), flat(ns[0]); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: pieces differ (%d, model %d):\n%v\n%v", create, len(got), len(want), got, want)
			}
			if got, want := collect(b.NomatchPieces()), flat(s.Nomatch(false)); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: nomatch pieces differ (%d, model %d):\n%v\n%v", create, len(got), len(want), got, want)
			}
		}
	}
}

// TestBulkPiecesEdges: prefixes at the ends of the address space.
func TestBulkPiecesEdges(t *testing.T) {
	for _, tc := range []struct {
		fam   string
		elems []string
	}{
		{"inet", []string{"255.255.255.255", "255.255.255.0/24", "255.0.0.0/8", "0.0.0.0/1", "0.0.0.0", "128.0.0.0/1 nomatch"}},
		{"inet", []string{"128.0.0.0/1", "255.255.255.254/31", "255.255.255.255 nomatch"}},
		{"inet6", []string{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff::/16", "8000::/1", "::/1", "::", "::1/128 nomatch", "ffff:ffff:ffff:ffff::/64"}},
	} {
		st := &State{}
		c, _ := ParseArgs(SplitLine("create s hash:net family " + tc.fam))
		if _, err := st.Exec(c); err != nil {
			t.Fatal(err)
		}
		s := st.Sets[0]
		b := NewBulk(s)
		for _, e := range tc.elems {
			c, _ := ParseArgs(SplitLine("add s " + e))
			if _, err := st.Exec(c); err != nil {
				t.Fatal(err)
			}
			if err, ok := b.Add(c.Args, false); err != nil || !ok {
				t.Fatal(err, ok)
			}
		}
		ns := s.NftSetsNoIDs()
		if got, want := collect(b.Pieces()), flat(ns[0]); !reflect.DeepEqual(got, want) {
			t.Errorf("%v: pieces differ:\n%v\n%v", tc.elems, got, want)
		}
		if got, want := collect(b.NomatchPieces()), flat(s.Nomatch(false)); !reflect.DeepEqual(got, want) {
			t.Errorf("%v: nomatch pieces differ:\n%v\n%v", tc.elems, got, want)
		}
	}
}

// TestAppendMember: the fast member printer prints what DecodeEntry and
// WriteMember print.
func TestAppendMember(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, create := range []string{"create s hash:net", "create s hash:ip", "create s hash:net family inet6", "create s hash:ip family inet6"} {
		st := &State{}
		c, _ := ParseArgs(SplitLine(create))
		if _, err := st.Exec(c); err != nil {
			t.Fatal(err)
		}
		s := st.Sets[0]
		for _, line := range []string{"save s", "list s", "-o xml list s"} {
			lc, _ := ParseArgs(SplitLine(line))
			if !FastMembers(lc, s) {
				t.Fatalf("%s: %s: not fast", create, line)
			}
			for range 300 {
				key := make([]byte, r.IntN(24))
				for i := range key {
					key[i] = byte(r.IntN(256))
				}
				if len(key) >= 20 && r.IntN(2) == 0 {
					key[16], key[17], key[18], key[19] = byte(r.IntN(129)), 0, byte(r.IntN(2)), 0
				}
				if len(key) >= 8 && r.IntN(2) == 0 {
					key[4], key[5], key[6], key[7] = byte(r.IntN(33)), 0, byte(r.IntN(2)), 0
				}
				var want strings.Builder
				en, wok := s.DecodeEntry(nftables.SetElement{Key: key})
				if wok {
					WriteMember(&want, lc, s, en)
				}
				got, ok := AppendMember(nil, lc, s, key)
				if ok != wok || string(got) != want.String() {
					t.Fatalf("%s: %s: key %x: %q %v, want %q %v", create, line, key, got, ok, want.String(), wok)
				}
			}
		}
	}
}

// TestBulkLoad: entries read back from the elements a Bulk yields make
// the same Bulk.
func TestBulkLoad(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, create := range []string{"create s hash:net comment", "create s hash:net family inet6", "create s hash:ip,port"} {
		st := &State{}
		c, _ := ParseArgs(SplitLine(create))
		if _, err := st.Exec(c); err != nil {
			t.Fatal(err)
		}
		s := st.Sets[0]
		a := NewBulk(s)
		typ := strings.Fields(create)[2]
		for range 300 {
			line := "add s " + randomElem(r, typ, strings.Contains(create, "inet6"))
			if typ == "hash:net" && r.IntN(5) == 0 {
				line += " nomatch"
			}
			if strings.Contains(create, "comment") && r.IntN(2) == 0 {
				line += fmt.Sprintf(" comment c%d", r.IntN(3))
			}
			c, _ := ParseArgs(SplitLine(line))
			a.Add(c.Args, true)
		}
		b := NewBulk(s)
		for el := range a.Entries() {
			if !b.Load(el.Key, el.Comment, 0) {
				t.Fatalf("%s: Load refused %x", create, el.Key)
			}
		}
		if b.Load(make([]byte, 3), "", 0) {
			t.Errorf("%s: Load took a short key", create)
		}
		if !reflect.DeepEqual(collect(a.Entries()), collect(b.Entries())) || a.HasNomatch() != b.HasNomatch() {
			t.Errorf("%s: entries differ after Load", create)
		}
		if s.Type.Net() && !reflect.DeepEqual(collect(a.Pieces()), collect(b.Pieces())) {
			t.Errorf("%s: pieces differ after Load", create)
		}
	}
}

// modelDiff is diffSets' element diff between two states of one set:
// the elements of nftables set i to delete and to add.
func modelDiff(old, cur *Set, i int) (dels, adds []nftables.SetElement) {
	return elemDiff(old.NftSets()[i], cur.NftSets()[i])
}

// elemDiff is the element diff between two states of one nftables set.
func elemDiff(os, ns NftSet) (dels, adds []nftables.SetElement) {
	have, want := map[string]bool{}, map[string]bool{}
	for _, e := range os.Elems {
		have[e.ID] = true
	}
	for _, e := range ns.Elems {
		want[e.ID] = true
	}
	for _, e := range os.Elems {
		if !want[e.ID] {
			dels = append(dels, e.Parts...)
		}
	}
	for _, e := range ns.Elems {
		if !have[e.ID] {
			adds = append(adds, e.Parts...)
		}
	}
	return dels, adds
}

// TestBulkChanges: a Bulk loaded from the kernel's elements and then
// added to gives the general path's element diff.
func TestBulkChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for round := range 60 {
		create := []string{"create s hash:net comment", "create s hash:net family inet6 timeout 100", "create s hash:ip comment", "create s hash:net counters", "create s hash:net", "create s hash:net family inet6"}[round%6]
		st := &State{}
		c, _ := ParseArgs(SplitLine(create))
		if _, err := st.Exec(c); err != nil {
			t.Fatal(err)
		}
		s := st.Sets[0]
		typ := strings.Fields(create)[2]
		v6 := strings.Contains(create, "inet6")
		line := func() *Command {
			l := "add s " + randomElem(r, typ, v6)
			if typ == "hash:net" && r.IntN(5) == 0 {
				l += " nomatch"
			}
			if strings.Contains(create, "comment") && r.IntN(2) == 0 {
				l += fmt.Sprintf(" comment c%d", r.IntN(3))
			}
			if strings.Contains(create, "timeout") && r.IntN(2) == 0 {
				l += fmt.Sprintf(" timeout %d", r.IntN(3)*50)
			}
			c, _ := ParseArgs(SplitLine(l))
			c.Opts.Exist = true
			return c
		}
		for range 150 {
			st.Exec(line())
		}
		old := st.Clone()
		// what the kernel holds, read back
		b := NewBulk(s.HeaderOnly())
		for _, x := range old.Sets[0].NftSets()[len(old.Sets[0].NftSets())-1].Elems {
			el := x.Parts[0]
			if !b.Load(el.Key, el.Comment, uint32(el.Timeout/time.Second)) {
				t.Fatalf("Load refused %x", el.Key)
			}
		}
		for range 60 {
			c := line()
			_, want := st.Exec(c)
			got, ok := b.Add(c.Args, true)
			if !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: add: %v %v, model %v", create, got, ok, want)
			}
		}
		cur := st.Sets[0]
		n := len(cur.NftSets())
		wd, wa := modelDiff(old.Sets[0], cur, n-1)
		if gd, ga := collect(b.EntryChanges(true)), collect(b.EntryChanges(false)); !reflect.DeepEqual(gd, flatParts(wd)) || !reflect.DeepEqual(ga, flatParts(wa)) {
			t.Fatalf("%s: entry changes:\n%v\n%v\nmodel\n%v\n%v", create, gd, ga, wd, wa)
		}
		if s.Type.Net() {
			wd, wa := modelDiff(old.Sets[0], cur, 0)
			if gd, ga := collect(b.PieceChanges(true)), collect(b.PieceChanges(false)); !reflect.DeepEqual(gd, flatParts(wd)) || !reflect.DeepEqual(ga, flatParts(wa)) {
				t.Fatalf("%s: piece changes (%d/%d, model %d/%d):\n%v\n%v\nmodel\n%v\n%v", create, len(gd), len(ga), len(wd), len(wa), gd, ga, wd, wa)
			}
			wd, wa = elemDiff(old.Sets[0].Nomatch(true), cur.Nomatch(true))
			if gd, ga := collect(b.NomatchPieceChanges(true)), collect(b.NomatchPieceChanges(false)); !reflect.DeepEqual(gd, flatParts(wd)) || !reflect.DeepEqual(ga, flatParts(wa)) {
				t.Fatalf("%s: nomatch piece changes (%d/%d, model %d/%d):\n%v\n%v\nmodel\n%v\n%v", create, len(gd), len(ga), len(wd), len(wa), gd, ga, wd, wa)
			}
		}
	}
}

func flatParts(ps []nftables.SetElement) []nftables.SetElement {
	var out []nftables.SetElement
	for _, p := range ps {
		p.Key = append([]byte(nil), p.Key...)
		out = append(out, p)
	}
	return out
}

// TestTopLayout: a plain hash:net's lookup set holds one interval per
// top-level entry, its start counting the entries nested in it, except
// in trees that hold a nomatch entry; the layout is kept in the header.
func TestTopLayout(t *testing.T) {
	st := &State{}
	for _, l := range []string{"create s hash:net", "add s 10.0.0.0/8", "add s 10.1.0.0/16", "add s 10.1.2.3",
		"add s 10.200.0.0/16", "add s 11.0.0.0/8", "add s 192.168.0.0/24", "add s 192.168.7.0/24",
		"add s 192.168.7.128/25", "add s 192.168.7.130 nomatch"} {
		c, perr := ParseArgs(SplitLine(l))
		if perr != nil {
			t.Fatal(perr)
		}
		if _, err := st.Exec(c); err != nil {
			t.Fatal(l, err)
		}
	}
	s := st.Sets[0]
	if !s.TopLayout {
		t.Fatal("a plain hash:net is not created with the top-level layout")
	}
	var got []string
	for _, e := range s.NftSetsNoIDs()[0].Elems {
		for _, p := range e.Parts {
			a, _ := netip.AddrFromSlice(p.Key)
			got = append(got, fmt.Sprintf("%v/%v/%q", a, p.IntervalEnd, p.Comment))
		}
	}
	want := []string{
		`10.0.0.0/false/"3"`, `11.0.0.0/true/""`, // 10.0.0.0/8 and its three
		`11.0.0.0/false/""`, `12.0.0.0/true/""`, // adjacent, not merged
		`192.168.0.0/false/""`, `192.168.1.0/true/""`,
		// a tree with a nomatch entry keeps its pieces
		`192.168.7.0/false/""`, `192.168.7.128/true/""`,
		`192.168.7.128/false/""`, `192.168.7.130/true/""`,
		`192.168.7.131/false/""`, `192.168.8.0/true/""`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lookup elements:\n%v\nwant\n%v", got, want)
	}
	h, ok := ParseHeader(LookupSetName("s"), s.Header())
	if !ok || !h.TopLayout || h.Header() != s.Header() {
		t.Errorf("header %q: parsed %v %+v", s.Header(), ok, h)
	}
	// A header stored without the word (older builds): pieces.
	old, ok := ParseHeader(LookupSetName("s"), strings.Replace(s.Header(), " top", "", 1))
	if !ok || old.TopLayout {
		t.Fatalf("old header: %v %+v", ok, old)
	}
	if _, ok := ParseHeader(LookupSetName("s"), "ipset hash:net family inet hashsize 1024 maxelem 65536 comment top"); ok {
		t.Error("a set with comments cannot have the top-level layout")
	}
	for _, l := range []string{"create c hash:net comment", "create t hash:net timeout 5", "create p hash:net,port"} {
		c, _ := ParseArgs(SplitLine(l))
		if _, err := st.Exec(c); err != nil {
			t.Fatal(err)
		}
		if st.Sets[len(st.Sets)-1].TopLayout {
			t.Errorf("%s: top-level layout", l)
		}
	}
}

// sortByTop14 orders as slices.Sort: keys spread over the space, keys
// that all share their top bits, duplicates, and sizes around the cut
// to slices.Sort.
func TestSortByTop16(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		n    int
		mask uint64
	}{{100, ^uint64(0)}, {1<<12 - 1, ^uint64(0)}, {1 << 12, ^uint64(0)}, {100000, ^uint64(0)},
		{50000, 0x0000_ffff_ffff_ffff}, {50000, 0x0003_0000_0000_00ff}, {20000, 0xff00_0000_0000_0000}} {
		o := make([]uint64, tc.n)
		for i := range o {
			o[i] = rnd.Uint64() & tc.mask
		}
		want := slices.Clone(o)
		slices.Sort(want)
		sortByTop14(o)
		if !slices.Equal(o, want) {
			t.Fatalf("n %d mask %#x: not sorted as slices.Sort", tc.n, tc.mask)
		}
	}
}

// TestNestedSet: a hash:net of a large maxelem keeps the counts of its
// top-level intervals in the set of nested counts, not in the lookup
// set's start elements; the Bulk (restore) writes and changes both as
// the model's sets and its diff do.
func TestNestedSet(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	for round := range 24 {
		v6 := round%2 == 1
		create := "create s hash:net maxelem 200000"
		if v6 {
			create += " family inet6"
		}
		st := &State{}
		c, _ := ParseArgs(SplitLine(create))
		if _, err := st.Exec(c); err != nil {
			t.Fatal(err)
		}
		s := st.Sets[0]
		if !s.TopLayout || !s.NestedSet || !s.Sharded() {
			t.Fatalf("%s: top %v nested %v shards %d", create, s.TopLayout, s.NestedSet, s.Shards)
		}
		h, ok := ParseHeader(LookupSetName("s"), s.Header())
		if !ok || !h.NestedSet || h.Header() != s.Header() {
			t.Fatalf("header %q: parsed %v %+v", s.Header(), ok, h)
		}
		line := func() *Command {
			l := "add s " + randomElem(r, "hash:net", v6)
			if round%3 == 2 && r.IntN(6) == 0 {
				l += " nomatch"
			}
			c, _ := ParseArgs(SplitLine(l))
			c.Opts.Exist = true
			return c
		}
		for range 200 {
			st.Exec(line())
		}
		roleOf := func(ss *Set, role Role) NftSet {
			for _, n := range ss.NftSets() {
				if n.Role == role {
					return n
				}
			}
			t.Fatalf("no set of role %d", role)
			return NftSet{}
		}
		look, nested := roleOf(s, RoleLookup), roleOf(s, RoleNested)
		counted := 0
		for _, e := range look.Elems {
			if e.Parts[0].Comment != "" {
				t.Fatalf("%s: a start element carries a count: %+v", create, e.Parts[0])
			}
		}
		for _, e := range nested.Elems {
			n, ok := TopCount(e.Parts[0].Comment)
			if !ok || n == 0 {
				t.Fatalf("%s: nested element %+v", create, e.Parts[0])
			}
			counted += n
		}
		if counted == 0 && round%3 != 2 {
			// (with nomatch entries every tree may hold one)
			t.Fatalf("%s: no tree has nested entries (the test adds nested prefixes)", create)
		}
		old := st.Clone()
		b := NewBulk(s.HeaderOnly())
		for _, ns := range old.Sets[0].NftSets() {
			if ns.Role != RoleEntries {
				continue
			}
			for _, x := range ns.Elems {
				if !b.Load(x.Parts[0].Key, x.Parts[0].Comment, 0) {
					t.Fatalf("Load refused %x", x.Parts[0].Key)
				}
			}
		}
		for range 80 {
			c := line()
			_, want := st.Exec(c)
			if got, ok := b.Add(c.Args, true); !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: add: %v %v, model %v", create, got, ok, want)
			}
		}
		cur := st.Sets[0]
		wd, wa := elemDiff(roleOf(old.Sets[0], RoleLookup), roleOf(cur, RoleLookup))
		if gd, ga := collect(b.PieceChanges(true)), collect(b.PieceChanges(false)); !reflect.DeepEqual(gd, flatParts(wd)) || !reflect.DeepEqual(ga, flatParts(wa)) {
			t.Fatalf("%s: piece changes (%d/%d, model %d/%d)", create, len(gd), len(ga), len(wd), len(wa))
		}
		wd, wa = elemDiff(roleOf(old.Sets[0], RoleNested), roleOf(cur, RoleNested))
		if gd, ga := collect(b.NestedChanges(true)), collect(b.NestedChanges(false)); !reflect.DeepEqual(gd, flatParts(wd)) || !reflect.DeepEqual(ga, flatParts(wa)) {
			t.Fatalf("%s: nested changes:\n%v\n%v\nmodel\n%v\n%v", create, gd, ga, wd, wa)
		}
		if len(wd)+len(wa) == 0 && round%3 != 2 {
			t.Fatalf("%s: the adds changed no count", create)
		}
		// filled whole, as a restore into a new set writes it
		if got, want := collect(b.Pieces()), flat(roleOf(cur, RoleLookup)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: pieces differ (%d, model %d)", create, len(got), len(want))
		}
		if got, want := collect(b.NestedElems()), flat(roleOf(cur, RoleNested)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: nested elements differ:\n%v\n%v", create, got, want)
		}
		if m, _, _ := b.FillBound(NestedSetName("s")); m < len(roleOf(cur, RoleNested).Elems) {
			t.Fatalf("%s: FillBound %d < %d", create, m, len(roleOf(cur, RoleNested).Elems))
		}
	}
	// a small set keeps its counts in the lookup set (one nftables set fewer)
	st := &State{}
	c, _ := ParseArgs(SplitLine("create small hash:net"))
	st.Exec(c)
	if s := st.Sets[0]; !s.TopLayout || s.NestedSet {
		t.Errorf("small set: top %v nested %v", s.TopLayout, s.NestedSet)
	}
	if _, ok := ParseHeader(LookupSetName("s"), "ipset hash:net family inet hashsize 1024 maxelem 65536 bucketsize 12 nested"); ok {
		t.Error("a header with nested but not top parsed")
	}
}
