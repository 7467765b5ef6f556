package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Table is an nftables table as the kernel lists it.
type Table struct {
	Family Family
	Name   string
	Handle uint64
	Flags  uint32
	Use    uint32 // number of chains, sets and objects in it
}

// IsIptables reports whether t is a table iptables-nft or iptables-legacy's
// nft shadow would use: filter/nat/mangle/raw/security in family ip or ip6.
func (t Table) IsIptables() bool {
	return (t.Family == IPv4 || t.Family == IPv6) && IsIptablesTable(t.Name)
}

// Counters are packet and byte counts.
type Counters struct {
	Packets uint64
	Bytes   uint64
}

// Chain is a chain of our table as the kernel lists it.
type Chain struct {
	Family Family
	Name   string // nft name, e.g. "filter.INPUT"; see SplitChainName
	Handle uint64
	// Base is nil for a regular (user) chain.
	Base *BaseChain
	// Policy is set for base chains.
	Policy *Policy
	// Counters are the base chain's policy counters; nil when the kernel
	// keeps none (the chain was created without NFTA_CHAIN_COUNTERS).
	Counters *Counters
	// Use counts what holds the chain: its rules and jumps/gotos to it.
	Use   uint32
	Flags uint32
}

// Rule is a rule as the kernel lists it.
type Rule struct {
	Family Family
	Chain  string // nft chain name
	Handle uint64
	// Position is NFTA_RULE_POSITION as dumped: the handle of the rule
	// before this one, 0 for the first. The slice order Rules returns is
	// the chain order.
	Position uint64
	// Exprs are the expressions the library can decode, in order.
	Exprs []expr.Any
	// Unsupported names the expressions that could not be decoded (their
	// kind is missing from the library or failed to parse); a rule with any
	// is foreign to xdptables. Exprs then lacks them.
	Unsupported []string
	UserData    []byte
	// Counter is the value of the rule's first counter expression, nil if
	// it has none.
	Counter *Counters

	rawExprs []byte // NFTA_RULE_EXPRESSIONS payload, re-sent verbatim by ZeroRuleCounter
	decoded  bool
	// conn is the connection the rule was read through, for the
	// counter of a bound chain (boundcounter.go)
	conn *Conn
}

const (
	nftaChainFlags  = 0xa // NFTA_CHAIN_FLAGS
	nftaTableHandle = 0x4 // NFTA_TABLE_HANDLE
)

// request sends one GET request and collects the replies: for a dump, the
// messages up to NLMSG_DONE; otherwise the one message that answers it (a
// GET that is no dump asks for one object: the kernel answers a
// GETSETELEM of several elements with a message for each, which request
// does not wait for). A dump the kernel marks as interrupted (the ruleset
// changed under it) or that overran the receive buffer is repeated.
func (c *Conn) request(msg int, dump bool, fam Family, attrs func(*encoder)) ([]syscall.NetlinkMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for attempt := 0; ; attempt++ {
		msgs, retry, err := c.requestOnce(nftType(msg), dump, fam, attrs)
		if retry && attempt < 16 {
			continue
		}
		if retry {
			return nil, fmt.Errorf("netlink dump kept being interrupted: %w", ErrGenerationChanged)
		}
		return msgs, err
	}
}

func (c *Conn) requestOnce(typ uint16, dump bool, fam Family, attrs func(*encoder)) (out []syscall.NetlinkMessage, retry bool, err error) {
	var e encoder
	// (no NLM_F_ACK: the kernel answers a GET with the object or an
	// error; an ack would be one more datagram to read)
	flags := uint16(0)
	if dump {
		flags = unix.NLM_F_DUMP
	}
	off := e.begin(typ, flags, fam, 0)
	if attrs != nil {
		attrs(&e)
	}
	e.end(off)
	if e.err != nil {
		return nil, false, e.err
	}
	seq := c.nextSeq(1)
	binary.NativeEndian.PutUint32(e.buf[8:12], seq)
	if err := c.send(e.buf); err != nil {
		return nil, false, err
	}
	c.requests++
	intr := false
	overrun := false
	for {
		msgs, err := c.recvReply()
		if err == errTruncated {
			// (part of the answer is lost: ask again, with the buffer
			// grown to take it)
			c.drain()
			return nil, true, nil
		}
		if err == unix.ENOBUFS {
			overrun = true
			if !dump {
				// The reply may be among the dropped messages: waiting
				// for it could block forever. Discard what is queued
				// and ask again.
				c.drain()
				return nil, true, nil
			}
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("netlink receive: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq {
				continue // left over from an earlier, abandoned exchange
			}
			if m.Header.Flags&unix.NLM_F_DUMP_INTR != 0 {
				intr = true
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				errno, _, text := nlError(m)
				if errno != 0 {
					return nil, false, withText(errno, text)
				}
				if !dump {
					return out, false, nil
				}
			case unix.NLMSG_DONE:
				if len(m.Data) >= 4 {
					if code := int32(binary.NativeEndian.Uint32(m.Data[:4])); code < 0 {
						return nil, false, unix.Errno(-code)
					}
				}
				return out, intr || overrun, nil
			default:
				out = append(out, m)
				if !dump {
					return out, false, nil
				}
			}
		}
		if overrun && !dump {
			return nil, true, nil
		}
	}
}

