package translate

import (
	"testing"

	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
)

// FuzzFromKernel feeds arbitrary userdata and expression bytes to the
// read-back: it must never panic, and whatever it accepts must be a rule
// whose own translation is exactly what the kernel holds.
func FuzzFromKernel(f *testing.F) {
	r := &compat.Rule{Family: compat.IPv4}
	ud, _ := UserData(r)
	f.Add(ud, []byte{})
	f.Add([]byte{0xa0, 5, ' ', '-', 'j', ' ', 'X'}, []byte{1, 2, 3})
	f.Add([]byte{0xa1, 3, 1, 2, 3}, []byte{})
	f.Fuzz(func(t *testing.T, ud, raw []byte) {
		var es []expr.Any
		// a payload + cmp built from the raw bytes, then a counter
		if len(raw) > 0 {
			es = append(es,
				&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: uint32(raw[0] % 20), Len: uint32(len(raw)%16 + 1)},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: raw})
		}
		es = append(es, &expr.Counter{})
		rule, err := FromKernel(compat.IPv4, "filter", "INPUT", es, ud)
		if err != nil {
			return
		}
		want, err := Exprs("filter", rule)
		if err != nil || !SameExprs(compat.IPv4, want, es) {
			t.Fatalf("accepted a rule that does not translate to the kernel's expressions: %q", compat.ExactSpec(rule))
		}
	})
}
