package kernel

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/integration/netns"
	"golang.org/x/sys/unix"
)

// newNS makes a throwaway network namespace (skipping with SKIP-ROOT when
// not root) and a Conn inside it; the host ruleset is never touched.
func newNS(t *testing.T) (*Conn, *netns.NS) {
	t.Helper()
	ns := netns.New(t, "kernel")
	f, err := os.Open("/run/netns/" + ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := Open(WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// The socket must not see the host's tables.
	if tabs, err := c.Tables(unix.NFPROTO_UNSPEC); err != nil || len(tabs) != 0 {
		t.Fatalf("fresh namespace has tables %v (err %v)", tabs, err)
	}
	return c, ns
}

func commit(t *testing.T, c *Conn, b *Batch) {
	t.Helper()
	gen, err := c.GenID()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(b, gen); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func nft(t *testing.T, ns *netns.NS, args ...string) string {
	t.Helper()
	if !netns.Have("nft") {
		t.Skip("nft not installed")
	}
	r := ns.Run("", append([]string{"nft"}, args...)...)
	if r.RC != 0 {
		t.Fatalf("nft %v: rc %d: %s", args, r.RC, r.Stderr)
	}
	return r.Stdout
}

func drop() []expr.Any {
	return []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}}
}

func srcDrop(a byte) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{10, 0, 0, a}},
		&expr.Counter{},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
}

func srcOf(t *testing.T, r Rule) byte {
	t.Helper()
	for _, e := range r.Exprs {
		if c, ok := e.(*expr.Cmp); ok && len(c.Data) == 4 {
			return c.Data[3]
		}
	}
	t.Fatalf("rule %d has no address compare: %#v", r.Handle, r.Exprs)
	return 0
}

// addBuiltins puts every built-in chain of every iptables table into b.
func addBuiltins(b *Batch, fam Family) {
	b.AddTable(fam)
	for _, tb := range IptablesTables() {
		for _, ch := range BuiltinChains(tb) {
			base, _ := BuiltinChain(tb, ch)
			b.AddChain(fam, ChainName(tb, ch), ChainSpec{Base: &base})
		}
	}
}

var hookLine = regexp.MustCompile(`type (\S+) hook (\S+) priority ([^;]+); policy (\S+);`)

// TestLayoutMatchesIptablesNft creates all built-in chains in both families
// and compares what nft lists for them with what iptables-nft creates for
// the same chains in the same namespace.
func TestLayoutMatchesIptablesNft(t *testing.T) {
	c, ns := newNS(t)
	b := NewBatch()
	addBuiltins(b, IPv4)
	addBuiltins(b, IPv6)
	commit(t, c, b)

	for _, fam := range []Family{IPv4, IPv6} {
		chains, err := c.Chains(fam)
		if err != nil {
			t.Fatal(err)
		}
		if len(chains) != 17 {
			t.Fatalf("%s: %d chains, want 17", fam, len(chains))
		}
		for _, ch := range chains {
			tb, name, ok := SplitChainName(ch.Name)
			want, _ := BuiltinChain(tb, name)
			if !ok || ch.Base == nil || *ch.Base != want || ch.Policy == nil || *ch.Policy != PolicyAccept || ch.Counters != nil {
				t.Errorf("%s chain %s read back as %+v base %+v", fam, ch.Name, ch, ch.Base)
			}
		}
	}
	ours := nft(t, ns, "list", "table", "ip", TableName)
	t.Logf("nft list table ip xdptables:\n%s", ours)
	if !netns.Have("iptables-nft") {
		t.Skip("iptables-nft not installed: layout checked against the spec only")
	}
	for _, tb := range IptablesTables() {
		for _, ch := range BuiltinChains(tb) {
			if r := ns.Run("", "iptables-nft", "-t", tb, "-P", ch, "ACCEPT"); r.RC != 0 {
				t.Fatalf("iptables-nft -t %s -P %s: %s", tb, ch, r.Stderr)
			}
			ref := nft(t, ns, "list", "chain", "ip", tb, ch)
			mine := nft(t, ns, "list", "chain", "ip", TableName, ChainName(tb, ch))
			rm, mm := hookLine.FindString(ref), hookLine.FindString(mine)
			if rm == "" || rm != mm {
				t.Errorf("%s %s: iptables-nft has %q, we have %q", tb, ch, rm, mm)
			}
		}
	}
	foreign, err := c.ForeignTables()
	if err != nil {
		t.Fatal(err)
	}
	if len(foreign) != 5 {
		t.Errorf("foreign tables %v, want the 5 iptables-nft tables", foreign)
	}
	for _, f := range foreign {
		if !f.IsIptables() || f.Family != IPv4 {
			t.Errorf("foreign table %+v", f)
		}
	}
}

