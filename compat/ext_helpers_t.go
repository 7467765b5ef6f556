package compat

import (
	"math/bits"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// Helpers shared by the targets of target_*.go. They reproduce the
// pieces of xtables' x6 option parser (libxtables/xtoptions.c) the
// targets rely on: integer, mark/mask, host and port arguments and the
// final check of option relations, with xtables' exact messages.

// tgStrtoumax is strtoumax(s, &end, 0) as xtables_strtoul calls it: it
// returns the value and the unparsed rest; ok is false when no digits
// were read or a minus sign leads; overflow reports ERANGE.
func tgStrtoumax(s string) (v uint64, rest string, ok, overflow bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	if i < len(s) && s[i] == '-' {
		return 0, s, false, false
	}
	if i < len(s) && s[i] == '+' {
		i++
	}
	base := uint64(10)
	switch {
	case i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && tgDigit(s[i+2], 16) >= 0:
		base = 16
		i += 2
	case i < len(s) && s[i] == '0':
		base = 8
	}
	start := i
	for i < len(s) {
		d := tgDigit(s[i], base)
		if d < 0 {
			break
		}
		hi, lo := bits.Mul64(v, base)
		lo2, carry := bits.Add64(lo, uint64(d), 0)
		if hi != 0 || carry != 0 {
			overflow = true
		}
		v = lo2
		i++
	}
	if i == start {
		return 0, s, false, false
	}
	if overflow {
		v = ^uint64(0)
	}
	return v, s[i:], true, overflow
}

func tgDigit(c byte, base uint64) int {
	var d int
	switch {
	case c >= '0' && c <= '9':
		d = int(c - '0')
	case c >= 'a' && c <= 'f':
		d = int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		d = int(c-'A') + 10
	default:
		return -1
	}
	if uint64(d) >= base {
		return -1
	}
	return d
}

// tgStrtoul is xtables_strtoul: whole reports whether the whole string
// must be a number (end == NULL); rest is what follows otherwise.
func tgStrtoul(s string, min, max uint64, whole bool) (uint64, string, bool) {
	v, rest, ok, overflow := tgStrtoumax(s)
	if !ok || overflow || v < min || (max != 0 && v > max) {
		return 0, rest, false
	}
	if whole && rest != "" {
		return 0, rest, false
	}
	return v, rest, true
}

// tgUint parses an XTTYPE_UINT* option argument within [min, max].
func tgUint(p *OptArg, min, max uint64) (uint64, error) {
	v, _, ok := tgStrtoul(p.Arg, min, max, true)
	if !ok {
		return 0, Paramf("%s: bad value for option \"--%s\", or out of range (%d-%d).\n", p.Ext, p.Def.Name, min, max)
	}
	return v, nil
}

// tgMarkMask parses an XTTYPE_MARKMASK32 argument "value[/mask]"; the
// mask defaults to 0xffffffff.
func tgMarkMask(p *OptArg) (mark, mask uint32, err error) {
	bad := Paramf("%s: bad integer value for option \"--%s\", or out of range.\n", p.Ext, p.Def.Name)
	v, rest, ok := tgStrtoul(p.Arg, 0, 0xffffffff, false)
	if !ok {
		return 0, 0, bad
	}
	if rest == "" {
		return uint32(v), 0xffffffff, nil
	}
	if rest[0] != '/' {
		return 0, 0, Paramf("%s: trailing garbage after value for option \"--%s\".\n", p.Ext, p.Def.Name)
	}
	m, rest, ok := tgStrtoul(rest[1:], 0, 0xffffffff, false)
	if !ok {
		return 0, 0, bad
	}
	if rest != "" {
		return 0, 0, Paramf("%s: trailing garbage after value for option \"--%s\".\n", p.Ext, p.Def.Name)
	}
	return uint32(v), uint32(m), nil
}

// tgHost parses an XTTYPE_HOST argument: one address of the family, as
// getaddrinfo accepts it numerically (inet_aton forms for IPv4), or a
// name from /etc/hosts.
func tgHost(s string, f Family) (netip.Addr, error) {
	if f == IPv6 {
		if a, err := netip.ParseAddr(s); err == nil && a.Is6() && a.Zone() == "" {
			return a, nil
		}
	} else if a, ok := tgInetAton(s); ok {
		return a, nil
	}
	// a numeric address of the other family (EAI_ADDRFAMILY)
	other := false
	if f == IPv6 {
		_, other = tgInetAton(s)
	} else if a, err := netip.ParseAddr(s); err == nil && a.Is6() && a.Zone() == "" {
		other = true
	}
	if other {
		return netip.Addr{}, Paramf("getaddrinfo: Address family for hostname not supported\n")
	}
	if a, ok := tgHostsLookup(s, f); ok {
		return a, nil
	}
	return netip.Addr{}, Paramf("getaddrinfo: Name or service not known\n")
}

// tgInetAton parses IPv4 the way inet_aton does: 1 to 4 parts of
// base-0 numbers, the last part filling the remaining bytes.
func tgInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 || s == "" {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, part := range parts {
		if part == "" || part[0] == '+' || part[0] == '-' || part[0] == ' ' {
			return netip.Addr{}, false
		}
		v, rest, ok, overflow := tgStrtoumax(part)
		if !ok || overflow || rest != "" || v > 0xffffffff {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*uint(i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(32-8*uint(len(vals)-1)) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

func tgHostsLookup(name string, f Family) (netip.Addr, bool) {
	hostName(netip.IPv4Unspecified()) // load /etc/hosts
	var found netip.Addr
	for ip, n := range hostsByIP {
		if n == name && (ip.Is4() == (f == IPv4)) {
			if !found.IsValid() || ip.Less(found) {
				found = ip
			}
		}
	}
	return found, found.IsValid()
}

// tgPortByName resolves an XTTYPE_PORT argument as getaddrinfo(NULL,
// name) does: a decimal number or a service name.
func tgPortByName(s string) (uint16, bool) {
	if s == "" {
		return 0, false
	}
	allDigits := true
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			allDigits = false
		}
	}
	if allDigits {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, false
		}
		return uint16(v), true
	}
	return ServicePort(s, "")
}

// Helpers shared by the NftExprs methods of the targets.

// tgUnsupported is the error of a target instance nftables cannot
// express exactly and whose xtables target the kernel refuses in our
// table (its .table is not "xdptables").
type tgUnsupported struct{}

func (tgUnsupported) Error() string { return "not supported by the nftables backend" }
func (tgUnsupported) Unwrap() error { return ErrNoNative }

var errTgUnsupported error = tgUnsupported{}

// tgXtTarget is the nft_compat "target" expression carrying an xtables
// target at revision rev with info laid out as the kernel's struct
// (x86_64), padded to 8 bytes.
func tgXtTarget(name string, rev uint32, info []byte) expr.Any {
	for len(info)%8 != 0 {
		info = append(info, 0)
	}
	u := xt.Unknown(info)
	return &expr.Target{Name: name, Rev: rev, Info: &u}
}

// tgRefused is the rule body for a target used where the kernel refuses
// it, such as -j MASQUERADE in the filter table or -j REJECT
// --reject-with tcp-reset without -p tcp. iptables-nft hands the kernel
// the xtables target, which the kernel refuses at commit ("RULE_APPEND
// failed (Invalid argument)"); we hand it the same target (name,
// revision, size of its info), which xt_check_target refuses the same
// way, so the refusal and its message are the kernel's own.
func tgRefused(name string, rev uint32, size int) []expr.Any {
	return []expr.Any{tgXtTarget(name, rev, make([]byte, size))}
}

// tgImm loads data into register reg.
func tgImm(reg uint32, data []byte) *expr.Immediate {
	return &expr.Immediate{Register: reg, Data: data}
}

// tgMetaSet writes register 1 into the packet's meta key.
func tgMetaSet(key expr.MetaKey) *expr.Meta {
	return &expr.Meta{Key: key, SourceRegister: true, Register: 1}
}

// tgXsetExprs computes (word & ^mask) ^ value into register 1, where
// load puts the current 32-bit word there; a full mask needs no load.
func tgXsetExprs(load expr.Any, value, mask uint32) []expr.Any {
	if mask == 0xffffffff {
		return []expr.Any{tgImm(1, hostU32(value))}
	}
	return []expr.Any{load,
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: hostU32(^mask), Xor: hostU32(value)}}
}

// tgHeaderRewrite rewrites the len-byte network-header word at off as
// (word & mask) ^ xor; csum updates the IPv4 header checksum, as
// nftables does for `ip ttl set` and `ip dscp set`.
func tgHeaderRewrite(off uint32, mask, xor []byte, csum bool) []expr.Any {
	l := uint32(len(mask))
	w := &expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: l}
	if csum {
		w.CsumType, w.CsumOffset = expr.CsumTypeInet, 10
	}
	return []expr.Any{
		&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: l},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: l, Mask: mask, Xor: xor},
		w,
	}
}
