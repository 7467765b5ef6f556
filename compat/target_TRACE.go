package compat

import "strings"

// TraceTarget is -j TRACE. iptables-nft expresses it natively as
// "meta nftrace set 1"; it has no options and no -L description.
type TraceTarget struct{}

func init() {
	RegisterTarget(&ExtSpec{
		Name:      "TRACE",
		X6:        true,
		NewTarget: func(Family) TargetExt { return &TraceTarget{} },
	})
}

func (t *TraceTarget) Name() string                       { return "TRACE" }
func (t *TraceTarget) Parse(*OptArg) error                { return nil }
func (t *TraceTarget) Final(*Rule, OptSet) error          { return nil }
func (t *TraceTarget) Save(*strings.Builder, *Rule)       {}
func (t *TraceTarget) List(*strings.Builder, *Rule, bool) {}
