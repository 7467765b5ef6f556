package translate

import (
	"testing"

	"github.com/xdptables/xdptables/compat"
)

// BenchmarkFromKernel is the read-back of one kube-proxy-like rule, the
// cost -L, -S, iptables-save, -C and -D pay per rule they look at.
func BenchmarkFromKernel(b *testing.B) {
	cmd, err := compat.Parse(compat.IPv4, []string{"-A", "KUBE-SERVICES", "-d", "10.96.0.10/32", "-p", "tcp", "-m", "tcp", "--dport", "53", "-j", "KUBE-SVC-ERIFXISQEP7F7OF4"}, compat.ParseOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r := cmd.Rules[0]
	es, _ := Exprs("filter", r)
	ud, _ := UserData(r)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := FromKernel(compat.IPv4, "filter", "KUBE-SERVICES", es, ud); err != nil {
			b.Fatal(err)
		}
	}
}
