package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestGeneratedIpsetDiff runs generated ipset command sequences
// (ipset_gen.go) with the reference ipset in one namespace and with ours
// in another, and compares every command's stdout, stderr and exit
// status, then the final save and list. Output is normalised as the
// corpus test does (random initval, Size in memory, remaining timeouts,
// hash member order); at the end both sides save, flush, destroy and
// restore what they saved, and list again: there Size in memory of a
// set with a generated initval is compared exactly.
//
// A restore that fails must change nothing here (one transaction),
// while ipset keeps the lines before the error: after a failed restore
// our state is checked against the state before it, and both sides are
// put back to what they held before. After any other difference both
// sides are given the reference's state, so that one difference is
// reported once.
//
// XDPT_IPSET_GEN_SEED=1,2,… chooses the seeds, XDPT_IPSET_GEN_N the
// number of commands per seed.
func TestGeneratedIpsetDiff(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	seeds := envSeeds(t, "XDPT_IPSET_GEN_SEED", 1, 2, 3, 4, 5, 6, 7, 8)
	n := envInt(t, "XDPT_IPSET_GEN_N", 150)
	ours := filepath.Join(LinkDir(t), "ipset")
	types := referenceIpsetTypes(t)
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			d := &ipsetGenDiff{t: t,
				ref: ipsetGenSide{ns: netns.New(t, "h49genR"), tool: "ipset", dir: t.TempDir()},
				me:  ipsetGenSide{ns: netns.New(t, "h49genO"), tool: ours, dir: t.TempDir()},
			}
			for i, c := range GenIpsetCommands(seed, n, types) {
				d.step(i, c)
			}
			d.final()
		})
	}
}

// referenceIpsetTypes are the generator's types the reference kernel
// has (the others are refused with "set type not supported").
func referenceIpsetTypes(t *testing.T) []string {
	ns := netns.New(t, "h49genP")
	var have []string
	for i, typ := range IpsetGenTypes {
		args := []string{"ipset", "create", fmt.Sprintf("p%d", i), typ}
		if strings.HasPrefix(typ, "bitmap:ip") {
			args = append(args, "range", "198.51.100.0/28")
		} else if typ == "bitmap:port" {
			args = append(args, "range", "1-2")
		}
		if r := ns.Run("", args...); r.RC == 0 {
			have = append(have, typ)
		}
	}
	t.Logf("reference set types: %s", strings.Join(have, " "))
	return have
}

type ipsetGenSide struct {
	ns   *netns.NS
	tool string
	dir  string
}

// run runs c, with the generator's file names replaced by files in the
// side's directory; what list/save -f wrote is appended to stdout.
func (s ipsetGenSide) run(c IpsetGenCommand) netns.Result {
	in, out := filepath.Join(s.dir, "in"), filepath.Join(s.dir, "out")
	stdin := c.Stdin
	args := []string{s.tool}
	for _, a := range c.Args {
		switch a {
		case IpsetGenFile:
			os.WriteFile(in, []byte(c.Stdin), 0o644)
			a, stdin = in, ""
		case IpsetGenOut:
			a = out
		}
		args = append(args, a)
	}
	r := s.ns.Run(stdin, args...)
	if data, err := os.ReadFile(out); err == nil {
		r.Stdout += "[-f file]\n" + string(data)
		os.Remove(out)
	}
	// (a list or save in a restore read from a file writes into it)
	if data, err := os.ReadFile(in); err == nil && string(data) != c.Stdin {
		r.Stdout += "[-f file after]\n" + string(data)
	}
	os.Remove(in)
	return r
}

func (s ipsetGenSide) save() string {
	return s.ns.Run("", s.tool, "save").Stdout
}

// load replaces every set with what text (a save) holds.
func (s ipsetGenSide) load(text string) error {
	s.ns.Run("", s.tool, "flush")
	if r := s.ns.Run("", s.tool, "destroy"); r.RC != 0 {
		return fmt.Errorf("destroy: rc=%d %s", r.RC, r.Stderr)
	}
	if text == "" {
		return nil
	}
	if r := s.ns.Run(text, s.tool, "restore"); r.RC != 0 {
		return fmt.Errorf("restore: rc=%d %s", r.RC, r.Stderr)
	}
	return nil
}

type ipsetGenDiff struct {
	t       *testing.T
	ref, me ipsetGenSide
	bad     int
}

func (d *ipsetGenDiff) errorf(format string, a ...any) {
	d.t.Helper()
	d.bad++
	if d.bad <= 20 {
		d.t.Errorf(format, a...)
	} else if d.bad == 21 {
		d.t.Errorf("more differences left out")
	}
}

func (d *ipsetGenDiff) step(i int, c IpsetGenCommand) {
	t := d.t
	restore := slices.Contains(c.Args, "restore")
	var preR, preM string
	if restore {
		preR, preM = d.ref.save(), d.me.save()
	}
	r, m := d.ref.run(c), d.me.run(c)
	norm := normIpsetOutput
	if slices.ContainsFunc(c.Args, func(a string) bool { return a == "-s" || a == "-sorted" }) {
		norm = normIpsetSorted
	}
	same := norm(r.Stdout) == norm(m.Stdout) && r.Stderr == m.Stderr && r.RC == m.RC
	if !same {
		d.errorf("step %d: %s\n--- reference rc=%d\n%s%s--- ours rc=%d\n%s%s", i, c, r.RC, r.Stdout, r.Stderr, m.RC, m.Stdout, m.Stderr)
		if restore {
			t.Logf("step %d: reference sets before it:\n%s", i, preR)
		}
	}
	switch {
	case restore && (r.RC != 0 || m.RC != 0):
		if m.RC != 0 {
			if now := d.me.save(); normIpsetOutput(now) != normIpsetOutput(preM) {
				d.errorf("step %d: failed restore changed our sets:\n%s", i, ipsetLineDiff(normIpsetOutput(preM), normIpsetOutput(now)))
			}
		}
		d.loadBoth(preR, preM)
	case !same:
		s := d.ref.save()
		t.Logf("step %d: reference sets after it:\n%s", i, s)
		d.loadBoth(s, s)
	default:
		return
	}
	t.Logf("step %d: sides reloaded", i)
}

