package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/spf13/pflag"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/ruleset"
	"github.com/xdptables/xdptables/setengine"
	"github.com/xdptables/xdptables/translate"
	"github.com/xdptables/xdptables/xdp"
	"golang.org/x/sys/unix"
)

const translateUsage = `Usage: xdptables translate [--ipsets FILE] iptables|ip6tables COMMAND...
       xdptables translate [--ipsets FILE] iptables-restore|ip6tables-restore [FILE|-]
       xdptables translate ipset restore [FILE|-]

Prints the nftables script (nft -f syntax) that builds what xdptables would
put in the kernel for the given iptables command, iptables-save file or
ipset restore file: table ip/ip6 xdptables, chains "TABLE.CHAIN", sets
"ipset.NAME". Each rule is preceded by its iptables text and whether XDP
would run it. Rules that need xtables extensions (nft_compat) cannot be
loaded from a script; they are printed commented out.

--ipsets FILE takes the ipset sets that -m set refers to from an ipset
restore file (and prints them) instead of reading them from the kernel.
`

// translateMain is "xdptables translate".
func translateMain(args []string) int {
	fs := pflag.NewFlagSet("translate", pflag.ContinueOnError)
	fs.SetInterspersed(false)
	sets := fs.String("ipsets", "", "ipset restore file that defines the sets -m set uses")
	fs.Usage = func() { fmt.Fprint(os.Stderr, translateUsage) }
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return 2
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	var st *ipset.State
	if *sets != "" {
		var err error
		if st, err = loadIPSets(*sets); err != nil {
			fmt.Fprintf(os.Stderr, "xdptables translate: %s: %v\n", *sets, err)
			return 1
		}
		useIPSets(st)
	}
	f := compat.IPv4
	switch rest[0] {
	case "ipset":
		if len(rest) < 2 || rest[1] != "restore" || len(rest) > 3 {
			fs.Usage()
			return 2
		}
		name := "-"
		if len(rest) == 3 {
			name = rest[2]
		}
		st, err := loadIPSets(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "xdptables translate: %v\n", err)
			return 1
		}
		fmt.Fprintf(w, "# xdptables translate ipset restore %s\n", name)
		writeSets(w, st, "")
		return 0
	case "ip6tables", "ip6tables-restore":
		f = compat.IPv6
	case "iptables", "iptables-restore":
	default:
		fmt.Fprintf(os.Stderr, "xdptables translate: unknown input %q\n", rest[0])
		fs.Usage()
		return 2
	}
	// The rules go first into a buffer: the sets before them include
	// the nomatch sets they look up (--return-nomatch).
	var rules bytes.Buffer
	rw := bufio.NewWriter(&rules)
	var rc int
	if strings.HasSuffix(rest[0], "-restore") {
		rc = translateRestore(rw, f, rest[0], rest[1:])
	} else {
		rc = translateCommand(rw, f, rest[0], rest[1:])
	}
	rw.Flush()
	if st != nil {
		writeSets(w, st, rules.String())
	}
	w.Write(rules.Bytes())
	if rc == 0 && untranslated > 0 {
		rc = 1
	}
	return rc
}

// loadIPSets runs an ipset restore file against an empty state.
func loadIPSets(name string) (*ipset.State, error) {
	in := io.Reader(os.Stdin)
	if name != "-" {
		fh, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		in = fh
	}
	text, err := io.ReadAll(in)
	if err != nil {
		return nil, err
	}
	cmds, perr := ipset.ParseRestore(string(text))
	if perr != nil {
		return nil, fmt.Errorf("%s", strings.TrimSpace(ipset.Format(perr)))
	}
	st := &ipset.State{}
	for _, c := range cmds {
		if _, e := st.Exec(c); e != nil {
			e.Line = c.Line
			return nil, fmt.Errorf("%s", strings.TrimSpace(ipset.Format(e)))
		}
	}
	for _, s := range st.Sets {
		if err := s.Supported(); err != nil {
			return nil, fmt.Errorf("set %s: %v", s.Name, err)
		}
	}
	return st, nil
}

