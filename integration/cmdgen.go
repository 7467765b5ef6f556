package integration

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/xdptables/xdptables/compat"
)

// GenCommands makes a seeded sequence of n iptables/ip6tables command
// lines and iptables-restore/ip6tables-restore files on simple rules:
// chain commands on existing, missing, built-in and oddly named chains,
// rule numbers in and out of range, listings with every option
// spelling, bad option combinations, and restore files with counters,
// policies, chain commands, comments, errors at random lines and every
// restore option. The same seed gives the same sequence.

// CmdStep is one generated command: a tool, its arguments and what it
// reads on stdin (a restore file).
type CmdStep struct {
	Tool  string
	Args  []string
	Stdin string
	// Help marks a command that prints the usage text: our text is our
	// own wording, only the exit status and stderr are the reference's.
	Help bool
}

// String is the step as a script line (TestScriptDiff's format, with
// the restore file after it).
func (s CmdStep) String() string {
	words := []string{s.Tool}
	for _, a := range s.Args {
		words = append(words, shellQuote(a))
	}
	line := strings.Join(words, " ")
	if s.Stdin != "" {
		line += " <<EOF\n" + s.Stdin + "EOF"
	}
	return line
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ':' || r == ',' || r == '=' || r == '+' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cmdGen holds the generator's state: the random source and the chain
// names it made, so that later commands often find them.
type cmdGen struct {
	r    *rand.Rand
	v6   bool
	made map[string][]string // table -> user chains created (as far as we know)
}

// cmdTables are the tables commands go to (filter most); "nosuch" (see
// table) is one the kernel does not know.
var cmdTables = []string{"filter", "filter", "filter", "nat", "mangle", "raw", "security"}

// oddChainNames are names iptables checks or treats specially. (Names of
// target extensions are left out: iptables-nft-restore takes "-j REJECT"
// as a jump when a chain REJECT exists, iptables as the target.)
var oddChainNames = []string{
	"-foo", "a b", "ACCEPT", "DROP", "RETURN", "QUEUE", "a-b", "x_y", "!x", "1a", "_x", "a.b",
	strings.Repeat("x", 28), strings.Repeat("y", 29), strings.Repeat("z", 31), "NOPE", "",
}

// plainChainNames are the user chains the generator mostly works with.
var plainChainNames = []string{"u1", "u2", "web", "LOGDROP", "Zed"}

// GenCommands returns n steps for seed.
func GenCommands(seed uint64, n int) []CmdStep {
	g := &cmdGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), made: map[string][]string{}}
	var out []CmdStep
	for len(out) < n {
		g.v6 = g.r.IntN(4) == 0
		var s CmdStep
		switch k := g.r.IntN(100); {
		case k < 12:
			s = g.restore()
		case k < 16:
			s = g.save()
		default:
			s = g.command()
		}
		out = append(out, s)
	}
	return out
}

func (g *cmdGen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g *cmdGen) chance(pct int) bool { return g.r.IntN(100) < pct }

func (g *cmdGen) prog() string {
	if g.v6 {
		return "ip6tables"
	}
	return "iptables"
}

func (g *cmdGen) table() string {
	if g.chance(3) {
		return "nosuch"
	}
	return g.pick(cmdTables)
}

// userChain is a user chain name: mostly one made before or a plain one,
// sometimes an odd one.
func (g *cmdGen) userChain(table string) string {
	switch k := g.r.IntN(10); {
	case k < 5 && len(g.made[table]) > 0:
		return g.pick(g.made[table])
	case k < 8:
		return g.pick(plainChainNames)
	default:
		return g.pick(oddChainNames)
	}
}

// chain is any chain name of table: built-in, user or odd.
func (g *cmdGen) chain(table string) string {
	if b := compat.BuiltinChains[table]; len(b) > 0 && g.chance(50) {
		return g.pick(b)
	}
	if g.chance(5) {
		return g.pick(compat.BuiltinChains[g.pick(cmdTables)]) // a built-in of another table
	}
	return g.userChain(table)
}

func (g *cmdGen) remember(table, chain string) {
	for _, c := range g.made[table] {
		if c == chain {
			return
		}
	}
	g.made[table] = append(g.made[table], chain)
}

func (g *cmdGen) forget(table, chain string) {
	cs := g.made[table]
	for i, c := range cs {
		if c == chain {
			g.made[table] = append(cs[:i:i], cs[i+1:]...)
			return
		}
	}
}

