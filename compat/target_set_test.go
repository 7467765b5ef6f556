package compat

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
)

// TestSetTargetElements: how -j SET --add-set/--del-set change the set,
// per kind of set: the element an add creates, an existing element left
// alone without --exist (counters untouched: an inverted lookup skips
// the add on a set with counters), replaced with --exist (timeout and
// counters start again: delete, then add) unless its comment or
// skbinfo must stay (update), and add then del in a bound chain when
// the add is guarded.
func TestSetTargetElements(t *testing.T) {
	sets := map[string]SetInfo{
		"plain":   {},
		"tmo":     {HasTimeout: true, Timeout: 100},
		"cnt":     {Counters: true},
		"tmocnt":  {HasTimeout: true, Timeout: 100, Counters: true},
		"tmocmt":  {HasTimeout: true, Timeout: 100, Counters: true, ElemData: true},
		"cntcmt":  {Counters: true, ElemData: true},
		"net":     {Updatable: false},
		"twodims": {Dims: []SetDim{SetDimAddr, SetDimPort}},
		"bmip":    {RangeLo: []byte{198, 18, 0, 100}, RangeHi: []byte{198, 18, 0, 200}},
		"bmport":  {Dims: []SetDim{SetDimPortOnly}, RangeLo: []byte{0, 1}, RangeHi: []byte{0, 100}, Family: IPv4},
		"masked":  {Netmask: 24},
		"copies":  {Copies: []string{"ipset-shard.copies.0", "ipset-count.copies"}},
	}
	LookupIPSet = func(name string) (SetInfo, bool) {
		info, ok := sets[name]
		if !ok {
			return SetInfo{}, false
		}
		info.NftName, info.Family = "ipset."+name, IPv4
		if info.Dims == nil {
			info.Dims = []SetDim{SetDimAddr}
		}
		if name != "net" {
			info.Updatable = true
		}
		return info, true
	}
	defer func() { LookupIPSet = nil }()
	// one rule: its expressions but the key's loads; a bound chain's
	// rules in braces
	var show func(es []expr.Any) string
	show = func(es []expr.Any) string {
		var w []string
		for _, e := range es {
			switch x := e.(type) {
			case *expr.Lookup:
				w = append(w, fmt.Sprintf("lookup(%s,inv=%v)", x.SetName, x.Invert))
			case *expr.Dynset:
				op := [...]string{"add", "update", "delete"}[x.Operation]
				w = append(w, fmt.Sprintf("%s(%s,%v)", op, x.SetName, x.Timeout))
			case *CopyDroppingDynset:
				op := [...]string{"add", "update", "delete"}[x.Operation]
				w = append(w, fmt.Sprintf("%s(%s,%v)-drops%v", op, x.SetName, x.Timeout, x.Copies))
			case *BoundJump:
				var rs []string
				for _, r := range x.Rules {
					rs = append(rs, show(r))
				}
				w = append(w, "jump{"+strings.Join(rs, "; ")+"}")
			case *expr.Cmp:
				w = append(w, fmt.Sprintf("cmp%d%v", x.Op, x.Data))
			case *expr.Bitwise:
				w = append(w, fmt.Sprintf("mask%v", x.Mask))
			case *ValueMap:
				w = append(w, fmt.Sprintf("map%v", x.Keys))
			case *expr.Payload, *expr.Meta:
			default:
				w = append(w, fmt.Sprintf("%T", e))
			}
		}
		return strings.Join(w, " ")
	}
	tests := []struct{ args, want string }{
		{"--add-set plain src", "add(ipset.plain,0s)"},
		{"--add-set plain src --exist --timeout 5", "add(ipset.plain,0s)"},
		{"--add-set tmo src", "add(ipset.tmo,1m40s)"},
		{"--add-set tmo src --timeout 0", "add(ipset.tmo,0s)"},
		{"--add-set tmo src --timeout 4294967294", "add(ipset.tmo,596h31m23s)"},
		{"--add-set tmo src --timeout 2147483", "add(ipset.tmo,596h31m23s)"},
		{"--add-set tmo src --timeout 2147482", "add(ipset.tmo,596h31m22s)"},
		{"--add-set tmo src --exist --timeout 7", "delete(ipset.tmo,0s) add(ipset.tmo,7s)"},
		{"--add-set cnt src", "lookup(ipset.cnt,inv=true) add(ipset.cnt,0s)"},
		{"--add-set cnt src --exist", "delete(ipset.cnt,0s) add(ipset.cnt,0s)"},
		{"--add-set tmocnt src --exist", "delete(ipset.tmocnt,0s) add(ipset.tmocnt,1m40s)"},
		{"--add-set tmocmt src --exist --timeout 9", "update(ipset.tmocmt,9s)"},
		{"--add-set tmocmt src", "lookup(ipset.tmocmt,inv=true) add(ipset.tmocmt,1m40s)"},
		{"--add-set cntcmt src --exist", "add(ipset.cntcmt,0s)"},
		{"--add-set plain src --del-set tmo dst", "add(ipset.plain,0s) delete(ipset.tmo,0s)"},
		{"--add-set cnt src --del-set cnt dst", "jump{lookup(ipset.cnt,inv=true) add(ipset.cnt,0s); delete(ipset.cnt,0s)}"},
		{"--add-set cnt src --del-set twodims src", "lookup(ipset.cnt,inv=true) add(ipset.cnt,0s)"},
		{"--add-set twodims src --del-set cnt src", "delete(ipset.cnt,0s)"},
		{"--del-set cnt src", "delete(ipset.cnt,0s)"},
		{"--add-set bmip src", "cmp5[198 18 0 100] cmp3[198 18 0 200] add(ipset.bmip,0s)"},
		{"--add-set bmip src --del-set plain src", "jump{cmp5[198 18 0 100] cmp3[198 18 0 200] add(ipset.bmip,0s); delete(ipset.plain,0s)}"},
		{"--del-set bmip src", "delete(ipset.bmip,0s)"},
		{"--add-set bmport dst", "map[[6] [17]] cmp5[0 1] cmp3[0 100] add(ipset.bmport,0s)"},
		{"--add-set plain src --del-set bmport dst", "add(ipset.plain,0s) map[[6] [17]] delete(ipset.bmport,0s)"},
		{"--add-set masked src", "mask[255 255 255 0] add(ipset.masked,0s)"},
		// a set whose entries other sets copy: the rule destroys them
		{"--add-set copies src", "add(ipset.copies,0s)-drops[ipset-shard.copies.0 ipset-count.copies]"},
		{"--add-set copies src --exist", "add(ipset.copies,0s)-drops[ipset-shard.copies.0 ipset-count.copies]"},
		{"--add-set plain src --del-set copies dst", "add(ipset.plain,0s) delete(ipset.copies,0s)-drops[ipset-shard.copies.0 ipset-count.copies]"},
		{"--add-set bmip src --del-set copies dst", "jump{cmp5[198 18 0 100] cmp3[198 18 0 200] add(ipset.bmip,0s); delete(ipset.copies,0s)-drops[ipset-shard.copies.0 ipset-count.copies]}"},
	}
	for _, tc := range tests {
		cmd, err := Parse(IPv4, append([]string{"-A", "INPUT", "-j", "SET"}, strings.Fields(tc.args)...), ParseOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		es, err := cmd.Rules[0].Target.(NftExpresser).NftExprs(&NftContext{Family: IPv4, Rule: cmd.Rules[0], Table: "filter", Chain: "INPUT"})
		if err != nil {
			t.Errorf("%s: %v", tc.args, err)
			continue
		}
		if got := show(es); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.args, got, tc.want)
		}
	}
	cmd, err := Parse(IPv4, []string{"-A", "INPUT", "-j", "SET", "--add-set", "net", "src"}, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if es, err := cmd.Rules[0].Target.(NftExpresser).NftExprs(&NftContext{Family: IPv4, Rule: cmd.Rules[0], Table: "filter"}); err == nil {
		t.Errorf("--add-set on a net type: %s, want no native form", show(es))
	}
}

