package compat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// TestTargetNftExprs checks the expressions of the targets' nftables
// translations: their shape (what the kernel runs) and that a refused
// or unsupported case says so.
func TestTargetNftExprs(t *testing.T) {
	imm := func(r uint32, d ...byte) expr.Any { return &expr.Immediate{Register: r, Data: d} }
	markLoad := &expr.Meta{Key: expr.MetaKeyMARK, Register: 1}
	markSet := &expr.Meta{Key: expr.MetaKeyMARK, Register: 1, SourceRegister: true}
	ctLoad := &expr.Ct{Key: expr.CtKeyMARK, Register: 1}
	ctSet := &expr.Ct{Key: expr.CtKeyMARK, Register: 1, SourceRegister: true}
	zoneSet := &expr.Ct{Key: expr.CtKeyZONE, Register: 1, SourceRegister: true}
	bw := func(mask, xor uint32) expr.Any {
		return &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: hostU32(mask), Xor: hostU32(xor)}
	}
	refused := func(name string, rev uint32, size int) []expr.Any { return tgRefused(name, rev, size) }
	tests := []struct {
		fam   Family
		table string
		args  string
		want  []expr.Any
		unsup bool
	}{
		{IPv4, "filter", "-j REJECT", []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 3}}, false},
		{IPv4, "filter", "-j REJECT --reject-with icmp-admin-prohibited", []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 13}}, false},
		{IPv4, "filter", "-j REJECT --reject-with icmp-host-prohibited", []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 10}}, false},
		{IPv4, "filter", "-j REJECT --reject-with icmp-net-prohibited", []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 9}}, false},
		{IPv4, "filter", "-p tcp -j REJECT --reject-with tcp-reset", []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_TCP_RST}}, false},
		{IPv4, "filter", "-j REJECT --reject-with tcp-reset", refused("REJECT", 0, 4), false},
		{IPv4, "mangle", "-j REJECT", refused("REJECT", 0, 4), false},
		{IPv6, "filter", "-j REJECT", []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 4}}, false},
		{IPv6, "filter", "-j REJECT --reject-with icmp6-adm-prohibited", []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 1}}, false},
		{IPv6, "filter", "-j REJECT --reject-with icmp6-addr-unreachable", []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 3}}, false},
		{IPv6, "filter", "-j REJECT --reject-with icmp6-policy-fail", []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 5}}, false},
		{IPv6, "filter", "-j REJECT --reject-with icmp6-reject-route", []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 6}}, false},
		{IPv4, "filter", "-j LOG", []expr.Any{&expr.Log{Key: 1 << unix.NFTA_LOG_LEVEL, Level: 4}}, false},
		{IPv4, "filter", "-j LOG --log-prefix x --log-uid --log-level 6", []expr.Any{&expr.Log{Key: 1<<unix.NFTA_LOG_LEVEL | 1<<unix.NFTA_LOG_FLAGS | 1<<unix.NFTA_LOG_PREFIX, Level: 6, Flags: 8, Data: []byte("x")}}, false},
		{IPv4, "filter", "-j NFLOG --nflog-group 2 --nflog-size 100", []expr.Any{&expr.Log{Key: 1<<unix.NFTA_LOG_GROUP | 1<<unix.NFTA_LOG_SNAPLEN, Group: 2, Snaplen: 100}}, false},
		{IPv4, "mangle", "-j MARK --set-mark 5", []expr.Any{imm(1, hostU32(5)...), markSet}, false},
		{IPv4, "mangle", "-j MARK --set-xmark 0x5/0xf0", []expr.Any{markLoad, bw(^uint32(0xf0), 5), markSet}, false},
		{IPv4, "mangle", "-j MARK --or-mark 0x100", []expr.Any{markLoad, bw(^uint32(0x100), 0x100), markSet}, false},
		{IPv4, "mangle", "-j CONNMARK --save-mark", []expr.Any{markLoad, ctSet}, false},
		{IPv4, "raw", "-j CONNMARK --save-mark", []expr.Any{markLoad, ctSet}, false},
		{IPv4, "mangle", "-j CONNMARK --save-mark --mask 0xff", []expr.Any{tgXtTarget("CONNMARK", 2, []byte{0, 0, 0, 0, 0xff, 0, 0, 0, 0xff, 0, 0, 0, 0, 0, 1})}, false},
		{IPv4, "mangle", "-j CONNMARK --save-mark --left-shift-mark 8", []expr.Any{tgXtTarget("CONNMARK", 2, []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 8, 1})}, false},
		{IPv4, "mangle", "-j CONNMARK --set-mark 7", []expr.Any{imm(1, hostU32(7)...), ctSet}, false},
		{IPv4, "filter", "-j CONNMARK --set-xmark 0x5/0xf0", []expr.Any{ctLoad, bw(^uint32(0xf0), 5), ctSet}, false},
		{IPv4, "filter", "-j CONNMARK --set-mark 0x10/0x30", []expr.Any{ctLoad, bw(^uint32(0x30), 0x10), ctSet}, false},
		{IPv4, "filter", "-j CONNMARK --or-mark 0x100", []expr.Any{ctLoad, bw(^uint32(0x100), 0x100), ctSet}, false},
		{IPv4, "filter", "-j CONNMARK --xor-mark 0x3", []expr.Any{ctLoad, bw(^uint32(0), 3), ctSet}, false},
		{IPv4, "mangle", "-j CONNMARK --restore-mark --ctmask 0xff", []expr.Any{ctLoad, bw(0xff, 0), markSet}, false},
		{IPv4, "nat", "-j MASQUERADE --random", []expr.Any{&expr.Masq{Random: true}}, false},
		{IPv4, "nat", "-p tcp -j DNAT --to-destination 10.0.0.5:80", []expr.Any{imm(1, 10, 0, 0, 5), imm(3, 0, 80),
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: 2, RegAddrMin: 1, RegAddrMax: 1, RegProtoMin: 3, RegProtoMax: 3, Specified: true}}, false},
		{IPv4, "nat", "-j SNAT --to-source 1.2.3.4-1.2.3.10 --persistent", []expr.Any{imm(1, 1, 2, 3, 4), imm(2, 1, 2, 3, 10),
			&expr.NAT{Type: expr.NATTypeSourceNAT, Family: 2, RegAddrMin: 1, RegAddrMax: 2, Persistent: true}}, false},
		{IPv4, "nat", "-p tcp -j REDIRECT --to-ports 8080-8090", []expr.Any{imm(3, 0x1f, 0x90), imm(4, 0x1f, 0x9a),
			&expr.Redir{RegisterProtoMin: 3, RegisterProtoMax: 4, Flags: NATProtoSpecified}}, false},
		{IPv4, "filter", "-j MASQUERADE", refused("MASQUERADE", 0, 24), false},
		{IPv4, "nat", "-p tcp -j MASQUERADE --to-ports 1000", []expr.Any{imm(3, 0x03, 0xe8), &expr.Masq{ToPorts: true, RegProtoMin: 3, RegProtoMax: 3}}, false},
		{IPv4, "nat", "-p tcp -j MASQUERADE --to-ports 1024-65535 --random-fully", []expr.Any{imm(3, 0x04, 0x00), imm(4, 0xff, 0xff),
			&expr.Masq{ToPorts: true, RegProtoMin: 3, RegProtoMax: 4, FullyRandom: true}}, false},
		{IPv4, "raw", "-j CT --notrack", []expr.Any{&expr.Notrack{}}, false},
		{IPv4, "raw", "-j NOTRACK", []expr.Any{&expr.Notrack{}}, false},
		{IPv4, "raw", "-j CT --zone 5", append(notUntracked(), imm(1, binary.NativeEndian.AppendUint16(nil, 5)...), zoneSet), false},
		{IPv4, "raw", "-j CT", append(notUntracked(), imm(1, 0, 0), zoneSet), false},
		{IPv4, "raw", "-j CT --zone-orig 7 --zone-reply 8", append(notUntracked(), imm(1, binary.NativeEndian.AppendUint16(nil, 8)...), zoneSet), false},
		{IPv4, "raw", "-j CT --zone-orig 7", nil, true},
		{IPv4, "raw", "-j CT --zone mark", nil, true},
		{IPv4, "raw", "-j CT --zone 1 --ctevents new", nil, true},
		{IPv4, "raw", "-p tcp -j CT --timeout x", nil, true},
		{IPv4, "filter", "-j CT --notrack", refused("CT", 2, 72), false},
		{IPv4, "raw", "-p tcp -j CT --helper ftp", append(notUntracked(), imm(1, 0, 0), zoneSet), false},
		{IPv4, "mangle", "-j TTL --ttl-set 64", tgHeaderRewrite(8, []byte{0, 0xff}, []byte{64, 0}, true), false},
		{IPv4, "mangle", "-j TTL --ttl-inc 1", []expr.Any{
			&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 8, Len: 1},
			&expr.Lookup{SourceRegister: 1, DestRegister: 1, IsDestRegSet: true},
			&expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 8, Len: 1, CsumType: expr.CsumTypeInet, CsumOffset: 10},
		}, false},
		{IPv6, "mangle", "-j HL --hl-set 9", []expr.Any{imm(1, 9), &expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 7, Len: 1}}, false},
		{IPv4, "mangle", "-j DSCP --set-dscp 10", tgHeaderRewrite(0, []byte{0xff, 0x03}, []byte{0, 40}, true), false},
		{IPv6, "mangle", "-j DSCP --set-dscp 0x2e", tgHeaderRewrite(0, []byte{0xf0, 0x3f}, []byte{0x0b, 0x80}, false), false},
		{IPv4, "mangle", "-p udp -j CHECKSUM --checksum-fill", []expr.Any{}, false},
		{IPv4, "filter", "-j NFQUEUE --queue-balance 2:3 --queue-bypass", []expr.Any{tgXtTarget("NFQUEUE", 3, []byte{2, 0, 2, 0, 1, 0})}, false},
		{IPv4, "filter", "-j AUDIT --type drop", []expr.Any{&expr.Log{Key: 1 << unix.NFTA_LOG_LEVEL, Level: expr.LogLevelAudit}}, false},
		{IPv4, "raw", "-j TRACE", []expr.Any{imm(1, 1), &expr.Meta{Key: expr.MetaKeyNFTRACE, Register: 1, SourceRegister: true}}, false},
		{IPv4, "mangle", "-j TEE --gateway 10.0.0.1", []expr.Any{imm(1, 10, 0, 0, 1), &expr.Dup{RegAddr: 1}}, false},
		{IPv4, "mangle", "-p tcp -j TPROXY --on-port 8080", []expr.Any{&expr.Verdict{Kind: expr.VerdictJump}}, false},
	}
	for _, tc := range tests {
		args := append([]string{"-A", "X"}, strings.Fields(tc.args)...)
		cmd, err := Parse(tc.fam, args, ParseOptions{Table: tc.table})
		if err != nil {
			t.Errorf("%s: parse: %v", tc.args, err)
			continue
		}
		r := cmd.Rules[0]
		n, ok := r.Target.(NftExpresser)
		if !ok {
			t.Errorf("%s: no NftExprs", tc.args)
			continue
		}
		got, err := n.NftExprs(&NftContext{Family: tc.fam, Rule: r, Table: tc.table, Chain: cmd.Chain})
		if tc.unsup {
			if !errors.Is(err, ErrNoNative) {
				t.Errorf("%s: got %v, %v; want unsupported", tc.args, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.args, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d expressions, want %d", tc.args, len(got), len(tc.want))
			continue
		}
		for i := range got {
			a, err1 := expr.Marshal(byte(tc.fam), got[i])
			b, err2 := expr.Marshal(byte(tc.fam), tc.want[i])
			if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
				t.Errorf("%s: expression %d is %#v, want %#v", tc.args, i, got[i], tc.want[i])
			}
		}
	}
}

