package translate

import (
	"reflect"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"github.com/xdptables/xdptables/compat"
	"golang.org/x/sys/unix"
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

// fuzzRules are the rules FuzzFromKernelExprs starts from: the built-in
// matches and targets whose translations the read-back must tell apart.
var fuzzRules = []string{
	"-A INPUT -p tcp --dport 22 -j ACCEPT",
	"-A INPUT ! -s 198.51.100.0/24 -i eth+ -j DROP",
	"-A INPUT -s 198.51.100.7/20 -i veth0 -j RETURN",
	"-A INPUT -p udp ! --sport 53:60 -j web",
	"-A INPUT -f -p icmp --icmp-type echo-request -g web",
	"-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
	"-A INPUT -m mark --mark 0x5/0xff -j MARK --set-xmark 0x1/0xffffffff",
	"-A INPUT -p tcp --tcp-flags SYN,RST SYN -m comment --comment \"a b\" -j REJECT --reject-with tcp-reset",
	"-A INPUT -m multiport -p tcp --dports 80,443 -j LOG --log-prefix \"x \"",
	"-A INPUT -m state --state NEW -m limit --limit 3/min -j ACCEPT",
	"-A INPUT -m length --length 100:200 -m ttl --ttl-gt 5 -m iprange --src-range 198.51.100.1-198.51.100.9 -j DROP",
	"-A INPUT -d 203.0.113.1 -j QUEUE",
	"-A INPUT",
}

// exprPool are expressions FuzzFromKernelExprs inserts: the kinds our
// translations use, with values near the ones they use.
func exprPool(b byte) expr.Any {
	switch b % 9 {
	case 0:
		return &expr.Meta{Key: expr.MetaKey(b >> 4), Register: 1}
	case 1:
		return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBase(b >> 6), Offset: uint32(b>>3) & 31, Len: uint32(b&3) + 1}
	case 2:
		return &expr.Cmp{Op: expr.CmpOp(b >> 5), Register: 1, Data: []byte{b}}
	case 3:
		return &expr.Counter{}
	case 4:
		return &expr.Verdict{Kind: expr.VerdictKind(int8(b>>5) - 5)}
	case 5:
		return &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{b}, Xor: []byte{0}}
	case 6:
		return &expr.Verdict{Kind: expr.VerdictJump, Chain: "filter.web"}
	case 7:
		return &expr.Range{Op: expr.CmpOp(b & 1), Register: 1, FromData: []byte{0, b}, ToData: []byte{1, b}}
	default:
		return &expr.Ct{Key: expr.CtKey(b >> 4), Register: 1}
	}
}

// tweak changes one field of e, the way a foreign writer could.
func tweak(e expr.Any, b byte) {
	switch x := e.(type) {
	case *expr.Cmp:
		if len(x.Data) > 0 && b&1 == 0 {
			x.Data[int(b>>1)%len(x.Data)] ^= 1 << (b >> 5)
		} else {
			x.Op = expr.CmpOp(b>>1) % 6
		}
	case *expr.Payload:
		if b&1 == 0 {
			x.Offset ^= uint32(b>>1) | 1
		} else {
			x.Len = uint32(b>>1)%16 + 1
		}
	case *expr.Meta:
		x.Key = expr.MetaKey(b) % 30
	case *expr.Bitwise:
		if len(x.Mask) > 0 {
			x.Mask[int(b)%len(x.Mask)] ^= 1 << (b >> 5)
		}
	case *expr.Verdict:
		if x.Chain != "" && b&1 == 0 {
			x.Chain += "x"
		} else {
			x.Kind = expr.VerdictKind(int8(b>>1)%7 - 5)
		}
	case *expr.Immediate:
		if len(x.Data) > 0 {
			x.Data[int(b)%len(x.Data)] ^= 1
		}
	case *expr.Range:
		if len(x.FromData) > 0 {
			x.FromData[int(b)%len(x.FromData)] ^= 1
		}
	case *expr.Lookup:
		x.Invert = !x.Invert
	case *expr.Ct:
		x.Key = expr.CtKey(b) % 20
	case *expr.Counter:
		x.Packets = uint64(b) // counter values never matter
	}
}

