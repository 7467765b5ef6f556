package compat

import (
	"fmt"
	"math"
	"strings"

	"github.com/google/nftables/expr"
)

// BPFMatch is -m bpf --bytecode "N,code jt jf k,...": a classic BPF
// program run on the packet (from its network header). Docker's overlay
// driver tests VXLAN ids with one.
type BPFMatch struct {
	Program []BPFInstruction
	// Pinned is the path of --object-pinned (an eBPF program pinned in
	// bpffs), which the kernel opens itself when it checks the rule.
	Pinned string
}

// BPFInstruction is one struct sock_filter.
type BPFInstruction struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

const (
	bpfOptBytecode = iota
	bpfOptPinned
)

// bpfMaxInstructions is XT_BPF_MAX_NUM_INSTR.
const bpfMaxInstructions = 64

var bpfMatchSpec = ExtSpec{
	Name: "bpf",
	Options: []OptDef{
		{Name: "bytecode", Arg: RequiredArg, ID: bpfOptBytecode},
		{Name: "object-pinned", Arg: RequiredArg, ID: bpfOptPinned},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &BPFMatch{} },
}

var _ = RegisterMatch(&bpfMatchSpec)

func (m *BPFMatch) Name() string { return "bpf" }

// KernelGetsPinnedBPF, set by the binary, asks the kernel for the BPF
// object pinned at path (BPF_OBJ_GET, read-only), as libxt_bpf does when
// it parses --object-pinned; false when the kernel gives none. It is
// asked when the parse looks sets up (ParseOptions.LookupSets: commands
// and restore files), not for rules read back, which iptables lists
// from the kernel's struct without opening the object.
var KernelGetsPinnedBPF func(path string) bool

// bpfPathMax is XT_BPF_PATH_MAX, the size of the path field.
const bpfPathMax = bpfMaxInstructions * 8

func (m *BPFMatch) Parse(p *OptArg) error {
	if p.Def.ID == bpfOptPinned {
		m.Pinned = p.Arg
		if len(m.Pinned) >= bpfPathMax {
			m.Pinned = m.Pinned[:bpfPathMax-1] // libxt_bpf's strncpy
		}
		if p.lookupSets && KernelGetsPinnedBPF != nil && !KernelGetsPinnedBPF(p.Arg) {
			return Paramf("bpf: failed to get bpf object")
		}
		return nil
	}
	prog, err := parseBPFProgram(p.Arg)
	if err != nil {
		return err
	}
	m.Program = prog
	return nil
}

// parseBPFProgram reads "N,ins,ins,..." as libxt_bpf does with sscanf:
// the count, then after every comma one instruction of four numbers;
// text after an instruction's fourth number is ignored.
func parseBPFProgram(s string) ([]BPFInstruction, error) {
	n, i, ok := scanUnsigned(s, 0)
	if !ok || i >= len(s) || s[i] != ',' {
		return nil, Paramf("bpf: error parsing program length")
	}
	count := uint16(n)
	if count == 0 {
		return nil, Paramf("bpf: illegal zero length program")
	}
	if count > bpfMaxInstructions {
		return nil, Paramf("bpf: number of instructions exceeds maximum")
	}
	var prog []BPFInstruction
	for rest := s; ; {
		c := strings.IndexByte(rest, ',')
		if c < 0 || c+1 == len(rest) {
			break
		}
		rest = rest[c+1:]
		if len(prog) >= int(count) {
			return nil, Paramf("bpf: real program length exceeds the encoded length parameter")
		}
		var v [4]uint64
		j := 0
		for k := range v {
			if v[k], j, ok = scanUnsigned(rest, j); !ok {
				return nil, Paramf("bpf: error at instr %d", len(prog))
			}
		}
		prog = append(prog, BPFInstruction{Code: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])})
	}
	if len(prog) != int(count) {
		return nil, Paramf("bpf: parsed program length is less than the encoded length parameter")
	}
	return prog, nil
}

// scanUnsigned reads a number at s[i:] as scanf's %u family does:
// leading white space, an optional sign, decimal digits; strtoul's
// value (a minus negates it, overflow gives the maximum) before the
// caller narrows it.
func scanUnsigned(s string, i int) (uint64, int, bool) {
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	var v uint64
	over := false
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			over = true
		}
		v = v*10 + d
	}
	if i == start {
		return 0, i, false
	}
	if over {
		return math.MaxUint64, i, true
	}
	if neg {
		v = -v
	}
	return v, i, true
}

func (m *BPFMatch) Final(*Rule, OptSet) error {
	if (m.Program != nil) == (m.Pinned != "") {
		return Paramf("bpf: one of --bytecode or --pinned is required")
	}
	return nil
}

func (m *BPFMatch) code(b *strings.Builder, last string) {
	for i, in := range m.Program {
		sep := ","
		if i == len(m.Program)-1 {
			sep = last
		}
		fmt.Fprintf(b, "%d %d %d %d%s", in.Code, in.Jt, in.Jf, in.K, sep)
	}
}

func (m *BPFMatch) Save(b *strings.Builder, _ *Rule) {
	if m.Pinned != "" {
		b.WriteString(" --object-pinned " + m.Pinned)
		return
	}
	fmt.Fprintf(b, " --bytecode \"%d,", len(m.Program))
	m.code(b, "\"")
}

// List is libxt_bpf's print: no leading space, and the last instruction
// ends with a NUL byte (its printf of the '\0' tail).
func (m *BPFMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString("match bpf ")
	if m.Pinned != "" {
		b.WriteString("pinned " + m.Pinned)
		return
	}
	m.code(b, "\x00")
}

// NftExprs: the xtables match, revision 1 (struct xt_bpf_info_v1);
// nftables has no classic BPF expression, nor one that runs a pinned
// socket filter program. With --object-pinned the struct holds the path
// (XT_BPF_MODE_PATH_PINNED): the kernel opens the pinned program itself
// when it checks the rule (ENOENT without one, EINVAL when it is not a
// socket filter program); the descriptor libxt_bpf also sends is not
// read in that mode, and is sent as -1.
func (m *BPFMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	if m.Pinned != "" {
		x.u16(1) // XT_BPF_MODE_FD_PINNED, alias XT_BPF_MODE_PATH_PINNED
		x.u16(0)
		x.u32(math.MaxUint32) // fd -1
		x.raw([]byte(m.Pinned), bpfPathMax)
		x.u64(0) // the kernel's struct bpf_prog pointer
		return []expr.Any{compatMatch("bpf", 1, x)}, nil
	}
	x.u16(0) // XT_BPF_MODE_BYTECODE
	x.u16(uint16(len(m.Program)))
	x.u32(0) // fd
	for i := 0; i < bpfMaxInstructions; i++ {
		var in BPFInstruction
		if i < len(m.Program) {
			in = m.Program[i]
		}
		x.u16(in.Code)
		x.u8(in.Jt)
		x.u8(in.Jf)
		x.u32(in.K)
	}
	x.u64(0) // the kernel's struct bpf_prog pointer
	return []expr.Any{compatMatch("bpf", 1, x)}, nil
}
