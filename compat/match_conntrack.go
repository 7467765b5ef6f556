package compat

import (
	"fmt"
	"strconv"
	"strings"

	"encoding/binary"

	"github.com/google/nftables/expr"
)

// ConntrackMatch is -m conntrack (revision 3). -m state is kept apart
// (StateMatch) because iptables-nft lists it back under its own name.
type ConntrackMatch struct {
	// Given holds the option IDs present; Inv the inverted ones.
	Given, Inv OptSet

	State    uint8
	Proto    uint8
	OrigSrc  hostMask
	OrigDst  hostMask
	ReplSrc  hostMask
	ReplDst  hostMask
	Ports    [4][2]uint16 // orig src, orig dst, repl src, repl dst
	Status   uint8
	Expire   [2]uint32
	DirReply bool
}

const (
	ctOptState = iota
	ctOptProto
	ctOptOrigSrc
	ctOptOrigDst
	ctOptReplSrc
	ctOptReplDst
	ctOptOrigSrcPort
	ctOptOrigDstPort
	ctOptReplSrcPort
	ctOptReplDstPort
	ctOptStatus
	ctOptExpire
	ctOptDir
	ctNumOpts
)

var ctOptNames = [ctNumOpts]string{"ctstate", "ctproto", "ctorigsrc", "ctorigdst", "ctreplsrc", "ctrepldst",
	"ctorigsrcport", "ctorigdstport", "ctreplsrcport", "ctrepldstport", "ctstatus", "ctexpire", "ctdir"}

func init() {
	opts := make([]OptDef, 0, len(ctOptNames))
	for id, n := range ctOptNames {
		opts = append(opts, OptDef{Name: n, Arg: RequiredArg, ID: id, Invert: id != ctOptDir})
	}
	RegisterMatch(&ExtSpec{
		Name:     "conntrack",
		X6:       true,
		Options:  opts,
		NewMatch: func(Family) MatchExt { return &ConntrackMatch{} },
	})
}

func (m *ConntrackMatch) Name() string { return "conntrack" }

// ctStates are the conntrack state bits in print order.
var ctStates = []struct {
	name string
	bit  uint8
}{{"INVALID", 1}, {"NEW", 2}, {"RELATED", 4}, {"ESTABLISHED", 8}, {"UNTRACKED", 16}, {"SNAT", 32}, {"DNAT", 64}}

var ctStatuses = []struct {
	name string
	bit  uint8
}{{"NONE", 0}, {"EXPECTED", 1}, {"SEEN_REPLY", 2}, {"ASSURED", 4}, {"CONFIRMED", 8}}

// parseNameList parses a comma-separated list of words, each a prefix
// (any case) of a known name, reporting the rest of the list on error.
func parseNameList(s, what string, lookup func(word string) (uint8, bool)) (uint8, error) {
	var v uint8
	arg := s
	for {
		comma := strings.IndexByte(arg, ',')
		if comma < 0 {
			break
		}
		bit, ok := lookup(arg[:comma])
		if comma == 0 || !ok {
			return 0, Paramf("Bad %s \"%s\"", what, arg)
		}
		v |= bit
		arg = arg[comma+1:]
	}
	bit, ok := lookup(arg)
	if arg == "" || !ok {
		return 0, Paramf("Bad %s \"%s\"", what, arg)
	}
	return v | bit, nil
}

// prefixOf reports whether word is a non-empty prefix of name, any case.
func prefixOf(word, name string) bool {
	return word != "" && len(word) <= len(name) && strings.EqualFold(name[:len(word)], word)
}

func lookupCTState(word string, states int) (uint8, bool) {
	// -m state knows only the first five states; it tests them in its
	// own order (INVALID, ESTABLISHED, NEW, RELATED, UNTRACKED).
	order := []int{0, 1, 3, 2, 4, 5, 6}
	if states == 5 {
		order = []int{0, 3, 1, 2, 4}
	}
	for _, i := range order {
		if prefixOf(word, ctStates[i].name) {
			return ctStates[i].bit, true
		}
	}
	return 0, false
}

