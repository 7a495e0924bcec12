package inspect

import (
	"errors"
	"strconv"
	"strings"

	"github.com/etcdpvc/etcdpvc/store"
)

// ErrDiffSource is an argument of diff that names no state.
var ErrDiffSource = errors.New("not a state to compare")

// DiffSourceError is an argument of diff that names no state; it says why
// in the command's words.
type DiffSourceError struct{ Msg string }

func (e *DiffSourceError) Error() string        { return e.Msg }
func (e *DiffSourceError) Is(target error) bool { return target == ErrDiffSource }

// DiffSource is one side of a diff: a file or the live etcd, at a revision
// (0: the latest).
type DiffSource struct {
	// File is the db or snapshot file, "" for the live etcd.
	File string
	// Rev is the revision read (0: the latest).
	Rev int64
	// IsRev: the argument was rev:N, which reads the other side's source.
	IsRev bool
}

// String names the source: "live etcd", "a.db at revision 12".
func (s DiffSource) String() string {
	what := "live etcd"
	if s.File != "" {
		what = store.RedactKineURL(s.File)
	}
	if s.Rev != 0 {
		what += " at revision " + strconv.FormatInt(s.Rev, 10)
	}
	return what
}

// At names the source and the revision it was read at.
func (s DiffSource) At(rev int64) string {
	s.Rev = 0
	return s.String() + " at revision " + strconv.FormatInt(rev, 10)
}

// ParseDiffSource reads one side's argument: `live`, `rev:N` or a file path.
func ParseDiffSource(arg string) (DiffSource, error) {
	switch {
	case arg == "":
		return DiffSource{}, &DiffSourceError{"diff: an empty state: give a file, live or rev:N"}
	case arg == "live":
		return DiffSource{}, nil
	case strings.HasPrefix(arg, "rev:"):
		n, err := strconv.ParseInt(strings.TrimPrefix(arg, "rev:"), 10, 64)
		if err != nil || n <= 0 {
			return DiffSource{}, &DiffSourceError{"diff: " + strconv.Quote(arg) + ": rev:N needs a positive revision number"}
		}
		return DiffSource{Rev: n, IsRev: true}, nil
	}
	return DiffSource{File: arg}, nil
}

// DiffSources resolves the arguments A and B: a rev:N reads the other
// side's source, or, when both are rev:N, db (the --db file; "" the live
// etcd).
func DiffSources(db, a, b string) (DiffSource, DiffSource, error) {
	sa, err := ParseDiffSource(a)
	if err != nil {
		return sa, sa, err
	}
	sb, err := ParseDiffSource(b)
	if err != nil {
		return sa, sb, err
	}
	switch {
	case sa.IsRev && sb.IsRev:
		sa.File, sb.File = db, db
	case sa.IsRev:
		sa.File = sb.File
	case sb.IsRev:
		sb.File = sa.File
	}
	return sa, sb, nil
}
