package ruleset

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
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

// prepRecorder is a recorder whose -A lines are prepared ahead, as the
// restore's are: it checks that every one comes to the handler prepared,
// with what its translation on the handler's goroutine gives.
type prepRecorder struct {
	*recorder
	t        *testing.T
	prepared atomic.Int64
}

func (r *prepRecorder) prepare(ev *parseEvent) {
	if ev.rc.Cmd.Op == compat.OpAppend {
		ev.pre = prepareRules(ev.t.Name, ev.rc.Cmd, ev.rc.Line, ev.preOne[:0])
		r.prepared.Add(1)
	}
}

func (r *prepRecorder) preparedCommand(t *compat.RestoreTable, rc compat.RestoreCmd, pre []preparedRule) error {
	if rc.Cmd.Op == compat.OpAppend {
		// as the handler translated them before: no encoding, the digest
		// taken over kernel.AppendListed's form
		want := make([]preparedRule, len(rc.Cmd.Rules))
		for i, rule := range rc.Cmd.Rules {
			want[i].exact = compat.ExactSpec(rule)
			want[i].spec, want[i].err = ruleSpecText(t.Name, rc.Cmd.Chain, &RuleState{Rule: rule, Line: rc.Line}, want[i].exact)
		}
		if len(pre) != len(want) {
			r.t.Errorf("line %d: %d rules prepared, want %d", rc.Line, len(pre), len(want))
		}
		for i := range min(len(pre), len(want)) {
			p, w := pre[i], want[i]
			if p.exact != w.exact || fmt.Sprint(p.err) != fmt.Sprint(w.err) || len(p.spec.Exprs) != len(w.spec.Exprs) || !bytes.Equal(p.spec.UserData, w.spec.UserData) {
				r.t.Errorf("line %d: prepared %q %v %d exprs, want %q %v %d", rc.Line, p.exact, p.err, len(p.spec.Exprs), w.exact, w.err, len(w.spec.Exprs))
			}
			if p.err == nil && p.spec.Encoded == nil {
				r.t.Errorf("line %d: %q not encoded ahead", rc.Line, p.exact)
			}
		}
	}
	return r.recorder.Command(t, rc)
}

// TestParseAheadPrepared: with a handler that prepares its commands
// ahead (on other goroutines, several chunks at once), the calls, their
// order and the error are those of the plain parse, and every -A line
// reaches the handler prepared as the handler would translate it itself.
func TestParseAheadPrepared(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("parseAhead parses in line with one CPU")
	}
	in := kubeRestore(3000)
	// a line whose translation fails, a warning and a comment in the
	// middle, a parse error at the end
	mid := bytes.Index(in, []byte("-A KUBE-SEP-0000001"))
	in = append(in[:mid:mid], append([]byte("# note\n-A INPUT -m time --localtz -j ACCEPT\n-A INPUT -m set --match-set foo src -j ACCEPT\n-A INPUT -s 198.51.100.1,203.0.113.0/24 -p udp --dport 53 -j ACCEPT\n"), in[mid:]...)...)
	bad := append(append([]byte(nil), in...), "*filter\n-A INPUT --bogus\nCOMMIT\n"...)
	lines := bytes.Count(in, []byte("\n"))
	for _, c := range []struct {
		name   string
		in     []byte
		failAt int
	}{{"whole", in, 0}, {"handler fails", in, 1500}, {"handler fails late", in, lines - 2}, {"parse error", bad, 0}} {
		newOpts := func(r *recorder) compat.RestoreOptions {
			return compat.RestoreOptions{Family: compat.IPv4, Prog: "iptables-restore",
				Warn: func(s string) { fmt.Fprintf(&r.log, "warn %q\n", s) },
				Echo: func(s string) { fmt.Fprintf(&r.log, "echo %q\n", s) }}
		}
		plain := &recorder{failAt: c.failAt}
		wantErr := compat.ParseRestoreFunc(bytes.NewReader(c.in), newOpts(plain), plain)
		ahead := &prepRecorder{recorder: &recorder{failAt: c.failAt}, t: t}
		gotErr := parseAhead(bytes.NewReader(c.in), newOpts(ahead.recorder), ahead)
		if got, want := ahead.log.String(), plain.log.String(); got != want {
			t.Errorf("%s: calls differ (%d and %d bytes of log)", c.name, len(got), len(want))
		}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s: error %v, want %v", c.name, gotErr, wantErr)
		}
		if ahead.prepared.Load() == 0 {
			t.Errorf("%s: nothing prepared", c.name)
		}
	}
}