// TestTTLMaps: --ttl-inc/--ttl-dec/--hl-dec map every byte value to the
// sum or difference stopped at 255 and 0, as xt_TTL and xt_HL compute it.
func TestTTLMaps(t *testing.T) {
	tests := []struct {
		fam  Family
		args string
		off  uint32
		want map[byte]byte
	}{
		{IPv4, "-j TTL --ttl-dec 100", 8, map[byte]byte{0: 0, 99: 0, 100: 0, 101: 1, 255: 155}},
		{IPv4, "-j TTL --ttl-inc 250", 8, map[byte]byte{0: 250, 5: 255, 6: 255, 255: 255}},
		{IPv6, "-j HL --hl-dec 1", 7, map[byte]byte{0: 0, 1: 0, 64: 63, 255: 254}},
		{IPv6, "-j HL --hl-inc 255", 7, map[byte]byte{0: 255, 1: 255}},
	}
	for _, tc := range tests {
		cmd, err := Parse(tc.fam, append([]string{"-A", "X"}, strings.Fields(tc.args)...), ParseOptions{Table: "mangle"})
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		es, err := cmd.Rules[0].Target.(NftExpresser).NftExprs(&NftContext{Family: tc.fam, Rule: cmd.Rules[0], Table: "mangle"})
		if err != nil || len(es) != 3 {
			t.Fatalf("%s: %v %v", tc.args, es, err)
		}
		m, ok := es[1].(*ValueMap)
		if !ok || m.KeyLen != 1 || m.DataLen != 1 || len(m.Keys) != 256 {
			t.Fatalf("%s: expression 1 is %#v", tc.args, es[1])
		}
		for i, k := range m.Keys {
			if k[0] != byte(i) {
				t.Fatalf("%s: key %d is %d", tc.args, i, k[0])
			}
			if v, ok := tc.want[k[0]]; ok && m.Values[i][0] != v {
				t.Errorf("%s: %d maps to %d, want %d", tc.args, k[0], m.Values[i][0], v)
			}
		}
		w := es[2].(*expr.Payload)
		if w.OperationType != expr.PayloadWrite || w.Offset != tc.off || (w.CsumType == expr.CsumTypeInet) != (tc.fam == IPv4) {
			t.Errorf("%s: write %#v", tc.args, w)
		}
	}
}

