package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// errnoText is the C library's text for an error (capitalised, as
// strerror prints it), e.g. "No such file or directory".
func errnoText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func progName(argv0 string) string { return filepath.Base(argv0) }
