package xdp

import (
	"math/rand"
	"net/netip"
	"slices"
	"sort"
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

// sliceArray is a set map in memory.
type sliceArray []uint32

func (s sliceArray) get(i uint32) (uint32, error) { return s[i], nil }
func (s sliceArray) put(i uint32, vs []uint32) error {
	copy(s[i:], vs)
	return nil
}
func (s sliceArray) size() uint32 { return uint32(len(s)) }

func (s sliceArray) lookup(a [4]byte) uint32 {
	v := s[int(a[0])<<8|int(a[1])]
	for i := 2; i < 4 && v&dirChunk != 0; i++ {
		v = s[int(v&^dirChunk)<<8|int(a[i])]
	}
	return v
}

// randomSetChanges adds and removes random prefixes (nested, some
// nomatch) in a set, calling change after each with the set's prefixes
// and the changed prefix, and check with the longest-prefix answer.
func randomSetChanges(t *testing.T, rng *rand.Rand, steps int, change func(ps []PrefixClass, p netip.Prefix) bool,
	check func(a [4]byte, want uint32)) {
	set := map[netip.Prefix]uint32{}
	prefixes := func() []PrefixClass {
		ps := []PrefixClass{{Prefix: netip.MustParsePrefix("0.0.0.0/0")}}
		for p, c := range set {
			ps = append(ps, PrefixClass{Prefix: p, Class: c})
		}
		return ps
	}
	randAddr := func() [4]byte {
		return [4]byte{198, 18 + byte(rng.Intn(2)), byte(rng.Intn(3)), byte(rng.Intn(256))}
	}
	for step := 0; step < steps; step++ {
		var p netip.Prefix
		if len(set) > 0 && rng.Intn(3) == 0 {
			// (one of them by the seed, not by the map's order)
			var in []netip.Prefix
			for q := range set {
				in = append(in, q)
			}
			sort.Slice(in, func(i, j int) bool { return in[i].String() < in[j].String() })
			p = in[rng.Intn(len(in))]
			delete(set, p)
		} else {
			p, _ = netip.AddrFrom4(randAddr()).Prefix([]int{8, 15, 16, 17, 20, 23, 24, 25, 28, 30, 31, 32}[rng.Intn(12)])
			set[p] = uint32(1 - rng.Intn(4)/3) // a quarter nomatch
		}
		if !change(prefixes(), p) {
			return
		}
		for k := 0; k < 100; k++ {
			a := randAddr()
			if k%10 == 0 {
				a = [4]byte{byte(rng.Intn(256)), byte(rng.Intn(256)), 0, 1}
			}
			want, best := uint32(0), -1
			for q, c := range set {
				if q.Contains(netip.AddrFrom4(a)) && q.Bits() > best {
					want, best = c, q.Bits()
				}
			}
			check(a, want)
		}
	}
}

// TestDirSetUpdate: a set's table kept up to date in place, entry by
// entry, against the longest-prefix answer; with too little room the
// update says so and leaves the table as it was.
func TestDirSetUpdate(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	fulls := 0
	for round := 0; round < 10; round++ {
		base := buildDir4([]PrefixClass{{Prefix: netip.MustParsePrefix("0.0.0.0/0")}}, 0)
		arr := sliceArray(base.setLayout(40))
		randomSetChanges(t, rng, 150, func(ps []PrefixClass, p netip.Prefix) bool {
			before := append(sliceArray(nil), arr...)
			err := dirSetUpdate(arr, ps, p)
			if err == errDirFull {
				fulls++
				if !slices.Equal(before, arr) {
					t.Fatal("a full table changed")
				}
				// the caller rebuilds
				tab := buildDir4(ps, 1<<20)
				arr = sliceArray(tab.setLayout(tab.nchunks() + 10))
				return true
			}
			if err != nil {
				t.Fatal(err)
			}
			return true
		}, func(a [4]byte, want uint32) {
			if got := arr.lookup(a); got != want {
				t.Fatalf("round %d: %v: %d, want %d", round, a, got, want)
			}
		})
	}
	if fulls == 0 {
		t.Fatal("the tables never ran out of room")
	}
}
