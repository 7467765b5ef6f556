package main

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/setengine"
)

// The iptables personalities learn about ipset sets from the kernel, once
// per invocation, when a rule first uses -m set.
func init() {
	var mu sync.Mutex
	cache := map[string]*ipset.Set{}
	// read returns the named sets (from the kernel the first time);
	// with mu held.
	read := func(names ...string) {
		var todo []string
		for _, n := range names {
			if _, seen := cache[n]; !seen {
				todo = append(todo, n)
			}
		}
		if len(todo) == 0 {
			return
		}
		var st *ipset.State
		if conn, err := lookupConn(); err == nil {
			st, _ = (&setengine.Engine{Conn: conn}).Headers(todo...)
		}
		for _, n := range todo {
			if st != nil {
				cache[n] = st.Find(n)
			} else {
				cache[n] = nil
			}
		}
	}
	compat.LookupIPSet = func(name string) (compat.SetInfo, bool) {
		// Only the set's header is read (not its elements; a
		// list:set's members and their headers), once per name and
		// invocation.
		mu.Lock()
		defer mu.Unlock()
		read(name)
		s := cache[name]
		if s == nil {
			return compat.SetInfo{}, false
		}
		read(s.Members()...)
		return setengine.SetInfo(name, s, func(n string) *ipset.Set { return cache[n] }), true
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