// useIPSets makes -m set look sets up in st instead of the kernel.
func useIPSets(st *ipset.State) {
	compat.LookupIPSet = func(name string) (compat.SetInfo, bool) {
		s := st.Find(name)
		if s == nil {
			return compat.SetInfo{}, false
		}
		return setengine.SetInfo(name, s, st.Find), true
	}
}

func nftFamily(f compat.Family) string {
	if f == compat.IPv6 {
		return "ip6"
	}
	return "ip"
}

// tchain is a chain of the translated ruleset, in creation order.
type tchain struct {
	table, name string
	builtin     bool
	policy      string
	rules       []*compat.Rule
}

func translateRestore(w *bufio.Writer, f compat.Family, prog string, args []string) int {
	name := "-"
	if len(args) > 1 {
		fmt.Fprint(os.Stderr, translateUsage)
		return 2
	}
	if len(args) == 1 {
		name = args[0]
	}
	in := io.Reader(os.Stdin)
	if name != "-" {
		fh, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "Can't open %s: %s\n", name, errnoText(err))
			return 1
		}
		defer fh.Close()
		in = fh
	}
	tables, err := compat.ParseRestore(in, compat.RestoreOptions{Family: f, Prog: prog, Warn: warnStderr, Resolve: resolveHost})
	if err != nil {
		fmt.Fprint(os.Stderr, compat.FormatRestore(err, prog))
		return compat.StatusOfRestore(err)
	}
	chains, err := simulateRestore(f, tables)
	if err != nil {
		fmt.Fprint(os.Stderr, compat.FormatRestore(err, prog))
		return compat.StatusOfRestore(err)
	}
	fmt.Fprintf(w, "# xdptables translate %s %s\n", prog, name)
	if err := writeRuleset(w, f, chains); err != nil {
		fmt.Fprintf(os.Stderr, "xdptables translate: %v\n", err)
		return 1
	}
	return 0
}

// simulateRestore applies the sections of a restore file to empty views,
// as xdptables' restore does against an empty kernel, and returns the
// chains in the order the kernel gets them.
func simulateRestore(f compat.Family, tables []*compat.RestoreTable) ([]*tchain, error) {
	views := map[string]*ruleset.View{}
	orders := map[string]*chainOrder{}
	policies := map[string]map[string]string{}
	for _, t := range tables {
		v := views[t.Name]
		if v == nil {
			v = ruleset.NewView(f, t.Name)
			v.Complete = true
			views[t.Name], policies[t.Name] = v, map[string]string{}
			orders[t.Name] = &chainOrder{seen: map[string]bool{}}
		}
		note := func() { orders[t.Name].note(v) }
		for _, d := range t.Chains {
			if compat.IsBuiltin(t.Name, d.Name) {
				if d.Policy == "-" {
					d.Policy = compat.VerdictAccept // ":INPUT -" declares the built-in chain
				}
				if d.Policy != compat.VerdictAccept && d.Policy != compat.VerdictDrop {
					return nil, &compat.RestoreError{Line: d.Line, Err: compat.ErrBadPolicy}
				}
				if v.Chains[d.Name] == nil {
					v.AddChain(&ruleset.ChainState{Name: d.Name, Builtin: true, Policy: d.Policy, Loaded: true})
				}
				v.Chains[d.Name].Policy = d.Policy
				policies[t.Name][d.Name] = d.Policy
			} else if v.Chains[d.Name] == nil {
				v.AddChain(&ruleset.ChainState{Name: d.Name, Loaded: true})
			}
			note()
		}
		for _, rc := range t.Cmds {
			v.Line = rc.Line
			if err := v.Apply(rc.Cmd); err != nil {
				var ke *ruleset.KernelError
				if ok := asKernelError(err, &ke); ok {
					return nil, &compat.RestoreError{Line: rc.Line, Err: ke.AsCompat()}
				}
				if j := rc.Cmd.JumpChain; j != "" && v.Chains[j] == nil {
					// restore checks jumps at COMMIT
					return nil, &compat.RestoreError{Line: t.CommitLine, Err: err}
				}
				return nil, &compat.RestoreError{Line: rc.Line, Err: err}
			}
			note()
		}
	}
	var out []*tchain
	for _, tn := range compat.Tables {
		v := views[tn]
		if v == nil {
			continue
		}
		live := map[string]*ruleset.ChainState{}
		for _, c := range v.Sorted() {
			live[c.Name] = c
		}
		for _, n := range orders[tn].names {
			c := v.Chains[n]
			if c == nil || live[n] != c {
				continue // deleted, or a built-in never materialized
			}
			tc := &tchain{table: tn, name: n, builtin: c.Builtin, policy: c.Policy}
			if p, ok := policies[tn][n]; ok {
				tc.policy = p
			}
			for _, r := range c.Rules {
				tc.rules = append(tc.rules, r.Rule)
			}
			out = append(out, tc)
		}
	}
	return out, nil
}

