package ipset

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestWildcardCommands: an entry with the wildcard flag stands for the
// names it is a prefix of in add, del and test, as ipset 7.17's kernel
// compares them (measured; testdata/ipset/wildcard.txt compares the
// same with ipset itself).
func TestWildcardCommands(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create w hash:net,iface", "", ""},
		{"add w 198.51.100.0/24,eth0", "", ""},
		{"add w 198.51.100.0/24,eth wildcard", "", ""},
		{"add w 198.51.100.0/24,eth1", "", "ipset v7.17: Element cannot be added to the set: it's already added\n"},
		{"add w 198.51.100.0/24,eth", "", "ipset v7.17: Element cannot be added to the set: it's already added\n"},
		{"add w 198.51.100.0/24,et wildcard", "", ""},
		{"add w 198.51.100.0/24,ethx wildcard", "", "ipset v7.17: Element cannot be added to the set: it's already added\n"},
		{"add -exist w 198.51.100.0/24,eth7 nomatch", "", ""},
		{"save w", "create w hash:net,iface family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0xf20c3f37\n" +
			"add w 198.51.100.0/24,eth0\nadd w 198.51.100.0/24,eth nomatch wildcard\nadd w 198.51.100.0/24,et wildcard\n", ""},
		{"test w 198.51.100.1,eth0", "Warning: 198.51.100.1,eth0 is in set w.\n", ""},
		{"test w 198.51.100.1,eth1", "", "ipset v7.17: 198.51.100.1,eth1 is NOT in set w.\n"},
		{"test w 198.51.100.1,etx", "Warning: 198.51.100.1,etx is in set w.\n", ""},
		{"test w 198.51.100.0/24,eth5 nomatch", "Warning: 198.51.100.0/24,eth5 is in set w.\n", ""},
		{"test w 198.51.100.1,eth wildcard", "", "ipset v7.17: Unknown argument: `wildcard'\nTry `ipset help' for more information.\n"},
		{"del w 198.51.100.0/24,eth0 wildcard", "", "ipset v7.17: Unknown argument: `wildcard'\nTry `ipset help' for more information.\n"},
		// (the longest name first: eth0, then eth, then et)
		{"del w 198.51.100.0/24,eth0", "", ""},
		{"del w 198.51.100.0/24,eth0", "", ""},
		{"del w 198.51.100.0/24,eth0", "", ""},
		{"del w 198.51.100.0/24,eth0", "", "ipset v7.17: Element cannot be deleted from the set: it's not added\n"},
		{"create h hash:net", "", ""},
		{"add h 198.51.100.0/24 wildcard", "", "ipset v7.17: Unknown argument: `wildcard'\nTry `ipset help' for more information.\n"},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

// TestWildcardPieces: the lookup and nomatch pieces of a hash:net,iface
// with wildcard entries cover each (address, name) key at most once
// (the kernel refuses overlapping intervals) and exactly where ipset's
// lookup finds a matching, or a nomatch, entry.
func TestWildcardPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 1))
	name := func() string {
		b := make([]byte, 1+rng.IntN(4))
		for i := range b {
			b[i] = "et0\xff"[rng.IntN(4)]
		}
		return string(b)
	}
	addr := func() uint32 { return 0xc6336400 | rng.Uint32()&0xff } // 198.51.100.0/24
	type box struct {
		lo, hi     uint32
		nlo, nhi   []byte
		nomatchSet bool
	}
	for round := 0; round < 300; round++ {
		st := &State{}
		run(t, st, "create w hash:net,iface")
		for i := 0; i < 1+rng.IntN(12); i++ {
			line := fmt.Sprintf("add w 198.51.100.%d/%d,%s", addr()&0xff, 24+rng.IntN(4), name())
			if rng.IntN(2) == 0 {
				line += " wildcard"
			}
			if rng.IntN(3) == 0 {
				line += " nomatch"
			}
			run(t, st, line) // (some are refused: already added)
		}
		s := st.Find("w")
		var boxes []box
		for _, ns := range []NftSet{s.NftSets()[0], s.Nomatch(false)} {
			for _, e := range ns.Elems {
				k, ke := e.Parts[0].Key, e.Parts[0].KeyEnd
				boxes = append(boxes, box{binary.BigEndian.Uint32(k), binary.BigEndian.Uint32(ke), k[4:20], ke[4:20], ns.Set.Name != s.NftSets()[0].Set.Name})
			}
		}
		for i, x := range boxes {
			for _, y := range boxes[i+1:] {
				if x.lo <= y.hi && y.lo <= x.hi && bytes.Compare(x.nlo, y.nhi) <= 0 && bytes.Compare(y.nlo, x.nhi) <= 0 {
					t.Fatalf("round %d: pieces %+v and %+v overlap", round, x, y)
				}
			}
		}
		for i := 0; i < 300; i++ {
			a, n := addr(), name()
			if rng.IntN(2) == 0 {
				// a name an entry's wildcard holds
				n = s.Entries[rng.IntN(len(s.Entries))].Elem[1].Iface + name()[:rng.IntN(2)]
			}
			var key [16]byte
			copy(key[:], n)
			in, nm := false, false
			for _, x := range boxes {
				if x.lo <= a && a <= x.hi && bytes.Compare(x.nlo, key[:]) <= 0 && bytes.Compare(key[:], x.nhi) <= 0 {
					in, nm = !x.nomatchSet, x.nomatchSet
				}
			}
			k := Elem{{Addr: u32Addr(a), Bits: 32}, {Iface: n}}
			en := s.deciding(k)
			if want, wantNm := en != nil && !en.Nomatch, en != nil && en.Nomatch; in != want || nm != wantNm {
				var b bytes.Buffer
				st.Write(&b, &Command{Op: OpSave}, []*Set{s})
				t.Fatalf("round %d: %s,%q: pieces say %v/%v (match/nomatch), ipset %v/%v\n%s", round, k[0].Addr, n, in, nm, want, wantNm, b.String())
			}
		}
	}
}

