package compat

// -j MASQUERADE: see NATTarget in target_NAT.go for the shared range syntax.
var _ = tgRegisterNAT("MASQUERADE")