// chainOrder records the order in which chains first appear in a view,
// as the kernel creates them: the chains new since the last note go in
// byte order. It looks only at the names that entered the view since the
// last note, so that noting after every command of a restore file stays
// linear in the number of chains.
type chainOrder struct {
	names []string
	seen  map[string]bool
	read  int // how many of the view's ChainNames were looked at
}

func (o *chainOrder) note(v *ruleset.View) {
	all := v.ChainNames()
	var added []string
	for _, n := range all[o.read:] {
		if _, ok := v.Chains[n]; ok && !o.seen[n] {
			o.seen[n] = true
			added = append(added, n)
		}
	}
	o.read = len(all)
	sort.Strings(added)
	o.names = append(o.names, added...)
}

func asKernelError(err error, ke **ruleset.KernelError) bool {
	k, ok := err.(*ruleset.KernelError)
	if ok {
		*ke = k
	}
	return ok
}

// xdpNotes says for each raw PREROUTING rule whether XDP runs it.
func xdpNotes(f compat.Family, chains []*tchain) map[*compat.Rule]string {
	notes := map[*compat.Rule]string{}
	var pre []*compat.Rule
	for _, c := range chains {
		if c.table == "raw" && c.name == "PREROUTING" {
			pre = c.rules
		}
	}
	if len(pre) == 0 {
		return notes
	}
	var cl *xdp.Classifier
	var err error
	if f == compat.IPv6 {
		cl, err = xdp.Compile(nil, pre, nil)
	} else {
		cl, err = xdp.Compile(pre, nil, nil)
	}
	if err != nil {
		for _, r := range pre {
			notes[r] = "XDP: no (" + err.Error() + ")"
		}
		return notes
	}
	run, stop := cl.Run4, cl.Stop4
	if f == compat.IPv6 {
		run, stop = cl.Run6, cl.Stop6
	}
	for i, r := range pre {
		switch {
		case i < run:
			notes[r] = fmt.Sprintf("XDP: yes (raw PREROUTING rule %d of the XDP run of %d)", i+1, run)
		case stop != nil && i == stop.Pos:
			notes[r] = fmt.Sprintf("XDP: no, this rule ends the XDP run: %s", stop.Reason)
		default:
			notes[r] = fmt.Sprintf("XDP: no (after the XDP run, which rule %d ended)", run+1)
		}
	}
	return notes
}

