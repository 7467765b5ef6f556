package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// The ipset corpus (testdata/ipset/*.txt) is run line by line with the
// reference ipset and with ours, each file in its own pair of fresh
// namespaces; stdout, stderr and exit status of every command must be
// the same, after normalising only what differs by design: initval
// (drawn at random by ipset), Size in memory, remaining timeouts of
// members, and the order of hash-type members (ipset lists a hash in
// bucket order) unless -sorted asks for ipset's order.
//
// A line is an ipset command line (words split as a shell would, with
// '...' and "..." quotes). "@restore ARGS" starts a restore: the lines
// up to "@end" are its input. "@ours LINE" marks a line the reference
// cannot run (set types its kernel lacks, which we support on purpose):
// it is skipped here, and TestIpsetOursOnlyTypes covers those types.
// "@iptables ARGS" runs iptables (iptables-nft for the reference), for
// rules that use sets. "@stdin ARGS" runs ipset ARGS with the lines up
// to "@end" as its input (interactive mode: "@stdin -").
// XDPT_IPSET_CORPUS=path,... runs other files.

type ipsetStep struct {
	line  int
	args  []string
	stdin string
	text  string
	// iptables: the line is an iptables command (rules that use sets).
	iptables bool
}

func parseIpsetCorpus(t *testing.T, path string) []ipsetStep {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var steps []ipsetStep
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t0 := strings.TrimSpace(l)
		if t0 == "" || strings.HasPrefix(t0, "#") || strings.HasPrefix(t0, "@ours") {
			continue
		}
		restore, isRestore := strings.CutPrefix(t0, "@restore")
		stdinArgs, isStdin := strings.CutPrefix(t0, "@stdin ")
		if isRestore || isStdin {
			start := i + 1
			var in strings.Builder
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "@end"; i++ {
				in.WriteString(lines[i] + "\n")
			}
			if i >= len(lines) {
				t.Fatalf("%s:%d: %s without @end", path, start, strings.Fields(t0)[0])
			}
			args := append([]string{"restore"}, shellWords(restore)...)
			text := "restore" + restore + " <<\n" + in.String()
			if isStdin {
				args, text = shellWords(stdinArgs), stdinArgs+" <<\n"+in.String()
			}
			steps = append(steps, ipsetStep{line: start, args: args, stdin: in.String(), text: text})
			continue
		}
		if rest, ok := strings.CutPrefix(t0, "@iptables "); ok {
			steps = append(steps, ipsetStep{line: i + 1, args: shellWords(rest), text: t0, iptables: true})
			continue
		}
		steps = append(steps, ipsetStep{line: i + 1, args: shellWords(t0), text: t0})
	}
	return steps
}

// shellWords splits s on blanks, honouring single and double quotes.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	have := false
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0 && c == q:
			q = 0
		case q != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			q, have = c, true
		case c == ' ' || c == '\t':
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

var (
	ipsInitval   = regexp.MustCompile(`initval( |>)0x[0-9a-f]+`)
	ipsMem       = regexp.MustCompile(`Size in memory: \d+|<memsize>\d+</memsize>`)
	ipsTimeout   = regexp.MustCompile(`timeout [1-9]\d*|<timeout>[1-9]\d*</timeout>`)
	ipsSaveType  = regexp.MustCompile(`^create \S+ (\S+)`)
	ipsPlainType = regexp.MustCompile(`^Type: (\S+)`)
	ipsXMLType   = regexp.MustCompile(`^<type>(\S+)</type>`)
)

// normIpsetSorted is normIpsetOutput for -sorted output: members keep
// their order.
func normIpsetSorted(s string) string { return normIpsetCorpus(s, false, nil) }

// normIpsetOutput applies the corpus normalisation to list/save output.
func normIpsetOutput(s string) string { return normIpsetCorpus(s, true, nil) }

// normIpsetCorpus normalises s; a set whose initval is one of fixed
// keeps its initval and Size in memory.
func normIpsetCorpus(s string, sortHash bool, fixed []string) string {
	lines := strings.Split(s, "\n")
	typ := ""
	var out, run []string
	flush := func() {
		if sortHash && strings.HasPrefix(typ, "hash:") {
			sort.Strings(run)
		}
		out = append(out, run...)
		run = nil
	}
	inMembers := false
	keep := false // the set's initval is one of fixed
	for _, l := range lines {
		if strings.HasPrefix(l, "Name: ") || strings.HasPrefix(l, "create ") || strings.HasPrefix(l, "<ipset ") {
			keep = false
		}
		if m := ipsInitval.FindString(l); m != "" && slices.Contains(fixed, m[len("initval "):]) {
			keep = true
		}
		if !keep {
			l = ipsInitval.ReplaceAllString(l, "initval${1}X")
			l = ipsMem.ReplaceAllStringFunc(l, func(m string) string {
				if strings.HasPrefix(m, "<") {
					return "<memsize>N</memsize>"
				}
				return "Size in memory: N"
			})
		}
		member := false
		switch {
		case strings.HasPrefix(l, "add "):
			member = true
		case inMembers && l != "" && l != "</members>" && l != "Members:" && l != "<members>" && l != "</ipset>":
			// (save -terse: the members follow the header without
			// their heading)
			member = true
		}
		if member {
			l = ipsTimeout.ReplaceAllStringFunc(l, func(m string) string {
				if strings.HasPrefix(m, "<") {
					return "<timeout>T</timeout>"
				}
				return "timeout T"
			})
			run = append(run, l)
			continue
		}
		flush()
		inMembers = false
		if m := ipsSaveType.FindStringSubmatch(l); m != nil {
			typ = m[1]
		} else if m := ipsPlainType.FindStringSubmatch(l); m != nil {
			typ = m[1]
		} else if m := ipsXMLType.FindStringSubmatch(l); m != nil {
			typ = m[1]
		}
		if l == "Members:" || l == "<members>" || strings.HasPrefix(l, "Number of entries: ") || l == "</header>" {
			inMembers = true
		}
		out = append(out, l)
	}
	flush()
	return strings.Join(out, "\n")
}

