package compat

import (
	"fmt"
	"strings"
	"sync"

	"github.com/google/nftables/expr"
)

// UlogTarget is -j ULOG (IPv4 only): the netlink logging target that
// Linux 3.17 removed in favour of NFLOG. iptables 1.8.9 still ships its
// userspace part, so old firewall scripts using it get their options
// parsed and checked, then a notice that the kernel lacks the module and
// the kernel's refusal of the rule ("RULE_APPEND failed (No such file or
// directory)", status 4), not "unknown option" or a missing chain.
type UlogTarget struct {
	NlGroup    uint32 // bit mask: --ulog-nlgroup N sets bit N-1
	CopyRange  uint64
	QThreshold uint64
	Prefix     string
}

const (
	tgUlogOptNlGroup = iota
	tgUlogOptPrefix
	tgUlogOptCpRange
	tgUlogOptQThreshold
)

const (
	tgUlogPrefixSize = 32 // ULOG_PREFIX_LEN
	tgUlogMaxQLen    = 50 // ULOG_MAX_QLEN
)

var ulogTargetSpec = ExtSpec{
	Name:   "ULOG",
	Family: IPv4,
	X6:     true,
	Options: []OptDef{
		{Name: "ulog-nlgroup", Arg: RequiredArg, ID: tgUlogOptNlGroup},
		{Name: "ulog-prefix", Arg: RequiredArg, ID: tgUlogOptPrefix},
		{Name: "ulog-cprange", Arg: RequiredArg, ID: tgUlogOptCpRange},
		{Name: "ulog-qthreshold", Arg: RequiredArg, ID: tgUlogOptQThreshold},
	},
	NewTarget: func(Family) TargetExt { return &UlogTarget{NlGroup: 1, QThreshold: 1} },
}

var _ = RegisterTarget(&ulogTargetSpec)

func (t *UlogTarget) Name() string { return "ULOG" }

// LoadWarning is xtables' notice when the kernel has no revision of the
// extension: no kernel nftables runs on has xt_ULOG.
func (t *UlogTarget) LoadWarning() string {
	return "Warning: Extension ULOG revision 0 not supported, missing kernel module?\n"
}

func (t *UlogTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgUlogOptNlGroup:
		v, err := tgUint(p, 1, 32)
		if err != nil {
			return err
		}
		t.NlGroup = 1 << (v - 1)
	case tgUlogOptPrefix:
		s, err := tgParseLogPrefix(p.Arg, tgUlogPrefixSize, "ulog-prefix")
		if err != nil {
			return err
		}
		t.Prefix = s
	case tgUlogOptCpRange:
		v, err := tgUint(p, 0, 1<<64-1)
		if err != nil {
			return err
		}
		t.CopyRange = v
	case tgUlogOptQThreshold:
		v, err := tgUint(p, 1, tgUlogMaxQLen)
		if err != nil {
			return err
		}
		t.QThreshold = v
	}
	return nil
}

func (t *UlogTarget) Save(b *strings.Builder, _ *Rule) {
	if t.Prefix != "" {
		b.WriteString(" --ulog-prefix " + SaveQuote(t.Prefix))
	}
	if t.NlGroup != 1 {
		fmt.Fprintf(b, " --ulog-nlgroup %d", tgUlogGroup(t.NlGroup))
	}
	if t.CopyRange != 0 {
		fmt.Fprintf(b, " --ulog-cprange %d", t.CopyRange)
	}
	if t.QThreshold != 1 {
		fmt.Fprintf(b, " --ulog-qthreshold %d", t.QThreshold)
	}
}

func (t *UlogTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	fmt.Fprintf(b, " ULOG copy_range %d nlgroup %d", t.CopyRange, tgUlogGroup(t.NlGroup))
	if t.Prefix != "" {
		fmt.Fprintf(b, " prefix \"%s\"", t.Prefix)
	}
	fmt.Fprintf(b, " queue_threshold %d", t.QThreshold)
}

// tgUlogGroup is the group number of the lowest bit of mask (1-32).
func tgUlogGroup(mask uint32) int {
	for i := 0; i < 32; i++ {
		if mask&(1<<i) != 0 {
			return i + 1
		}
	}
	return 0
}

// NftExprs is the xtables target with struct ipt_ulog_info (nl_group,
// copy_range, qthreshold, prefix[32]); kernels without xt_ULOG (all
// since 3.17) refuse it with ENOENT, as they do iptables-nft's.
func (t *UlogTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	var b xtBlob
	b.u32(t.NlGroup)
	b.align(8)
	b.u64(t.CopyRange)
	b.u64(t.QThreshold)
	b.raw([]byte(t.Prefix), tgUlogPrefixSize)
	return []expr.Any{tgXtTarget("ULOG", 0, b.b)}, nil
}

// loadWarned holds the extensions whose load notice this process has
// printed: xtables loads an extension once per process (a restore file
// with several ULOG rules prints the notice once).
var loadWarned sync.Map

// loadWarner is implemented by extensions that print a notice when
// they are loaded (-j NAME), before their options are read.
type loadWarner interface {
	LoadWarning() string
}

// Final: every option of ULOG is optional.
func (t *UlogTarget) Final(*Rule, OptSet) error { return nil }
