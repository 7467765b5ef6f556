package main

import (
	"bytes"
	"encoding/binary"

	"github.com/xdptables/xdptables/translate"
	"golang.org/x/sys/unix"
)

// Rule digests name the build that wrote them (translate.SetBuild): the
// executable's Go build ID, which changes with any change to the program.
func init() {
	translate.SetBuild(exeBuildID)
}

// exeBuildID reads the Go build ID from the running executable's ELF note
// (".note.go.buildid", which the Go linker puts in the file's first page);
// "" when not found. It reads /proc/self/exe itself, not the file at its
// path: after an upgrade that path may be another build. One page, read
// without an os.File (no poller registration), is all most commands that
// read rules pay for it; up to 32 KB only if the note is not in it. (The
// buffers are made with a size the compiler does not know, so that they
// are not put on the stack: a frame of that size would grow the main
// goroutine's stack, a copy of it and fresh pages, in every command.)
func exeBuildID() string {
	fd, err := unix.Open("/proc/self/exe", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	for _, size := range []int{4 << 10, 32 << 10} {
		buf := make([]byte, size)
		n, _ := unix.Pread(fd, buf, 0)
		if id, ok := goBuildIDNote(buf[:max(n, 0)]); ok || n < size {
			return id
		}
	}
	return ""
}

// goBuildIDNote finds the Go build ID note in buf, the start of an ELF
// file: name size 4, description size, type 4, "Go\0\0", the ID. ok is
// false when the note is not (wholly) in buf.
func goBuildIDNote(buf []byte) (id string, ok bool) {
	i := bytes.Index(buf, []byte("\x04\x00\x00\x00Go\x00\x00"))
	if i < 8 || binary.LittleEndian.Uint32(buf[i-8:i-4]) != 4 {
		return "", false
	}
	size := int(binary.LittleEndian.Uint32(buf[i-4 : i]))
	start := i + 8
	if size <= 0 || size > 256 || start+size > len(buf) {
		return "", false
	}
	return string(buf[start : start+size]), true
}