// ruleNum is a rule number, mostly small and valid, sometimes 0,
// negative, huge or not a number.
func (g *cmdGen) ruleNum() string {
	switch k := g.r.IntN(20); {
	case k < 12:
		return strconv.Itoa(1 + g.r.IntN(4))
	case k < 14:
		return strconv.Itoa(5 + g.r.IntN(20))
	default:
		return g.pick([]string{"0", "-1", "x", "1x", "99999999999", "+1", "01"})
	}
}

func (g *cmdGen) addr() string {
	if g.v6 {
		return g.pick([]string{"2001:db8::1", "2001:db8::/64", "2001:db8:1::/48", "2001:db8::2/128"})
	}
	return g.pick([]string{"198.51.100.1", "198.51.100.0/24", "203.0.113.7", "198.18.0.0/15", "203.0.113.0/255.255.255.0"})
}

// long picks the long or the short spelling of an option.
func (g *cmdGen) long(short, long string) string {
	if g.chance(25) {
		return long
	}
	return short
}

// ruleSpec is a simple rule; target is what -j names (a chain name,
// a standard verdict or nothing).
func (g *cmdGen) ruleSpec(table string) []string {
	var a []string
	if g.chance(40) {
		if g.chance(15) {
			a = append(a, "!")
		}
		a = append(a, g.long("-s", g.pick([]string{"--source", "--src"})), g.addr())
	}
	if g.chance(20) {
		a = append(a, g.long("-d", "--destination"), g.addr())
	}
	if g.chance(20) {
		a = append(a, g.long("-i", "--in-interface"), g.pick([]string{"eth0", "veth+", "lo"}))
	}
	if g.chance(10) {
		a = append(a, g.long("-o", "--out-interface"), g.pick([]string{"eth1", "lo"}))
	}
	if g.chance(30) {
		p := g.pick([]string{"tcp", "udp", "icmp", "all", "47"})
		if g.v6 && p == "icmp" {
			p = "ipv6-icmp"
		}
		a = append(a, g.long("-p", "--protocol"), p)
		if (p == "tcp" || p == "udp") && g.chance(60) {
			a = append(a, g.pick([]string{"--dport", "--sport"}), g.pick([]string{"22", "53", "1024:", "80:90"}))
		}
	}
	if g.chance(8) {
		a = append(a, "-m", "comment", "--comment", g.pick([]string{"hi", "two words", `q"uote`}))
	}
	if g.chance(10) {
		a = append(a, g.long("-c", "--set-counters"), strconv.Itoa(g.r.IntN(1000)), strconv.Itoa(g.r.IntN(100000)))
	}
	switch k := g.r.IntN(20); {
	case k < 8:
		a = append(a, g.long("-j", "--jump"), g.pick([]string{"ACCEPT", "DROP", "RETURN"}))
	case k < 12:
		j := g.long("-j", "--jump")
		if g.chance(20) {
			j = g.long("-g", "--goto")
		}
		a = append(a, j, g.userChain(table))
	case k < 14:
		a = append(a, "-j", g.pick([]string{"REJECT", "LOG", "MASQUERADE", "NOPE"}))
	case k < 15:
		a = append(a, "-j", "MARK", "--set-mark", "5")
	}
	return a
}

// tableArgs is the -t option for table (none for filter, mostly).
func (g *cmdGen) tableArgs(table string) []string {
	if table == "filter" && g.chance(80) {
		return nil
	}
	switch k := g.r.IntN(10); {
	case k < 6:
		return []string{"-t", table}
	case k < 8:
		return []string{"--table", table}
	case k < 9:
		return []string{"--table=" + table}
	default:
		return []string{"-t" + table}
	}
}

