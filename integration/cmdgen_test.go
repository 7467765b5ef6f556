package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestGeneratedCommandsDiff runs the command sequences GenCommands makes
// for each seed (XDPT_CMDGEN_SEED, a comma list) with XDPT_CMDGEN_N steps
// each in a namespace with the reference tools and in one with ours, and
// compares every step and the final iptables-save and ip6tables-save. A
// seed stops at its first difference: the states may differ from there
// on. The message gives the steps so far as a script.
func TestGeneratedCommandsDiff(t *testing.T) {
	seeds := envSeeds(t, "XDPT_CMDGEN_SEED", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)
	steps := envInt(t, "XDPT_CMDGEN_N", 60)
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			d := newScriptDiff(t)
			seq := GenCommands(seed, steps)
			for i, s := range seq {
				where := fmt.Sprintf("seed %d step %d", seed, i+1)
				if s.Help {
					// our usage text is our own: compare what scripts see of it
					if !d.helpStep(where, s) {
						break
					}
					continue
				}
				if !d.step(where, s.Tool, s.Args, s.Stdin) {
					t.Logf("steps so far:\n%s", stepsScript(seq[:i+1]))
					return
				}
				if partialRestore(s) && d.last.RC != 0 {
					d.resync(where)
				}
			}
			if !d.saves(fmt.Sprintf("seed %d final", seed)) {
				t.Logf("steps:\n%s", stepsScript(seq))
			}
		})
	}
}

// helpStep compares a command that prints the usage text by its exit
// status, stderr and first line.
func (d *scriptDiff) helpStep(where string, s CmdStep) bool {
	a := d.ref.Run("", append([]string{strings.Replace(s.Tool, "tables", "tables-nft", 1)}, s.Args...)...)
	b := d.ours.Run("", append([]string{d.dir + "/" + strings.Replace(s.Tool, "tables", "tables-nft", 1)}, s.Args...)...)
	first := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
	if a.RC == b.RC && a.Stderr == b.Stderr && first(a.Stdout) == first(b.Stdout) {
		return true
	}
	d.t.Errorf("%s: %s: reference rc %d %q %q, xdptables rc %d %q %q", where, s, a.RC, first(a.Stdout), a.Stderr, b.RC, first(b.Stdout), b.Stderr)
	return false
}

func stepsScript(seq []CmdStep) string {
	var b strings.Builder
	for _, s := range seq {
		b.WriteString(s.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// partialRestore says whether s is a restore that, when it fails, may
// have committed part of its file: iptables-nft commits the sections
// before the failing line, ours (on purpose, see README) none.
func partialRestore(s CmdStep) bool {
	if !strings.HasSuffix(s.Tool, "-restore") || !strings.Contains(s.Stdin, "COMMIT") {
		return false
	}
	for _, a := range s.Args {
		if a == "-t" || a == "--test" {
			return false
		}
	}
	return true
}

// resync gives both namespaces the reference's rulesets again after a
// failed restore (see partialRestore): its
// iptables-save -c and ip6tables-save -c go into both with restore -c.
func (d *scriptDiff) resync(where string) {
	for _, fam := range []string{"iptables", "ip6tables"} {
		save := d.ref.Run("", fam+"-nft-save", "-c")
		if save.RC != 0 {
			d.t.Fatalf("%s: resync: %s-save: %s", where, fam, save.Stderr)
		}
		if save.Stdout == "" {
			continue // (no table: a failed restore committed none either)
		}
		for _, r := range []netns.Result{
			d.ref.Run(save.Stdout, fam+"-nft-restore", "-c"),
			d.ours.Run(save.Stdout, d.dir+"/"+fam+"-nft-restore", "-c"),
		} {
			if r.RC != 0 {
				d.t.Fatalf("%s: resync: %s-restore: %s", where, fam, r.Stderr)
			}
		}
	}
}
