package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
)

// RestoreGolden is the reference's answer to `iptables-nft-restore
// --test ARGS FILE` for one file of testdata/restore/parse.
type RestoreGolden struct {
	File   string   `json:"file"`
	Args   []string `json:"args,omitempty"`
	RC     int      `json:"rc"`
	Stderr string   `json:"stderr,omitempty"`
}

const restoreGoldenPath = "../testdata/restore/parse/golden.jsonl"

func restoreArgs(file string) []string {
	data, err := os.ReadFile(strings.TrimSuffix(file, ".rules") + ".args")
	if err != nil {
		return nil
	}
	return strings.Fields(string(data))
}

// TestRestoreParseDiff compares our restore-file parser with the
// reference's --test mode on every file of testdata/restore/parse.
func TestRestoreParseDiff(t *testing.T) {
	netns.RequireRoot(t)
	files, _ := filepath.Glob("../testdata/restore/parse/*.rules")
	ns := netns.New(t, "rp")
	var gs []RestoreGolden
	for _, f := range files {
		args := restoreArgs(f)
		abs, _ := filepath.Abs(f)
		r := ns.Run("", append(append([]string{"iptables-nft-restore", "--test"}, args...), abs)...)
		g := RestoreGolden{File: filepath.Base(f), Args: args, RC: r.RC, Stderr: r.Stderr}
		gs = append(gs, g)
		if msg := CheckRestoreGolden(g); msg != "" {
			t.Errorf("%s: %s", g.File, msg)
		}
	}
	if *update {
		var b strings.Builder
		for _, g := range gs {
			j, _ := json.Marshal(g)
			b.Write(j)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(restoreGoldenPath, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestoreParseReplay replays the recorded reference answers (no root).
func TestRestoreParseReplay(t *testing.T) {
	data, err := os.ReadFile(restoreGoldenPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var g RestoreGolden
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatal(err)
		}
		if msg := CheckRestoreGolden(g); msg != "" {
			t.Errorf("%s: %s", g.File, msg)
		}
	}
}

// CheckRestoreGolden parses the file with our parser and compares.
func CheckRestoreGolden(g RestoreGolden) string {
	o := compat.RestoreOptions{Family: compat.IPv4, Prog: "iptables-nft-restore"}
	for i, a := range g.Args {
		switch a {
		case "-c", "--counters":
			o.Counters = true
		case "-T", "--table":
			o.Table = g.Args[i+1]
		}
	}
	f, err := os.Open(filepath.Join("../testdata/restore/parse", g.File))
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	_, perr := compat.ParseRestore(f, o)
	if perr == nil {
		if g.RC == 0 || kernelLevelError(Golden{RC: g.RC, Stderr: g.Stderr}) {
			return ""
		}
		return "reference failed (rc " + itoa(g.RC) + "):\n" + g.Stderr + "we accepted it"
	}
	got := compat.FormatRestore(perr, o.Prog)
	rc := compat.StatusOfRestore(perr)
	if got != g.Stderr || rc != g.RC {
		return "differs:\nref (rc " + itoa(g.RC) + "):\n" + g.Stderr + "ours (rc " + itoa(rc) + "):\n" + got
	}
	return ""
}
