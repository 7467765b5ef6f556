package compat

import (
	"strconv"
	"strings"
	"sync"
)

// Option bits of the fixed options, in the column order of iptables'
// command/option legality table.
const (
	optNumeric = 1 << iota
	optSource
	optDestination
	optProtocol
	optJump
	optVerbose
	optExpanded
	optViaIn
	optViaOut
	optLineNumbers
	optCounters
	optFragment
	numOpts = 12
)

var optChars = [numOpts]string{"-n", "-s", "-d", "-p", "-j", "-v", "-x", "-i", "-o", "-0", "-c", "-f"}

// optInvertible says which fixed options accept a preceding "!".
var optInvertible = [numOpts]bool{false, true, true, true, false, false, false, true, true, false, false, true}

// legality of options per command: 'x' illegal, ' ' optional.
var cmdOptions = map[Op]string{
	//             nsdpjvxio0cf
	OpInsert:      "x     x  x  ",
	OpDelete:      "x     x  xx ",
	OpDeleteNum:   "xxxxx xxxxxx",
	OpReplace:     "x     x  x  ",
	OpAppend:      "x     x  x  ",
	OpList:        " xxxx  xx xx",
	OpFlush:       "xxxxx xxxxxx",
	OpZero:        "xxxxx xxxxxx",
	OpZeroNum:     "xxxxx xxxxxx",
	OpNewChain:    "xxxxx xxxxxx",
	OpDeleteChain: "xxxxx xxxxxx",
	OpPolicy:      "xxxxx xxxx x",
	OpCheck:       "x     x  xx ",
	OpRenameChain: "xxxxx xxxxxx",
	OpListRules:   "xxxxx xxxx x",
}

var baseLongOpts = []LongOpt{
	{Name: "append", HasArg: RequiredArg, Val: 'A'},
	{Name: "delete", HasArg: RequiredArg, Val: 'D'},
	{Name: "check", HasArg: RequiredArg, Val: 'C'},
	{Name: "insert", HasArg: RequiredArg, Val: 'I'},
	{Name: "replace", HasArg: RequiredArg, Val: 'R'},
	{Name: "list", HasArg: OptionalArg, Val: 'L'},
	{Name: "list-rules", HasArg: OptionalArg, Val: 'S'},
	{Name: "flush", HasArg: OptionalArg, Val: 'F'},
	{Name: "zero", HasArg: OptionalArg, Val: 'Z'},
	{Name: "new-chain", HasArg: RequiredArg, Val: 'N'},
	{Name: "delete-chain", HasArg: OptionalArg, Val: 'X'},
	{Name: "rename-chain", HasArg: RequiredArg, Val: 'E'},
	{Name: "policy", HasArg: RequiredArg, Val: 'P'},
	{Name: "source", HasArg: RequiredArg, Val: 's'},
	{Name: "destination", HasArg: RequiredArg, Val: 'd'},
	{Name: "src", HasArg: RequiredArg, Val: 's'},
	{Name: "dst", HasArg: RequiredArg, Val: 'd'},
	{Name: "protocol", HasArg: RequiredArg, Val: 'p'},
	{Name: "in-interface", HasArg: RequiredArg, Val: 'i'},
	{Name: "jump", HasArg: RequiredArg, Val: 'j'},
	{Name: "table", HasArg: RequiredArg, Val: 't'},
	{Name: "match", HasArg: RequiredArg, Val: 'm'},
	{Name: "numeric", HasArg: NoArg, Val: 'n'},
	{Name: "out-interface", HasArg: RequiredArg, Val: 'o'},
	{Name: "verbose", HasArg: NoArg, Val: 'v'},
	{Name: "wait", HasArg: OptionalArg, Val: 'w'},
	{Name: "wait-interval", HasArg: OptionalArg, Val: 'W'},
	{Name: "exact", HasArg: NoArg, Val: 'x'},
	{Name: "fragments", HasArg: NoArg, Val: 'f'},
	{Name: "version", HasArg: NoArg, Val: 'V'},
	{Name: "help", HasArg: OptionalArg, Val: 'h'},
	{Name: "line-numbers", HasArg: NoArg, Val: '0'},
	{Name: "modprobe", HasArg: RequiredArg, Val: 'M'},
	{Name: "set-counters", HasArg: RequiredArg, Val: 'c'},
	{Name: "goto", HasArg: RequiredArg, Val: 'g'},
	{Name: "ipv4", HasArg: NoArg, Val: '4'},
	{Name: "ipv6", HasArg: NoArg, Val: '6'},
}

// iptablesShortOpts is the short option table of iptables' optstring,
// built at the first parse (not at every start: the ipset commands have
// none).
var iptablesShortOpts = sync.OnceValue(func() *shortTable {
	return shortOpts("A:C:D:E:F::I:L::M:N:P:VX::Z::c:d:i:j:o:p:s:t:R:S::W::46bfg:h::m:nvw::x")
})

