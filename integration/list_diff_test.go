package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/translate"
)

// TestListDiff loads every rule of the corpus (the -N/-A/-I lines the
// reference accepts) and every realworld restore file into one namespace
// with the reference tools and into another with ours, with counters of
// many sizes, and compares the listings of every table they touched, for
// both families: -L -n, -L -n -v -x --line-numbers, -L -n -v, and
// without -n -L and -L -v --line-numbers; -L of single chains and of a
// rule; -S -v. Name lookups of addresses fail fast (the namespaces have
// no route to the name server), so without -n both tools print the
// documentation addresses numerically, and names come from /etc/hosts,
// /etc/networks, /etc/services and /etc/protocols.
// XDPT_LISTDIFF_DUMP=DIR writes both tools' -S of a table that lists
// differently to DIR.

// listCounters are the [packets:bytes] given to rule after rule, so that
// every K/M/G/T rounding path of -L -v runs.
var listCounters = [][2]uint64{
	{0, 0}, {1, 60}, {99999, 99999}, {100000, 100000}, {999999, 1500000},
	{12345678, 987654321}, {4294967296, 1099511627776}, {7, 123456789012345},
	{100000000000, 99999999999999}, {18446744073709551615, 18446744073709551615},
}

var listLineRe = regexp.MustCompile(`line:? (\d+)`)

// listEntry is one restore line of a corpus rule.
type listEntry struct {
	table, text string
}

func TestListDiff(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") {
		t.Fatal("reference iptables-nft is not installed")
	}
	corpus, _ := filepath.Glob("../testdata/corpus/*.txt")
	rw, _ := filepath.Glob("../testdata/realworld/*.rules*")
	if len(corpus) == 0 || len(rw) == 0 {
		t.Fatal("no corpus or realworld files")
	}
	for _, file := range corpus {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			listDiffCorpus(t, file)
		})
	}
	for _, file := range rw {
		t.Run(filepath.Base(file), func(t *testing.T) {
			listDiffRestore(t, file)
		})
	}
}

type listPair struct {
	t         *testing.T
	dir       string
	ref, ours *netns.NS
}

func newListPair(t *testing.T) *listPair {
	return &listPair{t: t, dir: LinkDir(t), ref: netns.New(t, "lref"), ours: netns.New(t, "lour")}
}

func (p *listPair) both(args ...string) {
	if r := p.ref.Run("", args...); r.RC != 0 {
		p.t.Fatalf("reference %v: %s", args, r.Stderr)
	}
	if r := p.ours.Run("", append([]string{filepath.Join(p.dir, args[0])}, args[1:]...)...); r.RC != 0 {
		p.t.Fatalf("ours %v: %s", args, r.Stderr)
	}
}

func listDiffCorpus(t *testing.T, file string) {
	lines, err := ReadCorpus(file)
	if err != nil {
		t.Fatal(err)
	}
	goldens, _ := ReadGolden(strings.TrimSuffix(file, ".txt") + ".golden.jsonl")
	rc := map[int]int{}
	for _, g := range goldens {
		rc[g.Line] = g.RC
	}
	p := newListPair(t)
	entries := map[compat.Family][]listEntry{}
	newChains := map[string]bool{}
	n := 0
	for _, l := range lines {
		if l.Tool == "ipset" {
			p.both(append([]string{"ipset"}, l.Args...)...)
			continue
		}
		if r, ok := rc[l.Line]; ok && r != 0 {
			continue
		}
		fam := compat.IPv4
		if l.Tool == "ip6tables" {
			fam = compat.IPv6
		}
		cmd, err := compat.Parse(fam, l.Args, compat.ParseOptions{})
		if err != nil {
			continue
		}
		switch cmd.Op {
		case compat.OpNewChain:
			key := fmt.Sprint(fam, cmd.Table, cmd.Chain)
			if newChains[key] {
				continue
			}
			newChains[key] = true
		case compat.OpAppend, compat.OpInsert:
			if !translatable(cmd) {
				continue
			}
		default:
			continue
		}
		text, counted := restoreWords(l.Args)
		// iptables-nft 1.8.9 drops the counters of IPv6 rules (restore
		// [p:b], -c): IPv4 rules run the -v rounding paths
		if !counted && cmd.Op != compat.OpNewChain && fam == compat.IPv4 {
			c := listCounters[n%len(listCounters)]
			n++
			text = fmt.Sprintf("[%d:%d] %s", c[0], c[1], text)
		}
		entries[fam] = append(entries[fam], listEntry{cmd.Table, text})
	}
	for _, fam := range []compat.Family{compat.IPv4, compat.IPv6} {
		es := entries[fam]
		tables := map[string]bool{}
		loaded := 0
		for len(es) > 0 {
			k := min(len(es), 200)
			chunk := p.loadChunk(fam, es[:k])
			loaded += len(chunk)
			for _, e := range chunk {
				tables[e.table] = true
			}
			es = es[k:]
		}
		p.t.Logf("%s: %d of %d lines loaded", fam.Prog(), loaded, len(entries[fam]))
		p.compareLists(fam, tables)
	}
}

