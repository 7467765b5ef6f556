package translate

import (
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
)

// listed is a rule of chain as the kernel lists it after xdptables added
// it (kernel.ListedRule), with its counter at the given values.
func listed(t *testing.T, f compat.Family, table, chain string, r *compat.Rule, pkts, bytes uint64) kernel.Rule {
	t.Helper()
	es, err := ExprsIn(table, chain, r)
	if err != nil {
		t.Fatal(err)
	}
	ud, err := UserDataFor(f, table, chain, r, es)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if c, ok := e.(*expr.Counter); ok {
			c.Packets, c.Bytes = pkts, bytes
		}
	}
	kr, err := kernel.ListedRule(kernel.Family(f), ChainName(table, chain), es, ud)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func TestReadRuleDigest(t *testing.T) {
	a := parseRule(t, compat.IPv4, "-A", "INPUT", "-s", "198.51.100.1", "-p", "tcp", "-m", "comment", "--comment", "web", "-m", "tcp", "--dport", "80", "-j", "ACCEPT")
	b := parseRule(t, compat.IPv4, "-A", "INPUT", "-s", "198.51.100.2", "-p", "tcp", "-m", "comment", "--comment", "web", "-m", "tcp", "--dport", "80", "-j", "ACCEPT")
	ka := listed(t, compat.IPv4, "filter", "INPUT", a, 7, 420)
	kb := listed(t, compat.IPv4, "filter", "INPUT", b, 0, 0)
	if _, ok := findTLV(ka.UserData, udDigest); !ok {
		t.Fatalf("no digest in %x", ka.UserData)
	}

	// ours, unchanged: read from its text, with the kernel's counters
	r, fast, err := readRule(compat.IPv4, "filter", "INPUT", &ka)
	if err != nil || !fast {
		t.Fatalf("our rule: fast %v, err %v", fast, err)
	}
	if got, want := compat.SaveRule("INPUT", r, false), compat.SaveRule("INPUT", a, false); got != want {
		t.Errorf("read back as %q, want %q", got, want)
	}
	if r.Counters == nil || r.Counters.Packets != 7 || r.Counters.Bytes != 420 {
		t.Errorf("counters %+v", r.Counters)
	}

	// a foreign writer that copied a's userdata (text and digest) onto
	// b's expressions: the digest does not match, and translating a's
	// text does not give b's expressions
	forged, err := kernel.ListedRule(kernel.IPv4, "filter.INPUT", exprsOf(t, "filter", "INPUT", b), ka.UserData)
	if err != nil {
		t.Fatal(err)
	}
	if _, fast, err := readRule(compat.IPv4, "filter", "INPUT", &forged); fast || err != ErrForeign {
		t.Errorf("a's userdata on b's expressions: fast %v, err %v; want foreign", fast, err)
	}
	if spec, _, ok := ReadSaveSpec(compat.IPv4, "filter", "INPUT", &forged); ok {
		t.Errorf("a's userdata on b's expressions gives -S text %q", spec)
	}
	if spec, cnt, ok := ReadSaveSpec(compat.IPv4, "filter", "INPUT", &ka); !ok || "-A INPUT"+spec != compat.SaveRule("INPUT", a, false) || cnt == nil || cnt.Packets != 7 {
		t.Errorf("-S text of a: %q %+v %v", spec, cnt, ok)
	}
	// the same with a verdict changed
	es := exprsOf(t, "filter", "INPUT", a)
	es[len(es)-1] = &expr.Verdict{Kind: expr.VerdictDrop}
	forged, _ = kernel.ListedRule(kernel.IPv4, "filter.INPUT", es, ka.UserData)
	if _, fast, err := readRule(compat.IPv4, "filter", "INPUT", &forged); fast || err != ErrForeign {
		t.Errorf("verdict changed: fast %v, err %v; want foreign", fast, err)
	}
	// b's text with a's digest on b's expressions: not a's digest
	forged, _ = kernel.ListedRule(kernel.IPv4, "filter.INPUT", exprsOf(t, "filter", "INPUT", b), swapDigest(kb.UserData, ka.UserData))
	if _, fast, err := readRule(compat.IPv4, "filter", "INPUT", &forged); fast || err != nil {
		t.Errorf("b with a's digest: fast %v, err %v; want the slow path to read it", fast, err)
	}

	// written by another build: read the careful way
	stamp := buildStamp
	buildStamp = func() string { return "another build" }
	if r, fast, err := readRule(compat.IPv4, "filter", "INPUT", &ka); fast || err != nil || compat.SaveRule("INPUT", r, false) != compat.SaveRule("INPUT", a, false) {
		t.Errorf("another build's digest: fast %v, err %v", fast, err)
	}
	if _, _, ok := ReadSaveSpec(compat.IPv4, "filter", "INPUT", &ka); ok {
		t.Errorf("another build's -S text is used")
	}
	buildStamp = stamp

	// moved to another chain: checked by translating it
	moved := ka.Clone()
	moved.Chain = "filter.OUTPUT"
	if r, fast, err := readRule(compat.IPv4, "filter", "OUTPUT", &moved); fast || err != nil || r == nil {
		t.Errorf("moved: fast %v, err %v", fast, err)
	}
	// a damaged digest: the slow path still reads the rule
	bad := append([]byte(nil), ka.UserData...)
	bad[len(bad)-1] ^= 1
	damaged, _ := kernel.ListedRule(kernel.IPv4, "filter.INPUT", exprsOf(t, "filter", "INPUT", a), bad)
	if _, fast, err := readRule(compat.IPv4, "filter", "INPUT", &damaged); fast || err != nil {
		t.Errorf("damaged digest: fast %v, err %v", fast, err)
	}
	// written by a build without digests
	old, _ := UserData(a)
	oldRule, _ := kernel.ListedRule(kernel.IPv4, "filter.INPUT", exprsOf(t, "filter", "INPUT", a), old)
	if r, fast, err := readRule(compat.IPv4, "filter", "INPUT", &oldRule); fast || err != nil || compat.SaveRule("INPUT", r, false) != compat.SaveRule("INPUT", a, false) {
		t.Errorf("old userdata: fast %v, err %v", fast, err)
	}
}

