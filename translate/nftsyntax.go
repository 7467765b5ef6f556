package translate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	mbits "math/bits"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
)

// NftStatement is a rule rendered in nft's rule language (`nft -f`
// syntax), without the "add rule" head.
type NftStatement struct {
	Text string
	// Compat names the xtables matches and targets (nft_compat "xt"
	// expressions) of the rule: nft cannot load those from a script, so
	// Text then only shows what the rule does.
	Compat []string
	// Notes explain expressions that have no text form and were left out
	// or rendered approximately.
	Notes []string
}

// ErrNoSyntax is returned for an expression the printer cannot render.
var ErrNoSyntax = errors.New("no nft syntax for expression")

// operand is what a register holds: the nft expression that computed it
// and how to print the values it is compared with.
type operand struct {
	text string
	kind valueKind
	size int    // natural length in bytes
	mask []byte // bitwise AND applied (nil: none)
	xor  []byte
	lit  []byte // immediate data
}

type valueKind int

const (
	kindRaw     valueKind = iota // big-endian integer, printed in hex
	kindIP4                      // IPv4 address
	kindIP6                      // IPv6 address
	kindIface                    // interface name
	kindDec                      // big-endian integer, printed in decimal
	kindHost                     // host-order integer, printed in decimal
	kindHostHex                  // host-order integer, printed in hex (marks)
	kindCtState
	kindEther
	kindExists  // an exthdr presence test: 1 or 0
	kindFragOff // the IPv6 fragment header's offset word (frag frag-off)
)

// NftSyntax renders the expressions of one rule of family f as nft rule
// statements. Values are printed so that `nft -f` builds the same
// expressions again: addresses and interface names in their usual
// notation, other header fields as raw payloads (@nh, @th, @ll), which
// nft loads without adding protocol dependencies.
func NftSyntax(f compat.Family, es []expr.Any) (NftStatement, error) {
	p := &printer{fam: f, regs: map[uint32]*operand{}}
	for _, e := range es {
		if err := p.expr(e); err != nil {
			return NftStatement{}, err
		}
	}
	p.flushPending()
	return NftStatement{Text: strings.Join(p.out, " "), Compat: p.compat, Notes: p.notes}, nil
}

type printer struct {
	fam     compat.Family
	regs    map[uint32]*operand
	pending []uint32 // registers loaded and not yet used, in load order
	out     []string
	compat  []string
	notes   []string
}

func (p *printer) load(reg uint32, o *operand) {
	for i, r := range p.pending {
		if r == reg {
			p.pending = append(p.pending[:i], p.pending[i+1:]...)
			break
		}
	}
	p.regs[reg] = o
	p.pending = append(p.pending, reg)
}

func (p *printer) use(reg uint32) (*operand, error) {
	o := p.regs[reg]
	if o == nil {
		return nil, fmt.Errorf("%w: register %d used before it is loaded", ErrNoSyntax, reg)
	}
	for i, r := range p.pending {
		if r == reg {
			p.pending = append(p.pending[:i], p.pending[i+1:]...)
			break
		}
	}
	return o, nil
}

// flushPending notes loads nothing used: nft has no statement for a
// lone load (an iptables "-i +" loads the name and tests nothing).
func (p *printer) flushPending() {
	for _, r := range p.pending {
		if o := p.regs[r]; o != nil && o.lit == nil {
			p.notes = append(p.notes, fmt.Sprintf("unused load of %s left out", o.text))
		}
	}
	p.pending = nil
}

func (p *printer) emit(s string) { p.out = append(p.out, s) }

