package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"

	"github.com/xdptables/xdptables/translate"
)

// Rule digests name the build that wrote them (translate.SetBuild): the
// executable's Go build ID, which changes with any change to the program.
func init() {
	translate.SetBuild(exeBuildID)
}

// exeBuildID reads the Go build ID from the running executable's ELF note
// (".note.go.buildid", near the start of the file); "" when not found.
func exeBuildID() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 32<<10)
	n, _ := io.ReadFull(f, buf)
	buf = buf[:n]
	// the note: name size 4, description size, type 4, "Go\0\0", ID
	i := bytes.Index(buf, []byte("\x04\x00\x00\x00Go\x00\x00"))
	if i < 8 || binary.LittleEndian.Uint32(buf[i-8:i-4]) != 4 {
		return ""
	}
	size := int(binary.LittleEndian.Uint32(buf[i-4 : i]))
	start := i + 8
	if size <= 0 || size > 256 || start+size > len(buf) {
		return ""
	}
	return string(buf[start : start+size])
}
