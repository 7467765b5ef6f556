package ruleset

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
)

// recorder writes down every call of the parser, and fails at line
// failAt.
type recorder struct {
	log    strings.Builder
	failAt int
}

var errRecorder = errors.New("handler failed")

func (r *recorder) Table(t *compat.RestoreTable) error {
	fmt.Fprintf(&r.log, "table %s %d\n", t.Name, t.Line)
	return nil
}
func (r *recorder) Chain(t *compat.RestoreTable, d compat.ChainDecl) error {
	fmt.Fprintf(&r.log, "chain %s %s %d\n", t.Name, d.Name, d.Line)
	return nil
}
func (r *recorder) Command(t *compat.RestoreTable, rc compat.RestoreCmd) error {
	fmt.Fprintf(&r.log, "cmd %s %d %s\n", t.Name, rc.Line, compat.SaveRule(rc.Cmd.Chain, rc.Cmd.Rules[0], false))
	if rc.Line == r.failAt {
		return errRecorder
	}
	return nil
}
func (r *recorder) Commit(t *compat.RestoreTable) error {
	fmt.Fprintf(&r.log, "commit %s %d\n", t.Name, t.CommitLine)
	return nil
}

// TestParseAhead: the parse running ahead calls the handler, Warn and
// Echo as the plain parse does, stops where the handler fails, and
// reports a parse error after the calls for the lines before it.
func TestParseAhead(t *testing.T) {
	in := kubeRestore(3000)
	// a warning and a comment in the middle, a parse error at the end
	mid := bytes.Index(in, []byte("-A KUBE-SEP-0000001"))
	in = append(in[:mid:mid], append([]byte("# note\n-A INPUT -m time --localtz -j ACCEPT\n"), in[mid:]...)...)
	bad := append(append([]byte(nil), in...), "*filter\n-A INPUT --bogus\nCOMMIT\n"...)
	lines := bytes.Count(in, []byte("\n"))
	for _, c := range []struct {
		name   string
		in     []byte
		failAt int
	}{{"whole", in, 0}, {"handler fails", in, 1500}, {"handler fails late", in, lines - 2}, {"parse error", bad, 0}, {"handler fails first", bad, 2000}} {
		run := func(parse func(*recorder, compat.RestoreOptions) error) (string, error) {
			r := &recorder{failAt: c.failAt}
			o := compat.RestoreOptions{Family: compat.IPv4, Prog: "iptables-restore",
				Warn: func(s string) { fmt.Fprintf(&r.log, "warn %q\n", s) },
				Echo: func(s string) { fmt.Fprintf(&r.log, "echo %q\n", s) }}
			err := parse(r, o)
			return r.log.String(), err
		}
		want, wantErr := run(func(r *recorder, o compat.RestoreOptions) error {
			return compat.ParseRestoreFunc(bytes.NewReader(c.in), o, r)
		})
		got, gotErr := run(func(r *recorder, o compat.RestoreOptions) error {
			return parseAhead(bytes.NewReader(c.in), o, r)
		})
		if got != want {
			t.Errorf("%s: calls differ (%d and %d bytes of log)", c.name, len(got), len(want))
		}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s: error %v, want %v", c.name, gotErr, wantErr)
		}
		if c.failAt != 0 && !errors.Is(gotErr, errRecorder) {
			t.Errorf("%s: error %v, want the handler's", c.name, gotErr)
		}
		if !strings.Contains(want, "warn ") || !strings.Contains(want, "echo ") {
			t.Errorf("%s: no warning or comment echoed", c.name)
		}
	}
}