// writeRuleset prints the table with its chains (declared first, in the
// kernel's creation order) and then their rules.
func writeRuleset(w *bufio.Writer, f compat.Family, chains []*tchain) error {
	fam := nftFamily(f)
	notes := xdpNotes(f, chains)
	mirrors, err := ctHelperMirrors(f, chains)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "table %s %s {\n", fam, kernel.TableName)
	for _, m := range mirrors {
		for _, o := range m.objs {
			if err := writeCTHelperObj(w, f, o); err != nil {
				return err
			}
		}
	}
	marked := map[string]bool{}
	for _, c := range chains {
		if !marked[c.table] {
			marked[c.table] = true
			fmt.Fprintf(w, "\tchain %s {\n\t}\n", quoteNft(c.table))
		}
		fmt.Fprintf(w, "\tchain %s {\n", quoteNft(translate.ChainName(c.table, c.name)))
		if c.builtin {
			base, _ := kernel.BuiltinChain(c.table, c.name)
			pol := "accept"
			if c.policy == compat.VerdictDrop {
				pol = "drop"
			}
			fmt.Fprintf(w, "\t\ttype %s hook %s priority %d; policy %s;\n", base.Type, base.Hook, base.Priority, pol)
		}
		fmt.Fprintf(w, "\t}\n")
	}
	for _, m := range mirrors {
		fmt.Fprintf(w, "\tchain %s {\n", quoteNft(translate.CTHelperChain(m.chain)))
		fmt.Fprintf(w, "\t\ttype filter hook %s priority %d; policy accept;\n", strings.ToLower(m.chain), translate.CTHelperPriority)
		fmt.Fprintf(w, "\t}\n")
		for _, cp := range m.copies {
			fmt.Fprintf(w, "\tchain %s {\n\t}\n", quoteNft(cp.Name))
		}
	}
	fmt.Fprintf(w, "}\n")
	// the rules come after every chain exists, so that jumps to chains
	// declared later load
	opened := false
	for _, c := range chains {
		if len(c.rules) == 0 {
			continue
		}
		if !opened {
			fmt.Fprintf(w, "table %s %s {\n", fam, kernel.TableName)
			opened = true
		}
		fmt.Fprintf(w, "\tchain %s {\n", quoteNft(translate.ChainName(c.table, c.name)))
		for _, r := range c.rules {
			if err := writeRule(w, "\t\t", c.table, c.name, r, notes[r]); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "\t}\n")
	}
	for _, m := range mirrors {
		if !opened {
			fmt.Fprintf(w, "table %s %s {\n", fam, kernel.TableName)
			opened = true
		}
		chains := append([]translate.CTMirrorChain{{Name: translate.CTHelperChain(m.chain), Rules: m.rules}}, m.copies...)
		for i, mc := range chains {
			from := m.chain
			if i > 0 {
				from = strings.TrimPrefix(mc.Name, translate.CTHelperChain(m.chain)+"/")
			}
			fmt.Fprintf(w, "\tchain %s {\n", quoteNft(mc.Name))
			for _, r := range mc.Rules {
				comments := []string{"helpers of raw " + m.chain + " after conntrack (CT --helper)"}
				if r.From != nil {
					comments[0] = "-A " + from + " " + strings.TrimSpace(compat.ExactSpec(r.From)) + ", after conntrack"
				}
				st, err := translate.NftSyntax(f, r.Exprs)
				if err != nil {
					return fmt.Errorf("%s: %w", comments[0], err)
				}
				text, comments := statementText(&compat.Rule{}, st, comments)
				for _, c := range comments {
					fmt.Fprintf(w, "\t\t# %s\n", strings.ReplaceAll(c, "\n", " "))
				}
				fmt.Fprintf(w, "\t\t%s\n", text)
			}
			fmt.Fprintf(w, "\t}\n")
		}
	}
	if opened {
		fmt.Fprintf(w, "}\n")
	}
	return nil
}

// ctMirror is the chain that assigns the helpers of the CT --helper rules
// of a built-in raw chain after conntrack, as xdptables' restore writes it
// (translate.CTHelperMirror), with the helper objects it uses.
type ctMirror struct {
	chain  string
	rules  []translate.CTMirrorRule
	copies []translate.CTMirrorChain
	objs   []translate.CTHelperObj
}

