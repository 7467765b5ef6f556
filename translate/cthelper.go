package translate

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/xdptables/xdptables/compat"
)

// -j CT --helper in native nftables
//
// The xtables CT target attaches a conntrack template in raw (priority
// -300); conntrack (-200) copies the template's helper into the new
// entry. nftables cannot do that: `ct helper set "obj"` only acts on a
// conntrack entry that exists, is unconfirmed and is no template, so it
// must run after conntrack, in the same hook (checked on a 6.18 kernel:
// at -300 it does nothing, at -199 the entry gets helper=ftp; a second
// `ct helper set` on the same entry leaves the first helper; a NOTRACK'd
// packet gets none; an entry created from a zone template does get it;
// an expected connection, e.g. an FTP data connection, gets it too,
// where xt's template helper is not applied to it: conntrack takes the
// expectation's helper, if any, instead).
//
// The emulation keeps each CT --helper rule in its raw chain (its
// matches and counter) and re-evaluates the chain's CT-relevant rules in
// a base chain at -199. That gives what xt gives only if evaluating the
// same matches a second time, a few hooks later, answers as the first
// time did. CTHelperExact decides that for the rules of one built-in raw
// chain.

// ctMirrorMatches are the matches whose answer depends only on the
// packet's headers and payload, its devices, its socket, its mark or
// the CPU, none of which changes between raw (-300) and -199 unless a
// target of the raw chain changes it (see ctMirrorTargetOK). Matches
// that read conntrack (state, conntrack, connmark, helper, connbytes,
// connlabel, connlimit), that keep state or draw at random (limit,
// hashlimit, quota, statistic, recent, nfacct, cluster), that read the
// clock (time) or run code with state of its own (bpf, set with its
// counters, socket lookups, osf, rpfilter's route lookup) are left out:
// evaluated twice they may answer differently.
var ctMirrorMatches = map[string]bool{
	"tcp": true, "udp": true, "icmp": true, "icmp6": true, "sctp": true, "dccp": true,
	"multiport": true, "iprange": true, "mac": true, "pkttype": true, "length": true,
	"tos": true, "dscp": true, "ttl": true, "hl": true, "ecn": true, "addrtype": true,
	"comment": true, "ah": true, "esp": true, "mh": true, "rt": true, "frag": true,
	"hbh": true, "dst": true, "ipv6header": true, "eui64": true, "u32": true,
	"string": true, "mark": true, "physdev": true, "devgroup": true, "cpu": true,
	"tcpmss": true, "owner": true, "cgroup": true, "realm": true, "policy": true,
}

// ctMirrorTargetOK says whether a rule's target leaves everything a
// match can read as it was, and ends or continues the chain without
// leaving it for code the mirror does not see: no target, the verdicts
// ACCEPT, DROP and RETURN, CT/NOTRACK (they set conntrack templates,
// which the mirror reproduces by order), and the targets that only log
// or trace.
func ctMirrorTargetOK(t compat.Target) bool {
	switch t := t.(type) {
	case nil:
		return true
	case *compat.ChainTarget:
		switch t.Chain {
		case compat.VerdictAccept, compat.VerdictDrop, compat.VerdictReturn:
			return !t.Goto
		}
		return false
	case *compat.CTTarget, *compat.LogTarget, *compat.NflogTarget, *compat.TraceTarget, *compat.AuditTarget:
		return true
	}
	return false
}

// IsCTHelper says whether r is a -j CT --helper rule that assigns its
// helper: with --notrack, xt's CT leaves the helper alone.
func IsCTHelper(r *compat.Rule) bool {
	ct, ok := r.Target.(*compat.CTTarget)
	return ok && ct.Helper != "" && ct.Flags&compat.CTNotrack == 0
}

