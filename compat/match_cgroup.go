package compat

import (
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// CgroupMatch is -m cgroup: the socket's cgroup v2 path (--path, the
// cgroup or one of its descendants) or its net_cls class id (--cgroup).
// systemd-based rulesets use it for per-service rules.
type CgroupMatch struct {
	HasPath, HasClassID bool
	Path                string
	ClassID             uint32
	InvPath, InvClassID bool
}

const (
	cgroupOptPath = iota
	cgroupOptClassID
)

// cgroupPathMax is XT_CGROUP_PATH_MAX, the size of the path field.
const cgroupPathMax = 512

var cgroupMatchSpec = ExtSpec{
	Name: "cgroup",
	Options: []OptDef{
		{Name: "path", Arg: RequiredArg, ID: cgroupOptPath, Invert: true},
		{Name: "cgroup", Arg: RequiredArg, ID: cgroupOptClassID, Invert: true},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &CgroupMatch{} },
}

var _ = RegisterMatch(&cgroupMatchSpec)

func (m *CgroupMatch) Name() string { return "cgroup" }

// Parse: libxt_cgroup (revision 2) checks neither that one of the two
// options is given nor that only one is: the kernel does (EINVAL).
func (m *CgroupMatch) Parse(p *OptArg) error {
	if p.Def.ID == cgroupOptPath {
		path := p.Arg
		if len(path) >= cgroupPathMax {
			path = path[:cgroupPathMax-1] // XTTYPE_STRING's silent cut
		}
		m.HasPath, m.Path, m.InvPath = true, path, p.Invert
		return nil
	}
	v, err := x6Uint(p, 0, 0xffffffff)
	if err != nil {
		return err
	}
	m.HasClassID, m.ClassID, m.InvClassID = true, uint32(v), p.Invert
	return nil
}

func (m *CgroupMatch) Final(*Rule, OptSet) error { return nil }

func (m *CgroupMatch) Save(b *strings.Builder, _ *Rule) {
	if m.HasPath {
		b.WriteString(invMark(m.InvPath) + " --path " + SaveQuote(m.Path))
	}
	if m.HasClassID {
		b.WriteString(invMark(m.InvClassID) + " --cgroup " + strconv.FormatUint(uint64(m.ClassID), 10))
	}
}

func (m *CgroupMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" cgroup")
	if m.HasPath {
		b.WriteString(" " + listBang(m.InvPath) + m.Path)
	}
	if m.HasClassID {
		b.WriteString(" " + listBang(m.InvClassID) + strconv.FormatUint(uint64(m.ClassID), 10))
	}
}

// listBang is "! " when inv is set, for -L output that puts the mark
// in front of a value.
func listBang(inv bool) string {
	if inv {
		return "! "
	}
	return ""
}

// NftExprs: the xtables match, revision 2 (struct xt_cgroup_info_v2), as
// iptables-nft sends it. A path has no exact nftables form ("socket
// cgroupv2" compares the ancestor at one given level), and "meta cgroup"
// finds the packet's socket its own way (xt_cgroup takes skb->sk as it
// is and wants a full socket of the same namespace), which xdptables has
// not shown to be the same test for request and time-wait sockets. The
// kernel allows the match in INPUT, OUTPUT and POSTROUTING and checks
// that exactly one of path and class id is set.
func (m *CgroupMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u8(xtFlag(m.HasPath))
	x.u8(xtFlag(m.HasClassID))
	x.u8(xtFlag(m.InvPath))
	x.u8(xtFlag(m.InvClassID))
	if m.HasClassID && !m.HasPath {
		u := &xtBlob{}
		u.u32(m.ClassID)
		x.raw(u.b, cgroupPathMax)
	} else {
		x.raw([]byte(m.Path), cgroupPathMax)
	}
	x.u64(0) // the kernel's struct cgroup pointer
	return []expr.Any{compatMatch("cgroup", 2, x)}, nil
}

// xtFlag is a C boolean byte of an xtables info structure.
func xtFlag(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}
