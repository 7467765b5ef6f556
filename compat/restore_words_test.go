package compat

import (
	"reflect"
	"testing"
)

// TestRestoreWordsFastPaths: the substring fast paths of RestoreWords give
// what building every word gives, for every line of up to 7 characters
// made of letters, blanks, quotes and backslashes.
func TestRestoreWordsFastPaths(t *testing.T) {
	alphabet := []byte{'a', 'b', ' ', '\t', '"', '\\'}
	buf := make([]byte, 0, 7)
	var walk func(n int)
	walk = func(n int) {
		s := string(buf)
		got, want := RestoreWords(s), restoreWordsBuilt(s)
		if len(got) != 0 || len(want) != 0 {
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: %q, want %q", s, got, want)
			}
		}
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			buf = append(buf, c)
			walk(n - 1)
			buf = buf[:len(buf)-1]
		}
	}
	walk(7)
}
