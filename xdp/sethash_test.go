package xdp

import (
	"encoding/binary"
	"math/rand"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
)

// hashLookup is what the program computes for a set's table split
// with a bitmap and a hash h (bpf/classifier.c set_value).
func (s sliceArray) hashLookup(h hashLayout, a [4]byte) uint32 {
	x := binary.BigEndian.Uint32(a[:])
	if x != 0 {
		b1, b2 := hashBuckets(x, h.bits)
		for _, b := range []uint32{b1, b2} {
			for j := uint32(0); j < hashWays; j++ {
				if s[h.base+b+j] == x {
					return 1
				}
			}
		}
	}
	v := s.lookup(a)
	if v == setBitmap {
		v = s[h.bitmap+x>>13] >> (x >> 8 & 31) & 1
	}
	return v
}

// hashedLayout lays out the map of a set of prefixes ps split with a
// bitmap and a hash, as newHashSetMap does, with room for extra chunks.
func hashedLayout(t *testing.T, ps []PrefixClass, extra int) (sliceArray, hashLayout) {
	hashed, short, long := splitHashed(ps)
	tab := buildDir4(long, 1<<20)
	h, bits := buildHash(hashed)
	if h == nil {
		t.Fatal("no hash")
	}
	arr := sliceArray(tab.setLayout(tab.nchunks() + extra))
	bm := uint32(len(arr))
	arr = append(arr, make([]uint32, bitmapWords)...)
	if err := bitmapOf(arr, bm, short, 0, 1<<24); err != nil {
		t.Fatal(err)
	}
	arr = append(arr, h...)
	arr = append(arr, bits)
	return arr, hashLayout{bitmap: bm, base: uint32(len(arr) - 1 - len(h)), bits: bits}
}

// lpm is the set's answer for a: the class of the longest prefix of ps
// that holds it.
func lpm(ps []PrefixClass, a netip.Addr) uint32 {
	want, best := uint32(0), -1
	for _, q := range ps {
		if q.Prefix.Contains(a) && q.Prefix.Bits() > best {
			want, best = q.Class, q.Prefix.Bits()
		}
	}
	return want
}

// TestSetHashUpdate: a set's table split with a bitmap and a hash kept
// up to date in place, entry by entry (prefixes of every length, and
// more /32s besides randomSetChanges': going in and out of the hash,
// turning nomatch and back, under its prefixes),
// against the longest-prefix answer; when there is no room, the caller
// rebuilds.
func TestSetHashUpdate(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	fulls := 0
	for round := 0; round < 4; round++ {
		arr, h := hashedLayout(t, []PrefixClass{{Prefix: netip.MustParsePrefix("0.0.0.0/0")}}, 2)
		extra := map[netip.Prefix]uint32{}
		var last []PrefixClass
		var gone []netip.Addr
		with := func(ps []PrefixClass) []PrefixClass {
			for q, c := range extra {
				ps = append(ps, PrefixClass{Prefix: q, Class: c})
			}
			last = ps
			return ps
		}
		update := func(ps []PrefixClass, q netip.Prefix) {
			err := setTableUpdate(arr, h, ps, q)
			if err == errDirFull {
				fulls++
				arr, h = hashedLayout(t, ps, 2)
			} else if err != nil {
				t.Fatal(err)
			}
		}
		randomSetChanges(t, rng, 150, func(ps []PrefixClass, p netip.Prefix) bool {
			// (the third byte 3: none of randomSetChanges' /32s)
			q := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18 + byte(rng.Intn(2)), 3, byte(rng.Intn(8))}), 32)
			if _, ok := extra[q]; ok && rng.Intn(2) == 0 {
				delete(extra, q)
				gone = append(gone, q.Addr())
			} else {
				extra[q] = uint32(rng.Intn(3) / 2) // a third nomatch
			}
			update(with(ps), q)
			update(with(ps), p)
			return true
		}, func(a [4]byte, _ uint32) {
			probe := []netip.Addr{netip.AddrFrom4(a)}
			for q := range extra {
				probe = append(probe, q.Addr())
			}
			probe = append(probe, gone...)
			for _, ad := range probe {
				if got, want := arr.hashLookup(h, ad.As4()), lpm(last, ad); got != want {
					t.Fatalf("round %d: %v: %d, want %d", round, ad, got, want)
				}
			}
		})
	}
	if fulls == 0 {
		t.Fatal("the tables never ran out of room")
	}
}

