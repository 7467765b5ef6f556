package compat

import (
	"strings"
	"testing"
)

// TestCheckSets: libxt_set's parse-time checks (ParseOptions.LookupSets),
// which iptables makes for -C and -D as well (fail2ban's
// iptables-ipset-proto4 runs ip6tables on an IPv4 set; sets without
// addresses serve both families).
func TestCheckSets(t *testing.T) {
	LookupIPSet = func(name string) (SetInfo, bool) {
		switch name {
		case "v4":
			return SetInfo{Family: IPv4, Dims: []SetDim{SetDimAddr}, Updatable: true}, true
		case "v6":
			return SetInfo{Family: IPv6, Dims: []SetDim{SetDimAddr}, Updatable: true}, true
		case "ports":
			return SetInfo{Family: IPv4, Dims: []SetDim{SetDimPortOnly}, Updatable: true}, true
		}
		return SetInfo{}, false
	}
	defer func() { LookupIPSet = nil }()
	cases := []struct {
		f    Family
		args string
		want string
	}{
		{IPv4, "-D INPUT -m set --match-set v4 src -j DROP", ""},
		{IPv6, "-D INPUT -m set --match-set v4 src -j DROP", "The protocol family of set v4 is IPv4, which is not applicable.\n"},
		{IPv4, "-C INPUT -m set --match-set v6 src,dst", "The protocol family of set v6 is IPv6, which is not applicable.\n"},
		{IPv6, "-A INPUT -j SET --add-set v4 src", "The protocol family of set v4 is IPv4, which is not applicable.\n"},
		{IPv6, "-A INPUT -p tcp -m set --match-set ports dst -j DROP", ""},
		{IPv4, "-D INPUT -m set --match-set nope src -j DROP", "Set nope doesn't exist.\n"},
		{IPv4, "-A INPUT -m set --match-set v4 src -j SET --del-set nope src", "Set nope doesn't exist.\n"},
	}
	for _, c := range cases {
		got := ""
		if _, err := Parse(c.f, strings.Fields(c.args), ParseOptions{LookupSets: true}); err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%v %s: got %q, want %q", c.f, c.args, got, c.want)
		}
	}
}
