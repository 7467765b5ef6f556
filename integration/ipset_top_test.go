package integration

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

// topElems returns the elements of our lookup set of ipset set name
// (nft's listing, from "elements = {" on), and its comment.
func topElems(t *testing.T, p *ipsetPair, fam, name string) (elems, comment string) {
	t.Helper()
	out := mustRun(t, p.me, "nft", "list", "set", fam, "xdptables", "ipset."+name)
	if i := strings.Index(out, "comment \""); i >= 0 {
		comment, _, _ = strings.Cut(out[i+len("comment \""):], "\"")
	}
	if i := strings.Index(out, "elements = {"); i >= 0 {
		e, _, _ := strings.Cut(out[i:], "}")
		elems = strings.Join(strings.Fields(e), " ") + " }"
	}
	return elems, comment
}

// canonical checks that our lookup set of name is what a set restored
// whole from its saved members holds: the single add and del paths keep
// the layout the general path and restore compute.
func canonical(t *testing.T, p *ipsetPair, fam, name string) {
	t.Helper()
	save := mustRun(t, p.me, p.ours["ipset"], "save", name)
	var b strings.Builder
	for _, l := range strings.Split(save, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[1] == name {
			f[1] = name + "copy"
		}
		b.WriteString(strings.Join(f, " ") + "\n")
	}
	if r := p.me.Run(b.String(), p.ours["ipset"], "restore"); r.RC != 0 {
		t.Fatalf("restore of the copy: rc %d: %s", r.RC, r.Stderr)
	}
	got, comment := topElems(t, p, fam, name)
	want, _ := topElems(t, p, fam, name+"copy")
	if got != want {
		t.Errorf("lookup set of %s after single commands:\n%s\nrestored whole:\n%s", name, got, want)
	}
	if strings.Contains(comment, " nested") {
		// the counts of nested entries, kept apart (ipset.Set.NestedSet)
		// (made with its first element: a set without one may have none)
		list := func(n string) string {
			out := p.me.Run("", "nft", "list", "set", fam, "xdptables", "ipset-nested."+n).Stdout
			if i := strings.Index(out, "elements = {"); i >= 0 {
				e, _, _ := strings.Cut(out[i:], "}")
				return strings.Join(strings.Fields(e), " ")
			}
			return ""
		}
		if got, want := list(name), list(name+"copy"); got != want {
			t.Errorf("nested counts of %s after single commands:\n%s\nrestored whole:\n%s", name, got, want)
		}
	}
	mustRun(t, p.me, p.ours["ipset"], "destroy", name+"copy")
}

// randPrefix is a prefix inside base, of at least base's length.
func randPrefix(r *rand.Rand, base netip.Prefix) string {
	a := base.Addr().As16()
	bits := base.Bits()
	off := 0
	if base.Addr().Is4() {
		off = 96
	}
	for i := off + bits; i < 128; i++ {
		if r.IntN(2) == 0 {
			a[i/8] |= 0x80 >> (i % 8)
		}
	}
	addr := netip.AddrFrom16(a)
	if base.Addr().Is4() {
		addr = addr.Unmap()
	}
	n := bits + r.IntN(addr.BitLen()-bits+1)
	return netip.PrefixFrom(addr, n).Masked().String()
}

