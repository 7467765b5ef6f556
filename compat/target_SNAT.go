package compat

// -j SNAT: see NATTarget in target_NAT.go for the shared range syntax.
var _ = tgRegisterNAT("SNAT")
