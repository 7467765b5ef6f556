package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/translate"
)

// digestConn opens a kernel connection inside ns.
func digestConn(t *testing.T, ns *netns.NS) *kernel.Conn {
	t.Helper()
	f, err := os.Open("/run/netns/" + ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := kernel.Open(kernel.WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestDigestMatchesKernelListing: every rule of the corpora that
// xdptables writes with a digest is listed by the kernel as
// kernel.AppendListed foretold, so that it reads back from its text
// alone (a miss would only be slower, but then the digest is useless).
// translate's unit tests check the digest over that listing.
func TestDigestMatchesKernelListing(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	ns := netns.New(t, "digest")
	for _, name := range []string{"base", "matches_a", "matches_b", "matches_c", "matches_d", "compat_ext", "targets", "targets_b", "u32", "sctp"} {
		lines, err := ReadCorpus(filepath.Join("..", "testdata", "corpus", name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			ns.Run("", append([]string{filepath.Join(dir, l.Tool)}, l.Args...)...)
		}
	}
	c := digestConn(t, ns)
	with, matched := 0, 0
	for _, fam := range []compat.Family{compat.IPv4, compat.IPv6} {
		chains, err := c.Chains(kernel.Family(fam))
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range chains {
			table, chain, _ := translate.SplitChainName(ch.Name)
			err := c.ScanRules(kernel.Family(fam), ch.Name, nil, func(kr *kernel.Rule) error {
				if !translate.HasDigest(kr.UserData) {
					return nil
				}
				with++
				// the digest itself names the build that wrote it (not
				// this test): compare what it was taken over instead,
				// the listing foretold from the rule text with the
				// kernel's
				text, _ := translate.StoredSpec(kr.UserData)
				r, err := translate.StoredRule(fam, table, chain, kr.UserData)
				if err != nil {
					t.Errorf("%v %s: %s: %v", fam, ch.Name, text, err)
					return nil
				}
				es, err := translate.ExprsIn(table, chain, r)
				if err != nil {
					// -m set and -j SET need the sets, which only the
					// binary looks up: the kernel's own expressions
					// then, decoded
					k := kr.Clone()
					if err := k.Decode(); err != nil || len(k.Unsupported) > 0 {
						t.Errorf("%v %s: %s: %v %v", fam, ch.Name, text, err, k.Unsupported)
						return nil
					}
					es = k.Exprs
				}
				want, ok1 := kernel.AppendListed(nil, kernel.Family(fam), es)
				got, ok2 := kr.AppendListed(nil)
				if ok1 && ok2 && bytes.Equal(want, got) {
					matched++
				} else {
					t.Errorf("%v %s: listing not foretold: %s\n want %x\n  got %x", fam, ch.Name, text, want, got)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d of %d rules with a digest match it", matched, with)
	if with < 700 {
		t.Errorf("only %d rules with a digest", with)
	}
}

// TestDigestForeignCopy: a foreign writer that copies the userdata of one
// of our rules (text and digest) onto other expressions is caught: the
// chain is reported incompatible, never listed as the copied text.
func TestDigestForeignCopy(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	ns := netns.New(t, "digestcopy")
	ipt := filepath.Join(dir, "iptables")
	if r := ns.Run("", ipt, "-A", "INPUT", "-s", "198.51.100.1", "-p", "tcp", "-m", "tcp", "--dport", "22", "-j", "ACCEPT"); r.RC != 0 {
		t.Fatalf("append: %+v", r)
	}
	c := digestConn(t, ns)
	rules, err := c.RulesUndecoded(kernel.IPv4, "filter.INPUT")
	if err != nil || len(rules) != 1 {
		t.Fatalf("rules %v, %v", rules, err)
	}
	ud := append([]byte(nil), rules[0].UserData...)
	if !translate.HasDigest(ud) {
		t.Fatalf("no digest in %x", ud)
	}
	// the same rule text and digest, on a rule that drops everything
	b := kernel.NewBatch()
	b.AppendRule(kernel.IPv4, "filter.INPUT", kernel.RuleSpec{
		Exprs:    []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}},
		UserData: ud,
	})
	gen, err := c.GenID()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(b, gen); err != nil {
		t.Fatal(err)
	}
	want := "iptables v1.8.9 (nf_tables): chain `INPUT' in table `filter' is incompatible, use 'nft' tool.\n"
	for _, args := range [][]string{{"-S", "INPUT"}, {"-L", "INPUT", "-n"}} {
		if r := ns.Run("", append([]string{ipt}, args...)...); r.RC != 1 || r.Stderr != want {
			t.Errorf("%v with a copied userdata: %+v", args, r)
		}
	}
	if r := ns.Run("", filepath.Join(dir, "iptables-save")); !strings.Contains(r.Stdout, "# Table `filter' is incompatible, use 'nft' tool.") {
		t.Errorf("save with a copied userdata: %+v", r)
	}
}
