package compat

// keptMatch is a match whose options the kernel changes when it checks
// the rule: what the kernel keeps, and so lists, -S prints and -C/-D
// compare against, is not what the command line said.
type keptMatch interface {
	// Kept returns the match as the kernel keeps it, or nil when the
	// kernel keeps it as it is.
	Kept() Match
}

// Kept returns r as the kernel keeps it once it holds it: r itself when
// no match of r changes, else a copy with the changed matches. A rule that
// goes to the kernel is recorded in this form; a rule given to -C or -D
// is compared as the command line said it (iptables-nft compares it with
// the kernel's, so a value the kernel changed does not match).
func Kept(r *Rule) *Rule {
	var out *Rule
	for i, m := range r.Matches {
		k, ok := m.(keptMatch)
		if !ok {
			continue
		}
		km := k.Kept()
		if km == nil {
			continue
		}
		if out == nil {
			c := *r
			c.Matches = append([]Match(nil), r.Matches...)
			out = &c
		}
		out.Matches[i] = km
	}
	if out == nil {
		return r
	}
	return out
}