// TestSetMatchKey: -m set masks the address of a set created with a
// netmask as ipset does, and takes only TCP and UDP packets for
// bitmap:port (not for ! --match-set, where ipset matches the others).
func TestSetMatchKey(t *testing.T) {
	sets := map[string]SetInfo{
		"masked":  {Dims: []SetDim{SetDimAddr}, Netmask: 24, Family: IPv4},
		"masked6": {Dims: []SetDim{SetDimAddr}, Netmask: 60, Family: IPv6},
		"bmport":  {Dims: []SetDim{SetDimPortOnly}, RangeLo: []byte{0, 1}, RangeHi: []byte{0, 100}, Family: IPv4},
		"bitmask": {Dims: []SetDim{SetDimAddr, SetDimPort}, AddrMask: []byte{255, 0, 255, 0}, Family: IPv4},
		"mark":    {Dims: []SetDim{SetDimAddr, SetDimMark}, MarkMask: 0xffde, Family: IPv4},
		"markall": {Dims: []SetDim{SetDimAddr, SetDimMark}, MarkMask: 0xffffffff, Family: IPv4},
	}
	LookupIPSet = func(name string) (SetInfo, bool) {
		info, ok := sets[name]
		info.NftName = "ipset." + name
		return info, ok
	}
	defer func() { LookupIPSet = nil }()
	tests := []struct {
		fam  Family
		args string
		want []string // types and masks of the expressions
	}{
		{IPv4, "--match-set masked src", []string{"*expr.Payload", "mask ffffff00", "*expr.Lookup"}},
		{IPv6, "--match-set masked6 dst", []string{"*expr.Payload", "mask fffffffffffffff00000000000000000", "*expr.Lookup"}},
		{IPv4, "--match-set bmport dst", []string{"*expr.Meta", "map 2", "*expr.Payload", "*expr.Lookup"}},
		{IPv4, "! --match-set bmport dst", []string{"*expr.Payload", "*expr.Lookup"}},
		{IPv4, "--match-set bitmask src,dst", []string{"*expr.Payload", "mask ff00ff00", "*expr.Meta", "*expr.Payload", "*expr.Lookup"}},
		{IPv4, "--match-set mark src,src", []string{"*expr.Payload", "*expr.Meta", fmt.Sprintf("mask %x", binary.NativeEndian.AppendUint32(nil, 0xffde)), "*expr.Lookup"}},
		{IPv4, "--match-set markall src,src", []string{"*expr.Payload", "*expr.Meta", "*expr.Lookup"}},
	}
	for _, tc := range tests {
		cmd, err := Parse(tc.fam, append([]string{"-A", "INPUT", "-m", "set"}, strings.Fields(tc.args)...), ParseOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		es, err := cmd.Rules[0].Matches[0].(NftExpresser).NftExprs(&NftContext{Family: tc.fam, Rule: cmd.Rules[0], Table: "filter", Chain: "INPUT"})
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		var got []string
		for _, e := range es {
			switch x := e.(type) {
			case *expr.Bitwise:
				got = append(got, fmt.Sprintf("mask %x", x.Mask))
			case *ValueMap:
				got = append(got, fmt.Sprintf("map %d", len(x.Keys)))
			default:
				got = append(got, fmt.Sprintf("%T", e))
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: %v, want %v", tc.args, got, tc.want)
		}
	}
}
