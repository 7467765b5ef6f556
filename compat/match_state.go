package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// StateMatch is -m state. iptables-nft sends it as a conntrack match
// with an alias flag, so it lists back as -m state.
type StateMatch struct {
	State  uint8
	Invert bool
}

var stateMatchSpec = ExtSpec{
	Name: "state",
	X6:   true,
	Options: []OptDef{
		{Name: "state", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true},
	},
	NewMatch: func(Family) MatchExt { return &StateMatch{} },
}

var _ = RegisterMatch(&stateMatchSpec)

func (m *StateMatch) Name() string { return "state" }

func (m *StateMatch) Parse(p *OptArg) error {
	var v uint8
	arg := p.Arg
	lookup := func(w string) (uint8, bool) { return lookupCTState(w, 5) }
	for {
		comma := strings.IndexByte(arg, ',')
		if comma < 0 {
			break
		}
		bit, ok := lookup(arg[:comma])
		if comma == 0 || !ok {
			return Paramf("Bad state \"%s\"", arg)
		}
		v |= bit
		arg = arg[comma+1:]
	}
	if arg == "" {
		return Paramf("\"--state\" requires a list of states with no spaces, e.g. ESTABLISHED,RELATED")
	}
	bit, ok := lookup(arg)
	if !ok {
		return Paramf("Bad state \"%s\"", arg)
	}
	m.State, m.Invert = v|bit, p.Invert
	return nil
}

func (m *StateMatch) Final(*Rule, OptSet) error { return nil }

func (m *StateMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(bang(m.Invert) + " --state " + ctStateString(m.State))
}

func (m *StateMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(bang(m.Invert) + " state " + ctStateString(m.State))
}

// NftExprs: ct state tested against the mask (any bit set; none when
// inverted). xt state and nft ct state derive the state bit the same
// way, including INVALID and UNTRACKED for packets without an entry.
func (m *StateMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	return ctStateExprs(m.State, m.Invert), nil
}
