package ruleset

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestStreamableSections(t *testing.T) {
	input := []byte("# x\n*raw\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j DROP\nCOMMIT\n" +
		"*filter\n:INPUT ACCEPT [0:0]\n[1:2] -A INPUT -j ACCEPT\n-N web\n-I INPUT -j web\nCOMMIT\n" +
		"*nat\n-A POSTROUTING -j ACCEPT\nCOMMIT\n*nat\n-A POSTROUTING -j RETURN\nCOMMIT\n" +
		"*mangle\n--append PREROUTING -j ACCEPT\n[3:4]-A PREROUTING -j ACCEPT\r\nCOMMIT")
	// and with a line longer than the read buffer
	long := append(append([]byte(nil), input...), []byte("\n# "+strings.Repeat("x", 200<<10)+"\n")...)
	for _, c := range []struct {
		name  string
		in    []byte
		lines int
	}{{"plain", input, 21}, {"long line", long, 22}} {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = bytes.NewReader(c.in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			got, err := streamableSections(r, RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[int]bool{2: true, 18: true} // raw and mangle; filter has -I, nat comes twice
			if len(got.tables) != len(want) || !got.tables[2] || !got.tables[18] {
				t.Errorf("%s: streamable sections %v, want %v", c.name, got.tables, want)
			}
			if got.size != int64(len(c.in)) || got.lines != c.lines {
				t.Errorf("%s: %d bytes, %d lines; want %d, %d", c.name, got.size, got.lines, len(c.in), c.lines)
			}
		}
	}
	got, _ := streamableSections(bytes.NewReader(input), RestoreOptions{Noflush: true})
	if len(got.tables) != 0 {
		t.Error("--noflush sections must not stream")
	}
}
