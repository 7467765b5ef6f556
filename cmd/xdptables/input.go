package main

import (
	"io"
	"os"
)

// readInput reads all of in. A regular file (also one given on stdin
// with "<") is read into a buffer of its size: a restore keeps its input
// for retries, and io.ReadAll's doubling would keep up to twice that, and
// copy it on the way.
func readInput(in io.Reader) ([]byte, error) {
	f, ok := in.(*os.File)
	if !ok {
		return io.ReadAll(in)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return io.ReadAll(in)
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil || pos > st.Size() {
		return io.ReadAll(in)
	}
	buf := make([]byte, st.Size()-pos)
	n, err := io.ReadFull(f, buf)
	buf = buf[:n]
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return buf, nil // the file shrank meanwhile
	}
	if err != nil {
		return buf, err
	}
	rest, err := io.ReadAll(f) // or grew
	return append(buf, rest...), err
}
