package compat

// -j HL is the IPv6 twin of TTL (see target_TTL.go).
var hlTargetSpec = ExtSpec{
	Name:      "HL",
	Family:    IPv6,
	X6:        true,
	Options:   tgTtlOptions("hl"),
	NewTarget: func(Family) TargetExt { return &TTLTarget{IPv6: true} },
}

var _ = RegisterTarget(&hlTargetSpec)
