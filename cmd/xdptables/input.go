package main

import (
	"bufio"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/ruleset"
)

// restoreSource returns the restore file in: a regular file (also one
// given on stdin with "<") is read from the file each time it is needed,
// so that a large restore does not keep its text in memory next to its
// batch. Anything else (a pipe) is copied into an anonymous memory file
// first and read from there, or into memory where there is none.
func restoreSource(in io.Reader) (ruleset.RestoreSource, error) {
	if f, ok := in.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if pos, err := f.Seek(0, io.SeekCurrent); err == nil {
				return fileSource{f: f, off: pos}, nil
			}
		}
	}
	if fd, err := unix.MemfdCreate("xdptables-restore", unix.MFD_CLOEXEC); err == nil {
		m := os.NewFile(uintptr(fd), "restore input")
		if _, err := io.Copy(m, in); err != nil {
			m.Close()
			return nil, err
		}
		return fileSource{f: m}, nil
	}
	b, err := io.ReadAll(in)
	return ruleset.BytesSource(b), err
}

// fileSource is a restore file read from offset off of f, to its end.
type fileSource struct {
	f   *os.File
	off int64
}

// Open returns a reader of the file from its start offset.
func (s fileSource) Open() (io.Reader, error) {
	return bufio.NewReaderSize(io.NewSectionReader(s.f, s.off, 1<<62), 64<<10), nil
}