func exprsOf(t *testing.T, table, chain string, r *compat.Rule) []expr.Any {
	t.Helper()
	es, err := ExprsIn(table, chain, r)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// swapDigest returns ud with the digest record of from.
func swapDigest(ud, from []byte) []byte {
	rec, _ := specRecord(ud)
	d, _ := findTLV(from, udDigest)
	out := append([]byte(nil), rec...)
	out = append(out, udDigest, byte(len(d)))
	return append(out, d...)
}

// TestReadRuleCorpus: every corpus rule xdptables can add reads back from
// its digest, as the rule it was written from; rules whose listing is not
// foretold (anonymous maps, bound chains) carry no digest.
func TestReadRuleCorpus(t *testing.T) {
	fastN, slowN, textN := 0, 0, 0
	files := []string{"base.txt", "matches_a.txt", "matches_b.txt", "matches_c.txt", "targets.txt", "targets_b.txt", "u32.txt", "sctp.txt"}
	eachCorpusRule(t, files, func(c corpusRule) {
		file, line, text, fam, table, chain, r := c.file, c.line, c.text, c.fam, c.table, c.chain, c.rule
		es, err := ExprsIn(table, chain, r)
		if err != nil {
			return
		}
		ud, err := UserDataFor(fam, table, chain, r, es)
		if err != nil {
			return
		}
		kr, err := kernel.ListedRule(kernel.Family(fam), ChainName(table, chain), es, ud)
		_, hasDigest := findTLV(ud, udDigest)
		if err != nil {
			if hasDigest {
				t.Errorf("%s:%d: %s: digest without a foretold listing", file, line, text)
			}
			slowN++
			return
		}
		back, fast, err := readRule(fam, table, chain, &kr)
		if err != nil {
			if !knownLossy[text] {
				t.Errorf("%s:%d: %s: %v", file, line, text, err)
			}
			return
		}
		if fast != hasDigest {
			t.Errorf("%s:%d: %s: fast path %v, digest %v", file, line, text, fast, hasDigest)
		}
		if spec, _, ok := ReadSaveSpec(fam, table, chain, &kr); ok {
			textN++
			if got, want := "-A "+chain+spec, compat.SaveRule(chain, r, false); got != want {
				t.Errorf("%s:%d: -S text %q, want %q", file, line, got, want)
			}
		} else if fast {
			var sb strings.Builder
			compat.WriteRuleSpec(&sb, r, false)
			if sb.String() == compat.ExactSpec(r) {
				t.Errorf("%s:%d: %s: -S text not kept", file, line, text)
			}
		}
		if fast {
			fastN++
		} else {
			slowN++
		}
		if a, b := compat.SaveRule(chain, r, false), compat.SaveRule(chain, back, false); a != b {
			t.Errorf("%s:%d: -S %q reads back as %q", file, line, a, b)
		}
	})
	t.Logf("%d rules read from their digest (%d of them print their stored text), %d translated", fastN, textN, slowN)
	if fastN < 500 {
		t.Errorf("only %d corpus rules read from their digest", fastN)
	}
}
