package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// A corpus file (testdata/corpus/NAME.txt) holds command lines, one per
// line: "iptables ARGS", "ip6tables ARGS" or "ipset ARGS" (ipset lines
// only prepare the reference). Words are split like a shell does with
// single and double quotes. Lines starting with '#' are comments.

// CorpusLine is one command of a corpus file.
type CorpusLine struct {
	Line int
	Tool string
	Args []string
}

// Golden is what the reference printed for one corpus line; the golden
// file NAME.golden.jsonl holds one per iptables/ip6tables line.
type Golden struct {
	Line   int      `json:"line"`
	Tool   string   `json:"tool"`
	Args   []string `json:"args"`
	RC     int      `json:"rc"`
	Stderr string   `json:"stderr,omitempty"`
	// Rules holds the -S lines of the rules the command added.
	Rules []string `json:"rules,omitempty"`
}

// ReadCorpus parses a corpus file.
func ReadCorpus(path string) ([]CorpusLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []CorpusLine
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words, err := ShellWords(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, CorpusLine{Line: n, Tool: words[0], Args: words[1:]})
	}
	return out, sc.Err()
}

// ShellWords splits s like sh does for plain words, '...' and "..."
// (with \" and \\ escapes inside double quotes and \x outside).
func ShellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated '")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \"")
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// ReadGolden reads a .golden.jsonl file.
func ReadGolden(path string) ([]Golden, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Golden
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var g Golden
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// WriteGolden writes a .golden.jsonl file.
func WriteGolden(path string, gs []Golden) error {
	var b strings.Builder
	for _, g := range gs {
		j, err := json.Marshal(g)
		if err != nil {
			return err
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
