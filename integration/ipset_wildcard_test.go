package integration

import (
	"fmt"
	"path/filepath"
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
