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
// evaluated twice they may answer differently; a set without counters
// answers the same (setMatchTwice).
var ctMirrorMatches = map[string]bool{
	"tcp": true, "udp": true, "icmp": true, "icmp6": true, "sctp": true, "dccp": true,
	"multiport": true, "iprange": true, "mac": true, "pkttype": true, "length": true,
	"tos": true, "dscp": true, "ttl": true, "hl": true, "ecn": true, "addrtype": true,
	"comment": true, "ah": true, "esp": true, "mh": true, "rt": true, "frag": true,
	"hbh": true, "dst": true, "ipv6header": true, "eui64": true, "u32": true,
	"string": true, "mark": true, "physdev": true, "devgroup": true, "cpu": true,
	"tcpmss": true, "owner": true, "cgroup": true, "realm": true, "policy": true,
}

// setMatchTwice says whether mt is a -m set match that answers the same
// when evaluated twice: its set (and, for a list:set, each member) keeps
// no counters, which a lookup counts the packet in, and it tests none.
// firewalld's zones match their ipset sources so in raw. Without the
// kernel's sets to ask (compat.LookupIPSet), it says no.
func setMatchTwice(mt compat.Match) bool {
	m, ok := mt.(*compat.SetMatch)
	if !ok || compat.LookupIPSet == nil || m.Packets.Op != "" || m.Bytes.Op != "" {
		return false
	}
	info, ok := compat.LookupIPSet(m.SetName)
	if !ok || info.Counters || info.List && !info.MembersKnown {
		return false
	}
	for _, mi := range info.Members {
		if mi.Counters {
			return false
		}
	}
	return true
}