// loadChunk restores es into ours, dropping the lines we refuse (they
// depend on state the corpus changed later, or are options we refuse
// with a message, like -m set --return-nomatch), then the rest into
// the reference, which must take all of them; it returns what was
// loaded.
func (p *listPair) loadChunk(fam compat.Family, es []listEntry) []listEntry {
	prog := "iptables"
	if fam == compat.IPv6 {
		prog = "ip6tables"
	}
	for tries := 0; len(es) > 0; tries++ {
		input, lineOf := restoreInput(es)
		r := p.ours.Run(input, filepath.Join(p.dir, prog+"-nft-restore"), "--noflush", "-c")
		if r.RC == 0 {
			break
		}
		m := listLineRe.FindStringSubmatch(r.Stderr)
		if m == nil || tries > 100 {
			p.t.Fatalf("our restore failed: %s", r.Stderr)
		}
		ln, _ := strconv.Atoi(m[1])
		i, ok := lineOf[ln]
		if !ok {
			p.t.Fatalf("our restore failed at line %d (not a rule): %s\n%s", ln, r.Stderr, input)
		}
		es = append(es[:i:i], es[i+1:]...)
	}
	if len(es) == 0 {
		return nil
	}
	input, _ := restoreInput(es)
	if r := p.ref.Run(input, prog+"-nft-restore", "--noflush", "-c"); r.RC != 0 {
		p.t.Fatalf("the reference's restore failed where ours did not: %s\n%s", r.Stderr, input)
	}
	return es
}

// translatable leaves out what we refuse on purpose, at commit time
// without a line number: xtables targets the kernel runs only in tables
// of other names, options nftables cannot express. Set lookups need the
// sets, which only the namespace knows: those rules go in and we refuse
// them (with a line number) if we must; -j SET --map-set never has a
// native form.
func translatable(cmd *compat.Command) bool {
	for _, r := range cmd.Rules {
		if translate.IsCTHelper(r) {
			// loadable only with rules of its chain that keep the
			// mirror exact (translate.CTHelperExact), which the corpus
			// does not choose: TestCTHelperCommands compares these
			return false
		}
		if _, err := translate.ExprsIn(cmd.Table, cmd.Chain, r); err != nil {
			st, set := r.Target.(*compat.SetTarget)
			if !strings.Contains(err.Error(), `match "set"`) && !(set && len(st.Map.Dirs) == 0) {
				return false
			}
		}
	}
	return true
}

// restoreInput makes a restore file of es: one section per run of
// lines of the same table. lineOf maps a line number to its entry.
func restoreInput(es []listEntry) (string, map[int]int) {
	var b strings.Builder
	lineOf := map[int]int{}
	ln := 0
	cur := ""
	for i, e := range es {
		if e.table != cur {
			if cur != "" {
				b.WriteString("COMMIT\n")
				ln++
			}
			b.WriteString("*" + e.table + "\n")
			ln++
			cur = e.table
		}
		b.WriteString(e.text + "\n")
		ln++
		lineOf[ln] = i
	}
	b.WriteString("COMMIT\n")
	return b.String(), lineOf
}

// restoreWords turns command-line args into a restore line: without the
// table option, quoted where needed. counted says whether the line sets
// its own counters.
func restoreWords(args []string) (string, bool) {
	var out []string
	counted := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-t" || a == "--table":
			i++
			continue
		case strings.HasPrefix(a, "--table="):
			continue
		case a == "-c" || a == "--set-counters":
			counted = true
		}
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = `"` + strings.ReplaceAll(a, `"`, `\"`) + `"`
		}
		out = append(out, a)
	}
	return strings.Join(out, " "), counted
}

var policyRe = regexp.MustCompile(`^(:\S+ (ACCEPT|DROP)) \[\d+:\d+\]$`)

