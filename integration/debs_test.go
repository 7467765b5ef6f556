package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// fetchDebs downloads Debian packages pkgs with apt-get into dir, which
// holds no other .deb, and unpacks them with dpkg -x into root: the
// real-client tests' programs, never installed. When the first download
// fails, apt-get update runs once before the second (a fresh machine may
// have no package lists yet).
func fetchDebs(dir, root string, pkgs []string) error {
	download := func() ([]byte, error) {
		args := append([]string{"-q", "-o", "APT::Sandbox::User=root", "download"}, pkgs...)
		cmd := exec.Command("apt-get", args...)
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	if _, err := download(); err != nil {
		if out, err := exec.Command("apt-get", "-q", "update").CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get update failed (the test needs Debian's package mirrors to get %s): %v\n%s",
				strings.Join(pkgs, " "), err, out)
		}
		if out, err := download(); err != nil {
			return fmt.Errorf("apt-get download %s failed (the test needs Debian's package mirrors): %v\n%s",
				strings.Join(pkgs, " "), err, out)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
	if len(files) != len(pkgs) {
		return fmt.Errorf("apt-get download gave %d packages, want %d: %v", len(files), len(pkgs), files)
	}
	for _, f := range files {
		if out, err := exec.Command("dpkg", "-x", f, root).CombinedOutput(); err != nil {
			return fmt.Errorf("dpkg -x %s: %v\n%s", filepath.Base(f), err, out)
		}
	}
	return nil
}