func (p *printer) expr(e expr.Any) error {
	if l, ok := e.(kernel.EnsuredLookup); ok {
		// the set it may create is printed with the sets
		e, _ = l.EnsuredSet()
	}
	switch x := e.(type) {
	case *expr.Payload:
		if x.OperationType == expr.PayloadWrite {
			return p.payloadWrite(x)
		}
		p.load(x.DestRegister, p.payloadOperand(x))
	case *expr.Meta:
		name, kind, size := metaField(x.Key)
		if name == "" {
			return fmt.Errorf("%w: meta key %d", ErrNoSyntax, x.Key)
		}
		if x.SourceRegister {
			o, err := p.use(x.Register)
			if err != nil {
				return err
			}
			p.emit(fmt.Sprintf("%s set %s", name, p.setValue(o, kind, size)))
			return nil
		}
		p.load(x.Register, &operand{text: name, kind: kind, size: size})
	case *expr.Ct:
		name, kind, size := ctField(x.Key)
		if name == "" {
			return fmt.Errorf("%w: ct key %d", ErrNoSyntax, x.Key)
		}
		if x.SourceRegister {
			o, err := p.use(x.Register)
			if err != nil {
				return err
			}
			p.emit(fmt.Sprintf("%s set %s", name, p.setValue(o, kind, size)))
			return nil
		}
		p.load(x.Register, &operand{text: name, kind: kind, size: size})
	case *expr.Numgen:
		t := "inc"
		if x.Type == unix.NFT_NG_RANDOM {
			t = "random"
		}
		s := fmt.Sprintf("numgen %s mod %d", t, x.Modulus)
		if x.Offset != 0 {
			s += fmt.Sprintf(" offset %d", x.Offset)
		}
		p.load(x.Register, &operand{text: s, kind: kindHost, size: 4})
	case *expr.Fib:
		p.load(x.Register, fibOperand(x))
	case kernel.TCPOptionReset:
		p.emit(fmt.Sprintf("reset tcp option %d", x.ResetKind()))
	case *expr.Exthdr:
		switch {
		case x.Op == expr.ExthdrOpTcpopt && x.Flags == unix.NFT_EXTHDR_F_PRESENT && x.Offset == 0 && x.Len == 1:
			p.load(x.DestRegister, &operand{text: fmt.Sprintf("tcp option %d", x.Type), kind: kindExists, size: 1})
		case x.Op == expr.ExthdrOpIpv6 && x.Type == unix.IPPROTO_FRAGMENT && x.Flags == 0 && x.Offset == 2 && x.Len == 2:
			p.load(x.DestRegister, &operand{text: "frag frag-off", kind: kindFragOff, size: 2})
		default:
			return fmt.Errorf("%w: exthdr op %d type %d offset %d len %d flags %#x", ErrNoSyntax, x.Op, x.Type, x.Offset, x.Len, x.Flags)
		}
	case *expr.Immediate:
		p.load(x.Register, &operand{lit: x.Data, size: len(x.Data)})
	case *expr.Bitwise:
		o, err := p.use(x.SourceRegister)
		if err != nil {
			return err
		}
		n := *o
		if n.mask != nil || n.xor != nil {
			return fmt.Errorf("%w: two bitwise operations on one value", ErrNoSyntax)
		}
		n.mask, n.xor = x.Mask, x.Xor
		p.load(x.DestRegister, &n)
	case *expr.Cmp:
		o, err := p.use(x.Register)
		if err != nil {
			return err
		}
		switch o.kind {
		case kindExists:
			// "exists" is == 1, "missing" == 0
			if o.mask != nil || len(x.Data) != 1 || x.Data[0] > 1 || (x.Op != expr.CmpOpEq && x.Op != expr.CmpOpNeq) {
				return fmt.Errorf("%w: %s compared with %x", ErrNoSyntax, o.text, x.Data)
			}
			word := map[bool]string{true: "exists", false: "missing"}[(x.Data[0] == 1) == (x.Op == expr.CmpOpEq)]
			p.emit(o.text + " " + word)
			return nil
		case kindFragOff:
			// nft's 13-bit field: the word under mask 0xfff8, shifted
			if !bytes.Equal(o.mask, []byte{0xff, 0xf8}) || !allZero(o.xor) || len(x.Data) != 2 || x.Data[1]&7 != 0 {
				return fmt.Errorf("%w: %s under mask %x compared with %x", ErrNoSyntax, o.text, o.mask, x.Data)
			}
			ops := map[expr.CmpOp]string{expr.CmpOpEq: "", expr.CmpOpNeq: "!= ", expr.CmpOpLt: "< ", expr.CmpOpLte: "<= ", expr.CmpOpGt: "> ", expr.CmpOpGte: ">= "}[x.Op]
			p.emit(fmt.Sprintf("%s %s%d", o.text, ops, binary.BigEndian.Uint16(x.Data)>>3))
			return nil
		}
		p.emit(p.relation(o, x.Op, x.Data))
	case *expr.Range:
		o, err := p.use(x.Register)
		if err != nil {
			return err
		}
		op := ""
		if x.Op == expr.CmpOpNeq {
			op = "!= "
		}
		p.emit(fmt.Sprintf("%s %s%s-%s", p.lhs(o, x.FromData), op, p.value(o, x.FromData), p.value(o, x.ToData)))
	case kernel.BoundChain:
		var rules []string
		for _, r := range x.BoundRules() {
			st, err := NftSyntax(p.fam, r)
			if err != nil {
				return err
			}
			rules = append(rules, st.Text)
			p.compat = append(p.compat, st.Compat...)
			p.notes = append(p.notes, st.Notes...)
		}
		p.emit("jump { " + strings.Join(rules, "; ") + "; }")
	case kernel.AnonMap:
		l, _, dataLen, keys, values := x.AnonMapDef()
		o, err := p.use(l.SourceRegister)
		if err != nil {
			return err
		}
		if dataLen == 0 { // an anonymous set: membership
			vals := make([]string, len(keys))
			for i := range keys {
				vals[i] = p.value(o, keys[i])
			}
			op := ""
			if l.Invert {
				op = "!= "
			}
			p.emit(fmt.Sprintf("%s %s{ %s }", p.lhs(o, nil), op, strings.Join(vals, ", ")))
			break
		}
		pairs := make([]string, len(keys))
		for i := range keys {
			pairs[i] = p.value(o, keys[i]) + " : " + strconv.FormatUint(beUint(values[i]), 10)
		}
		p.load(l.DestRegister, &operand{text: o.text + " map { " + strings.Join(pairs, ", ") + " }", kind: kindDec, size: int(dataLen)})
	case *expr.Lookup:
		var keys []string
		for _, r := range p.pending {
			if o := p.regs[r]; o.text == "" && o.lit != nil {
				// (a list:set's own counters: the member's element)
				return fmt.Errorf("%w: lookup of a constant", ErrNoSyntax)
			}
			keys = append(keys, p.keyText(p.regs[r]))
		}
		p.pending = nil
		if len(keys) == 0 {
			return fmt.Errorf("%w: lookup without a key", ErrNoSyntax)
		}
		op := ""
		if x.Invert {
			op = "!= "
		}
		p.emit(fmt.Sprintf("%s %s@%s", strings.Join(keys, " . "), op, quoteName(x.SetName)))
	case *expr.Counter:
		if x.Packets != 0 || x.Bytes != 0 {
			p.emit(fmt.Sprintf("counter packets %d bytes %d", x.Packets, x.Bytes))
		} else {
			p.emit("counter")
		}
	case *expr.Verdict:
		switch x.Kind {
		case expr.VerdictAccept:
			p.emit("accept")
		case expr.VerdictDrop:
			p.emit("drop")
		case expr.VerdictReturn:
			p.emit("return")
		case expr.VerdictContinue:
			p.emit("continue")
		case expr.VerdictJump:
			p.emit("jump " + quoteName(x.Chain))
		case expr.VerdictGoto:
			p.emit("goto " + quoteName(x.Chain))
		default:
			return fmt.Errorf("%w: verdict %d (a rule that never matches)", ErrNoSyntax, x.Kind)
		}
	case *expr.Queue:
		s := fmt.Sprintf("queue num %d", x.Num)
		if x.Total > 1 {
			s = fmt.Sprintf("queue num %d-%d", x.Num, x.Num+x.Total-1)
		}
		var fl []string
		if x.Flag&expr.QueueFlagBypass != 0 {
			fl = append(fl, "bypass")
		}
		if x.Flag&expr.QueueFlagFanout != 0 {
			fl = append(fl, "fanout")
		}
		if len(fl) > 0 {
			s += " " + strings.Join(fl, ",")
		}
		p.emit(s)
	case *expr.Reject:
		p.emit(p.reject(x))
	case *expr.Log:
		p.emit(logText(x))
	case *expr.Limit:
		p.emit(limitText(x))
	case kernel.FlaggedNAT:
		return fmt.Errorf("%w: nat with NF_NAT_RANGE flags 0x%x (nft has no syntax for a port offset)", ErrNoSyntax, x.ExtraNATFlags())
	case *expr.NAT:
		return p.nat(x)
	case *expr.Masq:
		s := "masquerade"
		if x.ToPorts {
			ports, err := p.portRange(x.RegProtoMin, x.RegProtoMax)
			if err != nil {
				return err
			}
			s += " to :" + ports
		}
		p.emit(s + natFlags(x.Random, x.FullyRandom, x.Persistent))
	case *expr.Redir:
		s := "redirect"
		if x.RegisterProtoMin != 0 {
			ports, err := p.portRange(x.RegisterProtoMin, x.RegisterProtoMax)
			if err != nil {
				return err
			}
			s += " to :" + ports
		}
		p.emit(s + natFlags(x.Flags&unix.NF_NAT_RANGE_PROTO_RANDOM != 0, x.Flags&unix.NF_NAT_RANGE_PROTO_RANDOM_FULLY != 0, x.Flags&unix.NF_NAT_RANGE_PERSISTENT != 0))
	case *expr.Notrack:
		p.emit("notrack")
	case *expr.Dup:
		o, err := p.use(x.RegAddr)
		if err != nil {
			return err
		}
		s := "dup to " + p.addrLit(o.lit)
		if x.IsRegDevSet {
			d, err := p.use(x.RegDev)
			if err != nil {
				return err
			}
			s += " device " + strconv.Quote(strings.TrimRight(string(d.lit), "\x00"))
		}
		p.emit(s)
	case *expr.TProxy:
		s := "tproxy to "
		if x.RegAddr != 0 {
			o, err := p.use(x.RegAddr)
			if err != nil {
				return err
			}
			s += p.addrLit(o.lit)
		}
		if x.RegPort != 0 {
			o, err := p.use(x.RegPort)
			if err != nil {
				return err
			}
			s += fmt.Sprintf(":%d", beUint(o.lit))
		}
		p.emit(s)
	case *expr.Objref:
		if x.Type != unix.NFT_OBJECT_CT_HELPER {
			return fmt.Errorf("%w: object reference of type %d", ErrNoSyntax, x.Type)
		}
		p.emit(fmt.Sprintf("ct helper set %q", x.Name))
	case *expr.Match:
		p.compat = append(p.compat, "match "+x.Name)
		p.pending = nil
		p.emit(fmt.Sprintf("xt match %q", x.Name))
	case *expr.Target:
		p.compat = append(p.compat, "target "+x.Name)
		p.pending = nil
		p.emit(fmt.Sprintf("xt target %q", x.Name))
	default:
		return fmt.Errorf("%w: %T", ErrNoSyntax, e)
	}
	return nil
}

