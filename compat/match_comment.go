package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// CommentMatch is -m comment: text kept in the rule (at most 255 bytes).
type CommentMatch struct {
	Text string
}

var commentMatchSpec = ExtSpec{
	Name: "comment",
	X6:   true,
	Options: []OptDef{
		{Name: "comment", Arg: RequiredArg, ID: 0, Mandatory: true},
	},
	NewMatch: func(Family) MatchExt { return &CommentMatch{} },
}

var _ = RegisterMatch(&commentMatchSpec)

func (m *CommentMatch) Name() string { return "comment" }

func (m *CommentMatch) Parse(p *OptArg) error {
	m.Text = p.Arg
	if len(m.Text) > 255 {
		m.Text = m.Text[:255]
	}
	return nil
}

func (m *CommentMatch) Final(*Rule, OptSet) error { return nil }

func (m *CommentMatch) Save(b *strings.Builder, _ *Rule) {
	if m.Text == "" {
		b.WriteString(" --comment \"\"")
		return
	}
	b.WriteString(" --comment ")
	writeSaveQuote(b, m.Text)
}

func (m *CommentMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" /* " + m.Text + " */")
}

// NftExprs adds nothing: the comment is part of the rule text kept in
// the rule's userdata, and has no effect on packets.
func (m *CommentMatch) NftExprs(*NftContext) ([]expr.Any, error) { return nil, nil }
