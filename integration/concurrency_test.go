package integration

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// Concurrent writers (spec §7): every command is one generation-checked
// batch, rebuilt and resent when another process committed in between,
// so no update is lost and nobody sees an error.

// chainRuleLines returns the -A lines of `iptables -S chain`.
func chainRuleLines(t *testing.T, ns *netns.NS, ipt, chain string) []string {
	t.Helper()
	r := ns.Run("", ipt, "-S", chain)
	if r.RC != 0 {
		t.Fatalf("-S %s: rc %d: %s", chain, r.RC, r.Stderr)
	}
	var out []string
	for _, l := range strings.Split(r.Stdout, "\n") {
		if strings.HasPrefix(l, "-A ") {
			out = append(out, l)
		}
	}
	return out
}

func TestConcurrentAppend(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	ns := netns.New(t, "conc")
	ipt := filepath.Join(dir, "iptables")
	if r := ns.Run("", ipt, "-N", "CONC"); r.RC != 0 {
		t.Fatalf("-N: %s", r.Stderr)
	}
	const n = 1000
	// each writer is one shell process that runs n separate iptables
	// processes, one after the other
	script := `for i in $(seq 0 %d); do %s -A CONC -s 10.%d.$((i / 256)).$((i %% 256)) -p tcp --dport 80 -j ACCEPT || echo "rc $? at $i" >&2; done`
	var wg sync.WaitGroup
	res := make([]netns.Result, 2)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[w] = ns.RunTimeout(600, "", "sh", "-c", fmt.Sprintf(script, n-1, ipt, w+1))
		}()
	}
	wg.Wait()
	for w, r := range res {
		if r.RC != 0 || r.Stderr != "" || r.Stdout != "" {
			t.Errorf("writer %d: rc %d\nstdout: %s\nstderr: %s", w, r.RC, r.Stdout, r.Stderr)
		}
	}
	rules := chainRuleLines(t, ns, ipt, "CONC")
	if len(rules) != 2*n {
		t.Fatalf("got %d rules, want %d", len(rules), 2*n)
	}
	sort.Strings(rules)
	for i := 1; i < len(rules); i++ {
		if rules[i] == rules[i-1] {
			t.Fatalf("duplicate rule %q", rules[i])
		}
	}
	// each writer's rules are in its own order
	for w := 1; w <= 2; w++ {
		var got []string
		for _, l := range chainRuleLines(t, ns, ipt, "CONC") {
			if strings.Contains(l, fmt.Sprintf("-s 10.%d.", w)) {
				got = append(got, l)
			}
		}
		for i, l := range got {
			want := fmt.Sprintf("-A CONC -s 10.%d.%d.%d/32 -p tcp -m tcp --dport 80 -j ACCEPT", w, i/256, i%256)
			if l != want {
				t.Fatalf("writer %d rule %d: %q, want %q", w, i, l, want)
			}
		}
	}
}

func TestConcurrentRestoreNoflush(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	const n = 1000
	for round := 0; round < 3; round++ {
		ns := netns.New(t, "concr")
		inputs := make([]string, 2)
		for w := range inputs {
			var b strings.Builder
			fmt.Fprintf(&b, "*filter\n:INPUT ACCEPT [0:0]\n:CHAIN%d - [0:0]\n", w)
			for i := 0; i < n; i++ {
				fmt.Fprintf(&b, "-A CHAIN%d -s 10.%d.%d.%d/32 -p udp -m udp --dport 53 -j ACCEPT\n", w, w+1, i/256, i%256)
			}
			b.WriteString("COMMIT\n")
			inputs[w] = b.String()
		}
		var wg sync.WaitGroup
		res := make([]netns.Result, 2)
		for w := range inputs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[w] = ns.Run(inputs[w], filepath.Join(dir, "iptables-restore"), "--noflush")
			}()
		}
		wg.Wait()
		for w, r := range res {
			if r.RC != 0 || r.Stderr != "" || r.Stdout != "" {
				t.Fatalf("round %d restore %d: rc %d\nstdout: %s\nstderr: %s", round, w, r.RC, r.Stdout, r.Stderr)
			}
		}
		for w := range inputs {
			if got := len(chainRuleLines(t, ns, filepath.Join(dir, "iptables"), fmt.Sprintf("CHAIN%d", w))); got != n {
				t.Fatalf("round %d: CHAIN%d has %d rules, want %d", round, w, got, n)
			}
		}
	}
}