func ctHelperMirrors(f compat.Family, chains []*tchain) ([]ctMirror, error) {
	user := map[string][]*compat.Rule{}
	for _, c := range chains {
		if c.table == "raw" && !c.builtin {
			user[c.name] = c.rules
		}
	}
	var out []ctMirror
	for _, c := range chains {
		if c.table != "raw" || !c.builtin {
			continue
		}
		rules, copies, objs, err := translate.CTHelperMirrorTable(f, c.name, c.rules, user)
		if err != nil {
			return nil, err
		}
		if len(rules) > 0 {
			out = append(out, ctMirror{chain: c.name, rules: rules, copies: copies, objs: objs})
		}
	}
	return out, nil
}

// writeCTHelperObj declares a ct helper object for the family's table.
func writeCTHelperObj(w *bufio.Writer, f compat.Family, o translate.CTHelperObj) error {
	var proto string
	switch o.Proto {
	case unix.IPPROTO_TCP:
		proto = "tcp"
	case unix.IPPROTO_UDP:
		proto = "udp"
	default:
		// the kernel has no helper without one (restore fails: ENOENT)
		return fmt.Errorf("CT --helper %s: no helper for protocol %d", o.Helper, o.Proto)
	}
	l3 := "ip"
	if f == compat.IPv6 {
		l3 = "ip6"
	}
	fmt.Fprintf(w, "\tct helper %s {\n\t\ttype %q protocol %s\n\t\tl3proto %s\n\t}\n", quoteNft(o.Name()), o.Helper, proto, l3)
	return nil
}

// ruleText renders one rule; text is empty when it has no nft form.
func ruleText(table, chain string, r *compat.Rule) (text string, comments []string) {
	comments = append(comments, "-A "+chain+" "+strings.TrimSpace(compat.ExactSpec(r)))
	es, err := translate.ExprsIn(table, chain, r)
	if err == nil {
		var st translate.NftStatement
		if st, err = translate.NftSyntax(r.Family, es); err == nil {
			return statementText(r, st, comments)
		}
	}
	untranslated++
	fmt.Fprintf(os.Stderr, "xdptables translate: rule not translated: %s: %v\n", comments[0], err)
	return "", append(comments, "not translated: "+err.Error())
}

// untranslated counts the rules that have no nft form; translate then
// exits with status 1 after printing the rest.
var untranslated int

func statementText(r *compat.Rule, st translate.NftStatement, comments []string) (text string, _ []string) {
	for _, n := range st.Notes {
		comments = append(comments, "note: "+n)
	}
	text = st.Text
	if c, ok := nftComment(ruleComment(r)); ok {
		text += " comment " + c
	}
	if len(st.Compat) > 0 {
		comments = append(comments, "uses xtables extensions ("+strings.Join(st.Compat, ", ")+
			"), which nft cannot load from a script: left commented out")
		return "# " + text, comments
	}
	return text, comments
}

// nftComment quotes a comment for nft, whose quoted strings take every
// character but the quote itself, with no escapes: a comment with a
// double quote or a newline cannot be written and is left out (ok false,
// as for an empty one).
func nftComment(s string) (string, bool) {
	if s == "" || strings.ContainsAny(s, "\"\n") {
		return "", false
	}
	return `"` + s + `"`, true
}

// ruleComment is the text of the rule's first -m comment, when nft can
// carry it (at most 128 bytes).
func ruleComment(r *compat.Rule) string {
	for _, m := range r.Matches {
		if c, ok := m.(*compat.CommentMatch); ok && len(c.Text) <= 128 {
			return c.Text
		}
	}
	return ""
}

