package main

import (
	"context"
	"net"
	"time"

	"github.com/xdptables/xdptables/compat"
)

// resolveHost resolves a host name for -s/-d as iptables does through
// getaddrinfo: /etc/hosts, then DNS, bounded in time.
func resolveHost(host string, f compat.Family) ([]string, error) {
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
