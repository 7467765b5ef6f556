package ruleset

import (
	"strconv"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
)

func parseRule(t *testing.T, text string) *compat.Rule {
	t.Helper()
	cmd, err := compat.Parse(compat.IPv4, strings.Fields("-A X "+text), compat.ParseOptions{})
	if err != nil || len(cmd.Rules) != 1 {
		t.Fatalf("%s: %v", text, err)
	}
	return cmd.Rules[0]
}

func TestIndexKeys(t *testing.T) {
	if indexKey("ab", "c") == indexKey("a", "bc") {
		t.Error("chain and rule text run together")
	}
	if chainKey("X") == indexKey("X", "") {
		t.Error("a chain's marker is the key of an empty rule")
	}
	key := func(text string) kernel.IndexKey {
		r := parseRule(t, text)
		return indexKey("C", keyText(r, spec(r)))
	}
	// -C/-D compare rules as written canonically
	if key("-p tcp --dport 22 -j ACCEPT") != key("-p tcp -m tcp --dport 22 -j ACCEPT") {
		t.Error("two spellings of one rule have different keys")
	}
	// a jump counts without its target (renaming the target changes no
	// key), but not a goto or a built-in verdict
	if key("-s 1.2.3.4 -j A") != key("-s 1.2.3.4 -j B") {
		t.Error("jumps to two chains have different keys")
	}
	for _, other := range []string{"-s 1.2.3.4 -g A", "-s 1.2.3.4 -j ACCEPT", "-s 1.2.3.5 -j A"} {
		if key("-s 1.2.3.4 -j A") == key(other) {
			t.Errorf("-s 1.2.3.4 -j A and %s share a key", other)
		}
	}
	rs := newRule(parseRule(t, "-s 1.2.3.4 -j A"), 0)
	if ruleKey("C", rs) != key("-s 1.2.3.4 -j Z") || ruleKey("D", rs) == ruleKey("C", rs) {
		t.Error("ruleKey")
	}
}

// fakeIndex is a table's index for indexWriter without a kernel.
type fakeIndex map[kernel.IndexKey]kernel.IndexEntry

func (f fakeIndex) lookup(_ string, k kernel.IndexKey) (kernel.IndexEntry, bool, error) {
	e, ok := f[k]
	return e, ok, nil
}

// apply writes w's changes of table into f, as the kernel would.
func (f fakeIndex) apply(w *indexWriter, table string) {
	for _, c := range w.changes[table] {
		delete(f, c.key)
		if c.entry.count > 0 {
			f[c.key] = w.resolve(c.entry)
		}
	}
}

// chainWith returns a view of filter holding chain C as read from the
// kernel: rules (handles 10, 11, ...) when loaded.
func chainWith(t *testing.T, loaded bool, rules ...string) (*View, *ChainState) {
	t.Helper()
	v := NewView(compat.IPv4, "filter")
	c := &ChainState{Name: "C", Handle: 1}
	v.AddChain(c)
	if loaded {
		c.Loaded = true
		for i, r := range rules {
			rs := newRule(parseRule(t, r), 0)
			rs.Handle = uint64(10 + i)
			c.Rules = append(c.Rules, rs)
		}
		c.orig = append([]*RuleState(nil), c.Rules...)
	}
	return v, c
}

func validWriter(f fakeIndex) *indexWriter {
	info := indexInfo{gen: 7, valid: tableBit("filter"), present: true, state: kernel.IndexState{GenID: 7, Valid: tableBit("filter"), LastHandle: 100}}
	return newIndexWriter(info, f.lookup)
}

func count(f fakeIndex, t *testing.T, rule string) kernel.IndexEntry {
	t.Helper()
	r := parseRule(t, rule)
	return f[indexKey("C", keyText(r, spec(r)))]
}

func TestIndexWriterLoadedChain(t *testing.T) {
	v, c := chainWith(t, true, "-j DROP", "-s 1.1.1.1 -j ACCEPT", "-j DROP")
	f := fakeIndex{chainKey("C"): {Count: 1}}
	for _, rs := range c.orig {
		k := ruleKey("C", rs)
		e := f[k]
		if e.Count == 0 {
			e.Handle = rs.Handle
		}
		e.Count++
		f[k] = e
	}
	// -D C 1 removes the first DROP: the other is now the only one
	if err := v.Apply(&compat.Command{Op: compat.OpDeleteNum, Chain: "C", RuleNum: 1}); err != nil {
		t.Fatal(err)
	}
	w := validWriter(f)
	if err := w.view(v); err != nil {
		t.Fatal(err)
	}
	f.apply(w, "filter")
	if e := count(f, t, "-j DROP"); e != (kernel.IndexEntry{Count: 1, Handle: 12}) {
		t.Errorf("DROP: %+v, want the third rule's handle and 1", e)
	}
	if e := count(f, t, "-s 1.1.1.1 -j ACCEPT"); e != (kernel.IndexEntry{Count: 1, Handle: 11}) {
		t.Errorf("ACCEPT: %+v", e)
	}
}

