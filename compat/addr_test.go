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
