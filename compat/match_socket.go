package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// SocketMatch is -m socket (revision 3): a local socket for the packet
// exists (TPROXY setups).
type SocketMatch struct {
	Transparent, NoWildcard, RestoreSkmark bool
}

const (
	socketOptTransparent = iota
	socketOptNoWildcard
	socketOptRestoreSkmark
)

var socketMatchSpec = ExtSpec{
	Name: "socket",
	Options: []OptDef{
		{Name: "transparent", Arg: NoArg, ID: socketOptTransparent},
		{Name: "nowildcard", Arg: NoArg, ID: socketOptNoWildcard},
		{Name: "restore-skmark", Arg: NoArg, ID: socketOptRestoreSkmark},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &SocketMatch{} },
}

var _ = RegisterMatch(&socketMatchSpec)

func (m *SocketMatch) Name() string { return "socket" }

func (m *SocketMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case socketOptTransparent:
		m.Transparent = true
	case socketOptNoWildcard:
		m.NoWildcard = true
	case socketOptRestoreSkmark:
		m.RestoreSkmark = true
	}
	return nil
}

func (m *SocketMatch) Final(*Rule, OptSet) error { return nil }

func (m *SocketMatch) Save(b *strings.Builder, _ *Rule) {
	if m.Transparent {
		b.WriteString(" --transparent")
	}
	if m.NoWildcard {
		b.WriteString(" --nowildcard")
	}
	if m.RestoreSkmark {
		b.WriteString(" --restore-skmark")
	}
}

func (m *SocketMatch) List(b *strings.Builder, r *Rule, _ bool) {
	b.WriteString(" socket")
	m.Save(b, r)
}

// NftExprs: the xtables match (struct xt_socket_mtinfo3). nft's socket
// expression differs from xt_socket in details (wildcard handling of
// non-full sockets, hooks) and --restore-skmark writes the mark.
func (m *SocketMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	var flags uint8
	if m.Transparent {
		flags |= 1
	}
	if m.NoWildcard {
		flags |= 2
	}
	if m.RestoreSkmark {
		flags |= 4
	}
	x := &xtBlob{}
	x.u8(flags)
	return []expr.Any{compatMatch("socket", 3, x)}, nil
}