// Requests is the number of GET requests (round trips to the kernel, a
// dump counting once) sent on c so far: what a command costs in them,
// for tests.
func (c *Conn) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// withText keeps the kernel's extended-ack text with the errno while
// errors.Is still sees the errno.
func withText(errno unix.Errno, text string) error {
	if text == "" {
		return errno
	}
	return fmt.Errorf("%w (%s)", errno, text)
}

func decoder(m syscall.NetlinkMessage) (*netlink.AttributeDecoder, error) {
	if len(m.Data) < 4 {
		return nil, errors.New("short nfnetlink message")
	}
	ad, err := netlink.NewAttributeDecoder(m.Data[4:])
	if err != nil {
		return nil, err
	}
	ad.ByteOrder = binary.BigEndian
	return ad, nil
}

// GenID returns the ruleset generation id. Read it before reading the state
// a batch is built from, and pass it to Commit.
func (c *Conn) GenID() (uint32, error) {
	msgs, err := c.request(unix.NFT_MSG_GETGEN, false, unix.NFPROTO_UNSPEC, nil)
	if err != nil {
		return 0, fmt.Errorf("could not fetch rule set generation id: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type != nftType(unix.NFT_MSG_NEWGEN) {
			continue
		}
		ad, err := decoder(m)
		if err != nil {
			return 0, err
		}
		for ad.Next() {
			if ad.Type() == unix.NFTA_GEN_ID {
				return ad.Uint32(), ad.Err()
			}
		}
	}
	return 0, errors.New("could not fetch rule set generation id: no id in reply")
}

