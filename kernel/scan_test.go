package kernel

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// TestScanRules streams a chain big enough to take many datagrams and
// checks it against the collected reads; an error from the callback ends
// the scan and leaves the connection usable.
func TestScanRules(t *testing.T) {
	c, _ := newNS(t)
	in := ChainName("filter", "INPUT")
	user := ChainName("filter", "C1")
	base, _ := BuiltinChain("filter", "INPUT")
	b := NewBatch()
	b.AddTable(IPv4)
	b.AddChain(IPv4, in, ChainSpec{Base: &base})
	b.AddChain(IPv4, user, ChainSpec{Exclusive: true})
	const n = 600
	for i := 0; i < n; i++ {
		b.AppendRule(IPv4, in, RuleSpec{Exprs: srcDrop(byte(i)), UserData: []byte(fmt.Sprintf("rule %d", i))})
	}
	b.AppendRule(IPv4, user, RuleSpec{Exprs: drop(), UserData: []byte("user")})
	commit(t, c, b)

	var seen []Rule
	err := c.ScanRules(IPv4, in, nil, func(r *Rule) error {
		if err := r.Decode(); err != nil {
			return err
		}
		if want := fmt.Sprintf("rule %d", len(seen)); string(r.UserData) != want || r.Chain != in || srcOf(t, *r) != byte(len(seen)) {
			t.Errorf("rule %d: userdata %q chain %q", len(seen), r.UserData, r.Chain)
		}
		k := r.Clone()
		seen = append(seen, k)
		return nil
	})
	if err != nil || len(seen) != n {
		t.Fatalf("ScanRules: %d rules, %v", len(seen), err)
	}
	got, err := c.Rules(IPv4, in)
	if err != nil || len(got) != n {
		t.Fatalf("Rules: %d, %v", len(got), err)
	}
	for i := range got {
		if err := seen[i].Decode(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[i], seen[i]) {
			t.Fatalf("rule %d: Rules %+v, ScanRules+Clone %+v", i, got[i], seen[i])
		}
	}
	all, err := c.TableRules(IPv4)
	if err != nil || len(all) != n+1 || all[n].Chain != user || string(all[n].UserData) != "user" {
		t.Fatalf("TableRules: %d rules, %v", len(all), err)
	}

	stop := errors.New("stop")
	count := 0
	err = c.ScanRules(IPv4, in, nil, func(r *Rule) error {
		count++
		if count == 10 {
			return stop
		}
		return nil
	})
	if err != stop || count != 10 {
		t.Fatalf("stopped scan: %d rules, %v", count, err)
	}
	if rs, err := c.Rules(IPv4, user); err != nil || len(rs) != 1 {
		t.Fatalf("after a stopped scan: %d rules, %v", len(rs), err)
	}
	// a receive buffer too small for a datagram: the dump starts over
	// with a buffer that fits
	c.rbuf = make([]byte, 1024)
	count = 0
	restarts := 0
	err = c.ScanRules(IPv4, in, func() { count = 0; restarts++ }, func(*Rule) error { count++; return nil })
	if err != nil || count != n || restarts != 1 {
		t.Fatalf("small buffer: %d rules, %d restarts, %v", count, restarts, err)
	}
	if err := c.ScanRules(IPv4, in, nil, func(*Rule) error { return nil }); err != nil {
		t.Fatalf("after the buffer grew: %v", err)
	}
	count = 0
	if err := c.ScanRules(IPv4, ChainName("filter", "NOPE"), nil, func(*Rule) error { count++; return nil }); err != nil || count != 0 {
		t.Fatalf("missing chain: %d rules, %v", count, err)
	}
}

// TestCloneTo: rules cloned into an arena keep their bytes when the
// buffer they were read from is overwritten, and a rule that does not fit
// the chunk's room starts a new chunk without moving the earlier ones.
func TestCloneTo(t *testing.T) {
	src := make([]byte, 70000)
	var arena []byte
	var got []Rule
	sizes := []int{100, 40000, 30000, 5, 0} // the 30000 do not fit the first chunk
	for i, n := range sizes {
		for j := range src {
			src[j] = byte(i)
		}
		r := Rule{Family: IPv4, Chain: "c", Handle: uint64(i), UserData: src[:min(n, 7)], rawExprs: src[:n]}
		if n == 0 {
			r.UserData, r.rawExprs = nil, nil
		}
		got = append(got, r.CloneTo(&arena))
	}
	for j := range src {
		src[j] = 0xff
	}
	for i, r := range got {
		if r.Handle != uint64(i) || r.Chain != "c" {
			t.Errorf("rule %d: handle %d chain %q", i, r.Handle, r.Chain)
		}
		if sizes[i] == 0 {
			if r.UserData != nil || r.rawExprs != nil {
				t.Errorf("rule %d: got bytes for none", i)
			}
			continue
		}
		for _, b := range append(append([]byte{}, r.UserData...), r.rawExprs...) {
			if b != byte(i) {
				t.Fatalf("rule %d: byte %#x, want %#x", i, b, i)
			}
		}
		if len(r.rawExprs) != sizes[i] || cap(r.UserData) != len(r.UserData) {
			t.Errorf("rule %d: %d expression bytes, userdata cap %d", i, len(r.rawExprs), cap(r.UserData))
		}
	}
}