func TestChainsAndRules(t *testing.T) {
	c, ns := newNS(t)
	in := ChainName("filter", "INPUT")
	user := ChainName("filter", "C1")
	base, _ := BuiltinChain("filter", "INPUT")

	if ok, err := c.TableExists(IPv4); err != nil || ok {
		t.Fatalf("TableExists before creation = %v, %v", ok, err)
	}
	if _, err := c.Chain(IPv4, in); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Chain on missing table: %v, want ENOENT", err)
	}

	b := NewBatch()
	b.AddTable(IPv4)
	b.AddChain(IPv4, in, ChainSpec{Base: &base})
	b.AddChain(IPv4, user, ChainSpec{Exclusive: true})
	b.AppendRule(IPv4, in, RuleSpec{Exprs: srcDrop(2), UserData: []byte("two")})
	b.AppendRule(IPv4, in, RuleSpec{Exprs: srcDrop(4)})
	b.InsertRule(IPv4, in, RuleSpec{Exprs: srcDrop(1)})
	b.AppendRule(IPv4, user, RuleSpec{Exprs: drop()})
	commit(t, c, b)

	if ok, err := c.TableExists(IPv4); err != nil || !ok {
		t.Fatalf("TableExists = %v, %v", ok, err)
	}
	rules, err := c.Rules(IPv4, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := order(t, rules); got != "1 2 4" {
		t.Fatalf("order %s", got)
	}
	if rules[0].Position != 0 || rules[1].Position != rules[0].Handle || rules[2].Position != rules[1].Handle {
		t.Errorf("positions %d %d %d, handles %d %d %d", rules[0].Position, rules[1].Position, rules[2].Position,
			rules[0].Handle, rules[1].Handle, rules[2].Handle)
	}
	if string(rules[1].UserData) != "two" || rules[0].UserData != nil {
		t.Errorf("userdata %q %q", rules[1].UserData, rules[0].UserData)
	}
	if rules[0].Counter == nil || *rules[0].Counter != (Counters{}) || len(rules[0].Unsupported) != 0 {
		t.Errorf("rule 0: counter %v unsupported %v", rules[0].Counter, rules[0].Unsupported)
	}
	if v, ok := rules[0].Exprs[3].(*expr.Verdict); !ok || v.Kind != expr.VerdictDrop {
		t.Errorf("verdict decoded as %#v", rules[0].Exprs[3])
	}

	// Positions: before 2, after 2, replace 4, delete 1.
	b = NewBatch()
	b.InsertRuleBefore(IPv4, in, rules[1].Handle, RuleSpec{Exprs: srcDrop(5)})
	b.AppendRuleAfter(IPv4, in, rules[1].Handle, RuleSpec{Exprs: srcDrop(3)})
	b.ReplaceRule(IPv4, in, rules[2].Handle, RuleSpec{Exprs: srcDrop(6)})
	b.DelRule(IPv4, in, rules[0].Handle)
	commit(t, c, b)
	after, err := c.Rules(IPv4, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := order(t, after); got != "5 2 3 6" {
		t.Fatalf("order after edits %s", got)
	}
	if after[3].Handle != rules[2].Handle {
		t.Errorf("replace changed the handle: %d -> %d", rules[2].Handle, after[3].Handle)
	}

	all, err := c.TableRules(IPv4)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 {
		t.Errorf("TableRules: %d rules, want 5", len(all))
	}
	out := nft(t, ns, "-a", "list", "table", "ip", TableName)
	for _, want := range []string{
		"chain filter.INPUT {",
		"type filter hook input priority filter; policy accept;",
		"chain filter.C1 {",
		"ip saddr 10.0.0.5 counter packets 0 bytes 0 drop",
		"counter packets 0 bytes 0 drop",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("nft output lacks %q:\n%s", want, out)
		}
	}

	// Flush one chain, then the table; chains stay.
	b = NewBatch()
	b.FlushChain(IPv4, user)
	commit(t, c, b)
	if r, _ := c.Rules(IPv4, user); len(r) != 0 {
		t.Errorf("flushed chain has %d rules", len(r))
	}
	b = NewBatch()
	b.FlushTable(IPv4)
	commit(t, c, b)
	if r, _ := c.TableRules(IPv4); len(r) != 0 {
		t.Errorf("flushed table has %d rules", len(r))
	}
	if ch, _ := c.Chains(IPv4); len(ch) != 2 {
		t.Errorf("flush deleted chains: %v", ch)
	}
	b = NewBatch()
	b.DelTable(IPv4)
	commit(t, c, b)
	if ok, _ := c.TableExists(IPv4); ok {
		t.Error("table still there after DelTable")
	}
}