// TestDNATShiftedPortMap: a DNAT shifted port map loads the destination
// port and maps each port of the rule's --dport range to MIN + (u16)(port
// - BASE) % (MAX - MIN + 1), nf_nat's offset mode, into the port
// register the nat expression reads; without one bounded, not inverted
// --dport range (no map entry for other ports) and for MASQUERADE it
// stays unsupported.
func TestDNATShiftedPortMap(t *testing.T) {
	tests := []struct {
		fam   Family
		args  string
		want  map[uint16]uint16 // every key, with its value
		unsup bool
	}{
		{IPv4, "-p tcp --dport 19000:19002 -j DNAT --to-destination 198.18.30.2:9000-9002/19000",
			map[uint16]uint16{19000: 9000, 19001: 9001, 19002: 9002}, false},
		{IPv4, "-p udp --dport 100:104 -j DNAT --to-destination 198.18.30.2:5000-5002/99",
			map[uint16]uint16{100: 5001, 101: 5002, 102: 5000, 103: 5001, 104: 5002}, false},
		// below the base the offset wraps at 2^16, as the kernel's u16
		{IPv6, "-p sctp --dport 10:11 -j DNAT --to-destination [2001:db8::1]:7000-7002/12",
			map[uint16]uint16{10: 7000 + (65534 % 3), 11: 7000 + (65535 % 3)}, false},
		{IPv4, "-p tcp --dport 8080 -j DNAT --to-destination 198.18.30.2:80-80/8080", map[uint16]uint16{8080: 80}, false},
		{IPv4, "-p tcp -j DNAT --to-destination 198.18.30.2:9000-9002/19000", nil, true},
		{IPv4, "-p tcp ! --dport 19000:19002 -j DNAT --to-destination 198.18.30.2:9000-9002/19000", nil, true},
		{IPv4, "-p tcp --dport 1:5000 -j DNAT --to-destination 198.18.30.2:9000-9002/1", nil, true},
		{IPv4, "-p tcp --dport 19000:19002 -j MASQUERADE --to-ports 9000-9002/19000", nil, true},
	}
	for _, tc := range tests {
		cmd, err := Parse(tc.fam, append([]string{"-A", "X"}, strings.Fields(tc.args)...), ParseOptions{Table: "nat"})
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		es, err := cmd.Rules[0].Target.(NftExpresser).NftExprs(&NftContext{Family: tc.fam, Rule: cmd.Rules[0], Table: "nat"})
		if tc.unsup {
			if !errors.Is(err, ErrNoNative) {
				t.Errorf("%s: got %v, %v; want unsupported", tc.args, es, err)
			}
			continue
		}
		if err != nil || len(es) != 4 {
			t.Fatalf("%s: %v %v", tc.args, es, err)
		}
		ld, ok := es[1].(*expr.Payload)
		if !ok || ld.OperationType != expr.PayloadLoad || ld.Base != expr.PayloadBaseTransportHeader || ld.Offset != 2 || ld.Len != 2 || ld.DestRegister != 3 {
			t.Errorf("%s: expression 1 is %#v, want the destination port into register 3", tc.args, es[1])
		}
		m, ok := es[2].(*ValueMap)
		if !ok || m.KeyLen != 2 || m.DataLen != 2 || m.SourceRegister != 3 || m.DestRegister != 3 || len(m.Keys) != len(tc.want) {
			t.Fatalf("%s: expression 2 is %#v", tc.args, es[2])
		}
		for i, k := range m.Keys {
			key, val := binary.BigEndian.Uint16(k), binary.BigEndian.Uint16(m.Values[i])
			if w, ok := tc.want[key]; !ok || w != val {
				t.Errorf("%s: %d maps to %d, want %d (%v)", tc.args, key, val, w, ok)
			}
		}
		n, ok := es[3].(*expr.NAT)
		if !ok || n.Type != expr.NATTypeDestNAT || n.RegProtoMin != 3 || n.RegProtoMax != 3 || !n.Specified {
			t.Errorf("%s: expression 3 is %#v", tc.args, es[3])
		}
	}
}

