package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// LinkDir builds xdptables once and returns a directory holding it and
// the personality symlinks (iptables, iptables-nft, iptables-nft-save…).
func LinkDir(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "xdptables-bin-")
		if err != nil {
			binErr = err
			return
		}
		bin := filepath.Join(dir, "xdptables")
		// static, as the package and make build build it
		build := exec.Command("go", "build", "-o", bin, "github.com/xdptables/xdptables/cmd/xdptables")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		if err != nil {
			binErr = &buildError{string(out)}
			return
		}
		if out, err := exec.Command(bin, "links", dir).CombinedOutput(); err != nil {
			binErr = &buildError{string(out)}
			return
		}
		binDir = dir
	})
	if binErr != nil {
		t.Fatalf("building xdptables: %v", binErr)
	}
	return binDir
}

type buildError struct{ out string }

func (e *buildError) Error() string { return e.out }
