package integration

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestCanonMatchesSave: `xdptables canon FILE` prints what iptables-save
// of the reference prints after iptables-restore of FILE.
func TestCanonMatchesSave(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	files, _ := filepath.Glob("../testdata/realworld/*.rules")
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		ns := netns.New(t, "cn")
		if r := ns.Run("", "iptables-nft-restore", abs); r.RC != 0 {
			continue // the kernel refuses something in it: nothing to compare
		}
		ref := normalizeSave(ns.Run("", "iptables-nft-save").Stdout)
		out, err := exec.Command(filepath.Join(dir, "xdptables"), "canon", abs).Output()
		if err != nil {
			t.Fatalf("%s: canon: %v", f, err)
		}
		ours := normalizeSave(string(out))
		// the reference names itself iptables-nft-save in its header
		ref = normalizeProg(ref)
		ours = normalizeProg(ours)
		if ref != ours {
			t.Errorf("%s:\nreference:\n%s\ncanon:\n%s", filepath.Base(f), ref, ours)
		}
	}
}

func normalizeProg(s string) string {
	return regexpReplace(s, `iptables(-nft)?-save`, "iptables-save")
}

// regexpReplace replaces every match of pattern in s.
func regexpReplace(s, pattern, repl string) string {
	return regexp.MustCompile(pattern).ReplaceAllString(s, repl)
}
