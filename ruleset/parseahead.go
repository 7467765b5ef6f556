package ruleset

import (
	"errors"
	"io"
	"runtime"
	"sync/atomic"

	"github.com/xdptables/xdptables/compat"
)

// parseAhead is compat.ParseRestoreFunc with the parse running in a
// goroutine of its own, ahead of h: on two CPUs the parse of the next
// lines overlaps the translation and encoding of the previous ones (each
// is about half of a restore's work). h sees the same calls in the same
// order, from the calling goroutine, and so do ro.Warn and ro.Echo: the
// parser's notices travel with the lines, so that nothing is printed for
// a line after the one that failed. The parse stops soon after h fails.
func parseAhead(in io.Reader, ro compat.RestoreOptions, h compat.RestoreHandler) error {
	if runtime.GOMAXPROCS(0) < 2 {
		return compat.ParseRestoreFunc(in, ro, h)
	}
	f := &forwarder{
		out:  make(chan []parseEvent, aheadChunks),
		free: make(chan []parseEvent, aheadChunks+2),
	}
	f.cur = make([]parseEvent, 0, aheadChunkLen)
	warn, echo := ro.Warn, ro.Echo
	if warn != nil {
		ro.Warn = func(s string) { f.add(parseEvent{kind: evWarn, text: s}) }
	}
	if echo != nil {
		ro.Echo = func(s string) { f.add(parseEvent{kind: evEcho, text: s}) }
	}
	var perr error
	go func() {
		defer close(f.out)
		perr = compat.ParseRestoreFunc(in, ro, f)
		f.flush()
	}()
	var err error
	for chunk := range f.out {
		for i := range chunk {
			if err != nil {
				break
			}
			ev := &chunk[i]
			switch ev.kind {
			case evTable:
				err = h.Table(ev.t)
			case evChain:
				err = h.Chain(ev.t, ev.d)
			case evCommand:
				err = h.Command(ev.t, ev.rc)
			case evCommit:
				err = h.Commit(ev.t)
			case evWarn:
				warn(ev.text)
			case evEcho:
				echo(ev.text)
			}
			*ev = parseEvent{} // the chunk is reused: drop its references
		}
		if err != nil {
			f.stopped.Store(true)
		}
		select {
		case f.free <- chunk[:0]:
		default:
		}
	}
	// f.out is closed: the parse is over and perr is set
	if err != nil {
		return err
	}
	if errors.Is(perr, errAheadStopped) {
		return nil // cannot happen: only a failing h stops the parse
	}
	return perr
}

// aheadChunks chunks of aheadChunkLen lines may wait between the parse
// and the handler: enough to ride out a pause of either side, little
// memory (every parsed rule in them is alive: 6 chunks of 256 were 2 MB
// of a 100k restore's peak).
const (
	aheadChunks   = 4
	aheadChunkLen = 64
)

type eventKind uint8

const (
	evTable eventKind = iota + 1
	evChain
	evCommand
	evCommit
	evWarn
	evEcho
)

// parseEvent is one call of the parser to its handler or callbacks.
type parseEvent struct {
	kind eventKind
	t    *compat.RestoreTable
	d    compat.ChainDecl
	rc   compat.RestoreCmd
	text string
}

var errAheadStopped = errors.New("restore stopped")

// forwarder is the parse goroutine's handler: it passes the calls on in
// chunks.
type forwarder struct {
	out     chan []parseEvent
	free    chan []parseEvent
	cur     []parseEvent
	stopped atomic.Bool // set by the handler's side when it failed
}

func (f *forwarder) add(ev parseEvent) error {
	if f.stopped.Load() {
		return errAheadStopped
	}
	f.cur = append(f.cur, ev)
	if len(f.cur) == aheadChunkLen {
		f.flush()
	}
	return nil
}

// flush sends the pending calls.
func (f *forwarder) flush() {
	if len(f.cur) == 0 {
		return
	}
	f.out <- f.cur
	select {
	case f.cur = <-f.free:
	default:
		f.cur = make([]parseEvent, 0, aheadChunkLen)
	}
}

func (f *forwarder) Table(t *compat.RestoreTable) error {
	return f.add(parseEvent{kind: evTable, t: t})
}

func (f *forwarder) Chain(t *compat.RestoreTable, d compat.ChainDecl) error {
	return f.add(parseEvent{kind: evChain, t: t, d: d})
}

func (f *forwarder) Command(t *compat.RestoreTable, rc compat.RestoreCmd) error {
	return f.add(parseEvent{kind: evCommand, t: t, rc: rc})
}

func (f *forwarder) Commit(t *compat.RestoreTable) error {
	return f.add(parseEvent{kind: evCommit, t: t})
}
