package compat

import (
	"fmt"
	"strings"
	"syscall"
)

// Exit statuses of iptables (xtables_exittype).
const (
	StatusOK        = 0
	StatusOther     = 1 // OTHER_PROBLEM: rule/chain logic refused the command
	StatusParameter = 2 // PARAMETER_PROBLEM: bad command line; followed by the Try line
	StatusVersion   = 3 // VERSION_PROBLEM: unknown table
	StatusResource  = 4 // RESOURCE_PROBLEM: kernel/netlink failure
)

// Version is the iptables version we present ourselves as, so that tools
// that parse `iptables -V` (go-iptables, Docker, kube-proxy) see an
// nf_tables-backed iptables >= 1.8.
const Version = "1.8.9"

// ErrKind says how an error is rendered.
type ErrKind int

const (
	// KindXtables is xtables_error(): "PROG v1.8.9 (nf_tables): MSG".
	KindXtables ErrKind = iota
	// KindPlain is the "PROG: MSG" form used for results of the rule logic
	// ("iptables: Bad rule (does a matching rule exist in that chain?).").
	KindPlain
	// KindRaw prints MSG as it is ("Bad argument `x'").
	KindRaw
)

// Error is an iptables error: its exit status and the text iptables prints.
type Error struct {
	Status int
	Kind   ErrKind
	Msg    string
	// CmdHint follows Msg when iptables prints the error for a command
	// line, not when iptables-restore prints it for a line of its file
	// ("line 3 failed: Bad policy name.").
	CmdHint string
}

func (e *Error) Error() string { return e.Msg }

// Paramf is a PARAMETER_PROBLEM as xtables_error() reports it.
func Paramf(format string, a ...any) *Error {
	return &Error{Status: StatusParameter, Kind: KindXtables, Msg: fmt.Sprintf(format, a...)}
}

// Errorf is an error of the given status in xtables_error() form.
func Errorf(status int, format string, a ...any) *Error {
	return &Error{Status: status, Kind: KindXtables, Msg: fmt.Sprintf(format, a...)}
}

// Plainf is an error printed as "PROG: MSG".
func Plainf(status int, format string, a ...any) *Error {
	return &Error{Status: status, Kind: KindPlain, Msg: fmt.Sprintf(format, a...)}
}

// Rawf is an error whose text is printed unchanged.
func Rawf(status int, format string, a ...any) *Error {
	return &Error{Status: status, Kind: KindRaw, Msg: fmt.Sprintf(format, a...)}
}

// Messages of the rule logic, as iptables prints them (status 1); literals,
// static data rather than values built at every start.
var (
	ErrNoChain       = &Error{Status: StatusOther, Kind: KindPlain, Msg: "No chain/target/match by that name."}
	ErrBadRule       = &Error{Status: StatusOther, Kind: KindPlain, Msg: "Bad rule (does a matching rule exist in that chain?)."}
	ErrChainExists   = &Error{Status: StatusOther, Kind: KindPlain, Msg: "Chain already exists."}
	ErrBadBuiltin    = &Error{Status: StatusOther, Kind: KindPlain, Msg: "Bad built-in chain name."}
	ErrBadPolicy     = &Error{Status: StatusOther, Kind: KindPlain, Msg: "Bad policy name.", CmdHint: " Run `dmesg' for more information."}
	ErrFileExists    = &Error{Status: StatusOther, Kind: KindPlain, Msg: "File exists."}
	ErrIndexDelete   = &Error{Status: StatusOther, Kind: KindPlain, Msg: "Index of deletion too big."}
	ErrIndexInsert   = &Error{Status: StatusOther, Kind: KindPlain, Msg: "Index of insertion too big."}
	ErrIndexReplace  = &Error{Status: StatusOther, Kind: KindPlain, Msg: "Index of replacement too big."}
	ErrNotPermitted  = &Error{Status: StatusOther, Kind: KindPlain, Msg: "Permission denied (you must be root)."}
	ErrChainNotEmpty = &Error{Status: StatusOther, Kind: KindPlain, Msg: "Directory not empty."}
)

// Format renders err the way PROG (e.g. "iptables", "iptables-restore")
// prints it on stderr. line > 0 adds restore's "Error occurred at line: N".
// Errors that are not *Error are rendered in xtables form.
func Format(err error, prog string, line int) string {
	e, ok := err.(*Error)
	if !ok {
		e = &Error{Status: StatusOther, Kind: KindXtables, Msg: err.Error()}
	}
	var b strings.Builder
	switch e.Kind {
	case KindXtables:
		fmt.Fprintf(&b, "%s v%s (nf_tables): %s\n", prog, Version, e.Msg)
	case KindPlain:
		fmt.Fprintf(&b, "%s: %s%s\n", prog, e.Msg, e.CmdHint)
	case KindRaw:
		b.WriteString(e.Msg)
		if e.Msg != "" && !strings.HasSuffix(e.Msg, "\n") {
			b.WriteByte('\n')
		}
	}
	if e.Status == StatusParameter {
		b.WriteString(TryHelp(prog, line))
	}
	if e.Status == StatusVersion && e.Kind == KindXtables {
		fmt.Fprintf(&b, "Perhaps %s or your kernel needs to be upgraded.\n", prog)
	}
	return b.String()
}

// TryHelp is the hint iptables prints after a parameter problem.
func TryHelp(prog string, line int) string {
	s := ""
	if line > 0 {
		s = fmt.Sprintf("Error occurred at line: %d\n", line)
	}
	return s + fmt.Sprintf("Try `%s -h' or '%s --help' for more information.\n", prog, prog)
}

// StatusOf returns the exit status for err.
func StatusOf(err error) int {
	if err == nil {
		return StatusOK
	}
	if e, ok := err.(*Error); ok {
		return e.Status
	}
	return StatusOther
}

// KernelRefusal is what the kernel answers the rule of an extension that
// iptables-nft sends as its xtables form, known before the rule is sent
// (for example -j SECMARK with a security context the kernel cannot map:
// ENOENT). The command fails as the kernel's refusal of the rule's
// operation does: "RULE_APPEND failed (No such file or directory): rule
// in chain INPUT", status 4.
type KernelRefusal struct {
	Errno syscall.Errno
}

func (e *KernelRefusal) Error() string { return "the kernel refuses the rule: " + e.Errno.Error() }