// ctMirrorTargetOK says whether a rule's target leaves everything a
// match can read as it was, and ends or continues the chain without
// leaving it for code the mirror does not see: no target, the verdicts
// ACCEPT, DROP and RETURN, jumps and gotos to the user chains of user
// (which the mirror copies), CT/NOTRACK (they set conntrack templates,
// which the mirror reproduces by order), and the targets that only log
// or trace.
func ctMirrorTargetOK(t compat.Target, user map[string][]*compat.Rule) bool {
	switch t := t.(type) {
	case nil:
		return true
	case *compat.ChainTarget:
		switch t.Chain {
		case compat.VerdictAccept, compat.VerdictDrop, compat.VerdictReturn:
			return !t.Goto
		case compat.VerdictQueue:
			return false
		}
		_, ok := user[t.Chain]
		return ok
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

// userTarget is the user chain r jumps or goes to ("" for none).
func userTarget(r *compat.Rule) string {
	if t, ok := r.Target.(*compat.ChainTarget); ok && !t.IsVerdict() {
		return t.Chain
	}
	return ""
}

// reevaluated says whether the mirror evaluates r's matches again: the
// rules that can end the raw chain's work on a packet or decide its
// helper (CT, ACCEPT, RETURN) and the jumps and gotos to user chains.
// DROP rules need nothing (the packets they match do not get to the
// mirror), nor do rules that only log or count.
func reevaluated(r *compat.Rule) bool {
	switch t := r.Target.(type) {
	case *compat.CTTarget:
		return true
	case *compat.ChainTarget:
		return t.Chain != compat.VerdictDrop
	}
	return false
}

// ctMirror walks the chains a mirror copies.
type ctMirror struct {
	user   map[string][]*compat.Rule
	helper map[string]bool // user chains holding a CT --helper rule, through their jumps too
}

// hasHelper says whether user chain name, or a chain it jumps or goes
// to, holds a CT --helper rule (the kernel refuses loops of chains;
// a loop here counts as none).
func (m *ctMirror) hasHelper(name string) bool {
	if h, ok := m.helper[name]; ok {
		return h
	}
	m.helper[name] = false
	h := false
	for _, r := range m.user[name] {
		if IsCTHelper(r) || userTarget(r) != "" && m.hasHelper(userTarget(r)) {
			h = true
			break
		}
	}
	m.helper[name] = h
	return h
}

// lastHelper is the index of the last rule of rules that assigns a
// helper or jumps or goes to a chain that may, -1 when none does.
func (m *ctMirror) lastHelper(rules []*compat.Rule) int {
	last := -1
	for i, r := range rules {
		if IsCTHelper(r) || userTarget(r) != "" && m.user != nil && m.hasHelper(userTarget(r)) {
			last = i
		}
	}
	return last
}

// exact checks the rules of one chain, of which the mirror re-evaluates
// those up to index last: every target must be one ctMirrorTargetOK
// accepts, and the matches of every re-evaluated rule up to last ones
// that answer the same twice (ctMirrorMatches). where names the chain in
// the error, "" for the built-in chain.
func (m *ctMirror) exact(where string, rules []*compat.Rule, last int) error {
	for i, r := range rules {
		in := ""
		if where != "" {
			in = " of chain " + where
		}
		if !ctMirrorTargetOK(r.Target, m.user) {
			return fmt.Errorf("rule %d%s (-j %s) may change the packet or leave the chain before conntrack assigns the helper", i+1, in, r.Target.Name())
		}
		if i > last || !reevaluated(r) {
			continue
		}
		for _, mt := range r.Matches {
			if !ctMirrorMatches[mt.Name()] && !setMatchTwice(mt) {
				return fmt.Errorf("rule %d%s (-m %s) may match differently when the helper is assigned after conntrack", i+1, in, mt.Name())
			}
		}
	}
	return nil
}

// CTHelperExact reports whether the CT --helper rules among rules (the
// rules of one built-in raw chain, in order) can be emulated exactly by
// re-evaluating them after conntrack, for a chain that jumps to no user
// chain (CTHelperMirrorTable for one that does). It returns nil when
// they can (or when there is no CT --helper rule), otherwise an error
// naming the first rule (1-based, as --line-numbers counts) that
// prevents it:
//
//   - every rule up to the last CT --helper rule that the mirror
//     evaluates again (CT, ACCEPT, RETURN) must be read the same way
//     twice: only matches of ctMirrorMatches;
//   - no rule of the chain may change what those matches read, or leave
//     the chain for rules the mirror does not see: only targets that
//     ctMirrorTargetOK accepts.
func CTHelperExact(rules []*compat.Rule) error {
	m := &ctMirror{}
	last := m.lastHelper(rules)
	if last < 0 {
		return nil
	}
	return m.exact("", rules, last)
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

// CTMirrorRule is a rule of the chains CTHelperMirror builds.
type CTMirrorRule struct {
	Exprs []expr.Any
	// From is the raw rule whose matches the rule re-evaluates (nil for
	// the rule that lets expected connections pass): an xtables match
	// among them needs its protocol (kernel.RuleCompat).
	From *compat.Rule
}

// CTMirrorChain is a regular chain of a mirror: the copy of a user
// chain of raw that the mirrored built-in chain reaches.
type CTMirrorChain struct {
	Name  string // CTHelperUserChain(built-in chain, user chain)
	Rules []CTMirrorRule
}

// CTHelperUserChain is the nft name of the copy of user chain user in
// the mirror of the built-in raw chain chain, e.g.
// "ct-helper.PREROUTING/PRE_home_allow".
func CTHelperUserChain(chain, user string) string { return CTHelperPrefix + chain + "/" + user }

// CTHelperUserChainOf says whether name is the name of a copy of a user
// chain in the mirror of chain.
func CTHelperUserChainOf(name, chain string) bool {
	return strings.HasPrefix(name, CTHelperPrefix+chain+"/")
}

// CTHelperMirror returns the rules of the base chain that assigns the
// helpers of the CT --helper rules among rules, the rules of the
// built-in raw chain chain (PREROUTING or OUTPUT), after conntrack, and
// the helper objects they use (each once, in order of first use), for a
// chain that jumps to no user chain (see CTHelperMirrorTable).
func CTHelperMirror(f compat.Family, chain string, rules []*compat.Rule) ([]CTMirrorRule, []CTHelperObj, error) {
	base, _, objs, err := CTHelperMirrorTable(f, chain, rules, nil)
	return base, objs, err
}

// CTHelperMirrorTable returns the mirror of the built-in raw chain
// chain, whose rules are rules, for a raw table whose user chains have
// the rules of user (by name): the rules of its base chain, the regular
// chains it jumps and goes to, and the helper objects they use (each
// once, in order of first use). It returns no rules when no CT --helper
// rule is reached from the chain, and an error saying why when the
// emulation would not be exact (see CTHelperExact; in a user chain every
// rule counts).
//
// The base chain first lets expected connections pass (xt's template
// helper is not applied to them), then re-evaluates, in order, the
// matches of every rule up to the last one that assigns a helper or
// leads to a chain that may, that can end the raw chain's work on a
// packet or decide its helper: each CT rule (xt's CT leaves a packet
// that already has a template alone: the first CT rule that matches
// decides) as `<matches> [ct helper set "obj"] accept`, ACCEPT and
// RETURN as `<matches> accept`, a jump or goto to a user chain as
// `<matches> jump|goto COPY`. A copy of a user chain holds all its rules
// that way, with RETURN as return. DROP rules need nothing (the packets
// they match do not get here), nor do rules that only log or count.
func CTHelperMirrorTable(f compat.Family, chain string, rules []*compat.Rule, user map[string][]*compat.Rule) (base []CTMirrorRule, chains []CTMirrorChain, objs []CTHelperObj, err error) {
	m := &ctMirror{user: user, helper: map[string]bool{}}
	last := m.lastHelper(rules)
	if last < 0 {
		return nil, nil, nil, nil
	}
	if err := m.exact("", rules, last); err != nil {
		return nil, nil, nil, err
	}
	// the user chains reached from the re-evaluated rules, in order of
	// first reach
	var reached []string
	seen := map[string]bool{}
	var reach func(rules []*compat.Rule) error
	reach = func(rules []*compat.Rule) error {
		for _, r := range rules {
			u := userTarget(r)
			if u == "" || seen[u] {
				continue
			}
			seen[u] = true
			reached = append(reached, u)
			if err := m.exact(u, m.user[u], len(m.user[u])-1); err != nil {
				return err
			}
			if err := reach(m.user[u]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := reach(rules[:last+1]); err != nil {
		return nil, nil, nil, err
	}
	mirrorRules := func(in string, rules []*compat.Rule, builtin bool) ([]CTMirrorRule, error) {
		var out []CTMirrorRule
		for _, r := range rules {
			if !reevaluated(r) {
				continue
			}
			var end []expr.Any
			switch t := r.Target.(type) {
			case *compat.CTTarget:
				if IsCTHelper(r) {
					// xt's CT takes the helper's protocol from -p, and
					// none from a negated one: the kernel then has no
					// such helper (ENOENT, as for an unknown name), and
					// so it answers when the object is created with
					// protocol 0
					o := CTHelperObj{Chain: chain, Helper: t.Helper}
					if r.ProtoSet && !r.ProtoInv {
						o.Proto = r.Proto
					}
					if !slices.Contains(objs, o) {
						objs = append(objs, o)
					}
					end = append(end, &expr.Objref{Type: unix.NFT_OBJECT_CT_HELPER, Name: o.Name()})
				}
				end = append(end, &expr.Verdict{Kind: expr.VerdictAccept})
			case *compat.ChainTarget:
				switch {
				case t.Chain == compat.VerdictReturn && !builtin:
					end = append(end, &expr.Verdict{Kind: expr.VerdictReturn})
				case t.IsVerdict():
					end = append(end, &expr.Verdict{Kind: expr.VerdictAccept})
				case t.Goto:
					end = append(end, &expr.Verdict{Kind: expr.VerdictGoto, Chain: CTHelperUserChain(chain, t.Chain)})
				default:
					end = append(end, &expr.Verdict{Kind: expr.VerdictJump, Chain: CTHelperUserChain(chain, t.Chain)})
				}
			}
			mr := *r
			mr.Target, mr.Counters = nil, nil
			// unfolded: nft syntax sets a helper after an l4proto test
			es, err := exprsIn("raw", in, &mr, foldNone)
			if err != nil {
				return nil, err
			}
			es = es[:len(es)-1] // the counter
			out = append(out, CTMirrorRule{Exprs: append(es, end...), From: r})
		}
		return out, nil
	}
	base = []CTMirrorRule{{Exprs: []expr.Any{
		&expr.Ct{Key: expr.CtKeySTATUS, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binary.NativeEndian.AppendUint32(nil, ipsExpected), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
		&expr.Verdict{Kind: expr.VerdictAccept},
	}}}
	more, err := mirrorRules(chain, rules[:last+1], true)
	if err != nil {
		return nil, nil, nil, err
	}
	base = append(base, more...)
	for _, u := range reached {
		rs, err := mirrorRules(u, m.user[u], false)
		if err != nil {
			return nil, nil, nil, err
		}
		chains = append(chains, CTMirrorChain{Name: CTHelperUserChain(chain, u), Rules: rs})
	}
	return base, chains, objs, nil
}