// command is one iptables/ip6tables command line.
func (g *cmdGen) command() CmdStep {
	table := g.table()
	var cmd []string // the command and its operands
	var opts []string
	switch k := g.r.IntN(100); {
	case k < 20:
		c := g.chain(table)
		cmd = append([]string{g.long("-A", "--append"), c}, g.ruleSpec(table)...)
	case k < 28:
		cmd = []string{g.long("-I", "--insert"), g.chain(table)}
		if g.chance(60) {
			cmd = append(cmd, g.ruleNum())
		}
		cmd = append(cmd, g.ruleSpec(table)...)
	case k < 32:
		cmd = append([]string{g.long("-R", "--replace"), g.chain(table), g.ruleNum()}, g.ruleSpec(table)...)
	case k < 38:
		if g.chance(50) {
			cmd = []string{g.long("-D", "--delete"), g.chain(table), g.ruleNum()}
		} else {
			cmd = append([]string{g.long("-D", "--delete"), g.chain(table)}, g.ruleSpec(table)...)
		}
	case k < 41:
		cmd = append([]string{g.long("-C", "--check"), g.chain(table)}, g.ruleSpec(table)...)
	case k < 49:
		c := g.userChain(table)
		if g.chance(10) {
			c = g.pick(compat.BuiltinChains["filter"])
		}
		cmd = []string{g.long("-N", g.pick([]string{"--new-chain", "--new"})), c}
		if g.chance(3) {
			cmd = cmd[:1]
		}
		g.remember(table, c)
	case k < 55:
		cmd = []string{g.long("-X", "--delete-chain")}
		if g.chance(75) {
			c := g.chain(table)
			cmd = append(cmd, c)
			if g.chance(50) {
				g.forget(table, c)
			}
		}
	case k < 60:
		from, to := g.chain(table), g.userChain(table)
		if g.chance(15) {
			to = g.chain(table)
		}
		cmd = []string{g.long("-E", "--rename-chain"), from, to}
		if g.chance(5) {
			cmd = cmd[:2]
		}
		g.remember(table, to)
	case k < 64:
		cmd = []string{g.long("-F", "--flush")}
		if g.chance(60) {
			cmd = append(cmd, g.chain(table))
		}
	case k < 68:
		cmd = []string{g.long("-Z", "--zero")}
		if g.chance(60) {
			cmd = append(cmd, g.chain(table))
			if g.chance(20) {
				cmd = append(cmd, g.ruleNum())
			}
		}
		if g.chance(30) {
			cmd = append(cmd, g.long("-L", "--list"))
		}
	case k < 73:
		p := g.pick([]string{"ACCEPT", "DROP", "ACCEPT", "DROP", "RETURN", "QUEUE", "FOO", "accept", "u1"})
		cmd = []string{g.long("-P", "--policy"), g.chain(table), p}
		if g.chance(5) {
			cmd = cmd[:2]
		}
		if g.chance(10) {
			cmd = append(cmd, g.long("-c", "--set-counters"), "5", "10")
		}
	case k < 85:
		cmd, opts = g.list(table)
	case k < 92:
		cmd = []string{g.long("-S", "--list-rules")}
		if g.chance(60) {
			cmd = append(cmd, g.chain(table))
			if g.chance(40) {
				cmd = append(cmd, g.ruleNum())
			}
		}
		if g.chance(25) {
			opts = append(opts, g.long("-v", "--verbose"))
		}
	default:
		return g.oddCommand(table)
	}
	t := g.tableArgs(table)
	var args []string
	if g.chance(30) {
		// the table option after the command
		args = append(append(append(args, cmd...), t...), opts...)
	} else {
		args = append(append(append(args, t...), cmd...), opts...)
	}
	args = g.extras(args)
	return CmdStep{Tool: g.prog(), Args: args}
}

