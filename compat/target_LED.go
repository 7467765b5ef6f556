package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// LedTarget is -j LED (revision 0): each packet fires the LED trigger
// "netfilter-ID" (which an LED of the LED class can follow), lit for
// the delay in milliseconds (0: a blink; inf: until the rule goes).
// Older routers' dumps carry it.
type LedTarget struct {
	ID          string // without the "netfilter-" prefix
	Delay       uint32 // 0xffffffff is "inf"
	AlwaysBlink bool
}

const (
	tgLedOptTriggerID = iota
	tgLedOptDelay
	tgLedOptAlwaysBlink
)

const (
	tgLedIDSize   = 27           // xt_led_info.id
	tgLedIDPrefix = "netfilter-" // put in front of the id by libxt_LED
	tgLedIDMax    = tgLedIDSize - len(tgLedIDPrefix) - 1
	tgLedDelayInf = 0xffffffff
)

var ledTargetSpec = ExtSpec{
	Name: "LED",
	X6:   true,
	Options: []OptDef{
		{Name: "led-trigger-id", Arg: RequiredArg, ID: tgLedOptTriggerID, Mandatory: true},
		{Name: "led-delay", Arg: RequiredArg, ID: tgLedOptDelay},
		{Name: "led-always-blink", Arg: NoArg, ID: tgLedOptAlwaysBlink},
	},
	NewTarget: func(Family) TargetExt { return &LedTarget{} },
}

var _ = RegisterTarget(&ledTargetSpec)

// XtRevision: the revision iptables 1.8.9 loads, asked for in the kernel
// (see xtProber).
func (t *LedTarget) XtRevision() uint32 { return 0 }

func (t *LedTarget) Name() string { return "LED" }

func (t *LedTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgLedOptTriggerID:
		// XTTYPE_STRING with a maximum length
		if len(p.Arg) > tgLedIDMax {
			return Paramf("Argument must have a maximum length of %d characters\n", tgLedIDMax)
		}
		t.ID = p.Arg
	case tgLedOptDelay:
		if len(p.Arg) >= 3 && strings.EqualFold(p.Arg[:3], "inf") {
			t.Delay = tgLedDelayInf
			break
		}
		v, _, ok := tgStrtoul(p.Arg, 0, 0xffffffff, true)
		if !ok {
			return Paramf("Delay value must be within range 0..4294967295")
		}
		t.Delay = uint32(v)
	case tgLedOptAlwaysBlink:
		t.AlwaysBlink = true
	}
	return nil
}

func (t *LedTarget) Final(*Rule, OptSet) error { return nil }

// quotedID is the id in double quotes, '"' and '\' escaped with '\'.
func (t *LedTarget) quotedID() string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(t.ID); i++ {
		if t.ID[i] == '"' || t.ID[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(t.ID[i])
	}
	b.WriteByte('"')
	return b.String()
}

// Save is LED_save: the delay only when not 0, printed as a signed int
// as libxt_LED does (2147483648 prints as -2147483648).
func (t *LedTarget) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(" --led-trigger-id " + t.quotedID())
	switch {
	case t.Delay == tgLedDelayInf:
		b.WriteString(" --led-delay inf")
	case t.Delay != 0:
		fmt.Fprintf(b, " --led-delay %d", int32(t.Delay))
	}
	if t.AlwaysBlink {
		b.WriteString(" --led-always-blink")
	}
}

// SaveExact prints the delay as the unsigned number it is, so that
// the form parses back to the same delay.
func (t *LedTarget) SaveExact(b *strings.Builder, _ *Rule) {
	b.WriteString(" --led-trigger-id " + SaveQuote(t.ID))
	switch {
	case t.Delay == tgLedDelayInf:
		b.WriteString(" --led-delay inf")
	case t.Delay != 0:
		fmt.Fprintf(b, " --led-delay %d", t.Delay)
	}
	if t.AlwaysBlink {
		b.WriteString(" --led-always-blink")
	}
}

func (t *LedTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" led-trigger-id:" + t.quotedID())
	if t.Delay == tgLedDelayInf {
		b.WriteString(" led-delay:inf")
	} else {
		fmt.Fprintf(b, " led-delay:%dms", int32(t.Delay))
	}
	if t.AlwaysBlink {
		b.WriteString(" led-always-blink")
	}
}

// NftExprs is the xtables target with struct xt_led_info (id[27] with
// the "netfilter-" prefix, always_blink, delay, then the kernel's
// pointer, sent as zeros): nftables has no LED trigger. Kernels without
// xt_LED refuse it with ENOENT, as they refuse iptables-nft's.
func (t *LedTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	var b xtBlob
	b.raw([]byte(tgLedIDPrefix+t.ID), tgLedIDSize)
	if t.AlwaysBlink {
		b.u8(1)
	} else {
		b.u8(0)
	}
	b.u32(t.Delay)
	b.u64(0) // void *internal_data
	return []expr.Any{tgXtTarget("LED", 0, b.b)}, nil
}