func order(t *testing.T, rules []Rule) string {
	var s []string
	for _, r := range rules {
		s = append(s, fmt.Sprint(srcOf(t, r)))
	}
	return strings.Join(s, " ")
}

func TestGenerationChanged(t *testing.T) {
	c, _ := newNS(t)
	gen, err := c.GenID()
	if err != nil {
		t.Fatal(err)
	}
	b1, b2 := NewBatch(), NewBatch()
	b1.AddTable(IPv4)
	b2.AddTable(IPv6)
	if err := c.Commit(b1, gen); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(b2, gen); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("second commit on the same generation: %v, want ErrGenerationChanged", err)
	}
	if ok, _ := c.TableExists(IPv6); ok {
		t.Fatal("stale batch was applied")
	}
	gen2, err := c.GenID()
	if err != nil || gen2 == gen {
		t.Fatalf("generation after commit %d (was %d), %v", gen2, gen, err)
	}
	// Rebuilt on the new generation, it goes through.
	if err := c.Commit(b2, gen2); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.TableExists(IPv6); !ok {
		t.Fatal("retried batch not applied")
	}
}

func TestErrorMapping(t *testing.T) {
	c, _ := newNS(t)
	user, target := ChainName("filter", "C1"), ChainName("filter", "C2")
	b := NewBatch()
	b.AddTable(IPv4)
	b.AddChain(IPv4, user, ChainSpec{Exclusive: true})
	b.AddChain(IPv4, target, ChainSpec{Exclusive: true})
	b.AppendRule(IPv4, user, RuleSpec{Exprs: []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: target}}})
	in := ChainName("filter", "INPUT")
	base, _ := BuiltinChain("filter", "INPUT")
	b.AddChain(IPv4, in, ChainSpec{Base: &base})
	commit(t, c, b)

	tests := []struct {
		name  string
		build func(b *Batch) int
		errno unix.Errno
		text  string
	}{
		{"delete non-empty chain", func(b *Batch) int { return b.DelChain(IPv4, user) },
			unix.EBUSY, "CHAIN_DEL failed (Device or resource busy): chain filter.C1"},
		{"delete referenced chain", func(b *Batch) int { return b.DelChain(IPv4, target) },
			unix.EBUSY, "CHAIN_DEL failed (Device or resource busy): chain filter.C2"},
		{"append to missing chain", func(b *Batch) int { return b.AppendRule(IPv4, "filter.NOPE", RuleSpec{Exprs: drop()}) },
			unix.ENOENT, "RULE_APPEND failed (No such file or directory): rule in chain filter.NOPE"},
		{"create existing chain exclusively", func(b *Batch) int { return b.AddChain(IPv4, user, ChainSpec{Exclusive: true}) },
			unix.EEXIST, "CHAIN_USER_ADD failed (File exists): chain filter.C1"},
		{"policy on a user chain", func(b *Batch) int { return b.SetPolicy(IPv4, user, PolicyDrop, nil) },
			unix.EOPNOTSUPP, ""},
		{"masquerade in a filter chain", func(b *Batch) int {
			return b.AppendRule(IPv4, in, RuleSpec{Exprs: []expr.Any{&expr.Masq{}}})
		}, unix.EOPNOTSUPP, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBatch()
			// Good operations around the bad one: only the bad one is named.
			b.AddChain(IPv4, ChainName("filter", "OK1"), ChainSpec{Exclusive: true})
			idx := tt.build(b)
			b.AddChain(IPv4, ChainName("filter", "OK2"), ChainSpec{Exclusive: true})
			gen, _ := c.GenID()
			err := c.Commit(b, gen)
			var oe *OpError
			if !errors.As(err, &oe) {
				t.Fatalf("error %v is no *OpError", err)
			}
			if oe.Index != idx || oe.Errno != tt.errno || !errors.Is(err, tt.errno) {
				t.Errorf("got index %d errno %v, want %d %v (%v)", oe.Index, oe.Errno, idx, tt.errno, err)
			}
			if tt.text != "" && !strings.HasPrefix(oe.Error(), tt.text) {
				t.Errorf("text %q, want %q", oe.Error(), tt.text)
			}
			if _, err := c.Chain(IPv4, ChainName("filter", "OK1")); !errors.Is(err, unix.ENOENT) {
				t.Errorf("failed batch left OK1 behind (%v)", err)
			}
		})
	}
}