// payloadOperand names a payload load: the address fields by name,
// anything else raw in bits.
func (p *printer) payloadOperand(x *expr.Payload) *operand {
	o := &operand{kind: kindRaw, size: int(x.Len)}
	switch x.Base {
	case expr.PayloadBaseNetworkHeader:
		if p.fam == compat.IPv6 {
			switch {
			case x.Offset == 8 && x.Len <= 16:
				return &operand{text: "ip6 saddr", kind: kindIP6, size: 16}
			case x.Offset == 24 && x.Len <= 16:
				return &operand{text: "ip6 daddr", kind: kindIP6, size: 16}
			}
		} else {
			switch {
			case x.Offset == 12 && x.Len <= 4:
				return &operand{text: "ip saddr", kind: kindIP4, size: 4}
			case x.Offset == 16 && x.Len <= 4:
				return &operand{text: "ip daddr", kind: kindIP4, size: 4}
			}
		}
		o.text = fmt.Sprintf("@nh,%d,%d", x.Offset*8, x.Len*8)
	case expr.PayloadBaseTransportHeader:
		switch {
		case x.Offset == 0 && x.Len == 2:
			return &operand{text: "th sport", kind: kindDec, size: 2}
		case x.Offset == 2 && x.Len == 2:
			return &operand{text: "th dport", kind: kindDec, size: 2}
		}
		o.text = fmt.Sprintf("@th,%d,%d", x.Offset*8, x.Len*8)
	default:
		if x.Len == 6 && (x.Offset == 0 || x.Offset == 6) {
			o.kind = kindEther
		}
		o.text = fmt.Sprintf("@ll,%d,%d", x.Offset*8, x.Len*8)
	}
	return o
}

