package main

import "testing"

func TestPersonality(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/sbin/iptables":             "iptables",
		"iptables-nft":                   "iptables",
		"/sbin/ip6tables-nft-restore":    "ip6tables-restore",
		"iptables-save":                  "iptables-save",
		"ip6tables-nft-save":             "ip6tables-save",
		"xdptables":                      "",
		"/usr/local/bin/iptables-legacy": "",
	} {
		if got := personality(in); got != want {
			t.Errorf("personality(%q) = %q, want %q", in, got, want)
		}
	}
	for n, want := range map[string]string{"iptables": "iptables-nft", "ip6tables-restore": "ip6tables-nft-restore", "iptables-save": "iptables-nft-save"} {
		if got := nftName(n); got != want {
			t.Errorf("nftName(%q) = %q, want %q", n, got, want)
		}
	}
}