func writeRule(w *bufio.Writer, indent, table, chain string, r *compat.Rule, xdpNote string) error {
	text, comments := ruleText(table, chain, r)
	if xdpNote == "" {
		xdpNote = "XDP: no (only raw PREROUTING runs in XDP)"
	}
	comments = append(comments, xdpNote)
	for _, c := range comments {
		fmt.Fprintf(w, "%s# %s\n", indent, strings.ReplaceAll(c, "\n", " "))
	}
	if text == "" {
		return nil
	}
	fmt.Fprintf(w, "%s%s\n", indent, text)
	return nil
}

// translateCommand translates one iptables command: chain and policy
// commands and rules appended or inserted.
func translateCommand(w *bufio.Writer, f compat.Family, prog string, args []string) int {
	cmd, err := compat.Parse(f, args, compat.ParseOptions{Warn: warnStderr, Resolve: resolveHost, Prog: prog})
	if err != nil {
		fmt.Fprint(os.Stderr, compat.Format(err, prog, -1))
		return compat.StatusOf(err)
	}
	table := cmd.Table
	if table == "" {
		table = "filter"
	}
	fam := nftFamily(f)
	chain := translate.ChainName(table, cmd.Chain)
	fmt.Fprintf(w, "# xdptables translate %s %s\n", prog, strings.Join(args, " "))
	fmt.Fprintf(w, "add table %s %s\n", fam, kernel.TableName)
	fmt.Fprintf(w, "add chain %s %s %s\n", fam, kernel.TableName, quoteNft(table))
	declare := func(pol string) {
		if base, ok := kernel.BuiltinChain(table, cmd.Chain); ok {
			p := ""
			if pol != "" {
				p = " policy " + strings.ToLower(pol) + ";"
			}
			fmt.Fprintf(w, "add chain %s %s %s { type %s hook %s priority %d;%s }\n", fam, kernel.TableName, quoteNft(chain), base.Type, base.Hook, base.Priority, p)
		} else {
			fmt.Fprintf(w, "add chain %s %s %s\n", fam, kernel.TableName, quoteNft(chain))
		}
	}
	switch cmd.Op {
	case compat.OpNewChain:
		declare("")
	case compat.OpPolicy:
		declare(cmd.Policy)
	case compat.OpAppend, compat.OpInsert:
		declare("")
		var notes map[*compat.Rule]string
		if table == "raw" && cmd.Chain == "PREROUTING" {
			notes = xdpNotes(f, []*tchain{{table: table, name: cmd.Chain, rules: cmd.Rules}})
			for _, r := range cmd.Rules {
				if n := notes[r]; strings.HasPrefix(n, "XDP: yes") {
					notes[r] = "XDP: yes, when it is in the leading run of raw PREROUTING rules XDP can evaluate"
				}
			}
		}
		for i, r := range cmd.Rules {
			text, comments := ruleText(table, cmd.Chain, r)
			if cmd.Op == compat.OpInsert {
				comments[0] = "-I" + strings.TrimPrefix(comments[0], "-A")
			}
			note := notes[r]
			if note == "" {
				note = "XDP: no (only raw PREROUTING runs in XDP)"
			}
			for _, c := range append(comments, note) {
				fmt.Fprintf(w, "# %s\n", strings.ReplaceAll(c, "\n", " "))
			}
			if text == "" {
				continue
			}
			verb, where := "add", ""
			if cmd.Op == compat.OpInsert {
				verb = "insert"
				if cmd.RuleNum > 1 {
					where = fmt.Sprintf(" index %d", cmd.RuleNum-1+i)
				} else if i > 0 {
					verb, where = "add", fmt.Sprintf(" index %d", i-1)
				}
			}
			prefix := ""
			if strings.HasPrefix(text, "# ") {
				prefix, text = "# ", text[2:]
			}
			fmt.Fprintf(w, "%s%s rule %s %s %s%s %s\n", prefix, verb, fam, kernel.TableName, quoteNft(chain), where, text)
		}
	default:
		fmt.Fprintf(os.Stderr, "xdptables translate: only -A, -I, -N and -P commands translate\n")
		return 2
	}
	return 0
}