func ctStateString(v uint8) string {
	var parts []string
	for _, s := range ctStates {
		if v&s.bit != 0 {
			parts = append(parts, s.name)
		}
	}
	return strings.Join(parts, ",")
}

func ctStatusString(v uint8) string {
	if v == 0 {
		return "NONE"
	}
	var parts []string
	for _, s := range ctStatuses[1:] {
		if v&s.bit != 0 {
			parts = append(parts, s.name)
		}
	}
	return strings.Join(parts, ",")
}

// parseCTPortRange parses "P[:Q]" (numbers, truncated to 16 bits, or
// service names).
func parseCTPortRange(opt, s string) ([2]uint16, error) {
	comps := strings.Split(s, ":")
	if len(comps) > 2 {
		return [2]uint16{}, Paramf("conntrack: Too many components for option \"--%s\" (max: 2)\n", opt)
	}
	one := func(c string, dflt uint16) (uint16, error) {
		if c == "" {
			return dflt, nil
		}
		digits := true
		for i := 0; i < len(c); i++ {
			if c[i] < '0' || c[i] > '9' {
				digits = false
			}
		}
		if digits {
			v, _, _, _ := cStrtoull(c, 10)
			return uint16(v), nil
		}
		if p, ok := ServicePort(c, ""); ok {
			return p, nil
		}
		return 0, Paramf("Port \"%s\" does not resolve to anything.\n", c)
	}
	lo, err := one(comps[0], 0)
	if err != nil {
		return [2]uint16{}, err
	}
	if len(comps) == 1 {
		return [2]uint16{lo, lo}, nil
	}
	hi, err := one(comps[1], 0xffff)
	return [2]uint16{lo, hi}, err
}

func (m *ConntrackMatch) Parse(p *OptArg) error {
	id := p.Def.ID
	var err error
	switch id {
	case ctOptState:
		m.State, err = parseNameList(p.Arg, "ctstate", func(w string) (uint8, bool) { return lookupCTState(w, 7) })
	case ctOptProto:
		m.Proto, err = ParseProtocol(strings.ToLower(p.Arg))
	case ctOptOrigSrc, ctOptOrigDst, ctOptReplSrc, ctOptReplDst:
		var hm hostMask
		hm, err = parseHostMask("conntrack", ctOptNames[id], p.Arg, p.Family)
		*[]*hostMask{&m.OrigSrc, &m.OrigDst, &m.ReplSrc, &m.ReplDst}[id-ctOptOrigSrc] = hm
	case ctOptOrigSrcPort, ctOptOrigDstPort, ctOptReplSrcPort, ctOptReplDstPort:
		m.Ports[id-ctOptOrigSrcPort], err = parseCTPortRange(ctOptNames[id], p.Arg)
	case ctOptStatus:
		m.Status, err = parseNameList(p.Arg, "ctstatus", func(w string) (uint8, bool) {
			for _, s := range ctStatuses {
				if prefixOf(w, s.name) {
					return s.bit, true
				}
			}
			return 0, false
		})
	case ctOptExpire:
		var lo, hi uint64
		lo, hi, err = parseUintRange("conntrack", "ctexpire", p.Arg, 0xffffffff)
		m.Expire = [2]uint32{uint32(lo), uint32(hi)}
	case ctOptDir:
		switch strings.ToUpper(p.Arg) {
		case "ORIGINAL":
			m.DirReply = false
		case "REPLY":
			m.DirReply = true
		default:
			return Paramf("conntrack: Bad value for \"--ctdir\" option: \"%s\"", p.Arg)
		}
	}
	if err != nil {
		return err
	}
	m.Given |= 1 << uint(id)
	if p.Invert {
		m.Inv |= 1 << uint(id)
	}
	return nil
}

func (m *ConntrackMatch) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("conntrack: At least one option is required")
	}
	return nil
}