func shortOpts(spec string) *shortTable {
	t := new(shortTable)
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		n := 0
		for i+1 < len(spec) && spec[i+1] == ':' {
			n++
			i++
		}
		t[c] = int8([3]int{NoArg, RequiredArg, OptionalArg}[min(n, 2)])
	}
	return t
}

// Special results of Parse that are not errors.
var (
	// ErrVersion asks the caller to print the version line and exit 0.
	ErrVersion = &Error{Status: StatusOK, Kind: KindRaw, Msg: "version"}
	// ErrHelp asks the caller to print the help text and exit 0.
	ErrHelp = &Error{Status: StatusOK, Kind: KindRaw, Msg: "help"}
	// ErrSkipLine tells restore to ignore a line meant for the other
	// family (-4 in ip6tables-restore and vice versa).
	ErrSkipLine = &Error{Status: StatusOK, Kind: KindRaw, Msg: "skip"}
)

// ParseOptions tune Parse.
type ParseOptions struct {
	// Restore is set when the words come from an iptables-restore line.
	Restore bool
	// Prog is the program name used in messages that name it.
	Prog string
	// Table is the table of the restore section, if any.
	Table string
	// Warn receives notices iptables prints on stderr without failing.
	Warn func(string)
	// Resolve looks up host names; nil resolves nothing.
	Resolve func(host string, f Family) ([]string, error)
	// LookupSets makes -m set and -j SET look their set up (LookupIPSet)
	// when they read its name, as libxt_set does while parsing: a missing
	// set fails there, before later options, the chain checks and -C/-D.
	// Commands and restore files set it; rules read back do not. -m bpf
	// --object-pinned asks for its object under the same condition.
	LookupSets bool
	// KernelChain says the chain is one the kernel holds (a rule read
	// back): its name is not checked, as iptables -E renames chains to
	// names of any length.
	KernelChain bool
}

type parser struct {
	f     Family
	o     ParseOptions
	cmd   *Command
	g     getopt
	longs []LongOpt
	spare []LongOpt // the room of the list before longs (mergeOptions)
	// loaded holds the extensions of the line (newExt), reused from line
	// to line: nothing outside the parser points at a loadedExt
	loaded  []loadedExt
	optArg  OptArg // what extOption gives an extension, one at a time
	options int
	invert  bool
	// keepInvert is set while handling a "!" word.
	keepInvert bool

	rule      *Rule
	exts      []*loadedExt // matches in order
	target    *loadedExt
	jumpto    string
	protoName string // the -p argument, lower-cased
	protoUsed bool
	srcSpec   string
	dstSpec   string
	tableSet  bool
	// waitInterval: -W was given (it needs -w)
	waitInterval bool
}

// Parse parses the words of one iptables command (without the program
// name) for family f.
func Parse(f Family, args []string, o ParseOptions) (*Command, error) {
	p := parsers.Get().(*parser)
	defer p.release()
	p.f, p.o = f, o
	p.cmd = &Command{Family: f, Table: "filter"}
	if o.Table != "" {
		p.cmd.Table = o.Table
	}
	p.rule = &Rule{Family: f}
	p.g = getopt{args: args, shortArgs: iptablesShortOpts(), base: baseLongOpts}
	if err := p.run(); err != nil {
		if err == ErrHelp {
			return p.cmd, err
		}
		return nil, err
	}
	return p.cmd, nil
}

// parsers are reused: a restore parses one line after another, and the
// parser with its lists of options was a third of what parsing a rule
// line allocated. Nothing of it outlives Parse: the command and its rules
// are allocated apart.
var parsers = sync.Pool{New: func() any { return new(parser) }}

// release clears p, keeping the room of its lists, and returns it to
// parsers.
func (p *parser) release() {
	longs, spare, exts, loaded := p.longs[:cap(p.longs)], p.spare[:cap(p.spare)], p.exts[:cap(p.exts)], p.loaded[:cap(p.loaded)]
	clear(longs)
	clear(spare)
	clear(exts)
	clear(loaded)
	*p = parser{longs: longs[:0], spare: spare[:0], exts: exts[:0], loaded: loaded[:0]}
	parsers.Put(p)
}

func (p *parser) warn(s string) {
	if p.o.Warn != nil {
		p.o.Warn(s)
	}
}

func (p *parser) addCommand(op Op, othersAllowed ...Op) error {
	if p.invert {
		return Paramf("unexpected ! flag before --%s", opLongName(op))
	}
	if p.cmd.Op != OpNone {
		ok := false
		for _, a := range othersAllowed {
			if p.cmd.Op == a {
				ok = true
			}
		}
		if !ok {
			return Paramf("Cannot use -%c with -%c", opChar(op), opChar(p.cmd.Op))
		}
		// -L/-S combined with -Z: list and zero.
		if op == OpZero || op == OpZeroNum {
			p.cmd.ZeroToo = true
			return nil
		}
		p.cmd.ZeroToo = true
		p.cmd.ZeroNum = p.cmd.Op == OpZeroNum
	}
	p.cmd.Op = op
	return nil
}

