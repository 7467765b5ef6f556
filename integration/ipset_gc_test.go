package integration

import (
	"strings"
	"testing"
)

// The lookup sets of net types without timeouts are created with the
// timeout flag and the longest GC interval (ipset.LongGC), so that the
// kernel does not scan them for expired elements on the first change
// after each second; sets with timeouts keep the default interval. Their
// entries never expire and everything ipset prints stays the reference's.
func TestIpsetLookupLongGC(t *testing.T) {
	p := newIpsetPair(t, "igc")
	p.run("create r hash:net\nadd r 198.51.100.0/24\nadd r 198.51.100.128/25 nomatch\ncreate rp hash:net,port\nadd rp 203.0.113.0/24,tcp:80\n", "ipset restore")
	for _, l := range []string{
		"ipset create n hash:net", "ipset create t hash:net timeout 100", "ipset create i hash:ip",
		"ipset add n 198.18.0.0/16", "ipset add n 198.18.7.0/24", "ipset add n 198.18.7.0/28 nomatch",
		"ipset add t 198.19.0.0/16 timeout 0", "ipset add i 198.18.0.1",
		"ipset test n 198.18.1.1", "ipset test n 198.18.7.1", "ipset test n 198.18.7.100", "ipset test r 198.51.100.200",
		"ipset del n 198.18.7.0/24", "ipset test n 198.18.7.100", "ipset -s save", "ipset list n",
	} {
		p.run("", l)
	}
	list := func(fam, name string) string {
		r := p.me.Run("", "nft", "list", "set", fam, "xdptables", name)
		if r.RC != 0 {
			t.Fatalf("nft list set %s: %+v", name, r)
		}
		return r.Stdout
	}
	for _, n := range []string{"ipset.n", "ipset.r", "ipset.rp"} {
		if s := list("ip", n); !strings.Contains(s, "timeout") || !strings.Contains(s, "gc-interval 49d") {
			t.Errorf("%s: no timeout flag and long GC interval:\n%s", n, s)
		}
	}
	if s := list("ip", "ipset.t"); strings.Contains(s, "gc-interval 49d") {
		t.Errorf("ipset.t (with timeouts) got the long GC interval:\n%s", s)
	}
	if s := list("ip", "ipset.i"); strings.Contains(s, "gc-interval") {
		t.Errorf("ipset.i (not an interval set) got a GC interval:\n%s", s)
	}
	// Rules look the sets up as before.
	p.run("", "iptables -A INPUT -m set --match-set n src -j DROP")
	p.run("", "iptables -A INPUT -m set --match-set rp src,dst -j DROP")
	p.run("", "iptables -S INPUT")
	p.run("", "ipset destroy n")
}
