package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// NfqueueTarget is -j NFQUEUE (revision 3): hand the packet to a
// userspace queue, or balance over a range of queues.
type NfqueueTarget struct {
	Num       uint16
	Total     uint16 // number of queues; 1 for a single queue
	Bypass    bool
	CPUFanout bool
}

const (
	tgNfqOptNum = iota
	tgNfqOptBalance
	tgNfqOptBypass
	tgNfqOptFanout
)

var tgNfqOptions = []OptDef{
	{Name: "queue-num", Arg: RequiredArg, ID: tgNfqOptNum},
	{Name: "queue-balance", Arg: RequiredArg, ID: tgNfqOptBalance},
	{Name: "queue-bypass", Arg: NoArg, ID: tgNfqOptBypass},
	{Name: "queue-cpu-fanout", Arg: NoArg, ID: tgNfqOptFanout},
}

var tgNfqRels = map[int]x6Rel{
	tgNfqOptNum:     {excl: bit(tgNfqOptBalance)},
	tgNfqOptBalance: {excl: bit(tgNfqOptNum)},
	tgNfqOptFanout:  {also: bit(tgNfqOptBalance)},
}

var nfqueueTargetSpec = ExtSpec{
	Name:      "NFQUEUE",
	X6:        true,
	Options:   tgNfqOptions,
	NewTarget: func(Family) TargetExt { return &NfqueueTarget{Total: 1} },
}

var _ = RegisterTarget(&nfqueueTargetSpec)

func (t *NfqueueTarget) Name() string { return "NFQUEUE" }

// tgParseRange16 is xtables' XTTYPE_UINT16RC parser: up to two
// ':'-separated numbers, a missing first one being 0 and a missing
// second one 65535.
func tgParseRange16(p *OptArg) ([]uint16, error) {
	var vals []uint16
	arg := p.Arg
	for {
		if len(vals) == 2 {
			return nil, Paramf("%s: Too many components for option \"--%s\" (max: %d)\n", p.Ext, p.Def.Name, 2)
		}
		var v uint64
		end := arg
		if arg != "" && arg[0] != ':' {
			var ok bool
			v, end, ok = tgStrtoul(arg, 0, 0xffff, false)
			if !ok {
				return nil, Paramf("%s: bad value for option \"--%s\" near \"%s\", or out of range (0-%d).\n", p.Ext, p.Def.Name, arg, 0xffff)
			}
			if end != "" && end[0] != ':' {
				return nil, Paramf("%s: Argument to \"--%s\" has unexpected characters near \"%s\".\n", p.Ext, p.Def.Name, end)
			}
		} else if len(vals) == 1 {
			v = 0xffff
		}
		vals = append(vals, uint16(v))
		if end == "" {
			return vals, nil
		}
		arg = end[1:]
	}
}

func (t *NfqueueTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgNfqOptNum:
		v, err := tgUint(p, 0, 0xffff)
		if err != nil {
			return err
		}
		t.Num = uint16(v)
	case tgNfqOptBalance:
		r, err := tgParseRange16(p)
		if err != nil {
			return err
		}
		if len(r) != 2 {
			return Paramf("Bad range \"%s\"", p.Arg)
		}
		if r[0] >= r[1] {
			return Paramf("%d should be less than %d", r[0], r[1])
		}
		t.Num, t.Total = r[0], r[1]-r[0]+1
	case tgNfqOptBypass:
		t.Bypass = true
	case tgNfqOptFanout:
		t.CPUFanout = true
	}
	return nil
}

func (t *NfqueueTarget) Final(_ *Rule, seen OptSet) error {
	return x6Fcheck("NFQUEUE", tgNfqOptions, seen, tgNfqRels)
}

func (t *NfqueueTarget) write(b *strings.Builder, save bool) {
	if t.Total > 1 {
		last := uint32(t.Num) + uint32(t.Total) - 1
		if save {
			fmt.Fprintf(b, " --queue-balance %d:%d", t.Num, last)
		} else {
			fmt.Fprintf(b, " NFQUEUE balance %d:%d", t.Num, last)
		}
	} else if save {
		fmt.Fprintf(b, " --queue-num %d", t.Num)
	} else {
		fmt.Fprintf(b, " NFQUEUE num %d", t.Num)
	}
	pfx := " "
	if save {
		pfx = " --queue-"
	}
	if t.Bypass {
		b.WriteString(pfx + "bypass")
	}
	if t.CPUFanout {
		b.WriteString(pfx + "cpu-fanout")
	}
}

func (t *NfqueueTarget) Save(b *strings.Builder, _ *Rule) { t.write(b, true) }

func (t *NfqueueTarget) List(b *strings.Builder, _ *Rule, _ bool) { t.write(b, false) }

// NftExprs keeps the xtables target (revision 3): the nft queue
// expression would do the same, but kernels built without nft_queue
// (as the one we test on) refuse it with ENOENT while NFQUEUE works.
// NFQUEUE has no table restriction; the kernel checks the queue range
// (a balance of 65536 queues wraps to 0 and is refused).
func (t *NfqueueTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	var b xtBlob
	b.u16(t.Num)
	b.u16(t.Total)
	var flags uint16
	if t.Bypass {
		flags |= 1 // NFQ_FLAG_BYPASS
	}
	if t.CPUFanout {
		flags |= 2 // NFQ_FLAG_CPU_FANOUT
	}
	b.u16(flags)
	return []expr.Any{tgXtTarget("NFQUEUE", 3, b.b)}, nil
}
