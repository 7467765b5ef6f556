package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestIpsetWildcardSaveRestore: the save of a hash:net,iface with
// wildcard entries restores, with the reference ipset and with ours
// (ipset refuses an add that a stored wildcard entry holds, so each
// wildcard entry must come after the names it holds), and the restored
// set saves the same again.
func TestIpsetWildcardSaveRestore(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	var script []string
	script = append(script, "create w hash:net,iface")
	for _, n := range []string{"eth", "ppp", "veth-h57"} {
		for i := 0; i < 6; i++ {
			script = append(script, fmt.Sprintf("add w 198.51.100.0/24,%s%d", n, i))
		}
	}
	script = append(script, "add w 198.51.100.0/24,eth wildcard", "add w 198.51.100.0/24,ppp9 wildcard nomatch",
		"add w 198.51.100.0/24,pp wildcard", "add w 198.51.100.0/24,v wildcard", "add w 203.0.113.0/24,lo wildcard")
	for label, tool := range map[string]string{"ref": "ipset", "ours": filepath.Join(LinkDir(t), "ipset")} {
		ns := netns.New(t, "iwsr"+label[:1])
		for _, l := range script {
			mustRun(t, ns, append([]string{tool}, shellWords(l)...)...)
		}
		save := mustRun(t, ns, tool, "save")
		mustRun(t, ns, tool, "destroy")
		if r := ns.Run(save, tool, "restore"); r.RC != 0 {
			t.Errorf("%s: restore of its save: rc %d: %s\n%s", label, r.RC, r.Stderr, save)
			continue
		}
		if again := mustRun(t, ns, tool, "save"); normIpsetOutput(again) != normIpsetOutput(save) {
			t.Errorf("%s: save after restore:\n%s\nwant\n%s", label, again, save)
		}
	}
}

// TestIpsetWildcardRandom runs the same random commands on a
// hash:net,iface with wildcard entries with the reference ipset and
// with ours: adds (-exist too, nomatch, physdev:) and tests first, then
// dels and tests, every answer (status, stdout, stderr) and the
// listings after each phase compared. (Adds after dels are left out:
// ipset gives a slot a del freed to the next add of its bucket, which
// then comes first where it holds a name; see ipset/doc.go.)
func TestIpsetWildcardRandom(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	rng := rand.New(rand.NewPCG(57, 2))
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	name := func() string {
		if rng.IntN(10) == 0 {
			return "physdev:" + pick("eth", "eth0", "")
		}
		return pick("e", "et", "eth", "eth0", "eth1", "eth01", "v", "ve", "veth", "lo")
	}
	net := func() string {
		return pick("198.51.100.0/24", "198.51.100.0/25", "198.51.100.128/26", "198.51.100.0/23")
	}
	test := func() string {
		l := fmt.Sprintf("test w 198.51.100.%s,%s", pick("1", "100", "130", "200"), pick("e", "eth", "eth0", "eth01", "eth2", "veth0", "lo", "physdev:eth0"))
		if rng.IntN(3) == 0 {
			l += " nomatch"
		}
		return l
	}
	var script []string
	for i := 0; i < 120; i++ {
		if rng.IntN(3) == 0 {
			script = append(script, test())
			continue
		}
		l := "add " + pick("", "-exist ") + "w " + net() + "," + name()
		if rng.IntN(2) == 0 {
			l += " wildcard"
		}
		if rng.IntN(3) == 0 {
			l += " nomatch"
		}
		script = append(script, l)
	}
	script = append(script, "list w")
	for i := 0; i < 60; i++ {
		if rng.IntN(2) == 0 {
			script = append(script, test())
		} else {
			script = append(script, "del "+pick("", "-exist ")+"w "+net()+","+name())
		}
	}
	script = append(script, "list w")
	ours := filepath.Join(LinkDir(t), "ipset")
	ref, me := netns.New(t, "iwrdr"), netns.New(t, "iwrdo")
	mustRun(t, ref, "ipset", "create", "w", "hash:net,iface")
	mustRun(t, me, ours, "create", "w", "hash:net,iface")
	bad := 0
	for _, l := range script {
		args := strings.Fields(l)
		r := ref.Run("", append([]string{"ipset"}, args...)...)
		m := me.Run("", append([]string{ours}, args...)...)
		if normIpsetOutput(r.Stdout) != normIpsetOutput(m.Stdout) || r.Stderr != m.Stderr || r.RC != m.RC {
			t.Errorf("ipset %s:\n--- reference rc=%d\n%s%s--- ours rc=%d\n%s%s", l, r.RC, r.Stdout, r.Stderr, m.RC, m.Stdout, m.Stderr)
			if bad++; bad > 5 {
				t.Fatal("too many differences")
			}
		}
	}
}

// TestIpsetWildcardTranslate: translate writes the wildcard entries of a
// hash:net,iface as nft writes a name prefix ("eth*"), and nft -f of its
// script makes the same lookup set as ours (names nested in a wildcard
// that answer alike leave it whole).
func TestIpsetWildcardTranslate(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("nft") {
		t.Skip("nft not installed")
	}
	sets := "create w hash:net,iface\nadd w 198.51.100.0/24,eth0\nadd w 198.51.100.0/24,eth wildcard\n" +
		"add w 198.51.100.0/25,veth-h57 wildcard\nadd w 198.51.100.0/25,lo\n" +
		"create w6 hash:net,iface family inet6\nadd w6 2001:db8::/64,eth wildcard\n"
	file := filepath.Join(t.TempDir(), "sets")
	if err := os.WriteFile(file, []byte(sets), 0o644); err != nil {
		t.Fatal(err)
	}
	script, stderr, rc := translateOut(t, "ipset", "restore", file)
	if rc != 0 || !strings.Contains(script, `"eth*"`) || !strings.Contains(script, `"veth-h57*"`) {
		t.Fatalf("translate: rc %d %s\n%s", rc, stderr, script)
	}
	ours, theirs := netns.New(t, "iwtro"), netns.New(t, "iwtrt")
	mustRun(t, ours, filepath.Join(LinkDir(t), "ipset"), "restore", "-f", file)
	if r := theirs.Run(script, "nft", "-f", "-"); r.RC != 0 {
		t.Fatalf("nft -f: %s\n%s", r.Stderr, script)
	}
	for _, set := range []string{"ip xdptables ipset.w", "ip6 xdptables ipset.w6"} {
		args := append([]string{"nft", "list", "set"}, strings.Fields(set)...)
		if a, b := mustRun(t, ours, args...), mustRun(t, theirs, args...); a != b {
			t.Errorf("%s:\nours:\n%s\ntranslation:\n%s", set, a, b)
		}
	}
}
