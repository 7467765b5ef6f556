package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/ipset"
)

const (
	bashCompletion = "../../completions/bash/xdptables"
	zshCompletion  = "../../completions/zsh/_xdptables"
)

// helpNames are the personalities and commands `xdptables --help` lists.
func helpNames(t *testing.T, bin string) (personalities, commands []string) {
	t.Helper()
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	section := ""
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "Personalities"):
			section = "p"
		case strings.HasPrefix(l, "Commands"):
			section = "c"
		case strings.HasPrefix(l, "  ") && section != "":
			name := strings.Fields(l)[0]
			if section == "p" {
				personalities = append(personalities, name)
			} else {
				commands = append(commands, name)
			}
		}
	}
	if len(personalities) == 0 || len(commands) == 0 {
		t.Fatalf("xdptables --help lists no personalities or commands:\n%s", out)
	}
	return personalities, commands
}

func shellList(t *testing.T, file, variable string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + variable + `="([^"]*)"$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no %s", file, variable)
	}
	return strings.Fields(string(m[1]))
}

func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g := append([]string(nil), got...)
	w := append([]string(nil), want...)
	sort.Strings(g)
	sort.Strings(w)
	if strings.Join(g, " ") != strings.Join(w, " ") {
		t.Errorf("%s:\n got %v\nwant %v", what, g, w)
	}
}

// TestCompletionLists: the completions offer exactly the matches,
// targets, set types, personalities and commands the program has.
func TestCompletionLists(t *testing.T) {
	_, _, _, bin := packages(t)
	personalities, commands := helpNames(t, bin)
	targets := append([]string{"ACCEPT", "DROP", "RETURN", "QUEUE"}, compat.TargetNames()...)
	var types []string
	for _, ty := range ipset.Types() {
		types = append(types, ty.Name)
	}
	sameSet(t, "bash matches", shellList(t, bashCompletion, "_xdptables_matches"), compat.MatchNames())
	sameSet(t, "bash targets", shellList(t, bashCompletion, "_xdptables_targets"), targets)
	sameSet(t, "bash set types", shellList(t, bashCompletion, "_xdptables_settypes"), types)
	sameSet(t, "bash commands", shellList(t, bashCompletion, "_xdptables_commands"), append(personalities, commands...))

	z, err := os.ReadFile(zshCompletion)
	if err != nil {
		t.Fatal(err)
	}
	zsh := string(z)
	list := func(re string) []string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(zsh)
		if m == nil {
			t.Fatalf("zsh completion: no match for %s", re)
		}
		return strings.Fields(m[1])
	}
	sameSet(t, "zsh matches", list(`local -a matches=\(([^)]*)\)`), compat.MatchNames())
	sameSet(t, "zsh targets", list(`local -a targets=\(([^)]*)\)`), targets)
	sameSet(t, "zsh set types", list(`local -a settypes=\(([^)]*)\)`), types)
	var zcmds []string
	main := regexp.MustCompile(`(?s)\n_xdptables\(\) \{.*?local -a cmds=\((.*?)\n  \)`).FindStringSubmatch(zsh)
	if main == nil {
		t.Fatal("zsh completion: no command list in _xdptables")
	}
	for _, m := range regexp.MustCompile(`(?m)^    '([a-z0-9-]+):`).FindAllStringSubmatch(main[1], -1) {
		zcmds = append(zcmds, m[1])
	}
	sameSet(t, "zsh commands", zcmds, append(personalities, commands...))
	// every name the binary answers to is completed
	names := strings.Fields(strings.TrimPrefix(strings.SplitN(zsh, "\n", 2)[0], "#compdef"))
	for _, p := range personalities {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+p+" ") {
			t.Errorf("zsh #compdef lacks %s", p)
		}
	}
	b, _ := os.ReadFile(bashCompletion)
	joined := strings.ReplaceAll(string(b), "\\\n", " ")
	reg := regexp.MustCompile(`(?m)^complete -F _xdptables (.*)$`).FindStringSubmatch(joined)
	if reg == nil {
		t.Fatal("bash completion registers no names")
	}
	for _, p := range personalities {
		if !strings.Contains(" "+strings.Join(strings.Fields(reg[1]), " ")+" ", " "+p+" ") {
			t.Errorf("bash complete -F lacks %s", p)
		}
	}
}

// TestCompletionSyntax parses the completions with their shells.
func TestCompletionSyntax(t *testing.T) {
	for line, want := range map[string]string{
		"ipset create s hash:ip,p": "ipset|create|s|hash|:|ip,p",
		"ipset create s hash:":     "ipset|create|s|hash|:",
		"iptables --table=nat -A ": "iptables|--table|=|nat|-A|",
	} {
		if got := strings.Join(compWords(line), "|"); got != want {
			t.Errorf("compWords(%q) = %q, want %q", line, got, want)
		}
	}
	run(t, "bash", "-n", bashCompletion)
	run(t, "bash", "-n", "../../completions/bash/xdptables-personalities")
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Log("zsh not installed: its completion is only checked by TestCompletionLists")
		return
	}
	run(t, "zsh", "-n", zshCompletion)
}

