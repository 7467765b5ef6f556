package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// ECNTarget is -j ECN (IPv4): it sets the ECN codepoint of the IP
// header and/or the ECE and CWR flags of the TCP header.
type ECNTarget struct {
	Op       uint8 // IPT_ECN_OP_SET_*
	IPECT    uint8
	ECE, CWR uint8
}

// IPT_ECN_OP_SET_* (ipt_ECN_info.operation).
const (
	ECNOpSetIP  = 0x01
	ECNOpSetECE = 0x10
	ECNOpSetCWR = 0x20
)

const (
	tgEcnOptRemove = iota
	tgEcnOptCWR
	tgEcnOptECE
	tgEcnOptIPECT
)

var tgEcnOptions = []OptDef{
	{Name: "ecn-tcp-remove", Arg: NoArg, ID: tgEcnOptRemove},
	{Name: "ecn-tcp-cwr", Arg: RequiredArg, ID: tgEcnOptCWR},
	{Name: "ecn-tcp-ece", Arg: RequiredArg, ID: tgEcnOptECE},
	{Name: "ecn-ip-ect", Arg: RequiredArg, ID: tgEcnOptIPECT},
}

var tgEcnRels = map[int]x6Rel{
	tgEcnOptRemove: {excl: bit(tgEcnOptCWR) | bit(tgEcnOptECE)},
	tgEcnOptCWR:    {excl: bit(tgEcnOptRemove)},
	tgEcnOptECE:    {excl: bit(tgEcnOptRemove)},
}

var ecnTargetSpec = ExtSpec{
	Name:      "ECN",
	Family:    IPv4,
	X6:        true,
	Options:   tgEcnOptions,
	NewTarget: func(Family) TargetExt { return &ECNTarget{} },
}

var _ = RegisterTarget(&ecnTargetSpec)

func (t *ECNTarget) Name() string { return "ECN" }

func (t *ECNTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgEcnOptRemove:
		t.Op = ECNOpSetECE | ECNOpSetCWR
		t.ECE, t.CWR = 0, 0
		return nil
	case tgEcnOptIPECT:
		v, err := tgUint(p, 0, 3)
		if err != nil {
			return err
		}
		t.Op |= ECNOpSetIP
		t.IPECT = uint8(v)
		return nil
	}
	v, err := tgUint(p, 0, 1)
	if err != nil {
		return err
	}
	if p.Def.ID == tgEcnOptCWR {
		t.Op |= ECNOpSetCWR
		t.CWR = uint8(v)
	} else {
		t.Op |= ECNOpSetECE
		t.ECE = uint8(v)
	}
	return nil
}

func (t *ECNTarget) Final(_ *Rule, seen OptSet) error {
	if err := x6Fcheck("ECN", tgEcnOptions, seen, tgEcnRels); err != nil {
		return err
	}
	if seen == 0 {
		return Paramf("ECN target: An operation is required")
	}
	return nil
}

// remove reports the --ecn-tcp-remove form: exactly ECE and CWR, both 0.
func (t *ECNTarget) remove() bool {
	return t.Op == ECNOpSetECE|ECNOpSetCWR && t.ECE == 0 && t.CWR == 0
}

func (t *ECNTarget) Save(b *strings.Builder, _ *Rule) {
	if t.remove() {
		b.WriteString(" --ecn-tcp-remove")
		return
	}
	if t.Op&ECNOpSetECE != 0 {
		fmt.Fprintf(b, " --ecn-tcp-ece %d", t.ECE)
	}
	if t.Op&ECNOpSetCWR != 0 {
		fmt.Fprintf(b, " --ecn-tcp-cwr %d", t.CWR)
	}
	if t.Op&ECNOpSetIP != 0 {
		fmt.Fprintf(b, " --ecn-ip-ect %d", t.IPECT)
	}
}

func (t *ECNTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" ECN")
	if t.remove() {
		b.WriteString(" TCP remove")
		return
	}
	if t.Op&ECNOpSetECE != 0 {
		fmt.Fprintf(b, " ECE=%d", t.ECE)
	}
	if t.Op&ECNOpSetCWR != 0 {
		fmt.Fprintf(b, " CWR=%d", t.CWR)
	}
	if t.Op&ECNOpSetIP != 0 {
		fmt.Fprintf(b, " ECT codepoint=%d", t.IPECT)
	}
}

// NftExprs does what xt ECN does, in its order:
//
//   - --ecn-ip-ect: the two ECN bits of the TOS byte, with the header
//     checksum updated (through the aligned 16-bit word, so the update
//     is exact);
//   - ECE/CWR: the flag bits of the TCP header's 16-bit word at offset
//     12, with the TCP checksum updated (not for CHECKSUM_PARTIAL
//     packets, whose checksum is not computed yet; nft's payload write
//     skips those as inet_proto_csum_replace2 does). xt ECN drops a
//     packet too short for a 20-byte TCP header; an nft payload
//     expression ends the rule instead, so the TCP part runs in a chain
//     bound to the rule: its first rule loads the header's last byte
//     (ending the rule when it is missing), rewrites the flags and
//     returns, which continues after the iptables rule as XT_CONTINUE
//     does; the second drops.
//
// A rewrite that changes nothing leaves the packet as it is: the
// checksum update adds zero (nft stores a resulting 0 as 0xffff, the
// same one's complement value). ECN is bound to the mangle table, and the
// kernel refuses ECE/CWR without -p tcp: in both cases we hand it the
// xtables target, which it refuses as it does iptables-nft's.
func (t *ECNTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	tcpOps := t.Op&(ECNOpSetECE|ECNOpSetCWR) != 0
	if ctx.Table != "mangle" || (tcpOps && !ruleProtoIs(ctx.Rule, 6)) {
		return tgRefused("ECN", 0, 3), nil
	}
	var out []expr.Any
	if t.Op&ECNOpSetIP != 0 {
		out = append(out, tgHeaderRewrite(0, []byte{0xff, 0xfc}, []byte{0, t.IPECT & 3}, true)...)
	}
	if !tcpOps {
		return out, nil
	}
	var clear, set byte // TCP flags byte: CWR 0x80, ECE 0x40
	if t.Op&ECNOpSetECE != 0 {
		clear |= 0x40
		set |= (t.ECE & 1) << 6
	}
	if t.Op&ECNOpSetCWR != 0 {
		clear |= 0x80
		set |= (t.CWR & 1) << 7
	}
	th := expr.PayloadBaseTransportHeader
	rewrite := []expr.Any{
		&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: th, Offset: 19, Len: 1},
		&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: th, Offset: 12, Len: 2},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 2, Mask: []byte{0xff, ^clear}, Xor: []byte{0, set}},
		&expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: th, Offset: 12, Len: 2,
			CsumType: expr.CsumTypeInet, CsumOffset: 16},
		&expr.Verdict{Kind: expr.VerdictReturn},
	}
	return append(out, &BoundJump{
		Verdict: &expr.Verdict{Kind: expr.VerdictJump},
		Rules:   [][]expr.Any{rewrite, {&expr.Verdict{Kind: expr.VerdictDrop}}},
	}), nil
}