// TestTproxyBound: TPROXY jumps to a bound chain that diverts, marks and
// accepts, or else drops; the kernel's refusals of xt TPROXY (no -p
// tcp/udp, a hook other than PREROUTING, a table other than mangle) keep
// the refused xtables form.
func TestTproxyBound(t *testing.T) {
	build := func(fam Family, table, chain, args string) []expr.Any {
		t.Helper()
		cmd, err := Parse(fam, append([]string{"-A", chain}, strings.Fields(args)...), ParseOptions{Table: table})
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		es, err := cmd.Rules[0].Target.(NftExpresser).NftExprs(&NftContext{Family: fam, Rule: cmd.Rules[0], Table: table, Chain: chain})
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		return es
	}
	es := build(IPv4, "mangle", "PREROUTING", "-p udp -j TPROXY --on-port 53 --on-ip 198.51.100.1 --tproxy-mark 0x10/0x30")
	j, ok := es[0].(*BoundJump)
	if len(es) != 1 || !ok || len(j.Rules) != 2 {
		t.Fatalf("got %#v", es)
	}
	div := j.Rules[0]
	var tp *expr.TProxy
	for _, e := range div {
		if x, ok := e.(*expr.TProxy); ok {
			tp = x
		}
	}
	if tp == nil || tp.RegPort == 0 || tp.RegAddr == 0 || tp.Family != unix.NFPROTO_IPV4 {
		t.Errorf("divert rule %#v", div)
	}
	if v, ok := div[len(div)-1].(*expr.Verdict); !ok || v.Kind != expr.VerdictAccept {
		t.Errorf("divert rule ends with %#v", div[len(div)-1])
	}
	if v, ok := j.Rules[1][0].(*expr.Verdict); !ok || len(j.Rules[1]) != 1 || v.Kind != expr.VerdictDrop {
		t.Errorf("second rule %#v", j.Rules[1])
	}
	if es := build(IPv6, "mangle", "DIVERT", "-p tcp -j TPROXY --on-port 1"); len(es) != 1 {
		t.Errorf("user chain: %#v", es)
	} else if _, ok := es[0].(*BoundJump); !ok {
		t.Errorf("user chain: %#v", es)
	}
	for _, c := range []struct{ table, chain, args string }{
		{"mangle", "PREROUTING", "-j TPROXY --on-port 1"},
		{"mangle", "PREROUTING", "-p icmp -j TPROXY --on-port 1"},
		{"mangle", "PREROUTING", "! -p tcp -j TPROXY --on-port 1"},
		{"mangle", "INPUT", "-p tcp -j TPROXY --on-port 1"},
		{"filter", "INPUT", "-p tcp -j TPROXY --on-port 1"},
	} {
		es := build(IPv4, c.table, c.chain, c.args)
		if _, ok := es[0].(*expr.Target); !ok || len(es) != 1 {
			t.Errorf("%s %s %s: %#v, want the refused xt target", c.table, c.chain, c.args, es)
		}
	}
}

