package ruleset

import "testing"

func BenchmarkIndexKey(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		indexKey("KUBE-SEP-0000001F2", "-d 10.128.0.1/32 -p tcp -m comment --comment \"ns3/svc-31:port\" -m tcp --dport 8080 -j ACCEPT")
	}
}
