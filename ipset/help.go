package ipset

import (
	_ "embed"
	"strings"
)

// helpText is ipset 7.17's help output, byte for byte: the common part,
// then sections introduced by "@@@ NAME" lines: "@@@ " (no name) is the
// list of supported types that "ipset help" ends with, "@@@ TYPE" the
// type-specific part "ipset help TYPE" ends with.
//
//go:embed help.txt
var helpText string

func helpSections() (common string, sec map[string]string) {
	sec = map[string]string{}
	parts := strings.Split(helpText, "@@@ ")
	common = parts[0]
	for _, p := range parts[1:] {
		name, body, _ := strings.Cut(p, "\n")
		sec[name] = body
	}
	return common, sec
}

// Help returns the text of "ipset help".
func Help() string {
	common, sec := helpSections()
	return common + sec[""]
}

// TypeHelp returns the text of "ipset help TYPE" (type names and
// aliases as create takes them). For an unknown type ipset prints the
// common part (without its last empty line) and an error.
func TypeHelp(name string) (string, *Error) {
	t := LookupType(name)
	common, sec := helpSections()
	if t == nil || sec[t.Name] == "" {
		return strings.TrimSuffix(common, "\n"), usagef("Unknown settype: `%s'", name)
	}
	return common + sec[t.Name], nil
}

// QuietHelp returns the text of "ipset -q help [TYPE]": the common part
// alone (without its last empty line), whatever the type; ipset prints
// the list of types, the type's part and the error for an unknown type
// as the notices -q silences, and exits with status 0.
func QuietHelp() string {
	common, _ := helpSections()
	return strings.TrimSuffix(common, "\n")
}