// quoteNft quotes a chain or set name for nft when needed.
func quoteNft(s string) string {
	if s == "" {
		return `""`
	}
	c := s[0]
	ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == '/'
	}
	if ok {
		return s
	}
	return strconv.Quote(s)
}

// writeSets prints the nftables sets that hold the ipset sets of st, in
// the tables of their families. rules is the text of the rules that
// follow: the nomatch set of a net type is printed when it has nomatch
// entries or a rule looks it up (--return-nomatch), as the kernel holds
// it.
func writeSets(w *bufio.Writer, st *ipset.State, rules string) {
	for _, fam := range []ipset.Family{ipset.Inet, ipset.Inet6} {
		var sets []*ipset.Set
		for _, s := range st.Sets {
			if s.Family == fam || (fam == ipset.Inet && s.Family != ipset.Inet6) {
				sets = append(sets, s)
			}
		}
		if len(sets) == 0 {
			continue
		}
		tf := "ip"
		if fam == ipset.Inet6 {
			tf = "ip6"
		}
		fmt.Fprintf(w, "table %s %s {\n", tf, kernel.TableName)
		for _, s := range sets {
			for _, ns := range s.NftSets() {
				if ns.Lazy && len(ns.Elems) == 0 {
					continue // (a shard is made with its first element)
				}
				writeSet(w, ns)
			}
			if s.Type.Net() && (s.HasNomatch() || looksUp(rules, ipset.NomatchSetName(s.Name))) {
				writeSet(w, s.Nomatch(true))
			}
		}
		fmt.Fprintf(w, "}\n")
	}
}

// looksUp reports whether the nft text of rules looks up set name.
func looksUp(rules, name string) bool {
	at := "@" + quoteNft(name)
	for i := strings.Index(rules, at); i >= 0; {
		rest := rules[i+len(at):]
		if rest == "" || strings.ContainsAny(rest[:1], " \t\n;}") {
			return true
		}
		j := strings.Index(rest, at)
		if j < 0 {
			break
		}
		i += len(at) + j
	}
	return false
}

// nftDuration writes d in nft's time syntax (49d17h2m47s295ms).
func nftDuration(d time.Duration) string {
	var b strings.Builder
	for _, u := range []struct {
		unit string
		d    time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.unit)
			d -= n * u.d
		}
	}
	if b.Len() == 0 {
		return "0s"
	}
	return b.String()
}

func writeSet(w *bufio.Writer, ns ipset.NftSet) {
	s := ns.Set
	fmt.Fprintf(w, "\tset %s {\n", quoteNft(s.Name))
	fmt.Fprintf(w, "\t\ttype %s\n", s.KeyType.Name)
	var flags []string
	if s.Interval {
		flags = append(flags, "interval")
	}
	longGC := ipset.LongGC(s) // as setengine creates it (kernel.Batch.AddSetLongGC)
	if s.HasTimeout || longGC {
		flags = append(flags, "timeout")
	}
	if len(flags) > 0 {
		fmt.Fprintf(w, "\t\tflags %s\n", strings.Join(flags, ","))
	}
	if longGC {
		fmt.Fprintf(w, "\t\tgc-interval %s\n", nftDuration(kernel.MaxGCInterval))
	}
	if s.Size > 0 {
		fmt.Fprintf(w, "\t\tsize %d\n", s.Size)
	}
	if s.Counter {
		fmt.Fprintf(w, "\t\tcounter\n")
	}
	if c, ok := nftComment(s.Comment); ok {
		fmt.Fprintf(w, "\t\tcomment %s\n", c)
	}
	types := strings.Split(s.KeyType.Name, " . ")
	var elems []string
	for _, e := range ns.Elems {
		if t := elemText(types, s.Interval, e.Parts); t != "" {
			elems = append(elems, t)
		}
	}
	if len(elems) > 0 {
		fmt.Fprintf(w, "\t\telements = {\n\t\t\t%s\n\t\t}\n", strings.Join(elems, ",\n\t\t\t"))
	}
	fmt.Fprintf(w, "\t}\n")
}

