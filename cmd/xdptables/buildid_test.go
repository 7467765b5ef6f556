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

// TestGoBuildIDNote: a note cut off by the end of the page read is not
// taken (exeBuildID then reads further); a whole one is.
func TestGoBuildIDNote(t *testing.T) {
	note := append([]byte("\x04\x00\x00\x00\x05\x00\x00\x00\x04\x00\x00\x00Go\x00\x00"), "ab/cd"...)
	buf := append(make([]byte, 100), note...)
	if id, ok := goBuildIDNote(buf); !ok || id != "ab/cd" {
		t.Errorf("whole note: %q, %v", id, ok)
	}
	if id, ok := goBuildIDNote(buf[:len(buf)-2]); ok || id != "" {
		t.Errorf("cut note: %q, %v", id, ok)
	}
}
