package persist

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Kind is what a persistence file holds.
type Kind int

// The three kinds of file, in restore order.
const (
	Sets Kind = iota
	RulesV4
	RulesV6
)

func (k Kind) String() string {
	switch k {
	case Sets:
		return "ipsets"
	case RulesV4:
		return "IPv4 rules"
	case RulesV6:
		return "IPv6 rules"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// restoreTool and saveTool are the personalities that read and write a
// file of that kind.
func (k Kind) restoreTool() string {
	return [...]string{"ipset", "iptables-restore", "ip6tables-restore"}[k]
}

func (k Kind) saveTool() string {
	return [...]string{"ipset", "iptables-save", "ip6tables-save"}[k]
}

// Layout is where one distribution family keeps the three files.
type Layout struct {
	Name string
	Path [3]string // indexed by Kind
}

// The layouts we read, in the order they are looked at.
var (
	// Debian is netfilter-persistent's and ipset-persistent's layout.
	Debian = Layout{"debian", [3]string{"/etc/iptables/ipsets", "/etc/iptables/rules.v4", "/etc/iptables/rules.v6"}}
	// RHEL is iptables-services' and ipset-service's layout.
	RHEL = Layout{"rhel", [3]string{"/etc/sysconfig/ipset", "/etc/sysconfig/iptables", "/etc/sysconfig/ip6tables"}}
)

// Layouts lists the known layouts, Debian first.
var Layouts = []Layout{Debian, RHEL}

// Runner runs one personality of xdptables (argv[0] = tool). in may be
// nil (no input); out may be nil (output discarded). The tool's own
// diagnostics go to wherever the Runner sends stderr.
type Runner interface {
	Run(tool string, args []string, in io.Reader, out io.Writer) error
}

// Options select the files and the tools available.
type Options struct {
	// Root prefixes every default path (tests; "" is /).
	Root string
	// Explicit names a file per kind. A named file is required: if it
	// is missing the restore fails. Unnamed kinds are looked up in
	// Layouts and skipped when no layout has them.
	Explicit [3]string
	// Kinds restricts the operation; empty means all three.
	Kinds []Kind
	// HaveIPSet says whether this build has the ipset personality.
	// Without it a sets file cannot be restored (the rules referring to
	// it would not find the sets), so one that exists is an error.
	HaveIPSet bool
	// Log receives one line per decision (the journal, under systemd).
	Log io.Writer
}

func (o *Options) kinds() []Kind {
	if len(o.Kinds) == 0 {
		return []Kind{Sets, RulesV4, RulesV6}
	}
	return o.Kinds
}

func (o *Options) logf(format string, a ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "xdptables persist: "+format+"\n", a...)
	}
}

func (o *Options) abs(p string) string {
	if o.Root == "" {
		return p
	}
	return filepath.Join(o.Root, p)
}

// File is one file chosen for a restore.
type File struct {
	Kind Kind
	Path string // as seen from the host, Root included
}

// ErrMissing is wrapped by errors about a file that should be there.
var ErrMissing = errors.New("file missing")

// Find returns the file to restore for each requested kind: the
// explicit one, or the first layout's that exists. A path that exists
// in some form but cannot be read as a regular file (a dangling
// symlink, a directory) is an error, not a skip: someone meant it.
func Find(o Options) ([]File, error) {
	var files []File
	for _, k := range o.kinds() {
		if p := o.Explicit[k]; p != "" {
			if err := readable(p); err != nil {
				return nil, fmt.Errorf("%s file %s: %w", k, p, err)
			}
			files = append(files, File{k, p})
			continue
		}
		for _, l := range Layouts {
			p := o.abs(l.Path[k])
			if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err := readable(p); err != nil {
				return nil, fmt.Errorf("%s file %s: %w", k, p, err)
			}
			files = append(files, File{k, p})
			break
		}
	}
	return files, nil
}

func readable(p string) error {
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrMissing
	}
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("not a regular file")
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	return f.Close()
}

// restoreArgs are the arguments that load (or, with test, check) a
// file of kind k given on stdin.
func restoreArgs(k Kind, test bool) []string {
	if k == Sets {
		// ipset restore has no dry run; -exist makes a second run of
		// the unit (systemctl restart) succeed on sets it created.
		return []string{"restore", "-exist"}
	}
	if test {
		return []string{"--test"}
	}
	return nil
}

