package compat

// -j REDIRECT: see NATTarget in target_NAT.go for the shared range syntax.
var _ = tgRegisterNAT("REDIRECT")
