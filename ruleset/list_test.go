package ruleset

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/translate"
)

// TestWriteSaveTableMatchesWriteSave: the streaming save prints a table
// byte for byte as compat.WriteSave prints View.Save's table.
func TestWriteSaveTableMatchesWriteSave(t *testing.T) {
	v := NewView(compat.IPv4, "filter")
	v.Complete = true
	for _, line := range []string{
		"-N web", "-N a-chain",
		"-A INPUT -p tcp --dport 22 -j ACCEPT",
		"-A INPUT -s 198.51.100.0/24 -m comment --comment x -j web",
		"-A web -j RETURN",
		"-A a-chain -d 203.0.113.7 -j DROP",
		"-P FORWARD DROP",
	} {
		if err := run(t, v, line); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	v.Chains["INPUT"].Rules[0].Rule.Counters = &compat.Counters{Packets: 3, Bytes: 180}
	v.Chains["FORWARD"].Counters = &compat.Counters{Packets: 1, Bytes: 2}
	now := time.Date(2026, 11, 30, 9, 5, 7, 0, time.UTC)
	for _, c := range []struct{ counters, text bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		counters := c.counters
		var want bytes.Buffer
		if err := compat.WriteSave(&want, "iptables-save", v.Save(), counters, now); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		err := writeSaveTable(&got, "iptables-save", v, counters, compat.SaveTime(now), func(chains []*ChainState, emit func(*ChainState, *listedRule)) error {
			for _, ch := range chains {
				for _, r := range ch.Rules {
					// as readChainsText gives a rule whose stored text
					// is its -S text
					var sb strings.Builder
					compat.WriteRuleSpec(&sb, r.Rule, false)
					if c.text && sb.String() == compat.ExactSpec(r.Rule) {
						emit(ch, &listedRule{spec: sb.String(), counters: r.Rule.Counters})
						continue
					}
					emit(ch, &listedRule{rule: r.Rule})
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%+v: streaming save\n%s\nWriteSave\n%s", c, got.String(), want.String())
		}
	}
}

// TestTranslateConcurrently: readChains translates rules on several
// goroutines at once; translating the corpus's rules concurrently (run
// with -race) gives what translating them one by one gives.
func TestTranslateConcurrently(t *testing.T) {
	files, _ := filepath.Glob("../testdata/corpus/*.golden.jsonl")
	if len(files) == 0 {
		t.Skip("no corpus")
	}
	type item struct {
		fam          compat.Family
		table, chain string
		exprs        []expr.Any
		ud           []byte
		want         string
	}
	var items []item
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			var g struct {
				Tool  string
				Args  []string
				Rules []string
			}
			if json.Unmarshal([]byte(line), &g) != nil || len(g.Rules) == 0 {
				continue
			}
			fam, table := compat.IPv4, "filter"
			if g.Tool == "ip6tables" {
				fam = compat.IPv6
			}
			for i, a := range g.Args {
				if a == "-t" && i+1 < len(g.Args) {
					table = g.Args[i+1]
				}
			}
			for _, rl := range g.Rules {
				cmd, err := compat.Parse(fam, compat.RestoreWords(rl), compat.ParseOptions{Table: table})
				if err != nil || len(cmd.Rules) != 1 {
					continue
				}
				r := cmd.Rules[0]
				es, err1 := translate.ExprsIn(table, cmd.Chain, r)
				ud, err2 := translate.UserData(r)
				if err1 != nil || err2 != nil {
					continue
				}
				it := item{fam: fam, table: table, chain: cmd.Chain, exprs: es, ud: ud}
				if back, err := translate.FromKernel(fam, table, cmd.Chain, es, ud); err == nil {
					it.want = compat.SaveRule(cmd.Chain, back, true)
				}
				items = append(items, it)
			}
		}
	}
	if len(items) < 100 {
		t.Fatalf("only %d corpus rules", len(items))
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range items {
				it := items[(i+w*97)%len(items)]
				got := ""
				if back, err := translate.FromKernel(it.fam, it.table, it.chain, it.exprs, it.ud); err == nil {
					got = compat.SaveRule(it.chain, back, true)
				}
				if got != it.want {
					t.Errorf("%s: concurrently %q, alone %q", it.chain, got, it.want)
				}
			}
		}()
	}
	wg.Wait()
}
