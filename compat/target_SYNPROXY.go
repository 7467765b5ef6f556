package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// SynproxyTarget is -j SYNPROXY: it answers a client's SYN with a SYN
// cookie and opens the connection to the server only once the client's
// ACK proves the handshake, with the TCP options given.
type SynproxyTarget struct {
	Options uint8 // XT_SYNPROXY_OPT_*
	Wscale  uint8
	MSS     uint16
}

// XT_SYNPROXY_OPT_* (the kernel's nf_synproxy_info flags).
const (
	SynproxyOptMSS      = 0x01
	SynproxyOptWscale   = 0x02
	SynproxyOptSackPerm = 0x04
	SynproxyOptTstamp   = 0x08
	SynproxyOptECN      = 0x10
)

const (
	tgSynproxyOptSack = iota
	tgSynproxyOptTstamp
	tgSynproxyOptWscale
	tgSynproxyOptMSS
	tgSynproxyOptECN
)

var synproxyTargetSpec = ExtSpec{
	Name: "SYNPROXY",
	X6:   true,
	Options: []OptDef{
		{Name: "sack-perm", Arg: NoArg, ID: tgSynproxyOptSack},
		{Name: "timestamp", Arg: NoArg, ID: tgSynproxyOptTstamp},
		{Name: "wscale", Arg: RequiredArg, ID: tgSynproxyOptWscale},
		{Name: "mss", Arg: RequiredArg, ID: tgSynproxyOptMSS},
		{Name: "ecn", Arg: NoArg, ID: tgSynproxyOptECN},
	},
	NewTarget: func(Family) TargetExt { return &SynproxyTarget{} },
}

var _ = RegisterTarget(&synproxyTargetSpec)

func (t *SynproxyTarget) Name() string { return "SYNPROXY" }

// Parse: --wscale and --mss are XTTYPE_UINT32 stored into the kernel's
// u8 and u16 fields, so larger values keep only their low bits, as
// with iptables.
func (t *SynproxyTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgSynproxyOptSack:
		t.Options |= SynproxyOptSackPerm
	case tgSynproxyOptTstamp:
		t.Options |= SynproxyOptTstamp
	case tgSynproxyOptECN:
		t.Options |= SynproxyOptECN
	case tgSynproxyOptWscale, tgSynproxyOptMSS:
		v, err := tgUint(p, 0, 0xffffffff)
		if err != nil {
			return err
		}
		if p.Def.ID == tgSynproxyOptWscale {
			t.Options |= SynproxyOptWscale
			t.Wscale = uint8(v)
		} else {
			t.Options |= SynproxyOptMSS
			t.MSS = uint16(v)
		}
	}
	return nil
}

func (t *SynproxyTarget) Final(*Rule, OptSet) error { return nil }

func (t *SynproxyTarget) Save(b *strings.Builder, _ *Rule) {
	if t.Options&SynproxyOptSackPerm != 0 {
		b.WriteString(" --sack-perm")
	}
	if t.Options&SynproxyOptTstamp != 0 {
		b.WriteString(" --timestamp")
	}
	if t.Options&SynproxyOptWscale != 0 {
		fmt.Fprintf(b, " --wscale %d", t.Wscale)
	}
	if t.Options&SynproxyOptMSS != 0 {
		fmt.Fprintf(b, " --mss %d", t.MSS)
	}
	if t.Options&SynproxyOptECN != 0 {
		b.WriteString(" --ecn")
	}
}

// List prints each option followed by a space, as iptables does (the
// row ends in a space).
func (t *SynproxyTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" SYNPROXY ")
	if t.Options&SynproxyOptSackPerm != 0 {
		b.WriteString("sack-perm ")
	}
	if t.Options&SynproxyOptTstamp != 0 {
		b.WriteString("timestamp ")
	}
	if t.Options&SynproxyOptWscale != 0 {
		fmt.Fprintf(b, "wscale %d ", t.Wscale)
	}
	if t.Options&SynproxyOptMSS != 0 {
		fmt.Fprintf(b, "mss %d ", t.MSS)
	}
	if t.Options&SynproxyOptECN != 0 {
		b.WriteString("ecn ")
	}
}

// NftExprs keeps the xtables target (struct xt_synproxy_info: options,
// wscale, mss). nft's own synproxy expression runs the same kernel
// core but not the same verdicts: it treats every packet with SYN set
// (SYN-ACK, SYN-FIN too) as a client SYN and every other one with ACK
// set (FIN-ACK, RST-ACK too) as the handshake's ACK, dropping it when
// the cookie does not check, where xt SYNPROXY takes only a bare SYN
// and a bare ACK and lets every other packet go on to the next rule.
// The xtables target has no table restriction; the kernel refuses it,
// as it does iptables-nft's, outside INPUT and FORWARD (at the jump for
// user chains) and without -p tcp.
func (t *SynproxyTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	var b xtBlob
	b.u8(t.Options)
	b.u8(t.Wscale)
	b.u16(t.MSS)
	return []expr.Any{tgXtTarget("SYNPROXY", 0, b.b)}, nil
}
