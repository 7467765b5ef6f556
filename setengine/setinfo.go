package setengine

import (
	"encoding/binary"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
)

// SetInfo describes an ipset set the way -m set and -j SET need it;
// find gives a list:set's members.
func SetInfo(name string, s *ipset.Set, find func(string) *ipset.Set) compat.SetInfo {
	info := compat.SetInfo{NftName: ipset.LookupSetName(name), Family: compat.IPv4,
		Updatable: !s.Type.Net() && !s.Type.List, HasTimeout: s.HasTimeout, Timeout: s.Timeout, Counters: s.Counters,
		ElemData: s.Comment || s.SkbInfo, List: s.Type.List}
	if s.Family == ipset.Inet6 {
		info.Family = compat.IPv6
	}
	info.Netmask = s.Netmask
	info.AddrMask = s.AddrMask()
	info.MarkMask = s.MarkMask
	switch {
	case s.Type.Bitmap && s.Type.Dims[0] == ipset.DimPort:
		info.RangeLo = binary.BigEndian.AppendUint16(nil, s.PortLo)
		info.RangeHi = binary.BigEndian.AppendUint16(nil, s.PortHi)
	case s.Type.Bitmap && s.RangeLo.IsValid() && s.RangeHi.IsValid():
		info.RangeLo, info.RangeHi = s.RangeLo.AsSlice(), s.RangeHi.AsSlice()
	}
	if s.Type.Net() {
		n := s.NomatchNftSet()
		info.Nomatch = &n
	}
	if s.ShardCopies() {
		info.Copies = s.CopySetNames()
	}
	if s.Type.List {
		info.MembersKnown = true
		info.Members = []compat.SetInfo{}
		for _, n := range s.Members() {
			m := find(n)
			if m == nil {
				// (the kernel state changed between the reads: the
				// command's batch fails on the generation check)
				info.MembersKnown = false
				break
			}
			info.Members = append(info.Members, SetInfo(n, m, find))
		}
	}
	for _, d := range s.Type.Dims {
		switch d {
		case ipset.DimIP, ipset.DimNet:
			info.Dims = append(info.Dims, compat.SetDimAddr)
		case ipset.DimPort:
			if s.Type.Bitmap {
				info.Dims = append(info.Dims, compat.SetDimPortOnly)
			} else {
				info.Dims = append(info.Dims, compat.SetDimPort)
			}
		case ipset.DimIface:
			info.Dims = append(info.Dims, compat.SetDimIface)
		case ipset.DimMAC:
			info.Dims = append(info.Dims, compat.SetDimMAC)
		case ipset.DimMark:
			info.Dims = append(info.Dims, compat.SetDimMark)
		}
	}
	return info
}