// TestSetMapRefused: the kernel's xt SET refuses --map-set outside the
// mangle table, and --map-prio/--map-queue in a built-in chain other
// than FORWARD, OUTPUT and POSTROUTING; the rule then carries the xt
// target (struct xt_set_info_target_v3, add_set/del_set without an
// index) so that the kernel refuses it as for iptables-nft. Where the
// kernel accepts it, --map-set has no native form.
func TestSetMapRefused(t *testing.T) {
	u16 := func(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }
	info := func(add []byte, mapDim, mapSrc byte, flags, timeout uint32) []byte {
		b := append(append([]byte{}, add...), u16(0xffff)...)
		b = append(b, 0, 0)
		b = append(append(b, u16(0)...), mapDim, mapSrc)
		return append(append(b, hostU32(flags)...), hostU32(timeout)...)
	}
	none := append(u16(0xffff), 0, 0)
	tests := []struct {
		table, chain, args string
		want               []byte // nil: no native form
	}{
		{"filter", "INPUT", "-j SET --map-set s src --map-mark", info(none, 1, 1, 1<<8, 0xffffffff)},
		{"raw", "PREROUTING", "-j SET --add-set a dst,src --exist --timeout 9 --map-set s dst,src --map-prio",
			info(append(u16(0xffff), 2, 2), 2, 2, 1|1<<9, 9)},
		{"mangle", "INPUT", "-j SET --map-set s src --map-queue", info(none, 1, 1, 1<<10, 0xffffffff)},
		{"mangle", "PREROUTING", "-j SET --map-set s src --map-mark --map-prio", info(none, 1, 1, 1<<8|1<<9, 0xffffffff)},
		{"mangle", "PREROUTING", "-j SET --map-set s src --map-mark", nil},
		{"mangle", "POSTROUTING", "-j SET --map-set s src --map-prio --map-queue", nil},
		{"mangle", "U", "-j SET --map-set s src --map-prio", nil}, // the kernel checks at the jump
	}
	for _, tc := range tests {
		cmd, err := Parse(IPv4, append([]string{"-A", tc.chain}, strings.Fields(tc.args)...), ParseOptions{Table: tc.table})
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		es, err := cmd.Rules[0].Target.(NftExpresser).NftExprs(&NftContext{Family: IPv4, Rule: cmd.Rules[0], Table: tc.table, Chain: tc.chain})
		if tc.want == nil {
			if !errors.Is(err, ErrNoNative) {
				t.Errorf("%s %s %s: %#v, %v; want no native form", tc.table, tc.chain, tc.args, es, err)
			}
			continue
		}
		want := []expr.Any{tgXtTarget("SET", 3, tc.want)}
		if err != nil || len(es) != 1 {
			t.Errorf("%s %s %s: %#v, %v; want %#v", tc.table, tc.chain, tc.args, es, err, want)
			continue
		}
		a, err1 := expr.Marshal(byte(IPv4), es[0])
		b, err2 := expr.Marshal(byte(IPv4), want[0])
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s %s %s: %#v; want %#v", tc.table, tc.chain, tc.args, es, want)
		}
	}
}