func TestIpsetCorpus(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	files, _ := filepath.Glob("../testdata/ipset/*.txt")
	if env := os.Getenv("XDPT_IPSET_CORPUS"); env != "" {
		files = strings.Split(env, ",")
	}
	if len(files) == 0 {
		t.Fatal("no corpus files")
	}
	if !netns.Have("iptables-nft") {
		t.Skip("reference iptables-nft not installed")
	}
	ours := filepath.Join(LinkDir(t), "ipset")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			steps := parseIpsetCorpus(t, f)
			ref, me := netns.New(t, "h7ipsR"), netns.New(t, "h7ipsO")
			bad := 0
			for _, st := range steps {
				refTool, ourTool := "ipset", ours
				if st.iptables {
					refTool, ourTool = "iptables-nft", filepath.Join(filepath.Dir(ours), "iptables")
				}
				r := ref.Run(st.stdin, append([]string{refTool}, st.args...)...)
				m := me.Run(st.stdin, append([]string{ourTool}, st.args...)...)
				norm := normIpsetOutput
				if slices.Contains(st.args, "-s") || slices.Contains(st.args, "-sorted") || slices.Contains(st.args, "--sorted") {
					norm = normIpsetSorted // ipset's order, compared as is
				}
				if norm(r.Stdout) == norm(m.Stdout) && r.Stderr == m.Stderr && r.RC == m.RC {
					continue
				}
				bad++
				if bad <= 40 {
					t.Errorf("%s:%d: ipset %s\n--- reference rc=%d\n%s%s--- ours rc=%d\n%s%s", filepath.Base(f), st.line, st.text,
						r.RC, r.Stdout, r.Stderr, m.RC, m.Stdout, m.Stderr)
				}
			}
			if bad > 40 {
				t.Errorf("%d differences in all", bad)
			}
			// Whatever the lines left behind must also be the same.
			r := ref.Run("", "ipset", "save")
			m := me.Run("", ours, "save")
			if a, b := normIpsetOutput(r.Stdout), normIpsetOutput(m.Stdout); a != b {
				t.Errorf("final save differs:\n%s", ipsetLineDiff(a, b))
			}
			ref.Run("", "ipset", "destroy")
			me.Run("", ours, "destroy")
		})
	}
}

func TestIpsetCorpusNormalisation(t *testing.T) {
	in := "Name: a\nType: hash:ip\nHeader: family inet hashsize 1024 maxelem 65536 timeout 100 bucketsize 12 initval 0x1234abcd\nSize in memory: 312\nMembers:\n10.0.0.2 timeout 99\n10.0.0.1 timeout 0\n\n" +
		"Name: b\nType: bitmap:port\nMembers:\n9\n3\n"
	want := "Name: a\nType: hash:ip\nHeader: family inet hashsize 1024 maxelem 65536 timeout 100 bucketsize 12 initval X\nSize in memory: N\nMembers:\n10.0.0.1 timeout 0\n10.0.0.2 timeout T\n\n" +
		"Name: b\nType: bitmap:port\nMembers:\n9\n3\n"
	if got := normIpsetOutput(in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// save -terse: members without their heading
	in = "Name: a\nType: hash:ip\nNumber of entries: 2\n10.0.0.2\n10.0.0.1\n\nName: b\n"
	want = "Name: a\nType: hash:ip\nNumber of entries: 2\n10.0.0.1\n10.0.0.2\n\nName: b\n"
	if got := normIpsetOutput(in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	in = "<type>hash:ip</type>\n</header>\n<member><elem>10.0.0.2</elem></member>\n<member><elem>10.0.0.1</elem></member>\n</ipset>\n"
	want = "<type>hash:ip</type>\n</header>\n<member><elem>10.0.0.1</elem></member>\n<member><elem>10.0.0.2</elem></member>\n</ipset>\n"
	if got := normIpsetOutput(in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := fmt.Sprint(shellWords(`add c 1.2.3.4 comment "a b" x 'c d'`)); got != "[add c 1.2.3.4 comment a b x c d]" {
		t.Errorf("words %s", got)
	}
}

// ipsetLineDiff lists the lines only one of a and b has.
func ipsetLineDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	var out []string
	for l, n := range count {
		switch {
		case n > 0:
			out = append(out, "reference only: "+l)
		case n < 0:
			out = append(out, "ours only: "+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