func metaField(k expr.MetaKey) (string, valueKind, int) {
	switch k {
	case expr.MetaKeyIIFNAME:
		return "iifname", kindIface, 16
	case expr.MetaKeyOIFNAME:
		return "oifname", kindIface, 16
	case expr.MetaKeyL4PROTO:
		return "meta l4proto", kindDec, 1
	case expr.MetaKeyMARK:
		return "meta mark", kindHostHex, 4
	case expr.MetaKeySKUID:
		return "meta skuid", kindHost, 4
	case expr.MetaKeySKGID:
		return "meta skgid", kindHost, 4
	case expr.MetaKeyCPU:
		return "meta cpu", kindHost, 4
	case expr.MetaKeyPKTTYPE:
		return "meta pkttype", kindDec, 1
	case expr.MetaKeyIIFTYPE:
		return "meta iiftype", kindHost, 2
	case expr.MetaKeyNFTRACE:
		return "meta nftrace", kindDec, 1
	case expr.MetaKeyPRIORITY:
		return "meta priority", kindHostHex, 4
	case expr.MetaKeyIIF:
		return "meta iif", kindHost, 4
	case expr.MetaKeyOIF:
		return "meta oif", kindHost, 4
	case expr.MetaKeyNFPROTO:
		return "meta nfproto", kindDec, 1
	case expr.MetaKeyPROTOCOL:
		return "meta protocol", kindRaw, 2
	case expr.MetaKeyLEN:
		return "meta length", kindHost, 4
	}
	return "", 0, 0
}

