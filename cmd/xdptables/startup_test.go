package main

import (
	"os/exec"
	"strings"
	"testing"
)

// startupCostly are packages the command must not link: every package's
// init runs at every start, whatever the command, and these cost a
// measurable share of the 1.5 ms start for what one rarely used feature
// wants from them (runtime/metrics: its init builds the descriptions of
// all metrics, ~25 µs; the restore's GC pacer estimates the live heap
// from runtime.MemStats instead).
var startupCostly = []string{"runtime/metrics"}

func TestStartupImports(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		gotool = "/usr/local/go/bin/go"
	}
	out, err := exec.Command(gotool, "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	for _, p := range startupCostly {
		if deps[p] {
			t.Errorf("the command links %s", p)
		}
	}
}

// TestStartupGODEBUG: the binary's default GODEBUG turns off what a
// short-lived command does not need at its start.
func TestStartupGODEBUG(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		gotool = "/usr/local/go/bin/go"
	}
	out, err := exec.Command(gotool, "list", "-f", "{{.DefaultGODEBUG}}", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	if !strings.Contains(","+strings.TrimSpace(string(out))+",", ",updatemaxprocs=0,") {
		t.Errorf("default GODEBUG %q lacks updatemaxprocs=0", out)
	}
}