func opChar(op Op) byte {
	switch op {
	case OpAppend:
		return 'A'
	case OpCheck:
		return 'C'
	case OpDelete, OpDeleteNum:
		return 'D'
	case OpInsert:
		return 'I'
	case OpReplace:
		return 'R'
	case OpList:
		return 'L'
	case OpListRules:
		return 'S'
	case OpFlush:
		return 'F'
	case OpZero, OpZeroNum:
		return 'Z'
	case OpNewChain:
		return 'N'
	case OpDeleteChain:
		return 'X'
	case OpRenameChain:
		return 'E'
	case OpPolicy:
		return 'P'
	}
	return '?'
}

func opLongName(op Op) string {
	switch op {
	case OpAppend:
		return "append"
	case OpCheck:
		return "check"
	case OpDelete, OpDeleteNum:
		return "delete"
	case OpInsert:
		return "insert"
	case OpReplace:
		return "replace"
	case OpList:
		return "list"
	case OpListRules:
		return "list-rules"
	case OpFlush:
		return "flush"
	case OpZero, OpZeroNum:
		return "zero"
	case OpNewChain:
		return "new-chain"
	case OpDeleteChain:
		return "delete-chain"
	case OpRenameChain:
		return "rename-chain"
	case OpPolicy:
		return "policy"
	}
	return ""
}

func (p *parser) setOption(bit int) error {
	idx := 0
	for 1<<idx != bit {
		idx++
	}
	if p.options&bit != 0 {
		return Paramf("multiple %s flags not allowed", optChars[idx])
	}
	p.options |= bit
	if p.invert && !optInvertible[idx] {
		return Paramf("cannot have ! before %s", optChars[idx])
	}
	return nil
}

func parseRuleNumber(s string) (int, error) {
	v, ok := strtoui(s, 1, 1<<31-1)
	if !ok {
		return 0, Paramf("Invalid rule number `%s'", s)
	}
	return int(v), nil
}

func (p *parser) run() error {
	for {
		r := p.g.next(p.longs)
		if r.c == goEnd {
			break
		}
		c := r.c
		if r.long != nil {
			if r.long.Ext != nil {
				if err := p.extOption(r.long, r.arg, r.hasArg); err != nil {
					return err
				}
				p.invert = false
				continue
			}
			c = r.long.Val
		}
		if err := p.base(c, r); err != nil {
			return err
		}
		// "!" sets invert for the next option only.
		if !p.keepInvert {
			p.invert = false
		}
		p.keepInvert = false
	}
	return p.finish()
}

// chainOperand takes the optional chain of -L, -S, -F, -Z, -X: attached
// to the option or the next word when that looks like a value.
func (p *parser) chainOperand(r goResult) {
	switch {
	case r.hasArg:
		p.cmd.Chain = r.arg
	case p.g.hasArg():
		p.cmd.Chain = p.g.take()
	default:
		return
	}
	p.cmd.ChainGiven = true
}

