package translate

import (
	"fmt"

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
// packet gets none; an entry created from a zone template does get it).
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

// IsCTHelper says whether r is a -j CT --helper rule.
func IsCTHelper(r *compat.Rule) bool {
	ct, ok := r.Target.(*compat.CTTarget)
	return ok && ct.Helper != ""
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
