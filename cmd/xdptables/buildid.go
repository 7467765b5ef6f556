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
// read rules pay for it; the next 28 KB are read only if the note is not
// in the first page.
func exeBuildID() string {
	fd, err := unix.Open("/proc/self/exe", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	var page [4 << 10]byte
	n, _ := unix.Pread(fd, page[:], 0)
	if id, ok := goBuildIDNote(page[:max(n, 0)]); ok || n < len(page) {
		return id
	}
	buf := make([]byte, 32<<10)
	n, _ = unix.Pread(fd, buf, 0)
	id, _ := goBuildIDNote(buf[:max(n, 0)])
	return id
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