func ctField(k expr.CtKey) (string, valueKind, int) {
	switch k {
	case expr.CtKeySTATE:
		return "ct state", kindCtState, 4
	case expr.CtKeySTATUS:
		return "ct status", kindHostHex, 4
	case expr.CtKeyMARK:
		return "ct mark", kindHostHex, 4
	case expr.CtKeyDIRECTION:
		return "ct direction", kindDec, 1
	case expr.CtKeyPROTOCOL:
		return "ct protocol", kindDec, 1
	case expr.CtKeyEXPIRATION:
		return "ct expiration", kindHost, 4
	case expr.CtKeyHELPER:
		return "ct helper", kindIface, 16
	case expr.CtKeyZONE:
		return "ct zone", kindHost, 2
	}
	return "", 0, 0
}

func fibOperand(x *expr.Fib) *operand {
	var in []string
	if x.FlagSADDR {
		in = append(in, "saddr")
	}
	if x.FlagDADDR {
		in = append(in, "daddr")
	}
	if x.FlagMARK {
		in = append(in, "mark")
	}
	if x.FlagIIF {
		in = append(in, "iif")
	}
	if x.FlagOIF {
		in = append(in, "oif")
	}
	res := "type"
	switch {
	case x.ResultOIF:
		res = "oif"
	case x.ResultOIFNAME:
		res = "oifname"
	}
	return &operand{text: "fib " + strings.Join(in, " . ") + " " + res, kind: kindHost, size: 4}
}

// lhs is the left side of a relation with data: a bitwise AND that is a
// prefix of an address shows as the prefix on the right side instead.
func (p *printer) lhs(o *operand, data []byte) string {
	if o.mask == nil || p.prefixMask(o) >= 0 {
		return o.text
	}
	s := o.text + " & " + p.value(&operand{kind: o.kind, size: o.size}, o.mask)
	if !allZero(o.xor) {
		s += " ^ " + p.value(&operand{kind: o.kind, size: o.size}, o.xor)
	}
	return s
}

// keyText is a lookup key's operand with its mask (the address of a
// set with a netmask), which lhs leaves to the value for prefixes.
func (p *printer) keyText(o *operand) string {
	if o.mask == nil {
		return o.text
	}
	s := o.text + " & " + p.value(&operand{kind: o.kind, size: o.size}, o.mask)
	if !allZero(o.xor) {
		s += " ^ " + p.value(&operand{kind: o.kind, size: o.size}, o.xor)
	}
	return s
}

// prefixMask returns the prefix length of an address operand's mask, or
// -1 when it is not a prefix of an address (or there is no mask).
func (p *printer) prefixMask(o *operand) int {
	if o.mask == nil || (o.kind != kindIP4 && o.kind != kindIP6) || !allZero(o.xor) {
		return -1
	}
	n := 0
	seenZero := false
	for _, b := range o.mask {
		for i := 7; i >= 0; i-- {
			if b&(1<<i) != 0 {
				if seenZero {
					return -1
				}
				n++
			} else {
				seenZero = true
			}
		}
	}
	return n
}

