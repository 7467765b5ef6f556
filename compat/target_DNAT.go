package compat

// -j DNAT: see NATTarget in target_NAT.go for the shared range syntax.
var _ = tgRegisterNAT("DNAT")