func (p *parser) base(c int, r goResult) error {
	g := &p.g
	arg := r.arg
	switch c {
	case 'p', 's', 'd', 'i', 'o', 'j':
		// iptables takes these options' value from the last word getopt
		// consumed, not from optarg: a value written in the option's own
		// word ("-s1.2.3.4", "--source=1.2.3.4") is that whole word
		if r.hasArg {
			arg = g.args[g.optind-1]
		}
	}
	switch c {
	case 'A':
		if err := p.addCommand(OpAppend); err != nil {
			return err
		}
		p.cmd.Chain = arg
	case 'C':
		if err := p.addCommand(OpCheck); err != nil {
			return err
		}
		p.cmd.Chain = arg
	case 'D':
		if err := p.addCommand(OpDelete); err != nil {
			return err
		}
		p.cmd.Chain = arg
		if g.hasArg() {
			n, err := parseRuleNumber(g.take())
			if err != nil {
				return err
			}
			p.cmd.RuleNum = n
			p.cmd.Op = OpDeleteNum
		}
	case 'R':
		if err := p.addCommand(OpReplace); err != nil {
			return err
		}
		p.cmd.Chain = arg
		if !g.hasArg() {
			return Paramf("-%c requires a rule number", 'R')
		}
		n, err := parseRuleNumber(g.take())
		if err != nil {
			return err
		}
		p.cmd.RuleNum = n
	case 'I':
		if err := p.addCommand(OpInsert); err != nil {
			return err
		}
		p.cmd.Chain = arg
		p.cmd.RuleNum = 1
		if g.hasArg() {
			n, err := parseRuleNumber(g.take())
			if err != nil {
				return err
			}
			p.cmd.RuleNum = n
		}
	case 'L', 'S':
		op := OpList
		if c == 'S' {
			op = OpListRules
		}
		if err := p.addCommand(op, OpZero, OpZeroNum); err != nil {
			return err
		}
		p.chainOperand(r)
		if g.hasArg() {
			n, err := parseRuleNumber(g.take())
			if err != nil {
				return err
			}
			p.cmd.RuleNum = n
		}
	case 'F':
		if err := p.addCommand(OpFlush); err != nil {
			return err
		}
		p.chainOperand(r)
	case 'Z':
		if err := p.addCommand(OpZero, OpList, OpListRules); err != nil {
			return err
		}
		if p.cmd.Op != OpZero {
			// combined with an earlier -L/-S: chain args belong to it,
			// but a rule number makes the command -Z CHAIN N alone (as
			// iptables replaces the command then)
			p.chainOperand(r)
			if g.hasArg() {
				n, err := parseRuleNumber(g.take())
				if err != nil {
					return err
				}
				p.cmd.Op, p.cmd.RuleNum, p.cmd.ZeroToo = OpZeroNum, n, false
			}
			return nil
		}
		p.chainOperand(r)
		if g.hasArg() {
			n, err := parseRuleNumber(g.take())
			if err != nil {
				return err
			}
			p.cmd.RuleNum = n
			p.cmd.Op = OpZeroNum
		}
	case 'N':
		if err := checkNewChainName(arg, p.f); err != nil {
			return err
		}
		if err := p.addCommand(OpNewChain); err != nil {
			return err
		}
		p.cmd.Chain = arg
	case 'X':
		if err := p.addCommand(OpDeleteChain); err != nil {
			return err
		}
		p.chainOperand(r)
	case 'E':
		if err := p.addCommand(OpRenameChain); err != nil {
			return err
		}
		p.cmd.Chain = arg
		if !g.hasArg() {
			return Paramf("-%c requires old-chain-name and new-chain-name", 'E')
		}
		p.cmd.NewName = g.take()
	case 'P':
		if err := p.addCommand(OpPolicy); err != nil {
			return err
		}
		p.cmd.Chain = arg
		if !g.hasArg() {
			return Paramf("-%c requires a chain and a policy", 'P')
		}
		p.cmd.Policy = g.take()
	case 'h':
		p.cmd.HelpExts = p.helpExts()
		return ErrHelp
	case 'p':
		if err := p.setOption(optProtocol); err != nil {
			return err
		}
		p.rule.ProtoInv = p.invert
		p.protoName = strings.ToLower(arg)
		proto, err := ParseProtocol(p.protoName)
		if err != nil {
			return err
		}
		if proto == 0 && p.invert {
			return Paramf("rule would never match protocol")
		}
		p.rule.Proto = proto
		p.rule.ProtoSet = proto != 0
		// IPv6 extension headers are never the upper-layer protocol
		if p.f == IPv6 && !p.invert && (proto == 43 || proto == 44 || proto == 51 || proto == 60) {
			p.warn("Warning: never matched protocol: " + p.protoName + ". use extension match instead.\n")
		}
	case 's':
		if err := p.setOption(optSource); err != nil {
			return err
		}
		p.rule.SrcInv = p.invert
		p.srcSpec = arg
	case 'd':
		if err := p.setOption(optDestination); err != nil {
			return err
		}
		p.rule.DstInv = p.invert
		p.dstSpec = arg
	case 'j', 'g':
		if c == 'g' {
			if err := p.setOption(optJump); err != nil {
				return err
			}
			if p.invert {
				return Paramf("cannot have ! before -g")
			}
			if err := checkTargetName(arg); err != nil {
				return err
			}
			p.jumpto = arg
			p.rule.Target = &ChainTarget{Chain: arg, Goto: true}
			p.cmd.JumpChain = arg
			return nil
		}
		if err := p.setOption(optJump); err != nil {
			return err
		}
		return p.jump(arg)
	case 'i', 'o':
		if arg == "" {
			return Paramf("Empty interface is likely to be undesired")
		}
		bit := optViaIn
		if c == 'o' {
			bit = optViaOut
		}
		if err := p.setOption(bit); err != nil {
			return err
		}
		if len(arg) >= 16 {
			return Paramf("interface name `%s' must be shorter than IFNAMSIZ (%d)", arg, 15)
		}
		if strings.ContainsAny(arg, "/ ") {
			p.warn("Warning: weird character in interface `" + arg + "' ('/' and ' ' are not allowed by the kernel).\n")
		}
		if c == 'i' {
			p.rule.InIface, p.rule.InInv = arg, p.invert
		} else {
			p.rule.OutIface, p.rule.OutInv = arg, p.invert
		}
	case 'f':
		if p.f == IPv6 {
			return Paramf("`-f' is not supported in IPv6, use -m frag instead")
		}
		if err := p.setOption(optFragment); err != nil {
			return err
		}
		p.rule.Frag = FragOnly
		if p.invert {
			p.rule.Frag = FragNone
		}
	case 'v':
		if p.cmd.Verbose == 0 {
			if err := p.setOption(optVerbose); err != nil {
				return err
			}
		}
		p.cmd.Verbose++
	case 'x':
		if err := p.setOption(optExpanded); err != nil {
			return err
		}
		p.cmd.Exact = true
	case 'm':
		return p.loadMatch(arg)
	case 'n':
		if err := p.setOption(optNumeric); err != nil {
			return err
		}
		p.cmd.Numeric = true
	case 't':
		if p.invert {
			return Paramf("unexpected ! flag before --table")
		}
		if p.o.Restore {
			return Paramf("The -t option cannot be used in %s.\n", p.o.Prog)
		}
		p.cmd.Table = arg
		p.tableSet = true
	case 'V':
		return ErrVersion
	case 'w':
		if p.o.Restore {
			// iptables names the program this way whatever its name
			// (ip6tables-restore, iptables-nft-restore)
			return Paramf("You cannot use `-w' from iptables-restore")
		}
		p.cmd.Wait = true
		if !r.hasArg && g.hasArg() {
			arg, r.hasArg = g.take(), true
		}
		if r.hasArg {
			secs, ok := scanfInt(arg, true)
			if !ok {
				return Paramf("wait seconds not numeric")
			}
			// waiting 0 seconds is not waiting (for -W's check)
			p.cmd.Wait = secs != 0
		}
	case 'W':
		if p.o.Restore {
			return Paramf("You cannot use `-W' from iptables-restore")
		}
		if !r.hasArg {
			if !g.hasArg() {
				return Paramf("wait interval value required")
			}
			arg = g.take()
		}
		usec, ok := scanfInt(arg, false)
		if !ok {
			return Paramf("wait interval not numeric")
		}
		if uint32(usec) > 999999 {
			return Paramf("too long usec wait %d > 999999 usec", uint32(usec))
		}
		p.waitInterval = true
		p.warn("Ignoring deprecated --wait-interval option.\n")
	case '0':
		if err := p.setOption(optLineNumbers); err != nil {
			return err
		}
		p.cmd.LineNumbers = true
	case 'M':
		// --modprobe: the kernel loads what nftables needs by itself.
	case 'c':
		if err := p.setOption(optCounters); err != nil {
			return err
		}
		pc := arg
		var bc string
		if i := strings.IndexByte(pc[min(1, len(pc)):], ','); i >= 0 {
			i += min(1, len(pc))
			pc, bc = arg[:i], arg[i+1:]
		} else if g.hasArg() {
			bc = g.take()
		} else {
			return Paramf("-%c requires packet and byte counter", 'c')
		}
		pv, ok := scanULL(pc)
		if !ok {
			return Paramf("-%c packet counter not numeric", 'c')
		}
		bv, ok := scanULL(bc)
		if !ok {
			return Paramf("-%c byte counter not numeric", 'c')
		}
		p.cmd.Counters = &Counters{Packets: pv, Bytes: bv}
	case '4':
		if p.f == IPv4 {
			return nil
		}
		if p.o.Restore {
			return ErrSkipLine
		}
		return Rawf(StatusParameter, "")
	case '6':
		if p.f == IPv6 {
			return nil
		}
		if p.o.Restore {
			return ErrSkipLine
		}
		return Rawf(StatusParameter, "")
	case 'b':
		return p.unknown(goResult{c: goUnknown, optopt: 'b'})
	case goNonOption:
		if r.arg == "!" {
			if p.invert {
				return Paramf("multiple consecutive ! not allowed")
			}
			p.invert = true
			p.keepInvert = true
			return nil
		}
		return Rawf(StatusParameter, "Bad argument `%s'\n", r.arg)
	case goMissing:
		return Paramf("option \"%s\" requires an argument", g.args[g.optind-1])
	default:
		return p.unknown(r)
	}
	return nil
}