func TestIndexWriterUnreadChain(t *testing.T) {
	// -A to a chain whose rules were not read: the count goes up, the
	// handle of the rule already there stays
	v, c := chainWith(t, false)
	f := fakeIndex{chainKey("C"): {Count: 1}}
	r := parseRule(t, "-j DROP")
	f[indexKey("C", keyText(r, spec(r)))] = kernel.IndexEntry{Count: 1, Handle: 50}
	if err := v.Apply(&compat.Command{Op: compat.OpAppend, Chain: "C", Rules: []*compat.Rule{r}}); err != nil {
		t.Fatal(err)
	}
	c.Rules[0].hint = 3 // as the builder sets it
	w := validWriter(f)
	if err := w.view(v); err != nil {
		t.Fatal(err)
	}
	f.apply(w, "filter")
	if e := count(f, t, "-j DROP"); e != (kernel.IndexEntry{Count: 2, Handle: 50}) {
		t.Errorf("after -A: %+v", e)
	}
	// a new rule of its own gets the predicted handle: last handle 100,
	// third handle of the batch
	v, c = chainWith(t, false)
	r2 := parseRule(t, "-s 2.2.2.2 -j DROP")
	if err := v.Apply(&compat.Command{Op: compat.OpAppend, Chain: "C", Rules: []*compat.Rule{r2}}); err != nil {
		t.Fatal(err)
	}
	c.Rules[0].hint = 3
	w = validWriter(f)
	if err := w.view(v); err != nil {
		t.Fatal(err)
	}
	f.apply(w, "filter")
	if e := count(f, t, "-s 2.2.2.2 -j DROP"); e != (kernel.IndexEntry{Count: 1, Handle: 103}) {
		t.Errorf("new rule: %+v", e)
	}
	// -F of the unread chain leaves the counts (too high is allowed)
	v, _ = chainWith(t, false)
	if err := v.Apply(&compat.Command{Op: compat.OpFlush, Chain: "C"}); err != nil {
		t.Fatal(err)
	}
	w = validWriter(f)
	if err := w.view(v); err != nil {
		t.Fatal(err)
	}
	if len(w.changes["filter"]) != 0 || !w.maintained("filter") {
		t.Errorf("flush of an unread chain: changes %v, maintained %v", w.changes["filter"], w.maintained("filter"))
	}
	// a chain without a marker is left alone
	delete(f, chainKey("C"))
	v, _ = chainWith(t, false)
	if err := v.Apply(&compat.Command{Op: compat.OpAppend, Chain: "C", Rules: []*compat.Rule{r}}); err != nil {
		t.Fatal(err)
	}
	w = validWriter(f)
	if err := w.view(v); err != nil {
		t.Fatal(err)
	}
	if len(w.changes["filter"]) != 0 {
		t.Errorf("unindexed chain: changes %v", w.changes["filter"])
	}
}

func TestIndexWriterChains(t *testing.T) {
	f := fakeIndex{chainKey("C"): {Count: 1}}
	// a renamed chain loses its marker
	v, _ := chainWith(t, false)
	if err := v.Apply(&compat.Command{Op: compat.OpRenameChain, Chain: "C", NewName: "D"}); err != nil {
		t.Fatal(err)
	}
	w := validWriter(f)
	if err := w.view(v); err != nil {
		t.Fatal(err)
	}
	f.apply(w, "filter")
	if _, ok := f[chainKey("C")]; ok {
		t.Error("marker of a renamed chain kept")
	}
	if _, ok := f[chainKey("D")]; ok {
		t.Error("marker for the new name")
	}
	// a new chain is indexed with its rules
	v = NewView(compat.IPv4, "filter")
	if err := v.Apply(&compat.Command{Op: compat.OpNewChain, Chain: "N"}); err != nil {
		t.Fatal(err)
	}
	w = validWriter(f)
	if err := w.view(v); err != nil {
		t.Fatal(err)
	}
	f.apply(w, "filter")
	if _, ok := f[chainKey("N")]; !ok {
		t.Error("new chain not indexed")
	}
	// a stale table is not maintained
	w = newIndexWriter(indexInfo{gen: 8, present: true}, f.lookup)
	if w.maintained("filter") {
		t.Error("stale index maintained")
	}
}

