package ipset

import (
	"fmt"
	"strings"
)

// Version is the ipset release whose behaviour we reproduce.
const Version = "7.17"

// Exit statuses of ipset.
const (
	StatusOK      = 0
	StatusError   = 1 // kernel-class and syntax errors
	StatusUsage   = 2 // unknown command, missing argument: adds the "Try" line
	StatusNoInput = 255
)

// Error is an ipset error: its message as ipset prints it after the
// "ipset v7.17: " prefix, and the exit status.
type Error struct {
	Msg    string
	Status int
	// Line is the restore line the error belongs to (0: none).
	Line int
	// NoLine: ipset reports the error without its restore line (a
	// check of its own command parser, not a message of its session).
	NoLine bool
	// NotInSet marks test's "X is NOT in set Y." (printed without prefix).
	NotInSet bool
	// Quiet: the command that failed had -quiet (a restore line's own,
	// which ipset keeps for the lines after it).
	Quiet bool
	// Parser: ipset's parser found the error though its message is no
	// "Syntax error: ..." (an ICMP type/code it cannot read).
	Parser bool
	// Checked: found by ipset's checks after the parse of the element
	// and its options, so before the kernel refuses an option the set
	// lacks.
	Checked bool
	// Mandatory: ipset's check of the parsed command's mandatory
	// fields (with Checked), which comes before its check of the
	// allowed ones (a range in test, a prefix in bitmap:ip,mac).
	Mandatory bool
	// BeforeExt: a kernel refusal of the element that comes before its
	// refusal of an option the set lacks (bitmap:port's range).
	BeforeExt bool
	// Loud: printed even with -q (ipset reports an unknown output
	// mode whatever its options say).
	Loud bool
}

func (e *Error) Error() string { return e.Msg }

// errorf is an error of status 1.
func errorf(format string, a ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, a...), Status: StatusError}
}

// syntaxf is ipset's "Syntax error: ..." (status 1).
func syntaxf(format string, a ...any) *Error {
	return &Error{Msg: "Syntax error: " + fmt.Sprintf(format, a...), Status: StatusError}
}

// usagef is a usage-class error (status 2, followed by the "Try" line).
func usagef(format string, a ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, a...), Status: StatusUsage}
}

// Messages of kernel-class errors, shared by the in-memory model and the
// kernel backend.
const (
	MsgExists        = "Set cannot be created: set with the same name already exists"
	MsgNoSet         = "The set with the given name does not exist"
	MsgElemExists    = "Element cannot be added to the set: it's already added"
	MsgElemMissing   = "Element cannot be deleted from the set: it's not added"
	MsgFull          = "Hash is full, cannot add more elements"
	MsgOutOfRange    = "Element is out of the range of the set"
	MsgNoTimeout     = "Timeout cannot be used: set was created without timeout support"
	MsgCIDR          = "The value of the CIDR parameter of the IP address is invalid"
	MsgSwapType      = "The sets cannot be swapped: their type does not match"
	MsgSwapFamily    = "The sets cannot be swapped: their family does not match"
	MsgRenameExists  = "Set cannot be renamed: a set with the new name already exists"
	MsgRenameBusy    = "Set cannot be renamed: it is in use by another system"
	MsgDestroyBusy   = "Set cannot be destroyed: it is in use by a kernel component"
	MsgNoCounters    = "Packet/byte counters cannot be used: set was created without counter support"
	MsgNoComment     = "Comment cannot be used: set was created without comment support"
	MsgNoSkbinfo     = "Skbinfo mapping cannot be used: set was created without skbinfo support"
	MsgNomatchNotNet = "Unknown argument: `nomatch'"
)

// ParseError says whether e is found by ipset's parser (usage errors
// and "Syntax error: ..."), not by the kernel.
func ParseError(e *Error) bool {
	if e.Checked {
		return false // (after the parse, whatever its words)
	}
	return e.Status == StatusUsage || e.Parser || strings.HasPrefix(e.Msg, "Syntax error: ")
}

// FromUserspace says whether e is found by ipset itself as it reads a
// line (its parser and its checks after the parse), not by the kernel:
// such an error ends a restore at its line, and the run of adds (dels)
// the line belongs to is never sent.
func FromUserspace(e *Error) bool {
	return ParseError(e) || e.Checked || e.NoLine
}

// Format renders err as ipset prints it on stderr (without -q).
func Format(err error) string {
	e, ok := err.(*Error)
	if !ok {
		return "ipset v" + Version + ": " + err.Error() + "\n"
	}
	var b strings.Builder
	b.WriteString("ipset v" + Version + ": ")
	msg := e.Msg
	if e.Line > 0 && !e.NoLine {
		fmt.Fprintf(&b, "Error in line %d: ", e.Line)
		// ipset's report of an error in a restore line replaces what
		// it reported before for the line: of several messages the
		// last is left
		msg = msg[strings.LastIndexByte(msg, '\n')+1:]
	}
	b.WriteString(msg)
	b.WriteString("\n")
	if e.Status == StatusUsage {
		b.WriteString("Try `ipset help' for more information.\n")
	}
	return b.String()
}

// StatusOf returns the exit status for err.
func StatusOf(err error) int {
	if err == nil {
		return StatusOK
	}
	if e, ok := err.(*Error); ok {
		return e.Status
	}
	return StatusError
}