func (p *printer) relation(o *operand, op expr.CmpOp, data []byte) string {
	ops := map[expr.CmpOp]string{expr.CmpOpEq: "", expr.CmpOpNeq: "!= ", expr.CmpOpLt: "< ", expr.CmpOpLte: "<= ", expr.CmpOpGt: "> ", expr.CmpOpGte: ">= "}[op]
	lhs := p.lhs(o, data)
	// an address compared on fewer bytes than it has, or under a prefix
	// mask, is a prefix
	if o.kind == kindIP4 || o.kind == kindIP6 {
		bitsN := -1
		if o.mask == nil && len(data) < o.size {
			bitsN = len(data) * 8
		} else if n := p.prefixMask(o); n >= 0 {
			bitsN = n
		}
		if bitsN >= 0 {
			full := make([]byte, o.size)
			copy(full, data)
			a, _ := netip.AddrFromSlice(full)
			return fmt.Sprintf("%s %s%s/%d", lhs, ops, a, bitsN)
		}
	}
	if o.kind == kindCtState && o.mask != nil && allZero(o.xor) && allZero(data) && op != expr.CmpOpEq {
		// "ct state est,rel": any of the bits
		return fmt.Sprintf("%s %s", o.text, ctStateNames(binary.NativeEndian.Uint32(pad(o.mask, 4))))
	}
	if o.kind == kindIface && o.mask == nil {
		return fmt.Sprintf("%s %s%s", lhs, ops, ifaceValue(data))
	}
	if o.kind == kindCtState && o.mask != nil {
		return fmt.Sprintf("%s & %s %s", o.text, p.value(&operand{kind: kindHostHex, size: 4}, o.mask), strings.TrimSpace(orEq(ops))+" "+p.value(&operand{kind: kindHostHex, size: 4}, data))
	}
	if o.mask != nil {
		return fmt.Sprintf("%s %s %s", lhs, strings.TrimSpace(orEq(ops)), p.value(o, data))
	}
	return fmt.Sprintf("%s %s%s", lhs, ops, p.value(o, data))
}

func orEq(op string) string {
	if op == "" {
		return "=="
	}
	return op
}

// value prints data as a constant of o's type.
func (p *printer) value(o *operand, data []byte) string {
	switch o.kind {
	case kindIP4, kindIP6:
		if len(data) == o.size {
			a, _ := netip.AddrFromSlice(data)
			return a.String()
		}
	case kindIface:
		return ifaceValue(data)
	case kindDec:
		return new(big.Int).SetBytes(data).String()
	case kindHost:
		return strconv.FormatUint(hostUint(data), 10)
	case kindHostHex, kindCtState:
		return fmt.Sprintf("0x%0*x", 2*len(data), hostUint(data))
	case kindEther:
		// a raw @ll payload takes an integer, not a MAC address
		// ("@ll,48,48 00:11:22:aa:bb:cc": "Could not parse integer")
		return fmt.Sprintf("0x%0*x", 2*len(data), new(big.Int).SetBytes(data))
	}
	return "0x" + fmt.Sprintf("%x", new(big.Int).SetBytes(data))
}

// setValue is the right side of "KEY set": an immediate value, or a
// register computed from a load and a bitwise operation.
func (p *printer) setValue(o *operand, kind valueKind, size int) string {
	if o.lit != nil {
		return p.value(&operand{kind: kind, size: size}, o.lit)
	}
	s := o.text
	if o.mask != nil {
		mk := &operand{kind: kindHostHex, size: 4}
		if o.kind != kindHostHex && o.kind != kindHost && o.kind != kindCtState {
			mk = &operand{kind: kindRaw, size: o.size}
		}
		m := p.value(mk, o.mask)
		if !allOnes(o.mask) {
			s += " & " + m
		}
		if !allZero(o.xor) {
			s += " ^ " + p.value(mk, o.xor)
		}
	}
	return s
}

func (p *printer) payloadWrite(x *expr.Payload) error {
	o, err := p.use(x.SourceRegister)
	if err != nil {
		return err
	}
	field := p.payloadOperand(&expr.Payload{Base: x.Base, Offset: x.Offset, Len: x.Len})
	p.emit(fmt.Sprintf("%s set %s", field.text, p.setValue(o, field.kind, field.size)))
	if x.CsumType != expr.CsumTypeNone {
		p.notes = append(p.notes, "raw payload write: nft does not update the checksum the way the kernel rule does")
	}
	return nil
}

func (p *printer) addrLit(b []byte) string {
	a, ok := netip.AddrFromSlice(b)
	if !ok {
		return "0x" + fmt.Sprintf("%x", b)
	}
	if a.Is6() && !a.Is4In6() {
		return "[" + a.String() + "]"
	}
	return a.Unmap().String()
}

