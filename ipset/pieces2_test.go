package ipset

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestTwoPrefixPieces: the lookup pieces of a hash:net,net hold each
// pair of addresses at most once (the kernel refuses overlapping
// intervals) and exactly where the set matches it as ipset decides:
// the most specific first prefix with an entry holding the pair, then
// the most specific second prefix, a nomatch entry excluding.
func TestTwoPrefixPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(54, 1))
	addr := func() uint32 { return 0x0a000000 | rng.Uint32()&0x0003ffff } // 10.0.0.0/14
	for round := 0; round < 200; round++ {
		st := &State{}
		run(t, st, "create nn hash:net,net")
		for i := 0; i < 2+rng.IntN(24); i++ {
			b1, b2 := 14+rng.IntN(11), 14+rng.IntN(11)
			p1 := netip.PrefixFrom(u32Addr(addr()), b1).Masked()
			p2 := netip.PrefixFrom(u32Addr(addr()), b2).Masked()
			line := fmt.Sprintf("add -exist nn %s,%s", p1, p2)
			if rng.IntN(4) == 0 {
				line += " nomatch"
			}
			if _, err := run(t, st, line); err != "" {
				t.Fatalf("%s: %s", line, err)
			}
		}
		s := st.Find("nn")
		type box struct{ lo1, hi1, lo2, hi2 uint32 }
		var boxes []box
		for _, e := range s.NftSets()[0].Elems {
			k, ke := e.Parts[0].Key, e.Parts[0].KeyEnd
			boxes = append(boxes, box{binary.BigEndian.Uint32(k), binary.BigEndian.Uint32(ke), binary.BigEndian.Uint32(k[4:]), binary.BigEndian.Uint32(ke[4:])})
		}
		for i, x := range boxes {
			for _, y := range boxes[i+1:] {
				if x.lo1 <= y.hi1 && y.lo1 <= x.hi1 && x.lo2 <= y.hi2 && y.lo2 <= x.hi2 {
					t.Fatalf("round %d: pieces %x and %x overlap", round, x, y)
				}
			}
		}
		for i := 0; i < 400; i++ {
			a, b := addr(), addr()
			if en := s.Entries[rng.IntN(len(s.Entries))]; i%2 == 0 {
				// a pair inside an entry
				a = binary.BigEndian.Uint32(en.Elem[0].Addr.AsSlice()) | rng.Uint32()>>en.Elem[0].Bits
				b = binary.BigEndian.Uint32(en.Elem[1].Addr.AsSlice()) | rng.Uint32()>>en.Elem[1].Bits
			}
			in := false
			for _, x := range boxes {
				if x.lo1 <= a && a <= x.hi1 && x.lo2 <= b && b <= x.hi2 {
					in = true
				}
			}
			key := Elem{{Addr: u32Addr(a), Bits: 32}, {Addr: u32Addr(b), Bits: 32}}
			if want := s.Match(key); in != want {
				t.Fatalf("round %d: %s,%s: pieces say %v, ipset %v", round, key[0].Addr, key[1].Addr, in, want)
			}
		}
	}
}

func u32Addr(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// TestTwoPrefixPiecesMany: many second prefixes under one first prefix
// make as many pieces, in one sweep.
func TestTwoPrefixPiecesMany(t *testing.T) {
	st := &State{}
	run(t, st, "create nn hash:net,net maxelem 100000")
	const n = 20000
	for i := 0; i < n; i++ {
		line := fmt.Sprintf("add nn 10.0.0.0/8,%s/30", u32Addr(0xac100000+uint32(i)*4))
		if _, err := run(t, st, line); err != "" {
			t.Fatalf("%s: %s", line, err)
		}
	}
	run(t, st, "add nn 10.0.0.0/8,172.16.0.0/12")
	if got := len(st.Find("nn").NftSets()[0].Elems); got != n+1 {
		t.Errorf("%d pieces, want %d", got, n+1)
	}
}