// text returns the value of option id as printed by -S (numeric) or -L.
func (m *ConntrackMatch) text(id int, numeric bool) string {
	switch id {
	case ctOptState:
		return ctStateString(m.State)
	case ctOptProto:
		return strconv.Itoa(int(m.Proto))
	case ctOptOrigSrc, ctOptOrigDst, ctOptReplSrc, ctOptReplDst:
		return []hostMask{m.OrigSrc, m.OrigDst, m.ReplSrc, m.ReplDst}[id-ctOptOrigSrc].listString(numeric)
	case ctOptOrigSrcPort, ctOptOrigDstPort, ctOptReplSrcPort, ctOptReplDstPort:
		r := m.Ports[id-ctOptOrigSrcPort]
		if r[0] == r[1] {
			return strconv.Itoa(int(r[0]))
		}
		return fmt.Sprintf("%d:%d", r[0], r[1])
	case ctOptStatus:
		return ctStatusString(m.Status)
	case ctOptExpire:
		if m.Expire[0] == m.Expire[1] {
			return strconv.FormatUint(uint64(m.Expire[0]), 10)
		}
		return fmt.Sprintf("%d:%d", m.Expire[0], m.Expire[1])
	case ctOptDir:
		if m.DirReply {
			return "REPLY"
		}
		return "ORIGINAL"
	}
	return ""
}

func (m *ConntrackMatch) Save(b *strings.Builder, _ *Rule) {
	for id := 0; id < ctNumOpts; id++ {
		if m.Given.Has(id) {
			b.WriteString(bang(m.Inv.Has(id)) + " --" + ctOptNames[id] + " " + m.text(id, true))
		}
	}
}

func (m *ConntrackMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	for id := 0; id < ctNumOpts; id++ {
		if m.Given.Has(id) {
			b.WriteString(bang(m.Inv.Has(id)) + " " + ctOptNames[id] + " " + m.text(id, numeric))
		}
	}
}

// State bits of the AST (ctStates) in the kernel's encodings: nft ct
// state (NF_CT_STATE_*_BIT) and xt conntrack's state_mask.
var (
	ctStateNft = map[uint8]uint32{1: 1, 2: 8, 4: 4, 8: 2, 16: 64}
	ctStateXt  = map[uint8]uint16{1: 1, 2: 8, 4: 4, 8: 2, 16: 256, 32: 64, 64: 128}
)

const ctStateSNATDNAT = 32 | 64

// ctStateExprs tests ct state for any of the AST state bits in s (none
// when inv). s must not hold SNAT or DNAT, which are not states in
// nftables.
func ctStateExprs(s uint8, inv bool) []expr.Any {
	var mask uint32
	for bit, v := range ctStateNft {
		if s&bit != 0 {
			mask |= v
		}
	}
	return append([]expr.Any{&expr.Ct{Key: expr.CtKeySTATE, Register: 1}}, anyBitExprs(mask, inv)...)
}

// native reports whether the match has an exact nftables form. nft ct
// loads of anything but the state stop the rule when the packet has no
// conntrack entry; xt conntrack then returns false too, except that a
// passed --ctstate test makes it return true at once. So with other
// options beside --ctstate, the state test must be one that a packet
// without an entry (INVALID or UNTRACKED) cannot pass. SNAT and DNAT
// are status bits ORed into the state: not expressible in one rule.
// Addresses and ports need ct expressions with a direction, which
// github.com/google/nftables v0.3.0 encodes as a u32 where the kernel
// wants a u8 (and cannot decode back); expiry is kept in milliseconds
// by nftables and in seconds by xt conntrack. Those take the xt match.
func (m *ConntrackMatch) native() bool {
	const nativeOpts = 1<<ctOptState | 1<<ctOptProto | 1<<ctOptStatus | 1<<ctOptDir
	if m.Given&^nativeOpts != 0 || m.State&ctStateSNATDNAT != 0 {
		return false
	}
	if !m.Given.Has(ctOptState) || m.Given == 1<<ctOptState {
		return true
	}
	const noEntry = 1 | 16 // INVALID, UNTRACKED
	if m.Inv.Has(ctOptState) {
		return m.State&noEntry == noEntry
	}
	return m.State&noEntry == 0
}