// scanULL parses like sscanf("%llu"): leading digits, rest ignored.
func scanULL(s string) (uint64, bool) {
	s = strings.TrimLeft(s, " \t\n")
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 {
		return 0, false
	}
	var v uint64
	for _, ch := range s[:n] {
		v = v*10 + uint64(ch-'0')
	}
	return v, true
}

// unknown handles an option no loaded extension knows: it loads the
// protocol's match implicitly (-p tcp --dport 22) and retries, or fails.
func (p *parser) unknown(r goResult) error {
	if p.protoName != "" && !p.protoUsed {
		if name := protoMatchName(p.rule.Proto, p.cmd.Numeric); name != "" {
			if spec := FindMatch(name, p.f); spec != nil {
				p.protoUsed = true
				if _, err := p.addMatch(spec, name); err != nil {
					return err
				}
				// iptables steps optind back and calls getopt again:
				// after a whole word that rescans it with the new
				// options in place; inside a cluster ("-ack") glibc
				// goes on with the cluster's other letters and reads
				// the word again after them
				p.g.optind--
				p.keepInvert = true
				return nil
			}
		}
	}
	if r.c == goUnknown && r.optopt != 0 {
		// iptables names argv[optind-1]; glibc advances optind only
		// at a cluster's last letter, so inside a cluster that is the
		// word before it (in a restore line, before the first word:
		// the table, which iptables-restore passes as "-t TABLE")
		i := p.g.optind - 1
		if p.g.nextchar != "" {
			i--
		}
		switch {
		case i >= 0:
			return Paramf("unknown option \"%s\"", p.g.args[i])
		case p.o.Restore && p.cmd.Table != "":
			return Paramf("unknown option \"%s\"", p.cmd.Table)
		}
		return Paramf("unknown option \"-%c\"", r.optopt)
	}
	return Paramf("unknown option \"%s\"", p.g.args[p.g.optind-1])
}