func (p *printer) portRange(min, max uint32) (string, error) {
	lo, err := p.use(min)
	if err != nil {
		return "", err
	}
	s := strconv.FormatUint(beUint(lo.lit), 10)
	if max != 0 && max != min {
		hi, err := p.use(max)
		if err != nil {
			return "", err
		}
		s += "-" + strconv.FormatUint(beUint(hi.lit), 10)
	}
	return s, nil
}

func (p *printer) nat(x *expr.NAT) error {
	kind := "snat"
	if x.Type == expr.NATTypeDestNAT {
		kind = "dnat"
	}
	s := kind + " to "
	if x.Prefix && x.RegAddrMin != 0 && x.RegAddrMax != 0 {
		// NF_NAT_RANGE_NETMAP: the range is a prefix whose bits replace
		// the packet's
		lo, err := p.use(x.RegAddrMin)
		if err != nil {
			return err
		}
		hi, err := p.use(x.RegAddrMax)
		if err != nil {
			return err
		}
		bits := 0
		for i := range lo.lit {
			bits += 8 - mbits.Len8(lo.lit[i]^hi.lit[i])
			if lo.lit[i] != hi.lit[i] {
				break
			}
		}
		fam := "ip"
		if len(lo.lit) == 16 {
			fam = "ip6"
		}
		p.emit(fmt.Sprintf("%s %s prefix to %s/%d", kind, fam, strings.Trim(p.addrLit(lo.lit), "[]"), bits) + natFlags(x.Random, x.FullyRandom, x.Persistent))
		return nil
	}
	if x.RegAddrMin != 0 {
		lo, err := p.use(x.RegAddrMin)
		if err != nil {
			return err
		}
		s += p.addrLit(lo.lit)
		if x.RegAddrMax != 0 && x.RegAddrMax != x.RegAddrMin {
			hi, err := p.use(x.RegAddrMax)
			if err != nil {
				return err
			}
			s += "-" + p.addrLit(hi.lit)
		}
	}
	if x.RegProtoMin != 0 {
		ports, err := p.portRange(x.RegProtoMin, x.RegProtoMax)
		if err != nil {
			return err
		}
		s += ":" + ports
	}
	p.emit(s + natFlags(x.Random, x.FullyRandom, x.Persistent))
	return nil
}

func natFlags(random, fully, persistent bool) string {
	var fl []string
	if random {
		fl = append(fl, "random")
	}
	if fully {
		fl = append(fl, "fully-random")
	}
	if persistent {
		fl = append(fl, "persistent")
	}
	if len(fl) == 0 {
		return ""
	}
	return " " + strings.Join(fl, ",")
}

var icmpCodes = map[uint8]string{0: "net-unreachable", 1: "host-unreachable", 2: "prot-unreachable", 3: "port-unreachable",
	9: "net-prohibited", 10: "host-prohibited", 13: "admin-prohibited"}

var icmp6Codes = map[uint8]string{0: "no-route", 1: "admin-prohibited", 3: "addr-unreachable", 4: "port-unreachable",
	5: "policy-fail", 6: "reject-route"}

func (p *printer) reject(x *expr.Reject) string {
	switch x.Type {
	case unix.NFT_REJECT_TCP_RST:
		return "reject with tcp reset"
	case unix.NFT_REJECT_ICMPX_UNREACH:
		names := map[uint8]string{0: "no-route", 1: "port-unreachable", 2: "host-unreachable", 3: "admin-prohibited"}
		return "reject with icmpx type " + names[x.Code]
	}
	if p.fam == compat.IPv6 {
		if n, ok := icmp6Codes[x.Code]; ok {
			return "reject with icmpv6 type " + n
		}
		return fmt.Sprintf("reject with icmpv6 type %d", x.Code)
	}
	if n, ok := icmpCodes[x.Code]; ok {
		return "reject with icmp type " + n
	}
	return fmt.Sprintf("reject with icmp type %d", x.Code)
}

var logLevels = []string{"emerg", "alert", "crit", "err", "warn", "notice", "info", "debug", "audit"}

