package compat

import "testing"

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