// elemText prints one logical element: a key, or an interval (a start
// and an end element, or a start with KeyEnd for concatenations).
func elemText(types []string, interval bool, parts []nftables.SetElement) string {
	start := parts[0]
	var key string
	switch {
	case start.KeyEnd != nil:
		key = keyText(types, start.Key, start.KeyEnd)
	case interval:
		hi := lastKey(len(start.Key))
		if len(parts) > 1 {
			hi = prevKey(parts[1].Key)
		}
		key = keyText(types, start.Key, hi)
	default:
		key = keyText(types, start.Key, nil)
	}
	if start.Timeout > 0 {
		key += fmt.Sprintf(" timeout %ds", int(start.Timeout/time.Second))
	}
	if c, ok := nftComment(start.Comment); ok {
		key += " comment " + c
	}
	return key
}

func lastKey(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xff
	}
	return b
}

func prevKey(k []byte) []byte {
	b := append([]byte(nil), k...)
	for i := len(b) - 1; i >= 0; i-- {
		b[i]--
		if b[i] != 0xff {
			break
		}
	}
	return b
}

// keyText prints a key of the (concatenated) types; with hi, each field
// that differs prints as a range.
func keyText(types []string, lo, hi []byte) string {
	var fields []string
	for _, t := range types {
		n := typeLen(t)
		step := (n + 3) &^ 3
		if len(types) == 1 {
			step = n
		}
		if len(lo) < n {
			break
		}
		a := fieldText(t, lo[:n])
		if hi != nil && len(hi) >= n && string(hi[:n]) != string(lo[:n]) {
			if p, ok := namePrefix(t, lo[:n], hi[:n]); ok {
				// (the one range of names nft's syntax writes)
				a = strconv.Quote(p + "*")
			} else {
				a += "-" + fieldText(t, hi[:n])
			}
		}
		fields = append(fields, a)
		if len(lo) >= step {
			lo = lo[step:]
		} else {
			lo = nil
		}
		if hi != nil {
			if len(hi) >= step {
				hi = hi[step:]
			} else {
				hi = nil
			}
		}
	}
	return strings.Join(fields, " . ")
}

// namePrefix reports whether lo-hi of type ifname is every name that
// starts with p (p padded with 0x00 to p padded with 0xff), which nft
// writes "p*" (a wildcard entry of a hash:net,iface).
func namePrefix(t string, lo, hi []byte) (p string, ok bool) {
	if t != "ifname" {
		return "", false
	}
	k := len(bytes.TrimRight(lo, "\x00"))
	if k == 0 || !bytes.Equal(lo[:k], hi[:k]) || len(bytes.Trim(hi[k:], "\xff")) != 0 {
		return "", false
	}
	return string(lo[:k]), true
}

func typeLen(t string) int {
	switch t {
	case "ipv4_addr", "mark":
		return 4
	case "ipv6_addr", "ifname":
		return 16
	case "inet_proto":
		return 1
	case "inet_service":
		return 2
	case "ether_addr":
		return 6
	}
	return 4
}

func fieldText(t string, b []byte) string {
	switch t {
	case "ipv4_addr", "ipv6_addr":
		a, _ := netip.AddrFromSlice(b)
		return a.String()
	case "inet_proto":
		return strconv.Itoa(int(b[0]))
	case "inet_service":
		return strconv.Itoa(int(binary.BigEndian.Uint16(b)))
	case "ifname":
		return strconv.Quote(strings.TrimRight(string(b), "\x00"))
	case "ether_addr":
		var p []string
		for _, x := range b {
			p = append(p, fmt.Sprintf("%02x", x))
		}
		return strings.Join(p, ":")
	case "mark":
		return fmt.Sprintf("0x%08x", binary.NativeEndian.Uint32(b))
	}
	return fmt.Sprintf("0x%x", b)
}
