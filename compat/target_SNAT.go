package compat

// -j SNAT: see NATTarget in target_NAT.go for the shared range syntax.
func init() { tgRegisterNAT("SNAT") }
