package ruleset

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestBuilderNotes: the chains and lines noted per operation read back as
// noted, with gaps (no chain, line 0) and notes out of order.
func TestBuilderNotes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		var bl builder
		chains := map[int]string{}
		lines := map[int]int{}
		idx := 0
		for i := 0; i < 300; i++ {
			c := []string{"", "A", "B", "KUBE-SVC-1"}[rng.IntN(4)]
			l := rng.IntN(1000)
			switch r := rng.IntN(10); {
			case r == 0 && idx > 0: // again, out of order
				j := rng.IntN(idx)
				bl.note(j, c, l)
				chains[j], lines[j] = c, l
				continue
			case r < 3:
				idx += rng.IntN(3) // operations without a note
			}
			bl.note(idx, c, l)
			chains[idx], lines[idx] = c, l
			idx++
		}
		for j := 0; j < idx; j++ {
			if got := bl.chainOf(j); got != chains[j] {
				t.Fatalf("round %d: op %d: chain %q, want %q", round, j, got, chains[j])
			}
			if got := int(bl.opLine[j]); got != lines[j] {
				t.Fatalf("round %d: op %d: line %d, want %d", round, j, got, lines[j])
			}
		}
	}
}

// TestBuilderChainsInTurn: chains that take turns are kept once each.
func TestBuilderChainsInTurn(t *testing.T) {
	var bl builder
	for i := range 3000 {
		bl.note(i, "C"+strconv.Itoa(i%1000), i+1)
	}
	for i := range 3000 {
		if got, want := bl.chainOf(i), "C"+strconv.Itoa(i%1000); got != want {
			t.Fatalf("op %d: chain %q, want %q", i, got, want)
		}
	}
	if bl.chains.len() != 1000 {
		t.Errorf("1000 chains in turn: %d kept", bl.chains.len())
	}
}
