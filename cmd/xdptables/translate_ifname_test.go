package main

import "testing"

// TestKeyTextNamePrefix: a range of interface names that is every name
// starting with a prefix (a wildcard entry of a hash:net,iface) prints
// as nft writes it, "prefix*"; other ranges print as a range.
func TestKeyTextNamePrefix(t *testing.T) {
	name := func(s string, pad byte) []byte {
		b := []byte(s)
		for len(b) < 16 {
			b = append(b, pad)
		}
		return b
	}
	addr := []byte{198, 51, 100, 0}
	types := []string{"ipv4_addr", "ifname"}
	for _, tc := range []struct {
		lo, hi []byte
		want   string
	}{
		{name("eth", 0), name("eth", 0xff), `198.51.100.0 . "eth*"`},
		{name("eth", 0), name("eth", 0), `198.51.100.0 . "eth"`},
		{name("eth", 0), name("eti", 0xff), `198.51.100.0 . "eth"-"eti\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"`},
		{name("eth0", 0), name("eth", 0xff), `198.51.100.0 . "eth0"-"eth\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"`},
	} {
		lo := append(append([]byte(nil), addr...), tc.lo...)
		hi := append(append([]byte(nil), addr...), tc.hi...)
		if got := keyText(types, lo, hi); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