// helpExts are the extensions -h shows, as iptables finds them when it
// meets -h: the target, then the matches loaded so far; without any,
// the match named as the -p argument was written (-p 1 loads none, -p
// icmpv6 the icmp6 match).
func (p *parser) helpExts() []*ExtSpec {
	var out []*ExtSpec
	if p.target != nil {
		out = append(out, p.target.spec)
	}
	if len(p.exts) == 0 && p.protoName != "" {
		name := p.protoName
		if name == "icmpv6" || name == "ipv6-icmp" {
			name = "icmp6"
		}
		if spec := FindMatch(name, p.f); spec != nil {
			out = append(out, spec)
		}
	}
	for _, e := range p.exts {
		out = append(out, e.spec)
	}
	return out
}

// protoMatchName is the match implicitly loaded for a protocol.
func protoMatchName(proto uint8, numeric bool) string {
	name := ProtoName(proto, numeric)
	switch name {
	case "icmpv6", "ipv6-icmp", "icmp6":
		return "icmp6"
	}
	return name
}

func (p *parser) loadMatch(name string) error {
	if p.invert {
		return Paramf("unexpected ! flag before --match")
	}
	// xtables_find_match measures the name before it looks it up
	if len(name) >= 29 {
		return Paramf("Invalid match name \"%s\" (%d chars max)", name, 28)
	}
	lookup := name
	switch name {
	case "icmpv6", "ipv6-icmp":
		lookup = "icmp6"
	}
	spec := FindMatch(lookup, p.f)
	if spec == nil {
		return Paramf("Couldn't load match `%s':No such file or directory\n", name)
	}
	if spec.Name == protoMatchName(p.rule.Proto, p.cmd.Numeric) {
		p.protoUsed = true
	}
	_, err := p.addMatch(spec, name)
	return err
}

// newExt returns a new extension instance of the line, from the room
// of p.loaded while it lasts (growing it would move the instances that
// p.exts and p.longs point at).
func (p *parser) newExt(spec *ExtSpec) *loadedExt {
	if p.loaded == nil {
		p.loaded = make([]loadedExt, 0, 8)
	}
	if len(p.loaded) == cap(p.loaded) {
		return &loadedExt{spec: spec, name: spec.Name}
	}
	p.loaded = append(p.loaded, loadedExt{spec: spec, name: spec.Name})
	return &p.loaded[len(p.loaded)-1]
}

func (p *parser) addMatch(spec *ExtSpec, name string) (*loadedExt, error) {
	l := p.newExt(spec)
	l.match = spec.NewMatch(p.f)
	p.probeLoad(spec.Name, l.match, false)
	p.exts = append(p.exts, l)
	p.rule.Matches = append(p.rule.Matches, l.match)
	p.mergeOptions(l)
	return l, nil
}

// mergeOptions puts the extension's options in front of the older
// extension options (the base options stay first, in getopt), as xtables
// does. A later instance of an extension already loaded (a second -m
// connmark, -m tcp after -p tcp's) is not merged again: xtables merges the
// options of a match's first load only and hands them to the instance of
// that match still open (the earlier ones are complete), so the entries
// stay where they are and now lead to the new instance. An option of a
// match loaded in between (-m mark's --mark) comes first.
func (p *parser) mergeOptions(l *loadedExt) {
	again := false
	for i := range p.longs {
		if e := p.longs[i].Ext; e != nil && e.spec == l.spec {
			p.longs[i].Ext = l
			again = true
		}
	}
	if again {
		return
	}
	// built in the spare list's room, while longs is read
	merged := p.spare[:0]
	for i := range l.spec.Options {
		d := &l.spec.Options[i]
		merged = append(merged, LongOpt{Name: d.Name, HasArg: d.Arg, Ext: l, ID: d.ID})
	}
	p.longs, p.spare = append(merged, p.longs...), p.longs[:0]
}

// checkTargetName is xtables' xt_parse_target, for -j and -g.
func checkTargetName(name string) error {
	if name == "" {
		return Paramf("Invalid target name (too short)")
	}
	if len(name) >= 29 {
		return Paramf("Invalid target name `%s' (%d chars max)", name, 28)
	}
	if strings.ContainsAny(name, " \t\n\v\f\r") { // C isspace
		return Paramf("Invalid target name `%s'", name)
	}
	return nil
}

