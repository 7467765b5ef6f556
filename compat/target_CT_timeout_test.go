package compat

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// TestCTTimeoutKernelRefusal: -j CT --timeout with a policy the kernel
// does not have is the kernel's refusal (ENOENT, as xt CT's check gives
// iptables-nft), with a helper or events too; with one it has, or when
// the kernel cannot be asked, it is refused for want of an exact form.
func TestCTTimeoutKernelRefusal(t *testing.T) {
	saved := KernelHasCtTimeout
	defer func() { KernelHasCtTimeout = saved }()
	has, ok := false, true
	KernelHasCtTimeout = func(f Family, name string) (bool, bool) { return has && name == "pol", ok }
	exprsOf := func(args string) error {
		cmd, err := Parse(IPv4, strings.Fields(args), ParseOptions{Table: "raw"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cmd.Rules[0].Target.(*CTTarget).NftExprs(&NftContext{Family: IPv4, Table: "raw", Chain: cmd.Chain, Rule: cmd.Rules[0]})
		return err
	}
	for _, args := range []string{
		"-A PREROUTING -p tcp -j CT --timeout pol",
		"-A OUTPUT -p tcp -j CT --timeout pol --helper ftp",
		"-A PREROUTING -j CT --timeout pol --ctevents new",
	} {
		var kr *KernelRefusal
		if err := exprsOf(args); !errors.As(err, &kr) || kr.Errno != syscall.ENOENT {
			t.Errorf("%s, no policy: %v", args, err)
		}
	}
	has = true
	if err := exprsOf("-A PREROUTING -p tcp -j CT --timeout pol"); !errors.Is(err, ErrNoNative) {
		t.Errorf("policy there: %v", err)
	}
	has, ok = false, false
	if err := exprsOf("-A PREROUTING -p tcp -j CT --timeout pol"); !errors.Is(err, ErrNoNative) {
		t.Errorf("kernel not asked: %v", err)
	}
}