// NftExprs: ct state, direction, protocol and status natively (see
// native); otherwise the xt conntrack match, revision 3.
func (m *ConntrackMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	if !m.native() {
		return []expr.Any{xtMatch("conntrack", 3, m.xtInfo())}, nil
	}
	var out []expr.Any
	if m.Given.Has(ctOptState) {
		out = append(out, ctStateExprs(m.State, m.Inv.Has(ctOptState))...)
	}
	if m.Given.Has(ctOptDir) {
		var dir byte
		if m.DirReply {
			dir = 1
		}
		out = append(out, &expr.Ct{Key: expr.CtKeyDIRECTION, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{dir}})
	}
	if m.Given.Has(ctOptProto) {
		op := expr.CmpOpEq
		if m.Inv.Has(ctOptProto) {
			op = expr.CmpOpNeq
		}
		out = append(out, &expr.Ct{Key: expr.CtKeyPROTOCOL, Register: 1},
			&expr.Cmp{Op: op, Register: 1, Data: []byte{m.Proto}})
	}
	if m.Given.Has(ctOptStatus) {
		out = append(out, &expr.Ct{Key: expr.CtKeySTATUS, Register: 1})
		out = append(out, anyBitExprs(uint32(m.Status), m.Inv.Has(ctOptStatus))...)
	}
	return out, nil
}

// xt conntrack match_flags bit of each AST option.
var ctXtFlag = [ctNumOpts]uint16{ctOptState: 1 << 0, ctOptProto: 1 << 1, ctOptOrigSrc: 1 << 2, ctOptOrigDst: 1 << 3,
	ctOptReplSrc: 1 << 4, ctOptReplDst: 1 << 5, ctOptStatus: 1 << 6, ctOptExpire: 1 << 7,
	ctOptOrigSrcPort: 1 << 8, ctOptOrigDstPort: 1 << 9, ctOptReplSrcPort: 1 << 10, ctOptReplDstPort: 1 << 11,
	ctOptDir: 1 << 12}

// xtInfo is struct xt_conntrack_mtinfo3 (162 bytes): four address/mask
// pairs (union nf_inet_addr), expires min/max, l4proto, the four low
// ports, match and invert flags, state and status masks, the four high
// ports; all integers in host order.
func (m *ConntrackMatch) xtInfo() []byte {
	b := make([]byte, 162)
	ne := binary.NativeEndian
	for i, hm := range []hostMask{m.OrigSrc, m.OrigDst, m.ReplSrc, m.ReplDst} {
		if !m.Given.Has(ctOptOrigSrc + i) {
			continue
		}
		putAddr16(b[32*i:], hm.Addr.AsSlice())
		bits := hm.Bits
		for j := 0; j < bits && j < 128; j++ {
			b[32*i+16+j/8] |= 0x80 >> (j % 8)
		}
	}
	ne.PutUint32(b[128:], m.Expire[0])
	ne.PutUint32(b[132:], m.Expire[1])
	ne.PutUint16(b[136:], uint16(m.Proto))
	var flags, inv uint16
	for id := 0; id < ctNumOpts; id++ {
		if m.Given.Has(id) {
			flags |= ctXtFlag[id]
		}
		if m.Inv.Has(id) {
			inv |= ctXtFlag[id]
		}
	}
	if m.Given.Has(ctOptDir) && m.DirReply {
		inv |= ctXtFlag[ctOptDir]
	}
	for i := 0; i < 4; i++ {
		ne.PutUint16(b[138+2*i:], m.Ports[i][0])
		ne.PutUint16(b[154+2*i:], m.Ports[i][1])
	}
	ne.PutUint16(b[146:], flags)
	ne.PutUint16(b[148:], inv)
	var state uint16
	for bit, v := range ctStateXt {
		if m.State&bit != 0 {
			state |= v
		}
	}
	ne.PutUint16(b[150:], state)
	ne.PutUint16(b[152:], uint16(m.Status))
	return b
}