func (p *parser) jump(name string) error {
	if p.invert {
		return Paramf("cannot have ! before -j")
	}
	if err := checkTargetName(name); err != nil {
		return err
	}
	p.jumpto = name
	spec := FindTarget(name, p.f)
	if spec == nil {
		p.rule.Target = &ChainTarget{Chain: name}
		if !IsVerdict(name) {
			p.cmd.JumpChain = name
		}
		return nil
	}
	l := p.newExt(spec)
	l.target = spec.NewTarget(p.f)
	if w, ok := l.target.(loadWarner); ok {
		if _, done := loadWarned.LoadOrStore(spec.Name, true); !done {
			p.warn(w.LoadWarning())
		}
	}
	p.probeLoad(spec.Name, l.target, true)
	p.target = l
	p.rule.Target = l.target
	p.mergeOptions(l)
	return nil
}

// KernelHasXt, set by the binary, asks the running kernel whether it
// has revision rev of the xtables match or target name for family f
// (nft_compat's answer); ok is false when it could not ask (no
// permission, no nf_tables), and then nothing is printed, as iptables
// prints nothing when it cannot ask.
var KernelHasXt func(f Family, name string, rev uint32, target bool) (has, ok bool)

// xtProber is implemented by extensions that always run as their
// xtables match or target: iptables asks the kernel for it as it loads
// the extension and says so when the kernel lacks it (-m ipvs, -j LED
// on kernels built without them); the kernel then refuses the rule.
type xtProber interface {
	XtRevision() uint32
}

// probeLoad prints xtables' notice for an extension the kernel lacks,
// once per process as xtables loads an extension once.
func (p *parser) probeLoad(name string, x any, target bool) {
	pr, ok := x.(xtProber)
	if !ok || KernelHasXt == nil {
		return
	}
	key := name + "/" + strconv8(uint8(p.f))
	if _, done := loadWarned.Load(key); done {
		return
	}
	rev := pr.XtRevision()
	has, ok := KernelHasXt(p.f, name, rev, target)
	if !ok {
		return
	}
	if _, done := loadWarned.LoadOrStore(key, true); !done && !has {
		p.warn("Warning: Extension " + name + " revision " + strconv.FormatUint(uint64(rev), 10) + " not supported, missing kernel module?\n")
	}
}

func (p *parser) extOption(lo *LongOpt, arg string, hasArg bool) error {
	l := lo.Ext
	var def *OptDef
	for i := range l.spec.Options {
		if l.spec.Options[i].ID == lo.ID && l.spec.Options[i].Name == lo.Name {
			def = &l.spec.Options[i]
		}
	}
	// no extension keeps its OptArg past its Parse: one in the parser does
	oa := &p.optArg
	*oa = OptArg{Def: def, Arg: arg, HasArg: hasArg, Invert: p.invert, Rule: p.rule,
		Family: p.f, Table: p.cmd.Table, Ext: l.name, g: &p.g, warn: p.o.Warn, lookupSets: p.o.LookupSets}
	return l.parse(oa)
}

// Warner is implemented by extensions that print a notice on stderr for
// an accepted but questionable option (a reversed iprange, ...).
type Warner interface {
	Warning() string
}

// addWarner is a Warner whose notice is about what the rule will do in
// the kernel: it is printed only for commands that add the rule.
type addWarner interface {
	Warner
	warnsOnAdd()
}

func (p *parser) warnFrom(x any) {
	if _, ok := x.(addWarner); ok {
		switch p.cmd.Op {
		case OpAppend, OpInsert, OpReplace:
		default:
			return
		}
	}
	if w, ok := x.(Warner); ok {
		if s := w.Warning(); s != "" {
			p.warn(s)
		}
	}
}

func isRuleOp(op Op) bool {
	switch op {
	case OpAppend, OpCheck, OpDelete, OpInsert, OpReplace:
		return true
	}
	return false
}