func TestRenamePolicyCounters(t *testing.T) {
	c, ns := newNS(t)
	in := ChainName("filter", "INPUT")
	base, _ := BuiltinChain("filter", "INPUT")
	b := NewBatch()
	b.AddTable(IPv4)
	b.AddChain(IPv4, in, ChainSpec{Base: &base, Counters: &Counters{Packets: 7, Bytes: 700}})
	b.AddChain(IPv4, ChainName("filter", "OLD"), ChainSpec{Exclusive: true})
	b.AddChain(IPv4, ChainName("filter", "TAKEN"), ChainSpec{Exclusive: true})
	b.AppendRule(IPv4, in, RuleSpec{Exprs: []expr.Any{&expr.Counter{Packets: 3, Bytes: 300}, &expr.Verdict{Kind: expr.VerdictAccept}}})
	b.AppendRule(IPv4, in, RuleSpec{Exprs: []expr.Any{&expr.Counter{Packets: 5, Bytes: 500}, &expr.Verdict{Kind: expr.VerdictAccept}}, UserData: []byte("keep me")})
	commit(t, c, b)

	ch, err := c.Chain(IPv4, in)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Counters == nil || *ch.Counters != (Counters{7, 700}) {
		t.Errorf("base chain counters %v", ch.Counters)
	}

	// Rename by handle; onto a taken name it fails with EEXIST.
	old, err := c.Chain(IPv4, ChainName("filter", "OLD"))
	if err != nil {
		t.Fatal(err)
	}
	b = NewBatch()
	i := b.RenameChain(IPv4, old.Handle, ChainName("filter", "TAKEN"))
	gen, _ := c.GenID()
	if err := c.Commit(b, gen); !errors.Is(err, unix.EEXIST) || err.(*CommitError).Errors[0].Index != i {
		t.Errorf("rename onto taken name: %v", err)
	}
	b = NewBatch()
	b.RenameChain(IPv4, old.Handle, ChainName("filter", "NEW"))
	commit(t, c, b)
	if ren, err := c.Chain(IPv4, ChainName("filter", "NEW")); err != nil || ren.Handle != old.Handle {
		t.Errorf("renamed chain: %+v %v", ren, err)
	}
	// A chain made in the same batch has no handle yet (iptables-nft: -N D, -E D E fails).
	b = NewBatch()
	b.AddChain(IPv4, ChainName("filter", "D"), ChainSpec{Exclusive: true})
	i = b.RenameChain(IPv4, old.Handle+1000, ChainName("filter", "E"))
	gen, _ = c.GenID()
	if err := c.Commit(b, gen); !errors.Is(err, unix.ENOENT) {
		t.Errorf("rename of unknown handle: %v", err)
	} else if oe := err.(*CommitError).Errors[0]; oe.Index != i || !strings.HasPrefix(oe.Error(), "CHAIN_RENAME failed (No such file or directory): chain filter.E") {
		t.Errorf("rename error %v at %d", oe, oe.Index)
	}

	// Policy drop with counters reset, as iptables -P does.
	b = NewBatch()
	b.SetPolicy(IPv4, in, PolicyDrop, &Counters{})
	commit(t, c, b)
	ch, _ = c.Chain(IPv4, in)
	if ch.Policy == nil || *ch.Policy != PolicyDrop || ch.Counters == nil || *ch.Counters != (Counters{}) {
		t.Errorf("after SetPolicy: policy %v counters %v", ch.Policy, ch.Counters)
	}
	if out := nft(t, ns, "list", "chain", "ip", TableName, in); !strings.Contains(out, "policy drop;") {
		t.Errorf("nft shows no drop policy:\n%s", out)
	}
	b = NewBatch()
	b.SetChainCounters(IPv4, in, Counters{Packets: 1, Bytes: 2})
	commit(t, c, b)
	if ch, _ = c.Chain(IPv4, in); ch.Counters == nil || *ch.Counters != (Counters{1, 2}) {
		t.Errorf("SetChainCounters: %v", ch.Counters)
	}

	// Zero rule counters: handle, userdata and the other expressions stay.
	rules, err := c.Rules(IPv4, in)
	if err != nil || len(rules) != 2 {
		t.Fatalf("rules %v %v", rules, err)
	}
	if *rules[0].Counter != (Counters{3, 300}) || *rules[1].Counter != (Counters{5, 500}) {
		t.Fatalf("initial counters %v %v", rules[0].Counter, rules[1].Counter)
	}
	b = NewBatch()
	b.ZeroRuleCounter(rules[1], nil)
	commit(t, c, b)
	again, _ := c.Rules(IPv4, in)
	if *again[0].Counter != (Counters{3, 300}) || *again[1].Counter != (Counters{}) ||
		again[1].Handle != rules[1].Handle || string(again[1].UserData) != "keep me" || len(again[1].Exprs) != 2 {
		t.Errorf("after zeroing: %+v / %+v", again[0], again[1])
	}
}