// TestIpsetTopLayout: plain hash:net sets keep one lookup interval per
// top-level entry. Random single adds and dels in a small address range
// (nested adds and dels, adds of a prefix holding entries or bridging
// two, dels that leave nested entries on their own, -exist, nomatch
// entries coming and going), swap, rename and flush give ipset's
// answers (test of addresses and prefixes, save), and the lookup set
// stays the one a restore of the same members makes. A set stored
// without the layout (an older build's) keeps its pieces and its
// answers.
func TestIpsetTopLayout(t *testing.T) {
	p := newIpsetPair(t, "itop")
	r := rand.New(rand.NewPCG(17, 4))
	for _, c := range []struct{ name, fam, create, base string }{
		{"t", "ip", "ipset create t hash:net", "198.18.0.0/22"},
		{"t6", "ip6", "ipset create t6 hash:net family inet6", "2001:db8::/118"},
		// large sets keep the counts of nested entries apart
		{"n", "ip", "ipset create n hash:net maxelem 200000", "198.18.4.0/22"},
		{"n6", "ip6", "ipset create n6 hash:net family inet6 maxelem 200000", "2001:db8:1::/118"},
	} {
		base := netip.MustParsePrefix(c.base)
		p.run("", c.create)
		_, comment := topElems(t, p, c.fam, c.name)
		if !strings.Contains(comment, " top") {
			t.Errorf("%s: header %q: not the top-level layout", c.name, comment)
		}
		if big := strings.Contains(c.create, "maxelem"); big != strings.Contains(comment, " top nested") {
			t.Errorf("%s: header %q: nested counts kept apart %v, want %v", c.name, comment, !big, big)
		}
		var added []string
		for i := range 240 {
			var l string
			switch k := r.IntN(20); {
			case k < 9:
				x := randPrefix(r, base)
				added = append(added, x)
				l = "ipset add " + c.name + " " + x
			case k < 10:
				l = "ipset add " + c.name + " " + randPrefix(r, base) + " nomatch"
			case k < 15 && len(added) > 0:
				l = "ipset del " + c.name + " " + added[r.IntN(len(added))]
			case k < 16:
				l = "ipset -exist del " + c.name + " " + randPrefix(r, base)
			case k < 17 && len(added) > 0:
				l = "ipset -exist add " + c.name + " " + added[r.IntN(len(added))]
			default:
				a := netip.MustParsePrefix(randPrefix(r, base)).Addr()
				l = "ipset test " + c.name + " " + a.String()
			}
			p.run("", l)
			if i%60 == 59 {
				p.run("", "ipset -s save "+c.name)
				canonical(t, p, c.fam, c.name)
			}
		}
		// every address of the range answers as ipset's
		if base.Addr().Is4() {
			a := base.Addr()
			for i := range 1024 {
				if i%8 == 3 {
					p.run("", "ipset test "+c.name+" "+a.String())
				}
				a = a.Next()
			}
		}
	}
	// swap, rename, flush, and adds and dels after each
	for _, l := range []string{
		"ipset create u hash:net", "ipset add u 198.18.0.0/24", "ipset add u 198.18.0.128/25",
		"ipset swap t u", "ipset add t 198.18.0.7", "ipset del u 198.18.0.0/23",
		"ipset rename u w", "ipset add w 198.18.0.0/23", "ipset add w 198.18.0.0/24", "ipset del w 198.18.0.0/23",
		"ipset flush t", "ipset add t 198.18.0.0/24", "ipset add t 198.18.1.0/24", "ipset add t 198.18.0.0/23",
		"ipset del t 198.18.0.0/24", "ipset test t 198.18.0.9", "ipset test t 198.18.2.9", "ipset -s save",
		// a set keeping its counts apart swapped with one that does not
		"ipset swap t n", "ipset add t 198.18.4.0/22", "ipset add t 198.18.5.7", "ipset del n 198.18.0.0/24",
		"ipset add n 198.18.1.0/25", "ipset add n 198.18.0.0/22", "ipset del t 198.18.4.0/22", "ipset -s save",
	} {
		p.run("", l)
	}
	canonical(t, p, "ip", "t")
	canonical(t, p, "ip", "w")
	canonical(t, p, "ip", "n")

	// An older build's set: the same header without the word; with
	// disjoint entries both layouts hold the same elements.
	p.run("", "ipset destroy t")
	p.run("", "ipset destroy w")
	p.run("", "ipset create o hash:net")
	p.run("", "ipset add o 198.18.4.0/24")
	p.run("", "ipset add o 198.18.6.0/24")
	table := mustRun(t, p.me, "nft", "list", "table", "ip", "xdptables")
	old := strings.ReplaceAll(table, " top slot ", " slot ")
	if old == table {
		t.Fatalf("no header to rewrite in\n%s", table)
	}
	mustRun(t, p.me, "nft", "delete", "table", "ip", "xdptables")
	if res := p.me.Run(old, "nft", "-f", "-"); res.RC != 0 {
		t.Fatalf("nft -f: %s", res.Stderr)
	}
	for _, l := range []string{
		"ipset add o 198.18.4.128/25", "ipset add o 198.18.4.130", "ipset test o 198.18.4.1",
		"ipset add o 198.18.4.0/23", "ipset del o 198.18.4.128/25", "ipset test o 198.18.4.200",
		"ipset del o 198.18.4.0/24", "ipset test o 198.18.5.1", "ipset -exist add o 198.18.4.130",
		"ipset -s save o",
	} {
		p.run("", l)
	}
	elems, comment := topElems(t, p, "ip", "o")
	if strings.Contains(comment, " top") {
		t.Errorf("the older set took the top-level layout: %q", comment)
	}
	// pieces: 198.18.4.0/23 less 198.18.4.130, which is its own piece
	want := "elements = { 198.18.4.0-198.18.4.129, 198.18.4.130, 198.18.4.131-198.18.5.255, 198.18.6.0/24 }"
	if elems != want {
		t.Errorf("older set's lookup set:\n%s\nwant\n%s", elems, want)
	}
	p.run("", "ipset -s save")
}