// compWords splits a command line the way bash fills COMP_WORDS: at
// blanks, with each ':' and '=' (in COMP_WORDBREAKS) a word of its own;
// a trailing blank starts an empty word.
func compWords(line string) []string {
	var words []string
	for _, f := range strings.Split(line, " ") {
		start := len(words)
		for {
			i := strings.IndexAny(f, ":=")
			if i < 0 {
				break
			}
			if i > 0 {
				words = append(words, f[:i])
			}
			words = append(words, f[i:i+1])
			f = f[i+1:]
		}
		if f != "" || len(words) == start {
			words = append(words, f)
		}
	}
	return words
}

// complete runs the bash completion function for line in ns (nil: here)
// and returns the candidates, sorted. With bashcomp, bash-completion's
// _init_completion is loaded first.
func complete(t *testing.T, ns *netns.NS, bashcomp bool, line string) []string {
	t.Helper()
	words := compWords(line)
	var q []string
	for _, w := range words {
		q = append(q, "'"+w+"'")
	}
	script := ""
	if bashcomp {
		script = ". /usr/share/bash-completion/bash_completion\n"
	}
	script += ". " + bashCompletion + "\n" +
		"COMP_WORDS=(" + strings.Join(q, " ") + ")\n" +
		"COMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n" +
		"COMP_LINE='" + line + "'\nCOMP_POINT=${#COMP_LINE}\n" +
		"_xdptables\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
	var out string
	if ns != nil {
		r := ns.Run("", "bash", "--norc", "--noprofile", "-c", script)
		if r.RC != 0 {
			t.Fatalf("completing %q: %+v", line, r)
		}
		out = r.Stdout
	} else {
		b, err := exec.Command("bash", "--norc", "--noprofile", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("completing %q: %v\n%s", line, err, b)
		}
		out = string(b)
	}
	got := strings.Fields(out)
	sort.Strings(got)
	return got
}

// TestBashCompletion completes command lines with the bash completion,
// in a namespace holding a user chain and a set made with the binary.
func TestBashCompletion(t *testing.T) {
	netns.RequireRoot(t)
	_, _, feat, bin := packages(t)
	dir := t.TempDir()
	for _, n := range []string{"iptables", "ipset"} {
		if err := os.Symlink(bin, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(dir, "xdptables")); err != nil {
		t.Fatal(err)
	}
	ns := netns.New(t, "compl")
	if r := ns.Run("", bin, "iptables", "-N", "WEB"); r.RC != 0 {
		t.Fatalf("%+v", r)
	}
	if r := ns.Run("", bin, "iptables", "-t", "nat", "-N", "PORTS"); r.RC != 0 {
		t.Fatalf("%+v", r)
	}
	if feat.IPSet {
		if r := ns.Run("", bin, "ipset", "create", "blocklist", "hash:net"); r.RC != 0 {
			t.Fatalf("%+v", r)
		}
	}
	x := filepath.Join(dir, "xdptables")
	ipt := filepath.Join(dir, "iptables")
	modes := []bool{false}
	if _, err := os.Stat("/usr/share/bash-completion/bash_completion"); err == nil {
		modes = append(modes, true)
	}
	for _, bashcomp := range modes {
		check := func(line string, want ...string) {
			t.Helper()
			got := complete(t, ns, bashcomp, line)
			for _, w := range want {
				if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+w+" ") {
					t.Errorf("bash-completion %v: %q offers %v, not %s", bashcomp, line, got, w)
				}
			}
			if len(want) == 0 && len(got) != 0 {
				t.Errorf("bash-completion %v: %q offers %v, want nothing", bashcomp, line, got)
			}
		}
		check(x+" ", "iptables", "ipset", "translate", "xdp", "persist", "canon", "links")
		check(x+" tr", "translate")
		check(ipt+" -A ", "INPUT", "WEB")
		check(ipt+" -t nat -A ", "PORTS", "POSTROUTING")
		check(ipt+" -A INPUT -j ", "ACCEPT", "TEE", "WEB")
		check(ipt+" -A INPUT -m con", "conntrack", "connmark")
		check(ipt+" -P INPUT ", "ACCEPT", "DROP")
		check(x+" iptables -A ", "WEB")
		check(x+" translate ", "iptables", "ipset", "--ipsets")
		check(x+" translate iptables -A ", "WEB")
		check(x+" translate ipset ", "restore")
		check(x+" xdp ", "attach", "detach", "apply", "sync", "status")
		check(x+" xdp attach ", "lo")
		check(x+" xdp attach lo --mode ", "native", "generic", "auto")
		check(x+" persist restore ", "sets", "rules", "all")
		if feat.IPSet {
			ips := filepath.Join(dir, "ipset")
			check(ips+" ", "create", "add", "list", "restore", "swap")
			check(ips+" add ", "blocklist")
			check(ips+" -exist add ", "blocklist")
			check(ips + " add blocklist ")
			check(ips+" create new ", "hash:net", "list:set")
			check(ips+" create new hash:", "net", "ip,port", "net,iface")
			check(ips+" create new hash:ip,p", "ip,port", "ip,port,net")
			check(x+" ipset help bitmap:", "ip", "ip,mac", "port")
			check(ips+" create new hash:ip ", "timeout", "family")
			check(ips+" list -o ", "plain", "save", "xml")
			check(x+" ipset swap ", "blocklist")
			check(ipt+" -A INPUT -m set --match-set ", "blocklist")
			check(x+" iptables -A INPUT -m set --match-set ", "blocklist")
		}
	}
}
