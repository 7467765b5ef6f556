package main

import (
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
	"golang.org/x/sys/unix"
)

// The iptables personalities ask the kernel for the xtables extensions
// that run as such when they load them, as iptables does (compat prints
// its notice when the kernel lacks one).
func init() {
	compat.KernelHasXt = func(f compat.Family, name string, rev uint32, target bool) (bool, bool) {
		conn, err := lookupConn()
		if err != nil {
			return false, false
		}
		has, err := conn.HasXtExtension(kernel.Family(f), name, rev, target)
		return has, err == nil
	}
}

// -j SECMARK asks the kernel whether it maps the security context, as
// xt_SECMARK's check does for iptables-nft (see compat.KernelMapsSecctx).
func init() {
	compat.KernelMapsSecctx = func(f compat.Family, ctx string) (bool, bool) {
		conn, err := kernel.Open()
		if err != nil {
			return false, false
		}
		defer conn.Close()
		maps, err := conn.MapsSecctx(kernel.Family(f), ctx)
		return maps, err == nil
	}
}

// -m bpf --object-pinned asks the kernel for the pinned object, as
// libxt_bpf does (see compat.KernelGetsPinnedBPF).
func init() {
	compat.KernelGetsPinnedBPF = func(path string) bool {
		fd, err := kernel.GetPinnedBPF(path)
		if err != nil {
			return false
		}
		unix.Close(fd)
		return true
	}
}

// -j CT --timeout asks the kernel for the timeout policy, as xt CT's
// check does for iptables-nft (see compat.KernelHasCtTimeout).
func init() {
	compat.KernelHasCtTimeout = func(f compat.Family, name string) (bool, bool) {
		conn, err := kernel.Open()
		if err != nil {
			return false, false
		}
		defer conn.Close()
		has, err := conn.HasCtTimeout(kernel.Family(f), name)
		return has, err == nil
	}
}
