// Package integration holds root-only tests that run in throwaway network
// namespaces: they apply rules, send packets over veth pairs, and compare
// xdptables with the reference tools (iptables-nft, ipset, nft). Without
// root they skip with a message; as root `make test` fails on any skip.
package integration
