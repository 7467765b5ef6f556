package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// NflogTarget is -j NFLOG. iptables-nft turns it into a native nft
// "log group" expression, so only what that expression holds survives:
// --nflog-range (without --nflog-size) is dropped by the kernel round
// trip, and a queue threshold shows whenever it is not 0 (measured: the
// xtables default of 1 is not applied on this path).
type NflogTarget struct {
	Group     uint16
	Prefix    string
	Len       uint32
	CopyLen   bool // --nflog-size
	Threshold uint16
	// rangeGiven records --nflog-range, which iptables warns about.
	rangeGiven bool
}

const (
	tgNflogOptGroup = iota
	tgNflogOptPrefix
	tgNflogOptRange
	tgNflogOptSize
	tgNflogOptThreshold
)

// NF_LOG_PREFIXLEN of the nft log expression.
const tgNflogPrefixSize = 128

var tgNflogOptions = []OptDef{
	{Name: "nflog-group", Arg: RequiredArg, ID: tgNflogOptGroup},
	{Name: "nflog-prefix", Arg: RequiredArg, ID: tgNflogOptPrefix},
	{Name: "nflog-range", Arg: RequiredArg, ID: tgNflogOptRange},
	{Name: "nflog-size", Arg: RequiredArg, ID: tgNflogOptSize},
	{Name: "nflog-threshold", Arg: RequiredArg, ID: tgNflogOptThreshold},
}

var tgNflogRels = map[int]x6Rel{
	tgNflogOptRange: {excl: bit(tgNflogOptSize)},
	tgNflogOptSize:  {excl: bit(tgNflogOptRange)},
}

var nflogTargetSpec = ExtSpec{
	Name:      "NFLOG",
	X6:        true,
	Options:   tgNflogOptions,
	NewTarget: func(Family) TargetExt { return &NflogTarget{} },
}

var _ = RegisterTarget(&nflogTargetSpec)

func (t *NflogTarget) Name() string { return "NFLOG" }

func (t *NflogTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgNflogOptGroup:
		v, err := tgUint(p, 0, 0xffff)
		if err != nil {
			return err
		}
		t.Group = uint16(v)
	case tgNflogOptPrefix:
		s, err := tgParseLogPrefix(p.Arg, tgNflogPrefixSize, "log-prefix")
		if err != nil {
			return err
		}
		t.Prefix = s
	case tgNflogOptRange, tgNflogOptSize:
		v, err := tgUint(p, 0, 0xffffffff)
		if err != nil {
			return err
		}
		t.Len = uint32(v)
	case tgNflogOptThreshold:
		v, err := tgUint(p, 0, 0xffff)
		if err != nil {
			return err
		}
		t.Threshold = uint16(v)
	}
	return nil
}

func (t *NflogTarget) Final(r *Rule, seen OptSet) error {
	t.rangeGiven = seen.Has(tgNflogOptRange)
	if seen.Has(tgNflogOptSize) {
		t.CopyLen = true
	} else {
		// the nft log expression has no place for a bare range
		t.Len = 0
	}
	err := x6Fcheck("NFLOG", tgNflogOptions, seen, tgNflogRels)
	if err != nil && seen.Has(tgNflogOptRange) {
		// iptables warns about --nflog-range before failing
		prog := r.Family.Prog()
		msg := strings.TrimSuffix(Format(err, prog, -1), TryHelp(prog, -1))
		return Rawf(StatusParameter, "%s%s", tgNflogRangeWarning, msg)
	}
	return err
}

// Warning returns the notice iptables prints on stderr for a rule that
// is accepted anyway, or "".
func (t *NflogTarget) Warning() string {
	if t.rangeGiven {
		return tgNflogRangeWarning
	}
	return ""
}

const tgNflogRangeWarning = "warn: --nflog-range has never worked and is no longer supported, please use --nflog-size instead\n"

func (t *NflogTarget) write(b *strings.Builder, pfx string) {
	if t.Prefix != "" {
		b.WriteString(" " + pfx + "nflog-prefix " + SaveQuote(t.Prefix))
	}
	if t.Group != 0 {
		fmt.Fprintf(b, " %snflog-group %d", pfx, t.Group)
	}
	if t.CopyLen {
		fmt.Fprintf(b, " %snflog-size %d", pfx, t.Len)
	} else if t.Len != 0 {
		fmt.Fprintf(b, " %snflog-range %d", pfx, t.Len)
	}
	if t.Threshold != 0 {
		fmt.Fprintf(b, " %snflog-threshold %d", pfx, t.Threshold)
	}
}

func (t *NflogTarget) Save(b *strings.Builder, _ *Rule) { t.write(b, "--") }

func (t *NflogTarget) List(b *strings.Builder, _ *Rule, _ bool) { t.write(b, "") }

// NftExprs is the nft log expression in group mode (NF_LOG_TYPE_ULOG),
// what xt NFLOG passes to nf_log_packet. --nflog-size 0 (copy nothing)
// has no nft form the kernel echoes back (it drops a zero snaplen), so
// it stays the xtables target, which has no table restriction.
func (t *NflogTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	if t.CopyLen && t.Len == 0 {
		var b xtBlob
		b.u32(t.Len)
		b.u16(t.Group)
		b.u16(t.Threshold)
		b.u16(1) // XT_NFLOG_F_COPY_LEN
		b.u16(0)
		b.raw([]byte(t.Prefix), 64)
		return []expr.Any{tgXtTarget("NFLOG", 0, b.b)}, nil
	}
	l := &expr.Log{Key: 1 << unix.NFTA_LOG_GROUP, Group: t.Group}
	if t.Prefix != "" {
		l.Key |= 1 << unix.NFTA_LOG_PREFIX
		l.Data = []byte(t.Prefix)
	}
	if t.CopyLen {
		l.Key |= 1 << unix.NFTA_LOG_SNAPLEN
		l.Snaplen = t.Len
	}
	if t.Threshold != 0 {
		l.Key |= 1 << unix.NFTA_LOG_QTHRESHOLD
		l.QThreshold = t.Threshold
	}
	return []expr.Any{l}, nil
}
