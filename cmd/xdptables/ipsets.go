package main

import (
	"sync"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/setengine"
)

// The iptables personalities learn about ipset sets from the kernel, once
// per invocation, when a rule first uses -m set.
func init() {
	var once sync.Once
	var st *ipset.State
	compat.LookupIPSet = func(name string) (compat.SetInfo, bool) {
		once.Do(func() {
			conn, err := kernel.Open()
			if err != nil {
				return
			}
			defer conn.Close()
			st, _ = (&setengine.Engine{Conn: conn}).Load()
		})
		if st == nil {
			return compat.SetInfo{}, false
		}
		s := st.Find(name)
		if s == nil {
			return compat.SetInfo{}, false
		}
		info := compat.SetInfo{NftName: ipset.LookupSetName(name), Family: compat.IPv4}
		if s.Family == ipset.Inet6 {
			info.Family = compat.IPv6
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
		return info, true
	}
}
