package main

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/setengine"
)

// The iptables personalities learn about ipset sets from the kernel, once
// per invocation, when a rule first uses -m set.
func init() {
	var mu sync.Mutex
	cache := map[string]*ipset.Set{}
	compat.LookupIPSet = func(name string) (compat.SetInfo, bool) {
		// Only the set's header is read (not its elements), once per
		// name and invocation.
		mu.Lock()
		s, seen := cache[name]
		if !seen {
			if conn, err := kernel.Open(); err == nil {
				if st, err := (&setengine.Engine{Conn: conn}).Headers(name); err == nil {
					s = st.Find(name)
				}
				conn.Close()
			}
			cache[name] = s
		}
		mu.Unlock()
		if s == nil {
			return compat.SetInfo{}, false
		}
		return setInfo(name, s), true
	}
}

// ipset resolves host names in elements (getaddrinfo) and, with
// -resolve, prints addresses by name (getnameinfo): the resolver reads
// /etc/hosts, then asks DNS.
func init() {
	ipset.LookupHost = func(name string, v6 bool) (netip.Addr, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		nw := "ip4"
		if v6 {
			nw = "ip6"
		}
		as, err := net.DefaultResolver.LookupNetIP(ctx, nw, name)
		if err != nil || len(as) == 0 {
			return netip.Addr{}, false
		}
		return as[0].Unmap(), true
	}
	ipset.LookupName = func(a netip.Addr) (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		names, err := net.DefaultResolver.LookupAddr(ctx, a.String())
		if err != nil || len(names) == 0 {
			return "", false
		}
		return strings.TrimSuffix(names[0], "."), true
	}
}

// setInfo describes an ipset set the way -m set and -j SET need it.
func setInfo(name string, s *ipset.Set) compat.SetInfo {
	info := compat.SetInfo{NftName: ipset.LookupSetName(name), Family: compat.IPv4,
		Updatable: !s.Type.Net() && !s.Type.List, HasTimeout: s.HasTimeout, Timeout: s.Timeout, Counters: s.Counters,
		ElemData: s.Comment || s.SkbInfo, List: s.Type.List}
	if s.Family == ipset.Inet6 {
		info.Family = compat.IPv6
	}
	info.Netmask = s.Netmask
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