// CTHelperExact reports whether the CT --helper rules among rules (the
// rules of one built-in raw chain, in order) can be emulated exactly by
// re-evaluating them after conntrack. It returns nil when they can (or
// when there is no CT --helper rule), otherwise an error naming the
// first rule (1-based, as --line-numbers counts) that prevents it:
//
//   - every rule up to the last CT --helper rule must be read the same
//     way twice: only matches of ctMirrorMatches;
//   - no rule of the chain may change what those matches read, or leave
//     the chain for rules the mirror does not see: only targets that
//     ctMirrorTargetOK accepts.
func CTHelperExact(rules []*compat.Rule) error {
	last := -1
	for i, r := range rules {
		if IsCTHelper(r) {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	for i, r := range rules {
		if !ctMirrorTargetOK(r.Target) {
			return fmt.Errorf("rule %d (-j %s) may change the packet or leave the chain before conntrack assigns the helper", i+1, r.Target.Name())
		}
		if i > last {
			continue
		}
		for _, m := range r.Matches {
			if !ctMirrorMatches[m.Name()] {
				return fmt.Errorf("rule %d (-m %s) may match differently when the helper is assigned after conntrack", i+1, m.Name())
			}
		}
	}
	return nil
}

// ipsExpected is the conntrack status bit of an expected connection.
const ipsExpected = 1 << 0

// CTHelperObj is a `ct helper` object of our table: the kernel helper
// Helper for layer 4 protocol Proto, in the table's family (Proto 0: a
// rule without -p, or with a negated one, which the kernel refuses).
//
// Each built-in raw chain has objects of its own, so that a change to
// one chain needs to know only that chain's rules.
type CTHelperObj struct {
	Chain  string
	Helper string
	Proto  uint8
}

// CTHelperPrefix starts the names of the mirror chains and helper
// objects: no iptables table is called so, so that the chains are none
// of an iptables table's chains.
const CTHelperPrefix = "ct-helper."

// Name is the object's name in the table, e.g.
// "ct-helper.PREROUTING.ftp.6".
func (o CTHelperObj) Name() string {
	return fmt.Sprintf("%s%s.%s.%d", CTHelperPrefix, o.Chain, o.Helper, o.Proto)
}

// CTHelperPriority is the priority of the mirror chains: right after
// conntrack (-200), in the hook of their raw chain.
const CTHelperPriority = -199

// CTHelperChain is the nft name of the mirror chain of the built-in raw
// chain chain (PREROUTING or OUTPUT).
func CTHelperChain(chain string) string { return CTHelperPrefix + chain }

// CTHelperObjOf says whether name is the name of a helper object of the
// mirror of chain.
func CTHelperObjOf(name, chain string) bool {
	return strings.HasPrefix(name, CTHelperPrefix+chain+".")
}

// CTMirrorRule is a rule of the chain CTHelperMirror builds.
type CTMirrorRule struct {
	Exprs []expr.Any
	// From is the raw rule whose matches the rule re-evaluates (nil for
	// the rule that lets expected connections pass): an xtables match
	// among them needs its protocol (kernel.RuleCompat).
	From *compat.Rule
}

// CTHelperMirror returns the rules of the base chain that assigns the
// helpers of the CT --helper rules among rules, the rules of the
// built-in raw chain chain (PREROUTING or OUTPUT), after conntrack, and
// the helper objects they use (each once, in order of first use). It
// returns no rules when there is no CT --helper rule, and
// CTHelperExact's error when the emulation would not be exact.
//
// The mirror first lets expected connections pass (xt's template helper
// is not applied to them), then re-evaluates, in order, the matches of
// every rule up to the last CT --helper rule that can end the raw
// chain's work on a packet: each CT rule (xt's CT leaves a packet that
// already has a template alone: the first CT rule that matches decides)
// as `<matches> [ct helper set "obj"] accept`, ACCEPT and RETURN as
// `<matches> accept`. DROP rules need nothing (the packets they match do
// not get here), nor do rules that only log or count.
func CTHelperMirror(f compat.Family, chain string, rules []*compat.Rule) ([]CTMirrorRule, []CTHelperObj, error) {
	if err := CTHelperExact(rules); err != nil {
		return nil, nil, err
	}
	last := -1
	for i, r := range rules {
		if IsCTHelper(r) {
			last = i
		}
	}
	if last < 0 {
		return nil, nil, nil
	}
	out := []CTMirrorRule{{Exprs: []expr.Any{
		&expr.Ct{Key: expr.CtKeySTATUS, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binary.NativeEndian.AppendUint32(nil, ipsExpected), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
		&expr.Verdict{Kind: expr.VerdictAccept},
	}}}
	var objs []CTHelperObj
	for _, r := range rules[:last+1] {
		var set expr.Any
		switch t := r.Target.(type) {
		case *compat.CTTarget:
			if IsCTHelper(r) {
				// xt's CT takes the helper's protocol from -p, and none
				// from a negated one: the kernel then has no such helper
				// (ENOENT, as for an unknown name), and so it answers
				// when the object is created with protocol 0
				o := CTHelperObj{Chain: chain, Helper: t.Helper}
				if r.ProtoSet && !r.ProtoInv {
					o.Proto = r.Proto
				}
				if !slices.Contains(objs, o) {
					objs = append(objs, o)
				}
				set = &expr.Objref{Type: unix.NFT_OBJECT_CT_HELPER, Name: o.Name()}
			}
		case *compat.ChainTarget:
			if t.Chain == compat.VerdictDrop {
				continue
			}
		default:
			continue
		}
		m := *r
		m.Target, m.Counters = nil, nil
		// unfolded: nft syntax sets a helper after an l4proto test
		es, err := exprsIn("raw", chain, &m, foldNone)
		if err != nil {
			return nil, nil, err
		}
		es = es[:len(es)-1] // the counter
		if set != nil {
			es = append(es, set)
		}
		out = append(out, CTMirrorRule{Exprs: append(es, &expr.Verdict{Kind: expr.VerdictAccept}), From: r})
	}
	return out, objs, nil
}
