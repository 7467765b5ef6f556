package ipset

import "strings"

// Help returns the text of "ipset help".
func Help() string {
	var b strings.Builder
	b.WriteString("ipset v" + Version + "\n\nUsage: ipset [options] COMMAND\n\nCommands:\n")
	for _, l := range []string{
		"create SETNAME TYPENAME [type-specific-options]\n        Create a new set",
		"add SETNAME ENTRY\n        Add entry to the named set",
		"del SETNAME ENTRY\n        Delete entry from the named set",
		"test SETNAME ENTRY\n        Test entry in the named set",
		"destroy [SETNAME]\n        Destroy a named set or all sets",
		"list [SETNAME]\n        List the entries of a named set or all sets",
		"save [SETNAME]\n        Save the named set or all sets to stdout",
		"restore\n        Restore a saved state",
		"flush [SETNAME]\n        Flush a named set or all sets",
		"rename FROM-SETNAME TO-SETNAME\n        Rename two sets",
		"swap FROM-SETNAME TO-SETNAME\n        Swap the contect of two existing sets",
		"help [TYPENAME]\n        Print help, and settype specific help",
		"version\n        Print version information",
		"quit\n        Quit interactive mode",
	} {
		b.WriteString(l + "\n")
	}
	b.WriteString("\nOptions:\n-o plain|save|xml\n       Specify output mode for listing sets.\n       Default value for \"list\" command is mode \"plain\"\n       and for \"save\" command is mode \"save\".\n-s\n        Print elements sorted (if supported by the set type).\n-q\n        Suppress any notice or warning message.\n-r\n        Try to resolve IP addresses in the output (slow!)\n-!\n        Ignore errors when creating or adding sets or\n        elements that do exist or when deleting elements\n        that don't exist.\n-n\n        When listing, just list setnames from the kernel.\n\n-t\n        When listing, list setnames and set headers\n        from kernel only.\n-f\n        Read from the given file instead of standard\n        input (restore) or write to given file instead\n        of standard output (list/save).\n\nSupported set types:\n")
	for _, t := range types {
		b.WriteString("    " + t.Name + "\n")
	}
	return b.String()
}