// TestSetHashFull: a hash of 2 buckets takes addresses until both of an
// address's buckets are full, finds every one it took and none it did
// not, and frees slots on removal.
func TestSetHashFull(t *testing.T) {
	h := make(sliceHash, hashWays*2)
	var in []uint32
	full := uint32(0)
	for a := uint32(1); full == 0; a++ {
		switch err := hashInsert(h, 0, 1, a); err {
		case nil:
			in = append(in, a)
		case errDirFull:
			full = a
		default:
			t.Fatal(err)
		}
	}
	if len(in) != 2*hashWays {
		t.Fatalf("%d addresses in 16 slots", len(in))
	}
	has := func(a uint32) bool {
		for _, v := range h {
			if v == a {
				return true
			}
		}
		return false
	}
	for _, a := range in {
		if !has(a) {
			t.Fatalf("%d not in the hash", a)
		}
	}
	if has(full) {
		t.Fatal("the address that did not fit is in the hash")
	}
	// an address of one of its buckets
	b, _ := hashBuckets(full, 1)
	out := h[b+3]
	if err := hashRemove(h, 0, 1, out); err != nil || has(out) {
		t.Fatalf("removing: %v", err)
	}
	if err := hashInsert(h, 0, 1, full); err != nil || !has(full) {
		t.Fatalf("inserting into the freed slot: %v", err)
	}
}

// TestClassifierSetHashUpdates is TestClassifierSetUpdates with the
// set's /32s that match in the hash after its table (a /32 outside the
// changes keeps one there), changes made by setTableUpdate as ipset
// add/del do.
func TestClassifierSetHashUpdates(t *testing.T) {
	requireBPF(t)
	rng := rand.New(rand.NewSource(19))
	rules := parseRules(t, compat.IPv4, "-m set --match-set bl src -j DROP")
	keep := PrefixClass{Prefix: netip.MustParsePrefix("203.0.113.77/32"), Class: 1}
	var sm *ebpf.Map
	var p *program
	var h hashLayout
	defer func() {
		if p != nil {
			p.Close()
			sm.Close()
		}
	}()
	reload := func(ps []PrefixClass) {
		if p != nil {
			p.Close()
			sm.Close()
		}
		s := ipset.NewSet("bl", ipset.LookupType("hash:net"))
		s.MaxElem = 1024
		for _, q := range append(ps[1:], keep) {
			s.Entries = append(s.Entries, &ipset.Entry{Elem: ipset.Elem{{Addr: q.Prefix.Addr(), Bits: q.Prefix.Bits()}}, Nomatch: q.Class == 0})
		}
		c, err := CompileSets(rules, nil, []Iface{{Index: 1, Name: "eth0", MAC: testMAC[:]}}, func(string) *ipset.Set { return s })
		if err != nil {
			t.Fatal(err)
		}
		if sm, err = newHashSetMap(s); err != nil || sm == nil {
			t.Fatal("no table with a hash", err)
		}
		if h, err = setHashOf(sm); err != nil || h.bits == 0 {
			t.Fatal("no hash", err)
		}
		if p, err = load(c, make([]uint32, len(c.Rules)), nil, map[string]*ebpf.Map{"bl": sm}); err != nil {
			t.Fatal(err)
		}
		if p.prog != p.coll.Programs["xdptables_fast_split"] {
			t.Fatal("not the fast program")
		}
	}
	reload([]PrefixClass{{}})
	rebuilt := 0
	randomSetChanges(t, rng, 300, func(ps []PrefixClass, q netip.Prefix) bool {
		tab, err := mapTable(sm)
		if err != nil {
			t.Fatal(err)
		}
		err = setTableUpdate(tab, h, append(ps, keep), q)
		tab.close()
		if err == errDirFull {
			rebuilt++
			reload(ps)
			return true
		}
		if err != nil {
			t.Fatal(err)
		}
		return true
	}, func(a4 [4]byte, want uint32) {
		for _, ad := range []netip.Addr{netip.AddrFrom4(a4), keep.Prefix.Addr()} {
			pk := pkt{src: ad, dst: a("203.0.113.1"), proto: 17, sport: 1, dport: 9, dstMAC: testMAC, iface: "eth0"}
			exp := uint32(xdpPass)
			if want == 1 || ad == keep.Prefix.Addr() {
				exp = xdpDrop
			}
			ret, err := p.prog.Run(&ebpf.RunOptions{Data: pk.frame()})
			if err != nil {
				t.Fatal(err)
			}
			if ret != exp {
				t.Fatalf("%v: verdict %d, want %d", ad, ret, exp)
			}
		}
	})
	t.Logf("%d rebuilds", rebuilt)
}
