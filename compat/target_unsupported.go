package compat

// tgTableBound is the error of a target instance that nftables cannot
// express exactly and whose xtables target the kernel will not run in
// our table: xt_check_target compares the target's table (.table =
// "mangle", "raw", ...) with the name of the nftables table, and ours
// is "xdptables" (see DESIGN, "Kernel layout"). The message says so,
// after translate's `target "NAME": `.
type tgTableBound struct {
	name, table, what string
}

func (e tgTableBound) Error() string {
	return "cannot run in the xdptables table: the kernel runs the xtables " + e.name +
		" target only in a table named \"" + e.table + "\", and nftables has no exact equivalent of " + e.what +
		" (see docs/extensions.md)"
}

func (tgTableBound) Unwrap() error { return ErrNoNative }

// tgNotInTable reports that target name, bound by the kernel to table,
// has no exact nftables form for what.
func tgNotInTable(name, table, what string) error { return tgTableBound{name, table, what} }