// Tables lists the tables of a family (unix.NFPROTO_UNSPEC: all families).
func (c *Conn) Tables(fam Family) ([]Table, error) {
	msgs, err := c.request(unix.NFT_MSG_GETTABLE, true, fam, nil)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	var out []Table
	for _, m := range msgs {
		ad, err := decoder(m)
		if err != nil {
			return nil, err
		}
		t := Table{Family: Family(m.Data[0])}
		for ad.Next() {
			switch ad.Type() {
			case unix.NFTA_TABLE_NAME:
				t.Name = ad.String()
			case unix.NFTA_TABLE_FLAGS:
				t.Flags = ad.Uint32()
			case unix.NFTA_TABLE_USE:
				t.Use = ad.Uint32()
			case nftaTableHandle:
				t.Handle = ad.Uint64()
			}
		}
		if err := ad.Err(); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// TableExists reports whether our table exists in fam.
func (c *Conn) TableExists(fam Family) (bool, error) {
	_, err := c.request(unix.NFT_MSG_GETTABLE, false, fam, func(e *encoder) {
		e.str(unix.NFTA_TABLE_NAME, TableName)
	})
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get table %s %s: %w", fam, TableName, err)
	}
	return true, nil
}

// ForeignTables lists every table, of any family, that is not ours. Those
// for which IsIptables is true are the ones iptables-nft would use.
func (c *Conn) ForeignTables() ([]Table, error) {
	all, err := c.Tables(unix.NFPROTO_UNSPEC)
	if err != nil {
		return nil, err
	}
	var out []Table
	for _, t := range all {
		if t.Name == TableName && (t.Family == IPv4 || t.Family == IPv6) {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// Chains lists the chains of our table in fam, in the kernel's order (order
// of creation). A missing table gives no chains and no error.
func (c *Conn) Chains(fam Family) ([]Chain, error) {
	msgs, err := c.request(unix.NFT_MSG_GETCHAIN, true, fam, nil)
	if err != nil {
		return nil, fmt.Errorf("list chains: %w", err)
	}
	var out []Chain
	for _, m := range msgs {
		ch, table, err := decodeChain(m)
		if err != nil {
			return nil, err
		}
		if table == TableName && ch.Family == fam {
			out = append(out, ch)
		}
	}
	return out, nil
}

// Chain reads one chain of our table; the error wraps unix.ENOENT when the
// chain or the table does not exist.
func (c *Conn) Chain(fam Family, name string) (*Chain, error) {
	msgs, err := c.request(unix.NFT_MSG_GETCHAIN, false, fam, func(e *encoder) {
		e.str(unix.NFTA_CHAIN_TABLE, TableName)
		e.str(unix.NFTA_CHAIN_NAME, name)
	})
	if err != nil {
		return nil, fmt.Errorf("get chain %s: %w", name, err)
	}
	for _, m := range msgs {
		if m.Header.Type == nftType(unix.NFT_MSG_NEWCHAIN) {
			ch, _, err := decodeChain(m)
			if err != nil {
				return nil, err
			}
			return &ch, nil
		}
	}
	return nil, fmt.Errorf("get chain %s: empty reply", name)
}

func decodeChain(m syscall.NetlinkMessage) (Chain, string, error) {
	ad, err := decoder(m)
	if err != nil {
		return Chain{}, "", err
	}
	ch := Chain{Family: Family(m.Data[0])}
	var table string
	var base BaseChain
	hasHook := false
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_CHAIN_TABLE:
			table = ad.String()
		case unix.NFTA_CHAIN_NAME:
			ch.Name = ad.String()
		case unix.NFTA_CHAIN_HANDLE:
			ch.Handle = ad.Uint64()
		case unix.NFTA_CHAIN_TYPE:
			base.Type = ChainType(ad.String())
		case unix.NFTA_CHAIN_POLICY:
			p := Policy(ad.Uint32())
			ch.Policy = &p
		case unix.NFTA_CHAIN_USE:
			ch.Use = ad.Uint32()
		case nftaChainFlags:
			ch.Flags = ad.Uint32()
		case unix.NFTA_CHAIN_HOOK:
			hasHook = true
			ad.Nested(func(nd *netlink.AttributeDecoder) error {
				for nd.Next() {
					switch nd.Type() {
					case unix.NFTA_HOOK_HOOKNUM:
						base.Hook = Hook(nd.Uint32())
					case unix.NFTA_HOOK_PRIORITY:
						base.Priority = int32(nd.Uint32())
					}
				}
				return nil
			})
		case unix.NFTA_CHAIN_COUNTERS:
			var cnt Counters
			ad.Nested(func(nd *netlink.AttributeDecoder) error {
				decodeCounters(nd, &cnt)
				return nil
			})
			ch.Counters = &cnt
		}
	}
	if err := ad.Err(); err != nil {
		return Chain{}, "", fmt.Errorf("decode chain: %w", err)
	}
	if hasHook {
		ch.Base = &base
	}
	return ch, table, nil
}

func decodeCounters(nd *netlink.AttributeDecoder, cnt *Counters) {
	for nd.Next() {
		switch nd.Type() {
		case unix.NFTA_COUNTER_BYTES:
			cnt.Bytes = nd.Uint64()
		case unix.NFTA_COUNTER_PACKETS:
			cnt.Packets = nd.Uint64()
		}
	}
}

// Rules returns the rules of one chain of our table, in chain order. Only
// that chain is dumped. A missing chain gives no rules and no error; use
// Chain to tell it apart from an empty one.
func (c *Conn) Rules(fam Family, chain string) ([]Rule, error) {
	rs, err := c.RulesUndecoded(fam, chain)
	if err != nil {
		return nil, err
	}
	for i := range rs {
		if err := rs[i].Decode(); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// RulesUndecoded is Rules without decoding the expressions (Exprs,
// Unsupported and Counter stay empty until Decode): for callers that
// look at most rules only by their userdata. Each rule is copied out of
// the datagram it came in as that arrives.
func (c *Conn) RulesUndecoded(fam Family, chain string) ([]Rule, error) {
	var out []Rule
	err := c.ScanRules(fam, chain, func() { out = out[:0] }, func(r *Rule) error {
		out = append(out, r.Clone())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Decode decodes the rule's expressions, once.
func (r *Rule) Decode() error {
	if r.decoded {
		return nil
	}
	r.decoded = true
	if err := r.decodeExprs(); err != nil {
		return fmt.Errorf("decode rule %d in chain %s: %w", r.Handle, r.Chain, err)
	}
	return nil
}

// JumpTarget returns the chain a rule's final jump or goto names, decoding
// only that expression.
func (r *Rule) JumpTarget() (string, bool) {
	var last []byte
	var lastName string
	_ = forEachExpr(r.rawExprs, func(name string, data []byte) error {
		lastName, last = name, data
		return nil
	})
	if lastName != "immediate" {
		return "", false
	}
	var v *expr.Verdict
	if e, ok := decodeFast(lastName, last); ok {
		v, _ = e.(*expr.Verdict)
	}
	if v == nil {
		v = &expr.Verdict{}
		if err := expr.Unmarshal(byte(r.Family), last, v); err != nil {
			return "", false
		}
	}
	if v.Kind == expr.VerdictJump || v.Kind == expr.VerdictGoto {
		return v.Chain, true
	}
	return "", false
}

// TableRules returns the rules of all chains of our table, each chain's
// rules in chain order (chains in the kernel's order), decoded.
//
// The rules are read chain by chain, not in one dump of the table: the
// kernel resumes a table dump for every datagram by walking the table's
// rules from the first, which makes a large table's dump quadratic. The
// generation id, read before and after, tells whether the chains were
// read from one state; if not, they are read again.
func (c *Conn) TableRules(fam Family) ([]Rule, error) {
	for attempt := 0; ; attempt++ {
		out, err := c.tableRulesOnce(fam)
		if errors.Is(err, ErrGenerationChanged) && attempt < 16 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list rules: %w", err)
		}
		return out, nil
	}
}

func (c *Conn) tableRulesOnce(fam Family) ([]Rule, error) {
	gen, err := c.GenID()
	if err != nil {
		return nil, err
	}
	chains, err := c.Chains(fam)
	if err != nil {
		return nil, err
	}
	var out []Rule
	for _, ch := range chains {
		n := len(out)
		err := c.ScanRules(fam, ch.Name, func() { out = out[:n] }, func(r *Rule) error {
			out = append(out, r.Clone())
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if gen2, err := c.GenID(); err != nil {
		return nil, err
	} else if gen2 != gen {
		return nil, ErrGenerationChanged
	}
	for i := range out {
		if err := out[i].Decode(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// forEachExpr walks a NFTA_RULE_EXPRESSIONS payload, giving each
// expression's name and NFTA_EXPR_DATA payload (pointing into raw).
func forEachExpr(raw []byte, fn func(name string, data []byte) error) error {
	var err error
	ok := eachAttr(raw, func(t uint16, elem []byte) bool {
		if t != unix.NFTA_LIST_ELEM {
			return true
		}
		var name, data []byte
		if !eachAttr(elem, func(t uint16, v []byte) bool {
			switch t {
			case unix.NFTA_EXPR_NAME:
				name = trimNul(v)
			case unix.NFTA_EXPR_DATA:
				data = v
			}
			return true
		}) {
			err = errMalformed
			return false
		}
		err = fn(exprName(name), data)
		return err == nil
	})
	if err != nil {
		return err
	}
	if !ok {
		return errMalformed
	}
	return nil
}

var errMalformed = errors.New("malformed netlink attributes")

// exprName returns the expression name as a string, without allocating
// for the common ones.
func exprName(b []byte) string {
	for _, n := range commonExprNames {
		if string(b) == n {
			return n
		}
	}
	return string(b)
}

var commonExprNames = [...]string{"payload", "cmp", "immediate", "counter", "meta", "bitwise", "match", "target", "lookup", "ct", "range", "limit", "log"}

func (r *Rule) decodeExprs() error {
	if r.Exprs == nil {
		r.Exprs = make([]expr.Any, 0, 8)
	}
	return forEachExpr(r.rawExprs, func(name string, data []byte) error {
		if name == "ct" {
			// The library's decoder drops NFTA_CT_SREG, which would
			// read `ct mark set` back as a ct load.
			ct, err := decodeCt(data)
			if err != nil {
				r.Unsupported = append(r.Unsupported, name)
				return nil
			}
			r.Exprs = append(r.Exprs, ct)
			return nil
		}
		if e, ok := decodeFast(name, data); ok {
			if cnt, ok := e.(*expr.Counter); ok && r.Counter == nil {
				r.Counter = &Counters{Packets: cnt.Packets, Bytes: cnt.Bytes}
			}
			r.Exprs = append(r.Exprs, e)
			return nil
		}
		e := newExpr(name)
		if e == nil {
			r.Unsupported = append(r.Unsupported, name)
			return nil
		}
		if err := expr.Unmarshal(byte(r.Family), data, e); err != nil {
			r.Unsupported = append(r.Unsupported, name)
			return nil
		}
		// A verdict is an immediate that writes the verdict register.
		if imm, ok := e.(*expr.Immediate); ok && imm.Register == unix.NFT_REG_VERDICT && len(imm.Data) == 0 {
			v := &expr.Verdict{}
			if err := expr.Unmarshal(byte(r.Family), data, v); err != nil {
				r.Unsupported = append(r.Unsupported, name)
				return nil
			}
			e = v
		}
		if cnt, ok := e.(*expr.Counter); ok && r.Counter == nil {
			r.Counter = &Counters{Packets: cnt.Packets, Bytes: cnt.Bytes}
		}
		r.Exprs = append(r.Exprs, e)
		return nil
	})
}

// decodeCt decodes a ct expression, a load (NFTA_CT_DREG) or a set
// (NFTA_CT_SREG, SourceRegister true).
func decodeCt(data []byte) (*expr.Ct, error) {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return nil, err
	}
	ad.ByteOrder = binary.BigEndian
	ct := &expr.Ct{}
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_CT_KEY:
			ct.Key = expr.CtKey(ad.Uint32())
		case unix.NFTA_CT_DREG:
			ct.Register = ad.Uint32()
		case unix.NFTA_CT_SREG:
			ct.Register, ct.SourceRegister = ad.Uint32(), true
		case unix.NFTA_CT_DIRECTION:
			ct.Direction = uint32(ad.Uint8())
		}
	}
	return ct, ad.Err()
}

// newExpr returns an empty expression of the library's type for a kernel
// expression name, or nil when the library has no decoder for it.
func newExpr(name string) expr.Any {
	switch name {
	case "bitwise":
		return &expr.Bitwise{}
	case "cmp":
		return &expr.Cmp{}
	case "connlimit":
		return &expr.Connlimit{}
	case "counter":
		return &expr.Counter{}
	case "ct":
		return &expr.Ct{}
	case "ctexpect":
		return &expr.CtExpect{}
	case "cthelper":
		return &expr.CtHelper{}
	case "cttimeout":
		return &expr.CtTimeout{}
	case "dup":
		return &expr.Dup{}
	case "dynset":
		return &expr.Dynset{}
	case "exthdr":
		return &expr.Exthdr{}
	case "fib":
		return &expr.Fib{}
	case "flow_offload":
		return &expr.FlowOffload{}
	case "hash":
		return &expr.Hash{}
	case "immediate":
		return &expr.Immediate{}
	case "limit":
		return &expr.Limit{}
	case "log":
		return &expr.Log{}
	case "lookup":
		return &expr.Lookup{}
	case "masq":
		return &expr.Masq{}
	case "match":
		return &expr.Match{}
	case "meta":
		return &expr.Meta{}
	case "nat":
		return &expr.NAT{}
	case "notrack":
		return &expr.Notrack{}
	case "numgen":
		return &expr.Numgen{}
	case "objref":
		return &expr.Objref{}
	case "payload":
		return &expr.Payload{}
	case "queue":
		return &expr.Queue{}
	case "quota":
		return &expr.Quota{}
	case "range":
		return &expr.Range{}
	case "redir":
		return &expr.Redir{}
	case "reject":
		return &expr.Reject{}
	case "secmark":
		return &expr.SecMark{}
	case "socket":
		return &expr.Socket{}
	case "synproxy":
		return &expr.SynProxy{}
	case "target":
		return &expr.Target{}
	case "tproxy":
		return &expr.TProxy{}
	}
	// "rt" and "byteorder" have types but no decoder in v0.3.0.
	return nil
}
