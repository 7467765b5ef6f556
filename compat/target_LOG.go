package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// LogTarget is -j LOG: kernel logging of the packet headers.
type LogTarget struct {
	Level  uint8
	Flags  uint8 // XT_LOG_* bits
	Prefix string
}

// Option ids double as the XT_LOG_* flag bit positions.
const (
	tgLogOptTCPSeq = iota
	tgLogOptTCPOpts
	tgLogOptIPOpts
	tgLogOptUID
	tgLogOptNflog // unused bit
	tgLogOptMAC
	tgLogOptLevel
	tgLogOptPrefix
)

const (
	tgLogDefaultLevel = 4 // LOG_WARNING
	tgLogPrefixSize   = 30
	tgLogFlagsMask    = 0x2f
)

var logTargetSpec = ExtSpec{
	Name: "LOG",
	X6:   true,
	Options: []OptDef{
		{Name: "log-level", Arg: RequiredArg, ID: tgLogOptLevel},
		{Name: "log-prefix", Arg: RequiredArg, ID: tgLogOptPrefix},
		{Name: "log-tcp-sequence", Arg: NoArg, ID: tgLogOptTCPSeq},
		{Name: "log-tcp-options", Arg: NoArg, ID: tgLogOptTCPOpts},
		{Name: "log-ip-options", Arg: NoArg, ID: tgLogOptIPOpts},
		{Name: "log-uid", Arg: NoArg, ID: tgLogOptUID},
		{Name: "log-macdecode", Arg: NoArg, ID: tgLogOptMAC},
	},
	NewTarget: func(Family) TargetExt { return &LogTarget{Level: tgLogDefaultLevel} },
}

var _ = RegisterTarget(&logTargetSpec)

func (t *LogTarget) Name() string { return "LOG" }

// tgSyslogLevelNames are the names XTTYPE_SYSLOGLEVEL accepts (exact case).
var tgSyslogLevelNames = map[string]uint8{
	"alert": 1, "crit": 2, "debug": 7, "emerg": 0, "error": 3,
	"info": 6, "notice": 5, "panic": 0, "warning": 4,
}

// tgParseSyslogLevel parses a level number 0-7 or a syslog level name.
func tgParseSyslogLevel(s string) (uint8, error) {
	if v, _, ok := tgStrtoul(s, 0, 7, true); ok {
		return uint8(v), nil
	}
	if v, ok := tgSyslogLevelNames[s]; ok {
		return v, nil
	}
	return 0, Paramf("log level \"%s\" unknown\n", s)
}

// tgSyslogPriorityName is the first name of glibc's prioritynames table
// with the value, as -L prints it.
func tgSyslogPriorityName(level uint8) string {
	for _, n := range []struct {
		name string
		v    uint8
	}{{"alert", 1}, {"crit", 2}, {"debug", 7}, {"emerg", 0}, {"err", 3}, {"error", 3},
		{"info", 6}, {"notice", 5}, {"panic", 0}, {"warn", 4}, {"warning", 4}} {
		if n.v == level {
			return n.name
		}
	}
	return ""
}

// tgParseLogPrefix applies XTTYPE_STRING's length rules: at least one
// character; the kernel buffer of size bytes keeps size-1 of them.
func tgParseLogPrefix(s string, size int, opt string) (string, error) {
	if len(s) < 1 {
		return "", Paramf("Argument must have a minimum length of %d characters\n", 1)
	}
	if strings.Contains(s, "\n") {
		return "", Paramf("Newlines not allowed in --%s", opt)
	}
	if len(s) > size-1 {
		s = s[:size-1]
	}
	return s, nil
}

func (t *LogTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case tgLogOptLevel:
		v, err := tgParseSyslogLevel(p.Arg)
		if err != nil {
			return err
		}
		t.Level = v
	case tgLogOptPrefix:
		s, err := tgParseLogPrefix(p.Arg, tgLogPrefixSize, "log-prefix")
		if err != nil {
			return err
		}
		t.Prefix = s
	default:
		t.Flags |= 1 << uint(p.Def.ID)
	}
	return nil
}

func (t *LogTarget) Final(*Rule, OptSet) error { return nil }

var tgLogFlagWords = []struct {
	bit        uint8
	save, list string
}{
	{1 << tgLogOptTCPSeq, "--log-tcp-sequence", "tcp-sequence"},
	{1 << tgLogOptTCPOpts, "--log-tcp-options", "tcp-options"},
	{1 << tgLogOptIPOpts, "--log-ip-options", "ip-options"},
	{1 << tgLogOptUID, "--log-uid", "uid"},
	{1 << tgLogOptMAC, "--log-macdecode", "macdecode"},
}

func (t *LogTarget) Save(b *strings.Builder, _ *Rule) {
	if t.Prefix != "" {
		b.WriteString(" --log-prefix " + SaveQuote(t.Prefix))
	}
	if t.Level != tgLogDefaultLevel {
		fmt.Fprintf(b, " --log-level %d", t.Level)
	}
	for _, f := range tgLogFlagWords {
		if t.Flags&f.bit != 0 {
			b.WriteString(" " + f.save)
		}
	}
}

func (t *LogTarget) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" LOG")
	if numeric {
		fmt.Fprintf(b, " flags %d level %d", t.Flags, t.Level)
	} else {
		if n := tgSyslogPriorityName(t.Level); n != "" {
			b.WriteString(" level " + n)
		} else {
			fmt.Fprintf(b, " UNKNOWN level %d", t.Level)
		}
		for _, f := range tgLogFlagWords {
			if t.Flags&f.bit != 0 {
				b.WriteString(" " + f.list)
			}
		}
		if t.Flags&^tgLogFlagsMask != 0 {
			b.WriteString(" unknown-flags")
		}
	}
	if t.Prefix != "" {
		fmt.Fprintf(b, " prefix \"%s\"", t.Prefix)
	}
}

// NftExprs is the nft log expression: nf_log_packet with the same
// level, flags (nftables' NF_LOG_* bits are the XT_LOG_* bits) and
// prefix as xt LOG. The kernel echoes the level always, flags and
// prefix only when set.
func (t *LogTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	if t.Level > 7 || t.Flags&^tgLogFlagsMask != 0 {
		return nil, errTgUnsupported
	}
	l := &expr.Log{Key: 1 << unix.NFTA_LOG_LEVEL, Level: expr.LogLevel(t.Level)}
	if t.Flags != 0 {
		l.Key |= 1 << unix.NFTA_LOG_FLAGS
		l.Flags = expr.LogFlags(t.Flags)
	}
	if t.Prefix != "" {
		l.Key |= 1 << unix.NFTA_LOG_PREFIX
		l.Data = []byte(t.Prefix)
	}
	return []expr.Any{l}, nil
}
