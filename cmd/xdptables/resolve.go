package main

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/xdptables/xdptables/compat"
)

// resolveHost resolves a host name for -s/-d as iptables does through
// getaddrinfo: /etc/hosts, then DNS, bounded in time.
func resolveHost(host string, f compat.Family) ([]string, error) {
	if i := strings.LastIndexByte(host, '%'); i >= 0 {
		if a, err := netip.ParseAddr(host[:i]); err == nil && !validZone(a, host[i+1:]) {
			return nil, errNoZone
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	network := "ip4"
	if f == compat.IPv6 {
		network = "ip6"
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, network, host)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out, nil
}

var errNoZone = errors.New("no such scope")

// validZone says whether getaddrinfo takes zone after address a: a
// decimal number, or, for a link-local address, the name of an interface
// of this network namespace (Go's resolver takes any zone).
func validZone(a netip.Addr, zone string) bool {
	if a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() {
		if _, err := net.InterfaceByName(zone); err == nil {
			return true
		}
	}
	if zone == "" || zone[0] < '0' || zone[0] > '9' {
		return false
	}
	_, err := strconv.ParseUint(zone, 10, 32)
	return err == nil
}
