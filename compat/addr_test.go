package compat

import (
	"net/netip"
	"strings"
	"testing"
)

// TestParseNetZeroMask: a zero mask makes iptables ignore the name
// ("any/0"), and the mask follows the last slash. Docker's daemon runs
// `ip6tables -t nat -A DOCKER -p tcp -d 0/0 --dport 8080 -j DNAT …`
// for every published port.
func TestParseNetZeroMask(t *testing.T) {
	for _, c := range []struct {
		f    Family
		in   string
		want string // Net.Addr/Mask, or the error text
	}{
		{IPv6, "0/0", ":: ::"},
		{IPv6, "no.such.host.invalid/0", ":: ::"},
		{IPv6, "/0", ":: ::"},
		{IPv6, "2001:db8::1/::", ":: ::"},
		{IPv4, "0/0", "0.0.0.0 0.0.0.0"},
		{IPv4, "no.such.host.invalid/0.0.0.0", "0.0.0.0 0.0.0.0"},
		{IPv4, "198.51.100.7/24", "198.51.100.0 255.255.255.0"},
		{IPv4, "1.2.3.4/8/16", "host/network `1.2.3.4/8' not found"},
		{IPv4, "1.2.3.4/x", "invalid mask `x' specified"},
	} {
		nets, err := ParseNet(c.in, c.f, nil)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = nets[0].Addr.String() + " " + nets[0].Mask.String()
		}
		if got != c.want {
			t.Errorf("ParseNet(%q, %v) = %q, want %q", c.in, c.f, got, c.want)
		}
	}
}

// TestParseNetInetAton: what iptables' own parser refuses goes to
// getaddrinfo, which takes an IPv4 number as inet_aton does before any
// name lookup (iptables-nft 1.8.9 on glibc: -s 3325256705 is
// 198.51.100.1). IPv6 has no such form.
func TestParseNetInetAton(t *testing.T) {
	none := func(string, Family) ([]string, error) { return nil, nil }
	for _, c := range []struct {
		f        Family
		in, want string
	}{
		{IPv4, "3325256705", "198.51.100.1/32"},
		{IPv4, "0xc6336401", "198.51.100.1/32"},
		{IPv4, "0xc6336401/24", "198.51.100.0/24"},
		{IPv4, "198.51.25601", "198.51.100.1/32"},
		{IPv4, "127.1", "127.1.0.0/32"}, // iptables' own parser: missing parts are zero
		{IPv4, "4294967296", "host/network `4294967296' not found"},
		{IPv4, "1.2.3.4.5", "host/network `1.2.3.4.5' not found"},
		{IPv6, "3325256705", "host/network `3325256705' not found"},
	} {
		nets, err := ParseNet(c.in, c.f, none)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = nets[0].String()
		}
		if got != c.want {
			t.Errorf("ParseNet(%q, %v) = %q, want %q", c.in, c.f, got, c.want)
		}
	}
}

// TestParseAddrsLeadingSpace: iptables skips the white space before each
// address of a -s/-d list (iptables-nft 1.8.9 takes -s "198.51.100.1,
// 198.51.100.2" as two rules and names `1.2.3.4x' without the space in
// its error), as scripts write lists; we said ` 198.51.100.2' not found.
func TestParseAddrsLeadingSpace(t *testing.T) {
	for _, c := range []struct {
		f       Family
		spec    string
		want    []string
		errWant string
	}{
		{IPv4, "198.51.100.1, 198.51.100.2", []string{"198.51.100.1/32", "198.51.100.2/32"}, ""},
		{IPv4, " 198.51.100.0/24", []string{"198.51.100.0/24"}, ""},
		{IPv4, "198.51.100.1,\t 3325256706", []string{"198.51.100.1/32", "198.51.100.2/32"}, ""},
		{IPv6, " 2001:db8::1", []string{"2001:db8::1/128"}, ""},
		{IPv4, "  1.2.3.4x", nil, "host/network `1.2.3.4x' not found"},
		{IPv4, "198.51.100.1 ", nil, "host/network `198.51.100.1 ' not found"},
		{IPv4, "198.51. 100.1", []string{"198.51.100.1/32"}, ""}, // each part as xtables_strtoui reads it
	} {
		cmd, err := Parse(c.f, []string{"-A", "INPUT", "-s", c.spec, "-j", "ACCEPT"}, ParseOptions{Resolve: func(string, Family) ([]string, error) { return nil, nil }})
		if c.errWant != "" {
			if err == nil || !strings.Contains(err.Error(), c.errWant) {
				t.Errorf("-s %q: error %v, want %q", c.spec, err, c.errWant)
			}
			continue
		}
		if err != nil {
			t.Errorf("-s %q: %v", c.spec, err)
			continue
		}
		var got []string
		for _, r := range cmd.Rules {
			got = append(got, r.Src.String())
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("-s %q: %v, want %v", c.spec, got, c.want)
		}
	}
}

