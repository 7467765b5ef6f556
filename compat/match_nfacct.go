package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// NfacctMatch is -m nfacct --nfacct-name NAME: counts the packet in the
// extended accounting object NAME (made with the nfacct tool) and
// matches (or, over a quota, does not).
type NfacctMatch struct {
	Object string
}

// nfacctNameMax is NFACCT_NAME_MAX, the size of the name field.
const nfacctNameMax = 32

var nfacctMatchSpec = ExtSpec{
	Name:     "nfacct",
	Options:  []OptDef{{Name: "nfacct-name", Arg: RequiredArg, ID: 0, Mandatory: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &NfacctMatch{} },
}

var _ = RegisterMatch(&nfacctMatchSpec)

func (m *NfacctMatch) Name() string { return "nfacct" }

// Parse: XTTYPE_STRING with a minimum length of 1, cut silently to the
// field (the kernel then looks the cut name up).
func (m *NfacctMatch) Parse(p *OptArg) error {
	if p.Arg == "" {
		return Paramf("Argument must have a minimum length of 1 characters\n")
	}
	m.Object = p.Arg
	if len(m.Object) >= nfacctNameMax {
		m.Object = m.Object[:nfacctNameMax-1]
	}
	return nil
}

func (m *NfacctMatch) Final(*Rule, OptSet) error { return nil }

// Save and List print two spaces before the name: libxt_nfacct's own
// and xtables_save_string's.
func (m *NfacctMatch) Save(b *strings.Builder, _ *Rule) {
	b.WriteString(" --nfacct-name  " + SaveQuote(m.Object))
}

func (m *NfacctMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" nfacct-name  " + SaveQuote(m.Object))
}

// NftExprs: the xtables match, revision 1 (struct
// xt_nfacct_match_info_v1), as iptables-nft sends it: nftables has no
// expression that counts into an nfacct object (its named counters are
// other objects). The kernel refuses a name that has no object (ENOENT).
func (m *NfacctMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.raw([]byte(m.Object), nfacctNameMax)
	x.u64(0) // the kernel's struct nf_acct pointer
	return []expr.Any{compatMatch("nfacct", 1, x)}, nil
}
