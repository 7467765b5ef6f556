package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// IdletimerTarget is -j IDLETIMER (revision 1): each packet restarts a
// timer named by the label; when it expires the kernel notifies user
// space through sysfs (/sys/class/xt_idletimer/timers/LABEL), or with
// --alarm an alarm timer that also wakes the system.
type IdletimerTarget struct {
	Timeout uint32
	Label   string // at most 27 bytes, as the kernel's label field keeps
	Alarm   bool
}

const (
	tgIdleOptTimeout = iota
	tgIdleOptLabel
	tgIdleOptAlarm
)

// tgIdleLabelSize is MAX_IDLETIMER_LABEL_SIZE (with the NUL).
const tgIdleLabelSize = 28

var idletimerTargetSpec = ExtSpec{
	Name: "IDLETIMER",
	X6:   true,
	Options: []OptDef{
		{Name: "timeout", Arg: RequiredArg, ID: tgIdleOptTimeout, Mandatory: true},
		{Name: "label", Arg: RequiredArg, ID: tgIdleOptLabel, Mandatory: true},
		{Name: "alarm", Arg: NoArg, ID: tgIdleOptAlarm},
	},
	NewTarget: func(Family) TargetExt { return &IdletimerTarget{} },
}

var _ = RegisterTarget(&idletimerTargetSpec)

func (t *IdletimerTarget) Name() string { return "IDLETIMER" }

func (t *IdletimerTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgIdleOptTimeout:
		v, err := tgUint(p, 0, 0xffffffff)
		if err != nil {
			return err
		}
		t.Timeout = uint32(v)
	case tgIdleOptLabel:
		// XTTYPE_STRING put into the label field: cut to fit
		t.Label = p.Arg
		if len(t.Label) >= tgIdleLabelSize {
			t.Label = t.Label[:tgIdleLabelSize-1]
		}
	case tgIdleOptAlarm:
		t.Alarm = true
	}
	return nil
}

func (t *IdletimerTarget) Final(*Rule, OptSet) error { return nil }

// Save prints the label as it is, unquoted, as iptables does.
func (t *IdletimerTarget) Save(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, " --timeout %d --label %s", t.Timeout, t.Label)
	if t.Alarm {
		b.WriteString(" --alarm")
	}
}

func (t *IdletimerTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	fmt.Fprintf(b, " timeout:%d label:%s", t.Timeout, t.Label)
	if t.Alarm {
		b.WriteString(" alarm")
	}
}

// NftExprs keeps the xtables target (struct idletimer_tg_info_v1:
// timeout, label, send_nl_msg, timer_type, then the kernel's timer
// pointer, sent as zeros and listed back as zeros): nftables has no
// idle timer. The target has no table or hook binding; the kernel
// refuses a zero or too long timeout, an empty label or one that is no
// valid sysfs name, and a label already used with the other timer type,
// as for iptables-nft.
func (t *IdletimerTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	var b xtBlob
	b.u32(t.Timeout)
	b.raw([]byte(t.Label), tgIdleLabelSize)
	b.u8(0)
	if t.Alarm {
		b.u8(1)
	} else {
		b.u8(0)
	}
	b.align(8)
	b.u64(0) // struct idletimer_tg *timer
	return []expr.Any{tgXtTarget("IDLETIMER", 1, b.b)}, nil
}

// SaveExact quotes the label where the -S form would not parse back
// (iptables prints it as it is, so a label with a space splits).
func (t *IdletimerTarget) SaveExact(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, " --timeout %d --label %s", t.Timeout, SaveQuote(t.Label))
	if t.Alarm {
		b.WriteString(" --alarm")
	}
}
