package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGoldenReplay checks our parser and printer against the recorded
// reference results without root: every corpus line's error text, exit
// status and -S print must match what iptables-nft produced.
func TestGoldenReplay(t *testing.T) {
	files, _ := filepath.Glob("../testdata/corpus/*.golden.jsonl")
	if len(files) == 0 {
		t.Fatal("no golden files: run `go test ./integration -run TestParseDiff -update` as root")
	}
	for _, file := range files {
		gs, err := ReadGolden(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			if msg := CheckGolden(g); msg != "" {
				t.Errorf("%s:%d: %s %s\n%s", filepath.Base(file), g.Line, g.Tool, strings.Join(g.Args, " "), msg)
			}
		}
	}
}