// viaKernel marshals e and decodes it into a fresh value of its type,
// as the read-back does with what the kernel returns.
func viaKernel(t *testing.T, e expr.Any) (expr.Any, bool) {
	b, err := expr.Marshal(byte(compat.IPv4), e)
	if err != nil {
		return nil, false
	}
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatalf("marshalled expression does not decode: %v", err)
	}
	var data []byte
	for ad.Next() {
		if ad.Type() == unix.NFTA_EXPR_DATA {
			data = ad.Bytes()
		}
	}
	n := reflect.New(reflect.TypeOf(e).Elem()).Interface().(expr.Any)
	if err := expr.Unmarshal(byte(compat.IPv4), data, n); err != nil {
		return nil, false
	}
	return n, true
}

// FuzzFromKernelExprs starts from a real rule's expressions and userdata,
// applies a fuzzer-chosen program of edits (delete, duplicate, swap,
// change a field, insert an expression, replace the userdata) and reads
// the result back: it must be reported foreign or be a rule whose own
// translation is exactly the edited list. Never a misread rule.
func FuzzFromKernelExprs(f *testing.F) {
	f.Add(uint8(0), []byte{}, []byte{})
	f.Add(uint8(1), []byte{3, 1, 0x40}, []byte{})
	f.Add(uint8(7), []byte{0, 2}, []byte{})
	f.Add(uint8(3), []byte{}, []byte{0xa0, 3, ' ', '-', 'j'})
	f.Add(uint8(12), []byte{4, 0, 6}, []byte{})
	f.Fuzz(func(t *testing.T, pick uint8, prog, ud []byte) {
		text := fuzzRules[int(pick)%len(fuzzRules)]
		cmd, err := compat.Parse(compat.IPv4, compat.RestoreWords(text), compat.ParseOptions{Table: "filter"})
		if err != nil {
			t.Fatalf("seed rule %q: %v", text, err)
		}
		es, err := Exprs("filter", cmd.Rules[0])
		if err != nil {
			t.Fatalf("seed rule %q: %v", text, err)
		}
		if len(ud) == 0 || pick >= 128 {
			// keep the real userdata; the fuzzer edits only expressions
			if ud, err = UserData(cmd.Rules[0]); err != nil {
				t.Fatal(err)
			}
		}
		for len(prog) >= 2 && len(es) < 64 {
			op, arg := prog[0], prog[1]
			prog = prog[2:]
			i := int(arg) % (len(es) + 1)
			switch op % 5 {
			case 0: // delete
				if i < len(es) {
					es = append(es[:i:i], es[i+1:]...)
				}
			case 1: // swap with the next
				if i+1 < len(es) {
					es[i], es[i+1] = es[i+1], es[i]
				}
			case 2: // change a field
				if i < len(es) {
					if c, ok := viaKernel(t, es[i]); ok {
						tweak(c, op>>3)
						es[i] = c
					}
				}
			case 3: // insert
				es = append(es[:i:i], append([]expr.Any{exprPool(op >> 3)}, es[i:]...)...)
			case 4: // duplicate
				if i < len(es) {
					es = append(es[:i+1:i+1], es[i:]...)
				}
			}
		}
		kernel := make([]expr.Any, 0, len(es))
		for _, e := range es {
			k, ok := viaKernel(t, e)
			if !ok {
				return // the kernel would not hold this list
			}
			kernel = append(kernel, k)
		}
		rule, err := FromKernel(compat.IPv4, "filter", "INPUT", kernel, ud)
		if err != nil {
			if err != ErrForeign {
				t.Fatalf("error other than ErrForeign: %v", err)
			}
			return
		}
		want, err := Exprs("filter", rule)
		if err != nil || !SameExprs(compat.IPv4, want, kernel) {
			t.Fatalf("misread: %q accepted for\n%s", compat.ExactSpec(rule), Debug(kernel))
		}
	})
}