func TestBigBatch(t *testing.T) {
	c, ns := newNS(t)
	const n = 50000
	in := ChainName("filter", "INPUT")
	base, _ := BuiltinChain("filter", "INPUT")
	start := time.Now()
	b := NewBatch()
	b.AddTable(IPv4)
	b.AddChain(IPv4, in, ChainSpec{Base: &base})
	for i := 0; i < n; i++ {
		b.AppendRule(IPv4, in, RuleSpec{Exprs: []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{10, byte(i >> 16), byte(i >> 8), byte(i)}},
			&expr.Counter{},
			&expr.Verdict{Kind: expr.VerdictDrop},
		}, UserData: []byte(fmt.Sprintf("rule %d", i))})
	}
	built := time.Since(start)
	gen, err := c.GenID()
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := c.Commit(b, gen); err != nil {
		t.Fatal(err)
	}
	committed := time.Since(start)
	gen2, _ := c.GenID()
	if gen2 != gen+1 {
		t.Errorf("generation %d -> %d: not one transaction", gen, gen2)
	}
	start = time.Now()
	rules, err := c.Rules(IPv4, in)
	if err != nil {
		t.Fatal(err)
	}
	read := time.Since(start)
	if len(rules) != n || string(rules[n-1].UserData) != fmt.Sprintf("rule %d", n-1) {
		t.Fatalf("read back %d rules", len(rules))
	}
	t.Logf("%d rules: batch %d bytes built in %v, committed in %v, read back in %v", n, b.Size(), built, committed, read)
	if testing.Verbose() {
		start = time.Now()
		out := nft(t, ns, "list", "chain", "ip", TableName, in)
		t.Logf("nft list chain: %d lines in %v", strings.Count(out, "\n"), time.Since(start))
	}

	// A big batch whose last rule fails is rolled back whole.
	b = NewBatch()
	for i := 0; i < n; i++ {
		b.AppendRule(IPv4, in, RuleSpec{Exprs: drop()})
	}
	bad := b.AppendRule(IPv4, "filter.NOPE", RuleSpec{Exprs: drop()})
	gen, _ = c.GenID()
	err = c.Commit(b, gen)
	var oe *OpError
	if !errors.As(err, &oe) || oe.Index != bad || oe.Errno != unix.ENOENT {
		t.Fatalf("got %v, want ENOENT at %d", err, bad)
	}
	if rules, _ := c.Rules(IPv4, in); len(rules) != n {
		t.Errorf("failed batch changed the chain: %d rules", len(rules))
	}

	// A batch failing everywhere: every error is reported, or at least the
	// first ones with Lost set.
	b = NewBatch()
	for i := 0; i < n; i++ {
		b.AppendRule(IPv4, "filter.NOPE", RuleSpec{Exprs: drop()})
	}
	gen, _ = c.GenID()
	err = c.Commit(b, gen)
	var ce *CommitError
	if !errors.As(err, &ce) || len(ce.Errors) == 0 || ce.Errors[0].Index != 0 {
		t.Fatalf("got %v", err)
	}
	if len(ce.Errors) != n && !ce.Lost {
		t.Errorf("%d of %d errors reported, none marked lost", len(ce.Errors), n)
	}
	t.Logf("batch failing in all %d rules: %d errors reported, lost=%v", n, len(ce.Errors), ce.Lost)
}

