package compat

// -j NOTRACK is CT --notrack under its old name: the kernel sees a CT
// target whose alias flag makes it list back as NOTRACK.
var notrackTargetSpec = ExtSpec{
	Name:      "NOTRACK",
	X6:        true,
	NewTarget: func(Family) TargetExt { return &CTTarget{Flags: CTNotrack | CTNotrackAlias} },
}

var _ = RegisterTarget(&notrackTargetSpec)