// notUntracked is the test that leaves a packet NOTRACK made untracked
// alone, in front of a ct zone set.
func notUntracked() []expr.Any {
	return []expr.Any{
		&expr.Ct{Key: expr.CtKeySTATE, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: binary.NativeEndian.AppendUint32(nil, 1<<6), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: make([]byte, 4)},
	}
}

// TestCTHelperNftExprs: --helper in a raw chain, built-in or user,
// alone or with a zone for both directions, is the zone template (zone
// 0 without --zone; the helper is assigned after conntrack,
// translate.CTHelperMirrorTable); with other options it has no native
// form.
func TestCTHelperNftExprs(t *testing.T) {
	for _, tc := range []struct {
		chain, args string
		native      bool
		zone        uint16
	}{
		{"PREROUTING", "-p tcp --dport 21 -j CT --helper ftp", true, 0},
		{"OUTPUT", "-p udp -j CT --helper tftp", true, 0},
		{"PREROUTING", "-p tcp -j CT --helper ftp --zone 3", true, 3},
		{"OUTPUT", "-p tcp -j CT --helper ftp --zone-orig 7 --zone-reply 7", true, 7},
		{"X", "-p tcp -j CT --helper ftp", true, 0},
		{"X", "-p tcp -j CT --helper ftp --zone 4", true, 4},
		{"X", "-p tcp -j CT --helper ftp --zone-orig 3", false, 0},
		{"PREROUTING", "-p tcp -j CT --helper ftp --zone-orig 3", false, 0},
		{"PREROUTING", "-p tcp -j CT --helper ftp --zone mark", false, 0},
		{"PREROUTING", "-p tcp -j CT --helper ftp --ctevents new", false, 0},
		{"PREROUTING", "-p tcp -j CT --helper ftp --timeout x", false, 0},
	} {
		cmd, err := Parse(IPv4, append([]string{"-A", tc.chain}, strings.Fields(tc.args)...), ParseOptions{Table: "raw"})
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		ct := cmd.Rules[0].Target.(*CTTarget)
		got, err := ct.NftExprs(&NftContext{Family: IPv4, Rule: cmd.Rules[0], Table: "raw", Chain: tc.chain})
		if tc.native {
			var zone []byte
			if n := len(got); n == 5 {
				if imm, ok := got[n-2].(*expr.Immediate); ok {
					zone = imm.Data
				}
				if c, ok := got[n-1].(*expr.Ct); !ok || c.Key != expr.CtKeyZONE || !c.SourceRegister {
					zone = nil
				}
			}
			if err != nil || len(zone) != 2 || binary.NativeEndian.Uint16(zone) != tc.zone {
				t.Errorf("%s in %s: %v %v, want ct zone set %d", tc.args, tc.chain, got, err, tc.zone)
			}
		}
		if !tc.native && !errors.Is(err, ErrNoNative) {
			t.Errorf("%s in %s: %v %v, want unsupported", tc.args, tc.chain, got, err)
		}
		if err := ct.NotNative(); !errors.Is(err, ErrNoNative) || !strings.Contains(err.Error(), "--helper") {
			t.Errorf("NotNative: %v", err)
		}
	}
}