func TestSetsInBatch(t *testing.T) {
	c, ns := newNS(t)
	const n = 100000
	s := &nftables.Set{Name: "blocklist", KeyType: nftables.TypeIPAddr}
	elems := make([]nftables.SetElement, n)
	for i := range elems {
		elems[i].Key = []byte{10, byte(i >> 16), byte(i >> 8), byte(i)}
	}
	in := ChainName("raw", "PREROUTING")
	base, _ := BuiltinChain("raw", "PREROUTING")
	b := NewBatch()
	b.AddTable(IPv4)
	b.AddSet(IPv4, s, true)
	b.AddSetElements(IPv4, s, elems, false)
	b.AddChain(IPv4, in, ChainSpec{Base: &base})
	b.AppendRule(IPv4, in, RuleSpec{Exprs: []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Lookup{SourceRegister: 1, SetName: s.Name},
		&expr.Counter{},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}})
	start := time.Now()
	commit(t, c, b)
	t.Logf("set of %d elements + rule: %d messages, %d bytes, committed in %v", n, b.Messages(), b.Size(), time.Since(start))

	out := nft(t, ns, "list", "set", "ip", TableName, s.Name)
	if got := strings.Count(out, ","); got != n-1 {
		t.Errorf("nft lists %d elements, want %d", got+1, n)
	}
	rules, _ := c.Rules(IPv4, in)
	if len(rules) != 1 {
		t.Fatalf("%d rules", len(rules))
	}
	if l, ok := rules[0].Exprs[1].(*expr.Lookup); !ok || l.SetName != s.Name {
		t.Errorf("lookup read back as %#v", rules[0].Exprs[1])
	}

	// Deleting a set a rule uses is refused; flushing it is fine.
	b = NewBatch()
	b.FlushSet(IPv4, s.Name)
	i := b.DelSet(IPv4, s.Name)
	gen, _ := c.GenID()
	err := c.Commit(b, gen)
	var oe *OpError
	if !errors.As(err, &oe) || oe.Index != i || oe.Errno != unix.EBUSY {
		t.Errorf("DelSet of a used set: %v", err)
	}
	// Adding an existing element exclusively fails.
	b = NewBatch()
	i = b.AddSetElements(IPv4, s, elems[:1], true)
	gen, _ = c.GenID()
	if err := c.Commit(b, gen); !errors.As(err, &oe) || oe.Index != i || oe.Errno != unix.EEXIST {
		t.Errorf("exclusive add of an existing element: %v", err)
	}
}

// TestRequestTruncatedReply: a GET's answer is read with one receive
// into the connection's buffer, without asking its size first; an answer
// that does not fit is asked again with the buffer grown, for a single
// object and for a dump. Nothing is left queued after an answer (a GET
// asks for no ack).
func TestRequestTruncatedReply(t *testing.T) {
	c, _ := newNS(t)
	b := NewBatch()
	b.AddTable(IPv4)
	if err := c.Commit(b, 0); err != nil {
		t.Fatal(err)
	}
	c.rbuf = make([]byte, 16)
	if ok, err := c.TableExists(IPv4); err != nil || !ok {
		t.Fatalf("TableExists with a 16-byte buffer: %v, %v", ok, err)
	}
	if len(c.rbuf) <= 16 {
		t.Errorf("receive buffer not grown: %d bytes", len(c.rbuf))
	}
	c.rbuf = make([]byte, 16)
	if _, err := c.CtHelpers(IPv4); err != nil {
		t.Fatalf("dump with a 16-byte buffer: %v", err)
	}
	if _, err := c.GenID(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := unix.Recvfrom(c.fd, make([]byte, 64), unix.MSG_DONTWAIT|unix.MSG_PEEK); err != unix.EAGAIN {
		t.Errorf("left queued after the answers: %v", err)
	}
}
