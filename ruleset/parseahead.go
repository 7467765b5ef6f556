package ruleset

import (
	"errors"
	"io"
	"runtime"
	"sync"
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
//
// A handler that is a preparer also has its commands prepared (their
// rules translated) ahead, by as many goroutines as there are CPUs, on
// chunks of lines as the parse hands them on: whichever part of the work
// (parse, translation, the handler's own) falls behind gets the CPUs.
// The handler still takes the commands one after the other in file
// order, so that the first line that fails is the one reported.
func parseAhead(in io.Reader, ro compat.RestoreOptions, h compat.RestoreHandler) error {
	if runtime.GOMAXPROCS(0) < 2 {
		return compat.ParseRestoreFunc(in, ro, h)
	}
	f := &forwarder{
		out:  make(chan *aheadChunk, aheadChunks),
		free: make(chan *aheadChunk, aheadChunks+2),
	}
	pr, _ := h.(preparer)
	var preparers sync.WaitGroup
	if pr != nil {
		f.work = make(chan *aheadChunk, aheadChunks+1)
		for range runtime.GOMAXPROCS(0) {
			preparers.Add(1)
			go func() {
				defer preparers.Done()
				for c := range f.work {
					for i := range c.ev {
						if c.ev[i].kind == evCommand && !f.stopped.Load() {
							pr.prepare(&c.ev[i])
						}
					}
					c.ready <- struct{}{}
				}
			}()
		}
	}
	f.cur = newAheadChunk()
	warn, echo := ro.Warn, ro.Echo
	if warn != nil {
		ro.Warn = func(s string) { f.add(parseEvent{kind: evWarn, text: s}) }
	}
	if echo != nil {
		ro.Echo = func(s string) { f.add(parseEvent{kind: evEcho, text: s}) }
	}
	var perr error
	go func() {
		defer func() {
			if f.work != nil {
				close(f.work)
			}
			close(f.out)
		}()
		perr = compat.ParseRestoreFunc(in, ro, f)
		f.flush()
	}()
	var err error
	for c := range f.out {
		if f.work != nil {
			<-c.ready // (also before the chunk is reused after a failure)
		}
		chunk := c.ev
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
				if pr != nil {
					err = pr.preparedCommand(ev.t, ev.rc, ev.pre)
				} else {
					err = h.Command(ev.t, ev.rc)
				}
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
		c.ev = chunk[:0]
		select {
		case f.free <- c:
		default:
		}
	}
	// f.out is closed: the parse is over and perr is set; the preparers
	// end with the chunks they have
	preparers.Wait()
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
	aheadChunkLen = 32
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
	pre  []preparedRule // what preparer.prepare worked out for rc
	// preOne is pre's room for a line of one rule (most lines): the
	// chunks, and so their events, are reused
	preOne [1]preparedRule
}

// aheadChunk is a run of parse events on its way to the handler; ready
// gets a token when the preparers are done with it.
type aheadChunk struct {
	ev    []parseEvent
	ready chan struct{}
}

func newAheadChunk() *aheadChunk {
	return &aheadChunk{ev: make([]parseEvent, 0, aheadChunkLen), ready: make(chan struct{}, 1)}
}

// preparer is a handler that has part of its commands' work done ahead.
// prepare runs on other goroutines than the handler's, for several
// command events at once: it may read the event and what does not change
// while the file is parsed, and keeps what it works out in ev.pre. The
// handler then gets preparedCommand (with ev.pre, nil when prepare left
// it) instead of Command.
type preparer interface {
	prepare(ev *parseEvent)
	preparedCommand(t *compat.RestoreTable, rc compat.RestoreCmd, pre []preparedRule) error
}

var errAheadStopped = errors.New("restore stopped")

// forwarder is the parse goroutine's handler: it passes the calls on in
// chunks.
type forwarder struct {
	out     chan *aheadChunk // to the handler, in file order
	work    chan *aheadChunk // to the preparers (nil: none)
	free    chan *aheadChunk
	cur     *aheadChunk
	stopped atomic.Bool // set by the handler's side when it failed
}

func (f *forwarder) add(ev parseEvent) error {
	if f.stopped.Load() {
		return errAheadStopped
	}
	f.cur.ev = append(f.cur.ev, ev)
	if len(f.cur.ev) == aheadChunkLen {
		f.flush()
	}
	return nil
}

// flush sends the pending calls.
func (f *forwarder) flush() {
	if len(f.cur.ev) == 0 {
		return
	}
	if f.work != nil {
		f.work <- f.cur
	}
	f.out <- f.cur
	select {
	case f.cur = <-f.free:
	default:
		f.cur = newAheadChunk()
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
