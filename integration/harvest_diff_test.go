package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
)

// TestHarvestDiff runs restore files written elsewhere (iptables-save
// output and hand-written restore files gathered from public
// repositories, kept out of the tree) through both the reference tools
// and ours, each file in a fresh pair of namespaces, and compares every
// answer: the restore itself (also when the reference refuses the file:
// message and exit status, and ours must have changed nothing), then
// iptables-save with and
// without counters, -S, -S -v, -L -n -v -x --line-numbers and -L -n of
// every table the file touched, restore --test, a second restore of the
// reference's save (round trip), -C of every rule of the save and -D of
// the first rule of every chain, the file again with --noflush, -D by
// number, -Z, -F and -X.
//
// XDPT_HARVEST=DIR names the directory of *.rules files; without it the
// test runs the files of testdata/realworld (TestListDiff compares their
// listings; this adds -C, -D, the round trip and the later commands).
// XDPT_HARVEST_ONLY=substring restricts it to the files whose name holds
// the substring.
func TestHarvestDiff(t *testing.T) {
	netns.RequireRoot(t)
	dir := os.Getenv("XDPT_HARVEST")
	if dir == "" {
		dir = "../testdata/realworld"
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.rules"))
	if len(files) == 0 {
		t.Fatalf("no *.rules in %s", dir)
	}
	only := os.Getenv("XDPT_HARVEST_ONLY")
	for _, file := range files {
		if only != "" && !strings.Contains(filepath.Base(file), only) {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			harvestDiff(t, filepath.Base(file), string(data))
		})
	}
}

// ip6Hint tells a file written for ip6tables by what only IPv6 rules
// hold.
var ip6Hint = regexp.MustCompile(`icmpv6|ipv6-icmp|icmp6|-m hl |-m rt |-m frag |[0-9a-fA-F]*::[0-9a-fA-F]*(/\d+)?\b`)

var setRefs = regexp.MustCompile(`(?:--match-set|--add-set|--del-set|--map-set) (\S+) (\S+)`)

func harvestDiff(t *testing.T, name, data string) {
	// the family: a name ending in v4 or v6, else what the name or the
	// rules say
	prog := "iptables"
	lower := strings.TrimSuffix(strings.ToLower(name), ".rules")
	switch {
	case strings.HasSuffix(lower, "v4"):
	case strings.HasSuffix(lower, "v6") || strings.Contains(lower, "ip6") || strings.Contains(lower, "rules6") || ip6Hint.MatchString(data):
		prog = "ip6tables"
	}
	d := newScriptDiff(t)
	d.label = name
	// sets the rules name must exist: a hash type with as many
	// dimensions as the lookup has flags, of addresses when a rule adds
	// to it (the nftables backend cannot add to a set of networks)
	sets := map[string]int{}
	added := map[string]bool{}
	for _, m := range setRefs.FindAllStringSubmatch(data, -1) {
		sets[m[1]] = max(sets[m[1]], strings.Count(m[2], ",")+1)
		added[m[1]] = added[m[1]] || !strings.HasPrefix(m[0], "--match-set")
	}
	var names []string
	for s := range sets {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		types := []string{"hash:net", "hash:net,port", "hash:ip,port,net"}
		if added[s] {
			types = []string{"hash:ip", "hash:ip,port", "hash:ip,port,ip"}
		}
		args := []string{"create", s, types[min(sets[s], 3)-1]}
		if prog == "ip6tables" {
			args = append(args, "family", "inet6")
		}
		d.compare(name+":sets", "ipset", args, "")
	}
	tables := map[string]bool{}
	for _, l := range strings.Split(data, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "*") {
			tables[l[1:]] = true
		}
	}
	var tbs []string
	for tb := range tables {
		tbs = append(tbs, tb)
	}
	sort.Strings(tbs)

	restored, _ := d.compare(name+":restore", prog+"-restore", nil, data)
	d.compare(name+":test", prog+"-restore", []string{"--test"}, data)
	if restored.RC != 0 {
		// iptables-nft-restore keeps the sections it committed before
		// the one that failed, ours changes nothing (README: where
		// xdptables differs on purpose): nothing of the file is there
		if b := d.ours.Run("", filepath.Join(d.dir, prog+"-save")); b.RC != 0 || strings.Contains(b.Stdout, "\n-A ") {
			t.Errorf("%s: a refused restore left rules: rc %d\n%s%s", name, b.RC, b.Stdout, b.Stderr)
		}
		return
	}
	d.compare(name+":save", prog+"-save", nil, "")
	save, _ := d.compare(name+":save-c", prog+"-save", []string{"-c"}, "")
	for _, tb := range tbs {
		for _, opts := range [][]string{
			{"-S"}, {"-S", "-v"}, {"-L", "-n", "-v", "-x", "--line-numbers"}, {"-L", "-n"},
		} {
			d.compare(name+":list", prog, append([]string{"-t", tb}, opts...), "")
		}
	}
	// the round trip: what the reference saved, restored again
	d.compare(name+":round-trip", prog+"-restore", nil, save.Stdout)
	d.compare(name+":round-trip-c", prog+"-restore", []string{"-c"}, save.Stdout)
	d.compare(name+":round-trip-save", prog+"-save", nil, "")
	for _, tb := range tbs {
		rules, _ := d.compare(name+":check-S", prog, []string{"-t", tb, "-S"}, "")
		deleted := map[string]bool{}
		var dels [][]string
		for _, l := range strings.Split(rules.Stdout, "\n") {
			w := compat.RestoreWords(l)
			if len(w) < 2 || w[0] != "-A" {
				continue
			}
			check := append([]string{"-t", tb, "-C"}, w[1:]...)
			d.compare(name+":check", prog, check, "")
			if !deleted[w[1]] {
				deleted[w[1]] = true
				dels = append(dels, append([]string{"-t", tb, "-D"}, w[1:]...))
			}
		}
		for _, del := range dels {
			d.compare(name+":delete", prog, del, "")
		}
		d.compare(name+":after-delete", prog, []string{"-t", tb, "-S", "-v"}, "")
	}
	// the file again on top (--noflush: every rule twice), then each
	// table's user chains flushed and deleted, and the rules of the
	// built-in chains deleted by number, first and last
	d.compare(name+":noflush", prog+"-restore", []string{"--noflush"}, data)
	d.compare(name+":noflush-save", prog+"-save", []string{"-c"}, "")
	for _, tb := range tbs {
		chains, _ := d.compare(name+":chains", prog, []string{"-t", tb, "-S"}, "")
		counts := map[string]int{}
		var builtins []string
		for _, l := range strings.Split(chains.Stdout, "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) >= 2 && f[0] == "-P":
				builtins = append(builtins, f[1])
			case len(f) >= 2 && f[0] == "-A":
				counts[f[1]]++
			}
		}
		for _, c := range builtins {
			if n := counts[c]; n > 0 {
				d.compare(name+":delete-num", prog, []string{"-t", tb, "-D", c, fmt.Sprint(n)}, "")
				d.compare(name+":delete-num", prog, []string{"-t", tb, "-D", c, "1"}, "")
			}
		}
		d.compare(name+":zero", prog, []string{"-t", tb, "-Z"}, "")
		d.compare(name+":flush", prog, []string{"-t", tb, "-F"}, "")
		d.compare(name+":delete-chains", prog, []string{"-t", tb, "-X"}, "")
	}
	d.compare(name+":end", prog+"-save", nil, "")
}