// TestStrtouiLeadingSpace: xtables_strtoui skips white space before the
// number, as strtoumax does (iptables-nft 1.8.9 takes --dport " 80" and
// " +80"); a sign after it still makes it no number.
func TestStrtouiLeadingSpace(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{{" 80", true}, {"\t+80", true}, {" -80", false}, {"+ 80", false}, {"80 ", false}, {" ", false}} {
		v, ok := ParseUint(c.in, 0, 65535)
		if ok != c.ok || ok && v != 80 {
			t.Errorf("ParseUint(%q) = %d, %v; want ok %v", c.in, v, ok, c.ok)
		}
	}
}

// TestNetBits: the prefix length of contiguous masks of either family,
// -1 for any mask with a one after a zero, 0 without a mask; and no
// allocation (every address of a restore's rules is printed and
// translated through it).
func TestNetBits(t *testing.T) {
	for _, c := range []struct {
		mask string
		want int
	}{
		{"", 0}, {"0.0.0.0", 0}, {"128.0.0.0", 1}, {"255.255.255.0", 24}, {"255.255.240.0", 20},
		{"255.255.255.255", 32}, {"255.0.255.0", -1}, {"0.0.0.1", -1}, {"255.255.255.254", 31},
		{"::", 0}, {"8000::", 1}, {"ffff:ffff::", 32}, {"ffff:ffff:ffff:ffff::", 64},
		{"ffff:ffff:ffff:ffff:8000::", 65}, {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", 127},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 128}, {"ffff::1", -1}, {"ffff:ffff:ffff:fffe::1", -1},
		{"ffff:ffff:ffff:ffff:0:1::", -1}, {"ffff:ffff:ffff:ffff:ffff::ff", -1}, {"::ffff:255.255.255.0", -1},
	} {
		n := Net{Addr: netip.MustParseAddr("192.0.2.0")}
		if c.mask != "" {
			n.Mask = netip.MustParseAddr(c.mask)
		}
		if got := n.Bits(); got != c.want {
			t.Errorf("mask %q: %d bits, want %d", c.mask, got, c.want)
		}
	}
	n := Net{Addr: netip.MustParseAddr("2001:db8::"), Mask: netip.MustParseAddr("ffff:ffff::")}
	if a := testing.AllocsPerRun(100, func() { n.Bits() }); a != 0 {
		t.Errorf("%v allocations", a)
	}
}

// TestTrimCSpace: trimCSpace skips what strings.TrimLeft with cSpace
// skips, for every byte in front.
func TestTrimCSpace(t *testing.T) {
	for b := range 256 {
		for _, s := range []string{string([]byte{byte(b)}) + "1", string([]byte{byte(b), ' ', byte(b)}) + "x y", string([]byte{byte(b)})} {
			if got, want := trimCSpace(s), strings.TrimLeft(s, cSpace); got != want {
				t.Errorf("%q: %q, want %q", s, got, want)
			}
		}
	}
}