func listDiffRestore(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fam := compat.IPv4
	prog := "iptables"
	if strings.HasSuffix(file, "6") {
		fam, prog = compat.IPv6, "ip6tables"
	}
	p := newListPair(t)
	// sets the rules look up: a hash type with as many dimensions as
	// the match has flags (three: hash:ip,port,net, kube-proxy's type for
	// its dst,dst,src lookups; kernels may lack hash:net,port,net)
	sets := map[string]int{}
	for _, m := range regexp.MustCompile(`--match-set (\S+) (\S+)`).FindAllStringSubmatch(string(data), -1) {
		sets[m[1]] = strings.Count(m[2], ",") + 1
	}
	names := make([]string, 0, len(sets))
	for s := range sets {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		typ := []string{"hash:net", "hash:net,port", "hash:ip,port,net"}[min(sets[s], 3)-1]
		args := []string{"ipset", "create", s, typ}
		if fam == compat.IPv6 {
			args = append(args, "family", "inet6")
		}
		p.both(args...)
	}
	var b strings.Builder
	tables := map[string]bool{}
	n := 0
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		c := listCounters[n%len(listCounters)]
		switch {
		case strings.HasPrefix(l, "*"):
			tables[l[1:]] = true
		case fam == compat.IPv4 && (strings.HasPrefix(l, "-A ") || strings.HasPrefix(l, "-I ")):
			l = fmt.Sprintf("[%d:%d] %s", c[0], c[1], l)
			n++
		case policyRe.MatchString(l):
			l = fmt.Sprintf("%s [%d:%d]", policyRe.FindStringSubmatch(l)[1], c[0], c[1])
			n++
		}
		b.WriteString(l + "\n")
	}
	input := b.String()
	ra := p.ref.Run(input, prog+"-nft-restore", "-c")
	rb := p.ours.Run(input, filepath.Join(p.dir, prog+"-nft-restore"), "-c")
	switch {
	case ra.RC != 0 && rb.RC != 0:
		// a file the kernel refuses (fail2ban.rules: tcp-reset
		// without -p tcp): nothing to list
		return
	case ra.RC != 0:
		t.Fatalf("reference restore failed, ours did not: %s", ra.Stderr)
	case rb.RC != 0:
		t.Fatalf("our restore failed: %s", rb.Stderr)
	}
	p.compareLists(fam, tables)
}

// compareLists compares the listings of tables in both namespaces.
func (p *listPair) compareLists(fam compat.Family, tables map[string]bool) {
	prog := "iptables"
	if fam == compat.IPv6 {
		prog = "ip6tables"
	}
	var names []string
	for tb := range tables {
		names = append(names, tb)
	}
	sort.Strings(names)
	fails := 0
	for _, tb := range names {
		// the restore path's -S must agree too (the corpus' -S is
		// checked command by command by TestParseDiff); it names the
		// chains listed one by one below: the first built-in (with a
		// rule number) and the first and last user chains, whose
		// reference counts come from another path than in the whole
		// table's listing
		save := p.ref.Run("", prog+"-nft", "-t", tb, "-S", "-v")
		var builtin, users []string
		for _, l := range strings.Split(save.Stdout, "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "-P" && builtin == nil {
				builtin = f[1:2]
			} else if len(f) == 2 && f[0] == "-N" {
				users = append(users, f[1])
			}
		}
		runs := [][]string{
			{"-S", "-v"},
			{"-L", "-n"},
			{"-L", "-n", "-v", "-x", "--line-numbers"},
			{"-L", "-n", "-v"},
			{"-L"},
			{"-L", "-v", "--line-numbers"},
		}
		if builtin != nil {
			runs = append(runs, []string{"-L", builtin[0], "2", "-n", "-v", "--line-numbers"})
		}
		if len(users) > 0 {
			runs = append(runs, []string{"-L", users[0], "-n", "-v"}, []string{"-L", users[len(users)-1]})
		}
		for _, opts := range runs {
			args := append([]string{"-t", tb}, opts...)
			a := save
			if opts[0] != "-S" {
				a = p.ref.Run("", append([]string{prog + "-nft"}, args...)...)
			}
			b := p.ours.Run("", append([]string{filepath.Join(p.dir, prog+"-nft")}, args...)...)
			if a == b {
				continue
			}
			if fails++; fails > 10 {
				return
			}
			p.t.Errorf("%s %s:\n%s", prog, strings.Join(args, " "), describeDiff(a, b))
			if d := os.Getenv("XDPT_LISTDIFF_DUMP"); d != "" {
				_ = os.WriteFile(filepath.Join(d, prog+"-"+tb+".S"), []byte(p.ref.Run("", prog+"-nft", "-t", tb, "-S").Stdout), 0o644)
				_ = os.WriteFile(filepath.Join(d, prog+"-"+tb+".ours.S"), []byte(p.ours.Run("", filepath.Join(p.dir, prog+"-nft"), "-t", tb, "-S").Stdout), 0o644)
			}
		}
	}
}

// describeDiff shows where two results part: rc, stderr and the lines
// of stdout that differ.
func describeDiff(a, b netns.Result) string {
	var s strings.Builder
	if a.RC != b.RC || a.Stderr != b.Stderr {
		fmt.Fprintf(&s, "reference rc %d stderr %q\nours      rc %d stderr %q\n", a.RC, a.Stderr, b.RC, b.Stderr)
	}
	al, bl := strings.Split(a.Stdout, "\n"), strings.Split(b.Stdout, "\n")
	shown := 0
	for i := 0; i < max(len(al), len(bl)) && shown < 15; i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			shown++
			fmt.Fprintf(&s, "line %d\n  ref:  %q\n  ours: %q\n", i+1, x, y)
		}
	}
	return s.String()
}
