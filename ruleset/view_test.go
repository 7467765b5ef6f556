package ruleset

import (
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
)

func run(t *testing.T, v *View, line string) error {
	t.Helper()
	cmd, err := compat.Parse(v.Family, strings.Fields(line), compat.ParseOptions{})
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return v.Apply(cmd)
}

func listRules(t *testing.T, v *View) string {
	t.Helper()
	out, err := v.ListRules(&compat.Command{Op: compat.OpListRules})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The semantics follow iptables-nft 1.8.9 (spec §1, §5); the same
// sequences run against the kernel in integration/TestScriptDiff.
func TestViewCommands(t *testing.T) {
	v := NewView(compat.IPv4, "filter")
	v.Complete = true
	steps := []struct {
		line string
		err  error
	}{
		{"-A INPUT -p tcp --dport 22 -j ACCEPT", nil},
		{"-I INPUT -i lo -j ACCEPT", nil},
		{"-I INPUT 2 -s 1.1.1.1,2.2.2.2 -j DROP", nil},
		{"-I INPUT 9 -j DROP", compat.ErrIndexInsert},
		{"-R INPUT 9 -j DROP", compat.ErrIndexReplace},
		{"-D INPUT 9", compat.ErrIndexDelete},
		{"-A NOPE -j DROP", compat.ErrNoChain},
		{"-C INPUT -p tcp --dport 22 -j ACCEPT", nil},
		{"-C INPUT -p tcp --dport 23 -j ACCEPT", compat.ErrBadRule},
		{"-D NOPE -j ACCEPT", compat.ErrBadRule},
		{"-N web", nil},
		{"-N web", compat.ErrChainExists},
		{"-N INPUT", compat.ErrChainExists},
		{"-A web -j RETURN", nil},
		{"-P web DROP", compat.ErrBadBuiltin},
		{"-P web QUEUE", compat.ErrBadPolicy},
		{"-P nope accept", compat.ErrBadPolicy},
		{"-P INPUT RETURN", compat.ErrBadPolicy},
		{"-P INPUT DROP", nil},
		{"-X INPUT", compat.ErrChainNotEmpty},
		{"-E web INPUT", compat.ErrFileExists},
		{"-E nope x", compat.ErrNoChain},
		// the new name is looked at first; built-in names are taken
		{"-E nope web", compat.ErrFileExists},
		{"-E nope FORWARD", compat.ErrFileExists},
		{"-N u1", nil},
		// no length limit of its own: the kernel's (255) applies
		{"-E u1 " + strings.Repeat("x", 40), nil},
		{"-E nope " + strings.Repeat("x", 40), compat.ErrFileExists},
		{"-X nope", compat.ErrNoChain},
	}
	for _, s := range steps {
		if err := run(t, v, s.line); err != s.err {
			t.Errorf("%s: got %v, want %v", s.line, err, s.err)
		}
	}
	want := "-P INPUT DROP\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n-N web\n-N " + strings.Repeat("x", 40) + "\n" +
		"-A INPUT -i lo -j ACCEPT\n-A INPUT -s 2.2.2.2/32 -j DROP\n-A INPUT -s 1.1.1.1/32 -j DROP\n" +
		"-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT\n-A web -j RETURN\n"
	if got := listRules(t, v); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// a referenced or non-empty chain cannot go
	if err := run(t, v, "-A INPUT -j web"); err != nil {
		t.Fatal(err)
	}
	if err := run(t, v, "-F web"); err != nil {
		t.Fatal(err)
	}
	err := run(t, v, "-X web")
	if ke, ok := err.(*KernelError); !ok || ke.Error() != "CHAIN_DEL failed (Device or resource busy): chain web" {
		t.Errorf("-X of referenced chain: %v", err)
	}
	// -X without a name keeps built-ins with rules or a DROP policy
	for _, l := range []string{"-F", "-X"} {
		if err := run(t, v, l); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	if got := listRules(t, v); got != "-P INPUT DROP\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n" {
		t.Errorf("after -F -X:\n%s", got)
	}
	if !v.Chains["INPUT"].InKernel && !v.Chains["INPUT"].create {
		t.Errorf("INPUT with DROP policy must stay")
	}
	if c := v.Chains["FORWARD"]; c != nil && !c.deleted && c.create {
		t.Errorf("FORWARD must not be created by -X")
	}
}

func TestRestoreSection(t *testing.T) {
	v := NewView(compat.IPv4, "filter")
	v.AddChain(&ChainState{Name: "INPUT", Builtin: true, Policy: "DROP"})
	v.AddChain(&ChainState{Name: "old", Rules: nil})
	file := "*filter\n:INPUT ACCEPT [1:2]\n:web - [0:0]\n-A INPUT -j web\n-A web -j ACCEPT\nCOMMIT\n"
	tables, err := compat.ParseRestore(strings.NewReader(file), compat.RestoreOptions{Family: compat.IPv4, Prog: "iptables-restore", Counters: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.restoreSection(tables[0], RestoreOptions{Counters: true}); err != nil {
		t.Fatal(err)
	}
	if !v.Chains["old"].deleted {
		t.Error("undeclared chain must be deleted in flush mode")
	}
	if c := v.Chains["INPUT"]; c.Policy != "ACCEPT" || c.Counters == nil || c.Counters.Packets != 1 || !c.policySet {
		t.Errorf("policy and counters not taken: %+v", c)
	}
	got := listRules(t, v)
	want := "-P INPUT ACCEPT\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n-N web\n-A INPUT -j web\n-A web -j ACCEPT\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// a jump to a chain that never appears fails at the COMMIT line
	bad := "*filter\n-A INPUT -j nowhere\nCOMMIT\n"
	tables, _ = compat.ParseRestore(strings.NewReader(bad), compat.RestoreOptions{Family: compat.IPv4, Prog: "iptables-restore"})
	err = NewView(compat.IPv4, "filter").restoreSection(tables[0], RestoreOptions{})
	if re, ok := err.(*compat.RestoreError); !ok || re.Line != 3 {
		t.Errorf("jump check: %v", err)
	}
}

// -P resets the policy counters and, as iptables-nft, ignores -c.
func TestViewPolicyCounters(t *testing.T) {
	v := NewView(compat.IPv4, "filter")
	v.Complete = true
	if err := run(t, v, "-P INPUT DROP -c 5 6"); err != nil {
		t.Fatal(err)
	}
	if c := v.Chains["INPUT"].Counters; c == nil || *c != (compat.Counters{}) {
		t.Errorf("policy counters %+v, want 0 0", c)
	}
}

// ":FORWARD -" in a --noflush restore keeps the chain's policy; without
// --noflush the section makes the chain anew (ACCEPT).
func TestRestoreBuiltinDashKeepsPolicy(t *testing.T) {
	for _, noflush := range []bool{true, false} {
		v := NewView(compat.IPv4, "filter")
		v.Complete = true
		v.AddChain(&ChainState{Name: "FORWARD", Builtin: true, InKernel: true, Policy: compat.VerdictDrop})
		ts, err := compat.ParseRestore(strings.NewReader("*filter\n:FORWARD - [1:2]\nCOMMIT\n"), compat.RestoreOptions{Prog: "iptables-restore"})
		if err != nil {
			t.Fatal(err)
		}
		if err := v.ApplySection(ts[0], RestoreOptions{Noflush: noflush}); err != nil {
			t.Fatal(err)
		}
		want := compat.VerdictAccept
		if noflush {
			want = compat.VerdictDrop
		}
		if got := v.Chains["FORWARD"].Policy; got != want {
			t.Errorf("noflush %v: policy %s, want %s", noflush, got, want)
		}
	}
}

// -E in a restore section takes effect at its COMMIT: the chain keeps its
// old name up to there, and one the section made cannot be renamed.
func TestRestoreRenameAtCommit(t *testing.T) {
	apply := func(file string) (*View, error) {
		v := NewView(compat.IPv4, "filter")
		v.Complete = true
		v.AddChain(&ChainState{Name: "u1", InKernel: true})
		ts, err := compat.ParseRestore(strings.NewReader(file), compat.RestoreOptions{Prog: "iptables-restore"})
		if err != nil {
			t.Fatal(err)
		}
		return v, v.ApplySection(ts[0], RestoreOptions{Noflush: true})
	}
	if _, err := apply("*filter\n-E u1 u2\n-A u2 -j ACCEPT\nCOMMIT\n"); err == nil || !strings.Contains(err.Error(), compat.ErrNoChain.Msg) {
		t.Errorf("-A by the new name: %v", err)
	}
	v, err := apply("*filter\n-E u1 u2\n-A u1 -j ACCEPT\nCOMMIT\n")
	if err != nil || v.Chains["u2"] == nil || len(v.Chains["u2"].Rules) != 1 {
		t.Errorf("-A by the old name: %v", err)
	}
	if _, err := apply("*filter\n-N D\n-E D E\nCOMMIT\n"); err == nil || !strings.Contains(compat.FormatRestore(err, "iptables-restore"), "line 3: CHAIN_RENAME failed (No such file or directory): chain E") {
		t.Errorf("-E of a chain made in the section: %v", err)
	}
}
