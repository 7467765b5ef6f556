package kernel

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// GetPinnedBPF opens the BPF object pinned at path read-only (BPF_OBJ_GET
// with BPF_F_RDONLY), as libxt_bpf does for -m bpf --object-pinned, and
// returns its file descriptor.
func GetPinnedBPF(path string) (int, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	attr := struct {
		pathname  uint64
		bpfFD     uint32
		fileFlags uint32
	}{pathname: uint64(uintptr(unsafe.Pointer(p))), fileFlags: unix.BPF_F_RDONLY}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_OBJ_GET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(p)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