func TestIndexRebuildThreshold(t *testing.T) {
	w := newIndexWriter(indexInfo{fresh: true}, nil)
	v := NewView(compat.IPv4, "filter")
	v.replaced = true
	for _, name := range []string{"SMALL", "EMPTY", "BIG"} {
		v.newChain(name)
	}
	small, big := v.Chains["SMALL"], v.Chains["BIG"]
	small.Rules = []*RuleState{newRule(parseRule(t, "-j DROP"), 0)}
	for i := range indexedMin {
		big.Rules = append(big.Rules, newRule(parseRule(t, "-s 10.0.0."+string(rune('1'+i%9))+" -j DROP"), 0))
	}
	if err := w.view(v); err != nil {
		t.Fatal(err)
	}
	n, next := w.build["filter"].indexed(w)
	has := map[kernel.IndexKey]bool{}
	for range n {
		k, _ := next()
		has[k] = true
	}
	if !has[chainKey("BIG")] || !has[chainKey("EMPTY")] || has[chainKey("SMALL")] {
		t.Errorf("markers: BIG %v EMPTY %v SMALL %v", has[chainKey("BIG")], has[chainKey("EMPTY")], has[chainKey("SMALL")])
	}
	if has[ruleKey("SMALL", small.Rules[0])] || !has[ruleKey("BIG", big.Rules[0])] {
		t.Error("entries of the wrong chains")
	}
}

func TestRestoreScanCountsRules(t *testing.T) {
	in := "*filter\n:A - [0:0]\n-A A -j DROP\n--append A -j DROP\n-A  B -j DROP\nCOMMIT\n*nat\n-A A -j DROP\nCOMMIT\n"
	scan, err := streamableSections(strings.NewReader(in), RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		table, chain string
		n            int
	}{{"filter", "A", 2}, {"filter", "B", 1}, {"nat", "A", 1}, {"nat", "B", 0}} {
		if got := scan.rules.of(c.table, c.chain); got != c.n {
			t.Errorf("%s %s: %d rules, want %d", c.table, c.chain, got, c.n)
		}
	}
}

func BenchmarkIndexKey(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		indexKey("KUBE-SEP-0000001F2", "-d 10.128.0.1/32 -p tcp -m comment --comment \"ns3/svc-31:port\" -m tcp --dport 8080 -j ACCEPT")
	}
}

func TestKeyTable(t *testing.T) {
	for _, reserve := range []int{0, 10, 5000} {
		var tb keyTable
		if reserve > 0 {
			tb = newKeyTable(reserve)
		}
		var keys []kernel.IndexKey
		want := map[kernel.IndexKey]uint32{}
		for i := range 3000 {
			// each key comes three times, 1000 keys apart; keys that
			// share their first eight bytes collide in the table
			k := indexKey("C", strconv.Itoa(i%1000))
			if i%7 == 0 {
				k = kernel.IndexKey{15: byte(i), 14: byte(i >> 8)}
			}
			slot, pos, ok := tb.find(keys, k)
			if p, seen := want[k]; ok != seen || (ok && pos != p) {
				t.Fatalf("reserve %d key %d: found %v at %d, want %v at %d", reserve, i, ok, pos, seen, p)
			}
			if !ok {
				want[k] = uint32(len(keys))
				keys = append(keys, k)
				tb.put(keys, slot, uint32(len(keys)-1))
			}
		}
		if tb.n != len(want) || 2*tb.n > len(tb.slots) {
			t.Errorf("reserve %d: %d keys in %d slots, want %d", reserve, tb.n, len(tb.slots), len(want))
		}
	}
}

// TestRuleKeyTextExact: the key text a restore takes from the rule's
// exact text is the one ruleKeyText prints.
func TestRuleKeyTextExact(t *testing.T) {
	for _, text := range []string{
		"-s 10.0.0.1/32 -p tcp -m tcp --dport 80 -m comment --comment ab -j ACCEPT",
		"-p tcp --dport 80 -j ACCEPT",
		"-p udp -m multiport --dports 1,2:5 -j DROP",
		"-m recent --name x --rcheck -j DROP",
		"-m recent --name x --rcheck --mask 255.255.255.255 -j DROP",
		"-i + -j ACCEPT",
		"-o eth+ ! -i lo -j RETURN",
		"-j Y",
		"-g Y",
		"-d 10.0.0.0/8 -p tcp -m tcp --dport 1 -j Y",
		"-m conntrack --ctstate NEW,ESTABLISHED -j ACCEPT",
		"-m state --state NEW -j ACCEPT",
		"-j LOG --log-prefix x",
		"-j MARK --set-mark 1",
		"-m mark --mark 0x4000/0x4000 -j MASQUERADE",
		"-p icmp --icmp-type echo-request -j ACCEPT",
		"-m statistic --mode random --probability 0.33333333349 -j Y",
	} {
		r := parseRule(t, text)
		if got, want := ruleKeyTextExact(r, compat.ExactSpec(r)), ruleKeyText(r); got != want {
			t.Errorf("%s: key text %q, want %q", text, got, want)
		}
	}
}
