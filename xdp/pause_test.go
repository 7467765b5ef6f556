package xdp

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestPauserAlive(t *testing.T) {
	now := time.Now()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting sleep to stand in for a pauser: %v", err)
	}
	start, ok := procStart(cmd.Process.Pid)
	if !ok || start == 0 {
		t.Fatalf("procStart of a running child: %d %v", start, ok)
	}
	child := Pauser{PID: cmd.Process.Pid, Start: start, Since: now.Unix()}
	me := self(now)
	st := &State{Pausers: []Pauser{me, child,
		{PID: child.PID, Start: start + 1, Since: now.Unix()},     // PID reused by another process
		{PID: child.PID, Start: start, Since: now.Unix() - 3600}}} // paused too long ago
	if got := otherPausers(st, now); len(got) != 1 || got[0] != child {
		t.Fatalf("live other pausers = %+v, want only the child %+v", got, child)
	}
	if !me.alive(now) || me.PID != os.Getpid() {
		t.Fatalf("self %+v is not alive", me)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := otherPausers(st, now); len(got) != 0 {
		t.Fatalf("pausers after the child exited: %+v", got)
	}
}

func TestProcStartCommandWithParens(t *testing.T) {
	// a command name with spaces and ')' must not shift the fields
	dir := t.TempDir()
	exe := dir + "/a b) c"
	if err := os.Symlink("/bin/sleep", exe); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "30")
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %q: %v", exe, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	got, ok := procStart(cmd.Process.Pid)
	mine, _ := procStart(os.Getpid())
	if !ok || got < mine {
		t.Fatalf("start of a child named %q: %d %v (this process started at %d)", exe, got, ok, mine)
	}
}
