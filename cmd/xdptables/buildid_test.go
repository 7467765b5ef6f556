package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestExeBuildID(t *testing.T) {
	id := exeBuildID()
	if strings.Count(id, "/") < 1 {
		t.Fatalf("build ID %q", id)
	}
	// the Go tool reads the same ID, when it is around
	exe, err := exec.LookPath("go")
	if err != nil {
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "tool", "buildid", self).Output()
	if err == nil && strings.TrimSpace(string(out)) != id {
		t.Errorf("build ID %q, go tool buildid says %q", id, out)
	}
}