func logText(x *expr.Log) string {
	s := "log"
	has := func(a int) bool { return x.Key&(1<<a) != 0 }
	if has(unix.NFTA_LOG_PREFIX) {
		s += " prefix " + strconv.Quote(strings.TrimRight(string(x.Data), "\x00"))
	}
	if has(unix.NFTA_LOG_GROUP) {
		s += fmt.Sprintf(" group %d", x.Group)
	}
	if has(unix.NFTA_LOG_SNAPLEN) {
		s += fmt.Sprintf(" snaplen %d", x.Snaplen)
	}
	if has(unix.NFTA_LOG_QTHRESHOLD) {
		s += fmt.Sprintf(" queue-threshold %d", x.QThreshold)
	}
	if has(unix.NFTA_LOG_LEVEL) && int(x.Level) < len(logLevels) {
		s += " level " + logLevels[x.Level]
	}
	if has(unix.NFTA_LOG_FLAGS) {
		var fl []string
		if x.Flags&expr.LogFlagsMask == expr.LogFlagsMask {
			fl = append(fl, "all")
		} else {
			switch x.Flags & (expr.LogFlagsTCPSeq | expr.LogFlagsTCPOpt) {
			case expr.LogFlagsTCPSeq:
				fl = append(fl, "tcp sequence")
			case expr.LogFlagsTCPOpt:
				fl = append(fl, "tcp options")
			case expr.LogFlagsTCPSeq | expr.LogFlagsTCPOpt:
				fl = append(fl, "tcp sequence,options")
			}
			if x.Flags&expr.LogFlagsIPOpt != 0 {
				fl = append(fl, "ip options")
			}
			if x.Flags&expr.LogFlagsUID != 0 {
				fl = append(fl, "skuid")
			}
			if x.Flags&expr.LogFlagsMACDecode != 0 {
				fl = append(fl, "ether")
			}
		}
		for _, f := range fl {
			s += " flags " + f
		}
	}
	return s
}

func limitText(x *expr.Limit) string {
	units := map[expr.LimitTime]string{expr.LimitTimeSecond: "second", expr.LimitTimeMinute: "minute", expr.LimitTimeHour: "hour",
		expr.LimitTimeDay: "day", expr.LimitTimeWeek: "week"}
	s := "limit rate "
	if x.Over {
		s += "over "
	}
	if x.Type == expr.LimitTypePktBytes {
		s += fmt.Sprintf("%d bytes/%s", x.Rate, units[x.Unit])
		if x.Burst > 0 {
			s += fmt.Sprintf(" burst %d bytes", x.Burst)
		}
		return s
	}
	s += fmt.Sprintf("%d/%s", x.Rate, units[x.Unit])
	if x.Burst > 0 {
		s += fmt.Sprintf(" burst %d packets", x.Burst)
	}
	return s
}

var ctStates = []struct {
	bit  uint32
	name string
}{{1, "invalid"}, {2, "established"}, {4, "related"}, {8, "new"}, {64, "untracked"}}

func ctStateNames(mask uint32) string {
	var names []string
	for _, s := range ctStates {
		if mask&s.bit != 0 {
			names = append(names, s.name)
			mask &^= s.bit
		}
	}
	if mask != 0 {
		names = append(names, fmt.Sprintf("0x%x", mask))
	}
	return strings.Join(names, ",")
}

// ifaceValue prints an interface name compared as a full name (with its
// NUL) or as a prefix ("eth*").
func ifaceValue(data []byte) string {
	name, full := string(data), false
	if i := strings.IndexByte(name, 0); i >= 0 {
		name, full = name[:i], true
	}
	var b strings.Builder
	for _, r := range name {
		if r == '*' || r == '\\' || r == '"' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	if !full {
		b.WriteByte('*')
	}
	return `"` + b.String() + `"`
}

// quoteName quotes a chain or set name when nft's scanner would not read
// it as one identifier.
func quoteName(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' || r == '/') {
			return strconv.Quote(s)
		}
	}
	return s
}

func hostUint(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.NativeEndian.Uint16(b))
	case 4:
		return uint64(binary.NativeEndian.Uint32(b))
	case 8:
		return binary.NativeEndian.Uint64(b)
	}
	return new(big.Int).SetBytes(b).Uint64()
}

func beUint(b []byte) uint64 { return new(big.Int).SetBytes(b).Uint64() }

func pad(b []byte, n int) []byte {
	out := make([]byte, n)
	copy(out, b)
	return out
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

func allOnes(b []byte) bool {
	for _, x := range b {
		if x != 0xff {
			return false
		}
	}
	return len(b) > 0
}
