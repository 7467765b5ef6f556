package setengine

import "github.com/xdptables/xdptables/ipset"

// Hooks of the XDP fast path, set by cmd/xdptables.
var (
	// AfterCommit runs after every committed ipset change made by Run's
	// general path, with the sets before and after it, so that sets
	// mirrored into XDP maps change in the same command.
	AfterCommit func(e *Engine, old, cur *ipset.State)
	// Watching says whether XDP mirrors sets in this namespace; then
	// single commands take the general path, which calls AfterCommit.
	Watching func() bool
)

func afterCommit(e *Engine, old, cur *ipset.State) {
	if AfterCommit != nil {
		AfterCommit(e, old, cur)
	}
}

func xdpWatching() bool { return Watching != nil && Watching() }