// Restore checks every chosen file with the tool's --test, and only if
// all pass, loads them: sets first, then IPv4 and IPv6 rules. Each load
// is one transaction, so a file that fails leaves the ruleset of its
// family as it was. With testOnly nothing is loaded.
func Restore(o Options, r Runner, testOnly bool) error {
	files, err := Find(o)
	if err != nil {
		return fmt.Errorf("%w; nothing restored, the current ruleset is unchanged", err)
	}
	if len(files) == 0 {
		var looked []string
		for _, k := range o.kinds() {
			for _, l := range Layouts {
				looked = append(looked, o.abs(l.Path[k]))
			}
		}
		o.logf("no saved %s found (looked for %s); nothing to restore", kindList(o.kinds()), strings.Join(looked, ", "))
		return nil
	}
	for _, f := range files {
		if f.Kind == Sets && !o.HaveIPSet {
			return fmt.Errorf("%s file %s exists but this xdptables has no ipset support; nothing restored", f.Kind, f.Path)
		}
	}
	for _, f := range files {
		if f.Kind == Sets {
			continue
		}
		if err := runFile(r, f, true); err != nil {
			return fmt.Errorf("%s file %s does not load (%s --test: %w); nothing restored, the current ruleset is unchanged", f.Kind, f.Path, f.Kind.restoreTool(), err)
		}
		o.logf("%s: %s passes --test", f.Path, f.Kind)
	}
	if testOnly {
		return nil
	}
	for i, f := range files {
		if err := runFile(r, f, false); err != nil {
			done := "nothing restored"
			if i > 0 {
				var names []string
				for _, g := range files[:i] {
					names = append(names, g.Path)
				}
				done = "already restored: " + strings.Join(names, ", ")
			}
			return fmt.Errorf("restoring %s from %s: %s: %w (%s; %s is unchanged)", f.Kind, f.Path, f.Kind.restoreTool(), err, done, f.Kind)
		}
		o.logf("restored %s from %s", f.Kind, f.Path)
	}
	return nil
}

func runFile(r Runner, f File, test bool) error {
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return err
	}
	return r.Run(f.Kind.restoreTool(), restoreArgs(f.Kind, test), bytes.NewReader(data), nil)
}

func kindList(ks []Kind) string {
	var s []string
	for _, k := range ks {
		s = append(s, k.String())
	}
	return strings.Join(s, ", ")
}

// SaveLayout picks where Save writes when no file is named: Debian's
// when /etc/iptables exists, RHEL's on RHEL or when its file exists,
// else Debian's.
func SaveLayout(o Options) Layout {
	for _, l := range Layouts {
		if st, err := os.Stat(o.abs(filepath.Dir(l.Path[RulesV4]))); err == nil && st.IsDir() {
			if l.Name == "rhel" {
				// /etc/sysconfig exists on some Debian hosts too; the RHEL
				// layout counts only on RHEL or with its file already there.
				_, errFile := os.Stat(o.abs(l.Path[RulesV4]))
				_, errRelease := os.Stat(o.abs("/etc/redhat-release"))
				if errFile != nil && errRelease != nil {
					continue
				}
			}
			return l
		}
	}
	return Debian
}

// Save writes the current ruleset (and sets, with HaveIPSet) to the
// files of layout l, or the explicit ones. Each file is written beside
// its destination and renamed over it, so a failed save leaves the old
// file whole.
func Save(o Options, l Layout, r Runner) ([]File, error) {
	var saved []File
	for _, k := range o.kinds() {
		if k == Sets && !o.HaveIPSet {
			continue
		}
		p := o.Explicit[k]
		if p == "" {
			p = o.abs(l.Path[k])
		}
		var args []string
		if k == Sets {
			args = []string{"save"}
		}
		var buf bytes.Buffer
		if err := r.Run(k.saveTool(), args, nil, &buf); err != nil {
			return saved, fmt.Errorf("saving %s: %s: %w (%s left as it was)", k, k.saveTool(), err, p)
		}
		if err := writeAtomic(p, buf.Bytes()); err != nil {
			return saved, fmt.Errorf("saving %s: %w", k, err)
		}
		o.logf("saved %s to %s", k, p)
		saved = append(saved, File{k, p})
	}
	return saved, nil
}

func writeAtomic(p string, data []byte) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(p)+".")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o640); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}
