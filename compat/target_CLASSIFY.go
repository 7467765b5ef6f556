package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// ClassifyTarget is -j CLASSIFY: it sets skb->priority to a tc class
// "MAJOR:MINOR" (hexadecimal).
type ClassifyTarget struct {
	Priority uint32
}

var tgClassifyOptions = []OptDef{{Name: "set-class", Arg: RequiredArg, ID: 0}}

var classifyTargetSpec = ExtSpec{
	Name:      "CLASSIFY",
	X6:        true,
	Options:   tgClassifyOptions,
	NewTarget: func(Family) TargetExt { return &ClassifyTarget{} },
}

var _ = RegisterTarget(&classifyTargetSpec)

func (t *ClassifyTarget) Name() string { return "CLASSIFY" }

// tgScanHex is scanf's %x conversion into an unsigned int: blanks, an
// optional sign and 0x prefix, hex digits; it returns the rest.
func tgScanHex(s string) (uint32, string, bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && tgDigit(s[i+2], 16) >= 0 {
		i += 2
	}
	start := i
	var v uint64
	over := false
	for i < len(s) && tgDigit(s[i], 16) >= 0 {
		if v > (^uint64(0))>>4 {
			over = true
		}
		v = v<<4 | uint64(tgDigit(s[i], 16))
		i++
	}
	if i == start {
		return 0, s, false
	}
	if over {
		v = ^uint64(0)
	}
	if neg {
		v = -v
	}
	return uint32(v), s[i:], true
}

func (t *ClassifyTarget) Parse(p *OptArg) error {
	bad := Paramf("Bad class value \"%s\"", p.Arg)
	major, rest, ok := tgScanHex(p.Arg)
	if !ok || rest == "" || rest[0] != ':' {
		return bad
	}
	minor, _, ok := tgScanHex(rest[1:])
	if !ok {
		return bad
	}
	t.Priority = (major<<16)&0xffff0000 | minor&0xffff
	return nil
}

func (t *ClassifyTarget) Final(_ *Rule, seen OptSet) error {
	return x6Fcheck("CLASSIFY", tgClassifyOptions, seen, map[int]x6Rel{0: {mand: true}})
}

func (t *ClassifyTarget) Save(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, " --set-class %04x:%04x", t.Priority>>16, t.Priority&0xffff)
}

func (t *ClassifyTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	fmt.Fprintf(b, " CLASSIFY set %x:%x", t.Priority>>16, t.Priority&0xffff)
}

// NftExprs keeps the xtables target: `meta priority set` would do the
// same to the packet, but CLASSIFY is only valid in the OUTPUT, FORWARD
// and POSTROUTING hooks, which the kernel checks for the xtables target
// only. CLASSIFY has no table restriction.
func (t *ClassifyTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	var b xtBlob
	b.u32(t.Priority)
	return []expr.Any{tgXtTarget("CLASSIFY", 0, b.b)}, nil
}
