package persist

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeRunner records calls; a call whose stdin contains "BROKEN" fails.
type fakeRunner struct {
	calls []string
	save  map[string]string // tool → output
}

func (f *fakeRunner) Run(tool string, args []string, in io.Reader, out io.Writer) error {
	var body string
	if in != nil {
		b, _ := io.ReadAll(in)
		body = string(b)
	}
	f.calls = append(f.calls, strings.TrimSpace(tool+" "+strings.Join(args, " ")))
	if strings.Contains(body, "BROKEN") {
		return errors.New("exit status 1")
	}
	if out != nil {
		fmt.Fprint(out, f.save[tool])
	}
	return nil
}

func write(t *testing.T, root, p, body string) string {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return full
}

func TestRestoreOrderAndTestFirst(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/etc/iptables/rules.v4", "*filter\nCOMMIT\n")
	write(t, root, "/etc/sysconfig/ip6tables", "*filter\nCOMMIT\n")
	write(t, root, "/etc/iptables/ipsets", "create s hash:ip\n")
	r := &fakeRunner{}
	if err := Restore(Options{Root: root, HaveIPSet: true}, r, false); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"iptables-restore --test", "ip6tables-restore --test",
		"ipset restore -exist", "iptables-restore", "ip6tables-restore",
	}
	if !reflect.DeepEqual(r.calls, want) {
		t.Errorf("calls %q, want %q", r.calls, want)
	}
}

func TestRestoreBrokenLoadsNothing(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/etc/iptables/rules.v4", "*filter\nCOMMIT\n")
	write(t, root, "/etc/iptables/rules.v6", "*filter\nBROKEN\n")
	r := &fakeRunner{}
	err := Restore(Options{Root: root, Kinds: []Kind{RulesV4, RulesV6}}, r, false)
	if err == nil || !strings.Contains(err.Error(), "rules.v6 does not load") || !strings.Contains(err.Error(), "nothing restored") {
		t.Fatalf("err = %v", err)
	}
	for _, c := range r.calls {
		if !strings.HasSuffix(c, "--test") {
			t.Errorf("loaded %q although a file is broken", c)
		}
	}
}

func TestRestoreMissing(t *testing.T) {
	root := t.TempDir()
	r := &fakeRunner{}
	// nothing saved: success, nothing run
	var log strings.Builder
	if err := Restore(Options{Root: root, Log: &log}, r, false); err != nil || len(r.calls) != 0 {
		t.Fatalf("err=%v calls=%q", err, r.calls)
	}
	if !strings.Contains(log.String(), "nothing to restore") {
		t.Errorf("log: %q", log.String())
	}
	// a named file that is missing fails
	err := Restore(Options{Explicit: [3]string{RulesV4: filepath.Join(root, "nope")}, Kinds: []Kind{RulesV4}}, r, false)
	if !errors.Is(err, ErrMissing) {
		t.Errorf("explicit missing: %v", err)
	}
	// a dangling symlink at a default path fails too
	if err := os.MkdirAll(filepath.Join(root, "etc/iptables"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/rules", filepath.Join(root, "etc/iptables/rules.v4")); err != nil {
		t.Fatal(err)
	}
	if err := Restore(Options{Root: root}, r, false); !errors.Is(err, ErrMissing) {
		t.Errorf("dangling symlink: %v", err)
	}
}

func TestRestoreSetsWithoutIPSet(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/etc/iptables/ipsets", "create s hash:ip\n")
	r := &fakeRunner{}
	err := Restore(Options{Root: root}, r, false)
	if err == nil || !strings.Contains(err.Error(), "no ipset support") || len(r.calls) != 0 {
		t.Fatalf("err=%v calls=%q", err, r.calls)
	}
}

func TestSave(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/etc/sysconfig/iptables", "old\n")
	o := Options{Root: root}
	l := SaveLayout(o)
	if l.Name != "rhel" {
		t.Fatalf("layout %s, want rhel (its file exists)", l.Name)
	}
	r := &fakeRunner{save: map[string]string{"iptables-save": "v4\n", "ip6tables-save": "v6\n"}}
	saved, err := Save(o, l, r)
	if err != nil || len(saved) != 2 {
		t.Fatalf("saved=%v err=%v", saved, err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "/etc/sysconfig/iptables"))
	if string(b) != "v4\n" {
		t.Errorf("iptables file %q", b)
	}
	if l := SaveLayout(Options{Root: t.TempDir()}); l.Name != "debian" {
		t.Errorf("empty root layout %s", l.Name)
	}
}