func (p *parser) finish() error {
	if p.cmd.Table == "nat" && (p.cmd.Policy == "DROP" || p.jumpto == "DROP") {
		return Paramf("\nThe \"nat\" table is not intended for filtering, the use of DROP is therefore inhibited.\n\n")
	}
	if p.waitInterval && !p.cmd.Wait {
		return Paramf("--wait-interval only makes sense with --wait\n")
	}
	for _, l := range p.exts {
		if err := l.final(p.rule); err != nil {
			return err
		}
		p.warnFrom(l.match)
	}
	if p.target != nil {
		if err := p.target.final(p.rule); err != nil {
			return err
		}
		p.warnFrom(p.target.target)
	}
	if p.g.optind < len(p.g.args) {
		return Paramf("unknown arguments found on commandline") // words after "--"
	}
	if p.cmd.Op == OpNone {
		return Paramf("no command specified")
	}
	if p.invert {
		return Paramf("nothing appropriate following !")
	}
	var srcs, dsts []Net
	if isRuleOp(p.cmd.Op) {
		var err error
		if srcs, err = p.parseAddrs(p.srcSpec, p.options&optSource != 0); err != nil {
			return err
		}
		if dsts, err = p.parseAddrs(p.dstSpec, p.options&optDestination != 0); err != nil {
			return err
		}
		if (len(srcs) > 1 || len(dsts) > 1) && (p.rule.SrcInv || p.rule.DstInv) {
			return Paramf("! not allowed with multiple source or destination IP addresses")
		}
		if p.cmd.Op == OpReplace && (len(srcs) != 1 || len(dsts) != 1) {
			return Paramf("Replacement rule does not specify a unique address")
		}
	}
	if err := p.checkOptions(); err != nil {
		return err
	}
	if len(p.cmd.Chain) >= 29 && !p.o.KernelChain {
		return Paramf("chain name `%s' too long (must be under %d chars)", p.cmd.Chain, 29)
	}
	if isRuleOp(p.cmd.Op) {
		switch p.cmd.Chain {
		case "PREROUTING", "INPUT":
			if p.options&optViaOut != 0 {
				return Paramf("Can't use -%c with %s\n", 'o', p.cmd.Chain)
			}
		case "POSTROUTING", "OUTPUT":
			if p.options&optViaIn != 0 {
				return Paramf("Can't use -%c with %s\n", 'i', p.cmd.Chain)
			}
		}
		if p.f == IPv4 {
			// ip6tables-nft 1.8.9 keeps -c (and a restore's [p:b]) in
			// the IPv4 part of its command state: IPv6 rules start at 0
			p.rule.Counters = p.cmd.Counters
		}
		if len(srcs) == 1 && len(dsts) == 1 {
			// the one rule is the parser's (Parse is done with it)
			p.rule.Src, p.rule.Dst = srcs[0], dsts[0]
			p.cmd.Rules = []*Rule{p.rule}
			return nil
		}
		for _, s := range srcs {
			for _, d := range dsts {
				r := *p.rule
				r.Src, r.Dst = s, d
				p.cmd.Rules = append(p.cmd.Rules, &r)
			}
		}
	}
	return nil
}

func (p *parser) checkOptions() error {
	row, ok := cmdOptions[p.cmd.Op]
	if !ok {
		return nil
	}
	for i := 0; i < numOpts; i++ {
		if p.options&(1<<i) == 0 {
			continue
		}
		legal := row[i] != 'x'
		if p.cmd.ZeroToo {
			// -L/-S with -Z: an option is legal when either allows it.
			legal = legal || cmdOptions[OpZero][i] != 'x'
		}
		if !legal {
			return Paramf("Illegal option `%s' with this command", optChars[i])
		}
	}
	return nil
}

// checkNewChainName applies iptables' rules for -N names: no target of
// that name may exist (the standard verdicts are the target "standard";
// an empty name finds it too).
func checkNewChainName(name string, f Family) error {
	// (the length first, as -N is read: before any later option)
	if len(name) >= 29 {
		return Paramf("chain name `%s' too long (must be under %d chars)", name, 29)
	}
	if name == "" {
		return Paramf("chain name may not clash with target name")
	}
	if err := checkDeclaredChainName(name); err != nil {
		return err
	}
	if FindTarget(name, f) != nil || name == "standard" {
		return Paramf("chain name may not clash with target name")
	}
	if strings.ContainsAny(name, " \t\n\v\f\r") {
		return Paramf("Invalid chain name `%s'", name)
	}
	return nil
}

// checkDeclaredChainName applies iptables-restore's rules for the name
// on a ":CHAIN -" line: it looks only at the standard verdicts, not at
// target extensions (":REJECT -" makes a chain).
func checkDeclaredChainName(name string) error {
	if name[0] == '-' || name[0] == '!' {
		return Paramf("chain name not allowed to start with `%c'", name[0])
	}
	if IsVerdict(name) {
		return Paramf("chain name may not clash with target name")
	}
	return nil
}

// scanfInt reads a number as sscanf's %i (base 0: 0x hex, 0 octal) or %u
// does: leading blanks, a sign, then digits; the rest of the word is
// ignored. ok is false when no digit starts it. The value wraps as C's
// conversion does.
func scanfInt(s string, base0 bool) (int64, bool) {
	v, _, ok := scanfIntRest(s, base0)
	return v, ok
}

// scanfIntRest is scanfInt that also returns what follows the number.
func scanfIntRest(s string, base0 bool) (int64, string, bool) {
	s = trimCSpace(s)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	base := uint64(10)
	if base0 && len(s) > 1 && s[0] == '0' {
		base, s = 8, s[1:]
		if (s[0] == 'x' || s[0] == 'X') && len(s) > 1 && hexDigit(s[1]) >= 0 {
			base, s = 16, s[1:]
		} else if s[0] < '0' || s[0] > '7' {
			return 0, s, true // a lone 0
		}
	}
	var v uint64
	n := 0
	for ; n < len(s); n++ {
		d := hexDigit(s[n])
		if d < 0 || uint64(d) >= base {
			break
		}
		v = v*base + uint64(d)
	}
	if n == 0 {
		return 0, s, false
	}
	if neg {
		v = -v
	}
	return int64(v), s[n:], true
}