// TestWildcardSaveOrder: save prints the wildcard entries of a
// hash:net,iface after the names they hold, whatever the order of the
// entries as read (the kernel's dump order), so that its output
// restores: ipset refuses an add that a stored wildcard entry holds.
func TestWildcardSaveOrder(t *testing.T) {
	st := &State{}
	lines := []string{"create w hash:net,iface", "add w 198.51.100.0/24,eth0", "add w 198.51.100.0/24,eth1x wildcard",
		"add w 198.51.100.0/24,eth1 wildcard", "add w 198.51.100.0/24,eth wildcard nomatch", "add w 198.51.100.0/25,eth1",
		"add w 198.51.100.0/25,eth wildcard"}
	for _, l := range lines {
		if _, err := run(t, st, l); err != "" {
			t.Fatalf("%s: %s", l, err)
		}
	}
	s := st.Find("w")
	slices.Reverse(s.Entries) // (an order of reading)
	s.reindex()
	save, _ := run(t, st, "save")
	again := &State{}
	for _, l := range strings.Split(strings.TrimSpace(save), "\n") {
		if _, err := run(t, again, l); err != "" {
			t.Fatalf("restore of the save:\n%s\n%s: %s", save, l, err)
		}
	}
	if got, _ := run(t, again, "save"); got != save {
		t.Errorf("save after restore:\n%s\nwant\n%s", got, save)
	}
}

// TestWildcardPieceBounds: around a name nested in a wildcard whose
// pieces differ from its own (nomatch, timeout), the wildcard's pieces
// end and start next to the keys of that name padded with 0xff after
// its NUL (not next to the name's own key), bounds that the kernel's
// concatenated interval sets store as a few prefixes; the name itself
// stays one key. A nested name whose pieces would be alike leaves the
// wildcard whole.
func TestWildcardPieceBounds(t *testing.T) {
	pad := func(s string, b byte) string { return s + strings.Repeat(string([]byte{b}), 16-len(s)) }
	ff := func(s string) string { return pad(s, 0xff) }
	split := []string{pad("eth", 0) + "-" + ff("eth0"), pad("eth1", 0) + "-" + pad("eth1", 0), pad("eth1\x01", 0) + "-" + ff("eth")}
	whole := []string{pad("eth", 0) + "-" + ff("eth")}
	for _, tc := range []struct {
		create, nested, wild string
		want                 []string
	}{
		{"create w hash:net,iface", "eth1 nomatch", "eth wildcard", split},
		{"create w hash:net,iface timeout 100", "eth1 timeout 50", "eth wildcard", split},
		{"create w hash:net,iface", "eth1", "eth wildcard", whole},
		{"create w hash:net,iface timeout 100", "eth1 timeout 50", "eth wildcard timeout 50", split},
		{"create w hash:net,iface timeout 100", "eth1 timeout 0", "eth wildcard timeout 0", whole},
		{"create w hash:net,iface comment", "eth1 comment a", "eth wildcard comment b", split},
		{"create w hash:net,iface counters", "eth1 packets 1", "eth wildcard", split},
	} {
		st := &State{}
		for _, l := range []string{tc.create, "add w 198.51.100.0/24," + tc.nested, "add w 198.51.100.0/24," + tc.wild} {
			if _, err := run(t, st, l); err != "" {
				t.Fatalf("%s: %s", l, err)
			}
		}
		s := st.Find("w")
		var got []string
		for _, e := range append(s.NftSets()[0].Elems, s.Nomatch(false).Elems...) {
			got = append(got, string(e.Parts[0].Key[4:20])+"-"+string(e.Parts[0].KeyEnd[4:20]))
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s, %s, %s: pieces\n%q\nwant\n%q", tc.create, tc.nested, tc.wild, got, want)
		}
	}
}
