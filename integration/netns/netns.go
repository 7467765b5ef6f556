// Package netns creates throwaway network namespaces for tests and runs
// commands inside them.
package netns

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var counter atomic.Int64

// NS is a named network namespace made with `ip netns add`.
type NS struct {
	Name string
}

// RequireRoot skips t when not root, with a clear message.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP-ROOT: kernel test needs root (network namespaces, nftables)")
	}
}

// Name is a fresh namespace name for tag, for a test that has to make
// and delete the namespace itself (New does both).
func Name(tag string) string {
	// XDPT_NETNS_TAG marks the namespaces of one run (several people
	// testing on one machine each find and remove their own)
	if own := os.Getenv("XDPT_NETNS_TAG"); own != "" {
		tag = own + "-" + tag
	}
	// (the number is this call's own: parallel tests each take one)
	return fmt.Sprintf("xdpt-%s-%d-%d", tag, os.Getpid(), counter.Add(1))
}

// New creates a fresh namespace, removed when t ends.
func New(t testing.TB, tag string) *NS {
	t.Helper()
	RequireRoot(t)
	name := Name(tag)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	ns := &NS{Name: name}
	t.Cleanup(func() {
		// xdptables keeps per-namespace XDP state under /run/xdptables/INODE
		// (and pins under the fallback bpffs): remove what a test left
		// attached there, or a later namespace with the same inode would
		// find it
		var st syscall.Stat_t
		statErr := syscall.Stat(filepath.Join("/run/netns", name), &st)
		_ = exec.Command("ip", "netns", "del", name).Run()
		if statErr == nil {
			id := strconv.FormatUint(st.Ino, 10)
			_ = os.RemoveAll(filepath.Join("/run/xdptables", id))
			_ = os.RemoveAll(filepath.Join("/run/xdptables/bpffs/xdptables", id))
		}
	})
	return ns
}

// Result is the outcome of a command.
type Result struct {
	Stdout, Stderr string
	RC             int
}

// Run runs argv inside the namespace with stdin, bounded by a timeout.
func (n *NS) Run(stdin string, argv ...string) Result {
	return n.RunTimeout(60, stdin, argv...)
}

// RunTimeout is Run with a timeout of secs seconds.
func (n *NS) RunTimeout(secs int, stdin string, argv ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()
	full := append([]string{"netns", "exec", n.Name}, argv...)
	cmd := exec.CommandContext(ctx, "ip", full...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if stdin != "" {
		cmd.Stdin = bytes.NewBufferString(stdin)
	}
	err := cmd.Run()
	rc := 0
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			rc = ee.ExitCode()
		} else {
			rc = -1
			se.WriteString(err.Error())
		}
	}
	return Result{Stdout: so.String(), Stderr: se.String(), RC: rc}
}

// Have reports whether a reference tool is installed.
func Have(tool string) bool {
	_, err := exec.LookPath(tool)
	return err == nil
}
