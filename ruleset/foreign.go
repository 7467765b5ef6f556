package ruleset

import (
	"os"
	"strings"

	"github.com/xdptables/xdptables/compat"
)

// Warnings returns the notes iptables-nft prints on stderr when listing
// or saving while other iptables implementations hold tables: tables of
// iptables-legacy (/proc/net/ip_tables_names) and of iptables-nft (nft
// tables named filter, nat, ... in the family), which xdptables does not
// show or touch.
func (e *Engine) Warnings(save bool) []string {
	legacy, names := "iptables-legacy", "/proc/net/ip_tables_names"
	nft := "iptables-nft"
	if e.Family == compat.IPv6 {
		legacy, names, nft = "ip6tables-legacy", "/proc/net/ip6_tables_names", "ip6tables-nft"
	}
	if save {
		legacy += "-save"
		nft += "-save"
	}
	var out []string
	if data, err := os.ReadFile(names); err == nil && strings.TrimSpace(string(data)) != "" {
		out = append(out, "# Warning: "+strings.TrimSuffix(legacy, "-save")+" tables present, use "+legacy+" to see them\n")
	}
	if ts, err := e.Conn.ForeignTables(); err == nil {
		for _, t := range ts {
			if t.IsIptables() && t.Family == e.kfam() {
				out = append(out, "# Warning: "+strings.TrimSuffix(nft, "-save")+" tables present, use "+nft+" to see them\n")
				break
			}
		}
	}
	return out
}