func (d *ipsetGenDiff) loadBoth(ref, me string) {
	if err := d.ref.load(ref); err != nil {
		d.t.Fatalf("reference reload: %v\n%s", err, ref)
	}
	if err := d.me.load(me); err != nil {
		d.errorf("our reload: %v\n%s", err, me)
	}
}

func (d *ipsetGenDiff) final() {
	for _, args := range [][]string{{"save"}, {"list"}, {"-o", "xml", "list"}} {
		c := IpsetGenCommand{Args: args}
		r, m := d.ref.run(c), d.me.run(c)
		if a, b := normIpsetOutput(r.Stdout), normIpsetOutput(m.Stdout); a != b || r.RC != m.RC {
			d.errorf("final %s differs:\n%s", c, ipsetLineDiff(a, b))
		}
	}
	// Sizes in memory after save and restore, when ipset's history of
	// the set no longer counts (see ipset/doc.go).
	for _, s := range []ipsetGenSide{d.ref, d.me} {
		if err := s.load(s.save()); err != nil {
			d.errorf("%s: save and restore: %v", s.tool, err)
		}
	}
	for _, args := range [][]string{{"list"}, {"-o", "xml", "list"}} {
		c := IpsetGenCommand{Args: args}
		r, m := d.ref.run(c), d.me.run(c)
		if a, b := normIpsetGenExact(r.Stdout), normIpsetGenExact(m.Stdout); a != b {
			d.errorf("%s after save and restore differs:\n%s", c, ipsetLineDiff(a, b))
		}
	}
}

// normIpsetGenExact is normIpsetOutput but keeps the initval and Size in
// memory of sets whose initval the generator gave.
func normIpsetGenExact(s string) string {
	return normIpsetCorpus(s, true, IpsetGenInitvals)
}

// The generator is deterministic, and the exact normalisation keeps the
// initval and size of sets the generator gave an initval.
func TestIpsetGenDeterministic(t *testing.T) {
	a, b := GenIpsetCommands(7, 200, IpsetGenTypes), GenIpsetCommands(7, 200, IpsetGenTypes)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("same seed, different commands")
	}
	if c := GenIpsetCommands(8, 200, IpsetGenTypes); fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("different seeds, same commands")
	}
	ops := map[string]bool{}
	for _, c := range a {
		for _, w := range c.Args {
			ops[w] = true
		}
	}
	for _, w := range []string{"create", "add", "del", "test", "restore", "swap", "rename"} {
		if !ops[w] {
			t.Errorf("no %s in 200 commands", w)
		}
	}
	in := "Name: a\nType: hash:ip\nHeader: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x0badcafe\nSize in memory: 216\n" +
		"Name: b\nType: hash:ip\nHeader: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x1234abcd\nSize in memory: 216\n"
	want := "Name: a\nType: hash:ip\nHeader: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x0badcafe\nSize in memory: 216\n" +
		"Name: b\nType: hash:ip\nHeader: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval X\nSize in memory: N\n"
	if got := normIpsetGenExact(in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Found by the generator: a list or save in a restore read from a file
// (-f) writes its listing into that file, and the restore reads no
// further; the listing's own error leaves the file empty.
func TestIpsetRestoreFileListing(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	ours := filepath.Join(LinkDir(t), "ipset")
	for _, file := range []string{
		"create a hash:ip\nadd a 198.51.100.1\nsave a\ncreate b hash:ip\n",
		"create a hash:ip\nlist -n\nbogus\n",
		"list nosuch\ncreate b hash:ip\n",
		"create a hash:ip\n-o xml list -t\nadd a 198.51.100.300\n",
		// the run of adds before the listing is sent after its line
		// was read (the file is emptied), a parse error stops before
		"create b bitmap:ip range 198.51.100.0/28\nadd b 198.51.100.1\nadd b 198.51.100.200\nlist\n",
		"create b bitmap:ip range 198.51.100.0/28\nadd b 198.51.100.300\nlist\n",
		"create b bitmap:ip range 198.51.100.0/28\nadd nosuch 198.51.100.3\nlist\n",
		"create b bitmap:ip range 198.51.100.0/28\ncreate b hash:ip\nlist\n",
	} {
		var got [2]string
		for i, tool := range []string{"ipset", ours} {
			ns := netns.New(t, "h49rfl")
			c := IpsetGenCommand{Args: []string{"restore", "-f", IpsetGenFile}, Stdin: file}
			r := ipsetGenSide{ns: ns, tool: tool, dir: t.TempDir()}.run(c)
			got[i] = fmt.Sprintf("rc=%d\n%s%s", r.RC, normIpsetOutput(r.Stdout), r.Stderr)
			if r.RC == 0 {
				// (a failed restore changes nothing here, ipset keeps
				// the lines before the error)
				got[i] += "--- sets:\n" + ns.Run("", tool, "list", "-n").Stdout
			}
		}
		if got[0] != got[1] {
			t.Errorf("restore -f of %q:\n--- reference\n%s\n--- ours\n%s", file, got[0], got[1])
		}
	}
}