// list is an -L command with its options in one of their spellings.
func (g *cmdGen) list(table string) (cmd, opts []string) {
	if g.chance(25) {
		// combined short options
		cmd = []string{g.pick([]string{"-nL", "-nvL", "-vnxL", "-Lnv", "-nxvL", "-vL", "-xL", "-Ln"})}
	} else {
		cmd = []string{g.long("-L", "--list")}
	}
	if g.chance(50) {
		cmd = append(cmd, g.chain(table))
		if g.chance(30) {
			cmd = append(cmd, g.ruleNum())
		}
	}
	if g.chance(70) {
		opts = append(opts, g.long("-n", "--numeric"))
	}
	// (-v twice makes iptables-nft print its netlink debug dumps: not
	// something to compare)
	if g.chance(40) && !strings.Contains(cmd[0], "v") {
		opts = append(opts, g.long("-v", "--verbose"))
	}
	if g.chance(20) {
		opts = append(opts, g.long("-x", "--exact"))
	}
	if g.chance(25) {
		opts = append(opts, "--line-numbers")
	}
	if g.chance(5) {
		opts = append(opts, g.long("-Z", "--zero"))
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	return cmd, opts
}

// extras adds, now and then, -w/-W values and -4/-6 to a command line.
func (g *cmdGen) extras(args []string) []string {
	if g.chance(8) {
		w := []string{g.long("-w", "--wait")}
		if g.chance(60) {
			w = append(w, g.pick([]string{"1", "5", "0", "x", "-1"}))
		}
		if g.chance(30) {
			w = append(w, g.long("-W", "--wait-interval"), g.pick([]string{"1000", "x", "0"}))
		}
		args = append(w, args...)
	}
	if g.chance(4) {
		args = append(args, g.long("-W", "--wait-interval"), g.pick([]string{"1000", "x"}))
	}
	if g.chance(5) {
		args = append([]string{g.pick([]string{"-4", "-6", "--ipv4", "--ipv6"})}, args...)
	}
	return args
}

// oddCommand is a command line iptables refuses before it looks at the
// kernel, or one that only prints (version, help).
func (g *cmdGen) oddCommand(table string) CmdStep {
	c := g.chain(table)
	lines := [][]string{
		{"-A"}, {"-I"}, {"-D"}, {"-R", c}, {"-R", c, "1"}, {"-D", c, "1", "2"},
		{"-A", c, "-D", c}, {"-L", "-S"}, {"-F", "-X"}, {"-N", c, "-A", c},
		{"--bogus"}, {"-y"}, {"-t"}, {"-P"}, {"-P", c}, {"-E", c},
		{"-L", c, "1", "2"}, {"-F", c, "extra"}, {"-X", c, "extra"}, {"-N", c, "extra"},
		{"-A", c, "-j"}, {"-A", c, "-s"}, {"-A", c, "-j", "ACCEPT", "extra"},
		{"-n"}, {"-v"}, {"-x"}, {"--line-numbers", "-S"}, {"-S", "-x"}, {"-A", c, "-n", "-j", "ACCEPT"},
		{"-V"}, {"--version"}, {"-t", table, "-L", "-t", table}, {"-s", "198.51.100.1"}, {},
		{"-L", "--bogus"}, {"-Z", c, "-n"}, {"-C", c}, {"-D", c}, {"-P", c, "ACCEPT", "extra"},
		{"-E", c, "a", "b"}, {"-I", c, "1", "2"}, {"-w", "-L", "-n"}, {"--list=INPUT"},
		{"--append", "INPUT", "--jump=ACCEPT"}, {"--lis", "-n"}, {"--line", "-L"},
	}
	s := CmdStep{Tool: g.prog(), Args: lines[g.r.IntN(len(lines))]}
	if g.chance(15) {
		s.Args = []string{g.pick([]string{"-h", "--help"})}
		if g.chance(40) {
			s.Args = append(s.Args, g.pick([]string{"-L", "-p", "tcp", "-j"}))
		}
		s.Help = true
	}
	if s.Args == nil {
		s.Args = []string{}
	}
	return s
}

// save is an iptables-save/ip6tables-save command.
func (g *cmdGen) save() CmdStep {
	args := []string{}
	if g.chance(40) {
		args = append(args, g.long("-t", "--table"), g.table())
	}
	if g.chance(30) {
		args = append(args, g.long("-c", "--counters"))
	}
	return CmdStep{Tool: g.prog() + "-save", Args: args}
}

// restore is an iptables-restore/ip6tables-restore run with a file.
func (g *cmdGen) restore() CmdStep {
	var args []string
	noflush := g.chance(40)
	if noflush {
		args = append(args, g.long("-n", "--noflush"))
	}
	if g.chance(30) {
		args = append(args, g.long("-c", "--counters"))
	}
	if g.chance(8) {
		args = append(args, g.long("-t", "--test"))
	}
	if g.chance(6) {
		args = append(args, g.long("-w", "--wait"))
		if g.chance(50) {
			args = append(args, "2")
		}
	}
	if g.chance(4) {
		args = append(args, "-W", "1000")
	}
	if g.chance(6) {
		args = append(args, g.long("-T", "--table"), g.pick([]string{"filter", "nat", "raw", "nosuch"}))
	}
	if g.chance(3) {
		args = append(args, g.pick([]string{"--bogus", "-y", "/nonexistent/file.rules"}))
	}
	var b strings.Builder
	nsec := 1 + g.r.IntN(3)
	for i := 0; i < nsec; i++ {
		g.section(&b, noflush)
	}
	if g.chance(10) {
		b.WriteString(g.pick([]string{"COMMIT\n", ":INPUT ACCEPT [0:0]\n", "-A INPUT -j ACCEPT\n", "\n# end\n", "garbage\n"}))
	}
	return CmdStep{Tool: g.prog() + "-restore", Args: args, Stdin: b.String()}
}

// section writes one "*table ... COMMIT" section of a restore file.
func (g *cmdGen) section(b *strings.Builder, noflush bool) {
	table := g.table()
	if g.chance(3) {
		table = "bogus"
	}
	if g.chance(30) {
		b.WriteString("# generated section\n")
	}
	if g.chance(10) {
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "*%s\n", table)
	builtins := compat.BuiltinChains[table]
	decls := 0
	for _, c := range builtins {
		if g.chance(60) {
			fmt.Fprintf(b, ":%s %s%s\n", c, g.pick([]string{"ACCEPT", "ACCEPT", "DROP", "BOGUS", "-"}), g.counters())
			decls++
		}
	}
	var users []string
	for i := g.r.IntN(3); i > 0; i-- {
		c := g.userChain(table)
		users = append(users, c)
		g.remember(table, c)
		pol := "-"
		if g.chance(5) {
			pol = "ACCEPT"
		}
		fmt.Fprintf(b, ":%s %s%s\n", c, pol, g.counters())
		decls++
	}
	chainOf := func() string {
		if len(users) > 0 && g.chance(40) {
			return g.pick(users)
		}
		return g.chain(table)
	}
	for i := g.r.IntN(6); i > 0; i-- {
		if g.chance(8) {
			b.WriteString(g.pick([]string{"# a comment\n", "\n", "   \n", "  # indented comment\n"}))
		}
		var line []string
		switch k := g.r.IntN(100); {
		case k < 45:
			line = append([]string{"-A", chainOf()}, g.ruleSpec(table)...)
			if g.chance(20) {
				line = append([]string{fmt.Sprintf("[%d:%d]", g.r.IntN(10), g.r.IntN(1000))}, line...)
			}
		case k < 52:
			line = append([]string{"-I", chainOf()}, g.ruleSpec(table)...)
		case k < 56:
			line = append([]string{"-D", chainOf()}, g.ruleSpec(table)...)
		case k < 58:
			line = []string{"-R", chainOf(), "1", "-j", "ACCEPT"}
		case k < 64:
			c := g.userChain(table)
			line = []string{"-N", c}
			g.remember(table, c)
		case k < 69:
			line = []string{"-X", chainOf()}
		case k < 73:
			line = []string{"-F"}
			if g.chance(60) {
				line = append(line, chainOf())
			}
		case k < 76:
			line = []string{"-Z"}
			if g.chance(60) {
				line = append(line, chainOf())
			}
		case k < 81:
			line = []string{"-P", g.chain(table), g.pick([]string{"ACCEPT", "DROP", "FOO"})}
		case k < 85:
			to := g.userChain(table)
			line = []string{"-E", chainOf(), to}
			g.remember(table, to)
		case k < 88:
			line = []string{"-C", chainOf(), "-j", "ACCEPT"}
		case k < 91:
			line = []string{"-A", chainOf(), "-j", "ACCEPT", "--bogus"}
		case k < 93:
			line = []string{"-A", chainOf(), "-j", "ACCEPT", "#", "trailing"}
		case k < 95 && noflush && decls == 0:
			// (iptables-nft 1.8.9 lists its cache, which does not show
			// what chain lines did (policies, flushes), and in flush mode
			// it then fails the section's later rules with ENOENT: not
			// generated)
			line = [][]string{{"-L"}, {"-S"}, {"-L", "-n", "-v"}, {"-S", chainOf()}, {"-L", chainOf(), "1"}, {"-L", "-Z"}}[g.r.IntN(6)]
		default:
			line = []string{g.pick([]string{"-t", "-A", "-E", "bogus", ":", "*filter"})}
		}
		b.WriteString(restoreLine(line) + "\n")
	}
	if !g.chance(6) {
		b.WriteString("COMMIT\n")
	}
}

// counters is the " [p:b]" of a chain line: mostly present, sometimes
// missing or malformed.
func (g *cmdGen) counters() string {
	switch k := g.r.IntN(12); {
	case k < 8:
		return fmt.Sprintf(" [%d:%d]", g.r.IntN(100), g.r.IntN(10000))
	case k < 10:
		return ""
	default:
		return g.pick([]string{" [1:x]", " [1]", " 1:2", " [:]"})
	}
}

// restoreLine joins words as a restore file line: words with blanks or
// quotes in double quotes.
func restoreLine(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\"") {
			w = `"` + strings.ReplaceAll(w, `"`, `\"`) + `"`
		}
		out[i] = w
	}
	return strings.Join(out, " ")
}
