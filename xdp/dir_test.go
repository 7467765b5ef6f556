package xdp

import (
	"math/rand"
	"net/netip"
	"testing"
)

// TestDirTable compares the DIR-16-8-8 table with a longest-prefix
// search over the prefixes, for random prefix sets (clustered so that
// chunks of both levels appear and overlap) and addresses.
func TestDirTable(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	randAddr := func() [4]byte {
		// few /16s and /24s, so prefixes nest and share chunks
		return [4]byte{198, 18 + byte(rng.Intn(2)), byte(rng.Intn(4)), byte(rng.Intn(256))}
	}
	for round := 0; round < 200; round++ {
		ps := []PrefixClass{{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Class: 0}}
		seen := map[netip.Prefix]bool{ps[0].Prefix: true}
		for i := rng.Intn(60); i > 0; i-- {
			a := randAddr()
			p, _ := netip.AddrFrom4(a).Prefix(8 + rng.Intn(25))
			if seen[p] {
				continue
			}
			seen[p] = true
			ps = append(ps, PrefixClass{Prefix: p, Class: uint32(1 + rng.Intn(5))})
		}
		tab := buildDir4(ps, 1<<20)
		if tab == nil {
			t.Fatal("over budget")
		}
		for k := 0; k < 500; k++ {
			a := randAddr()
			if k%5 == 0 {
				a = [4]byte{byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256))}
			}
			want, best := uint32(0), -1
			for _, p := range ps {
				if p.Prefix.Contains(netip.AddrFrom4(a)) && p.Prefix.Bits() > best {
					want, best = p.Class, p.Prefix.Bits()
				}
			}
			if got := tab.lookup(a); got != want {
				t.Fatalf("round %d: %v: class %d, want %d (prefixes %v)", round, a, got, want, ps)
			}
		}
		// a smaller budget gives the same table or none
		if n := tab.nchunks(); n > 0 {
			if buildDir4(ps, n-1) != nil {
				t.Fatalf("round %d: %d chunks fit in %d", round, n, n-1)
			}
			if again := buildDir4(ps, n); again == nil || again.nchunks() != n {
				t.Fatalf("round %d: %d chunks do not fit in %d", round, n, n)
			}
		}
	}
}

// TestDirTableCollapses: chunks whose entries all hold one class are
// not kept (contiguous prefixes of one class need no chunk).
func TestDirTableCollapses(t *testing.T) {
	ps := []PrefixClass{{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Class: 0}}
	for i := 0; i < 1<<14; i++ {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0})
		b := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 128})
		ps = append(ps, PrefixClass{Prefix: netip.PrefixFrom(a, 25), Class: 1},
			PrefixClass{Prefix: netip.PrefixFrom(b, 25), Class: 1},
			PrefixClass{Prefix: netip.PrefixFrom(a.Next().Next(), 31), Class: 1})
	}
	tab := buildDir4(ps, 0)
	if tab == nil || tab.nchunks() != 0 {
		t.Fatalf("table %v", tab != nil)
	}
	if tab.lookup([4]byte{10, 1, 2, 3}) != 1 || tab.lookup([4]byte{10, 63, 2, 200}) != 1 || tab.lookup([4]byte{10, 64, 0, 0}) != 0 || tab.lookup([4]byte{11, 0, 0, 0}) != 0 {
		t.Fatal("lookup")
	}
}
