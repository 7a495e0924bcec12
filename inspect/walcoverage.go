package inspect

import (
	"fmt"
	"strings"

	"github.com/etcdpvc/etcdpvc/store/wal"
)

// WALCoverageLines describes what a write-ahead log covers for an
// operator, one line each.
func WALCoverageLines(c wal.WALCoverage) []string {
	out := []string{fmt.Sprintf("write-ahead log %s: raft entries %d (term %d) to %d (term %d), last commit %d, %d segments read",
		c.Dir, c.FirstIndex, c.FirstTerm, c.LastIndex, c.LastTerm, c.Commit, len(c.Segments))}
	if c.DB != "" {
		out = append(out, fmt.Sprintf("replayed over db %s: consistent index %d, revision %d", c.DB, c.ConsistentIndex, c.DBRevision))
		switch {
		case c.InDB == 0:
		case c.PrefixUnresolved != "":
			out = append(out, fmt.Sprintf("the log's %d entries up to the db's consistent index: outcomes and revisions not established (%s)", c.InDB, c.PrefixUnresolved))
		case len(c.PrefixUnknown) > 0:
			out = append(out, fmt.Sprintf("the log's %d entries up to the db's consistent index, worked out back from the db; revisions established %s", c.InDB, establishedStretches(c)))
			for _, u := range c.PrefixUnknown {
				what := fmt.Sprintf("entries %d to %d: outcomes or revisions", u.FromIndex, u.ToIndex)
				if u.FromIndex == u.ToIndex {
					what = fmt.Sprintf("entry %d: outcome or revision", u.FromIndex)
				}
				out = append(out, fmt.Sprintf("%s not established (%s)", what, u.Reason))
			}
		case c.PrefixRevision == 0:
			out = append(out, fmt.Sprintf("the log's %d entries up to the db's consistent index, worked out back from the db: revisions up to %d (the revision before the log is not established: an entry at its start may or may not have made one)", c.InDB, c.DBRevision))
		case c.PrefixRevision >= c.DBRevision:
			out = append(out, fmt.Sprintf("the log's %d entries up to the db's consistent index, worked out back from the db: they wrote no revision", c.InDB))
		case len(c.Unnamed) > 0:
			out = append(out, fmt.Sprintf("the log's %d entries up to the db's consistent index, worked out back from the db: revisions %d to %d, with %s that may have deleted keys the log never names", c.InDB, c.PrefixRevision+1, c.DBRevision, Count(len(c.Unnamed), "entry", "entries")))
		default:
			out = append(out, fmt.Sprintf("the log's %d entries up to the db's consistent index, worked out back from the db: revisions %d to %d", c.InDB, c.PrefixRevision+1, c.DBRevision))
		}
		for _, u := range c.Unnamed {
			out = append(out, UnnamedLine(u))
		}
	}
	if c.Check != nil {
		out = append(out, walCheckLine(c.Check, c.DB))
		if c.Check.NotChecked == "" && c.LastIndex > c.Check.ConsistentIndex {
			out = append(out, fmt.Sprintf("entries %d to %d: replayed after the db %s's consistent index, not checked by it", c.Check.ConsistentIndex+1, c.LastIndex, c.Check.DB))
		}
	}
	switch {
	case c.DB != "" && c.LastRevision > c.DBRevision:
		out = append(out, fmt.Sprintf("revisions %d to %d derived from the log's entries after the db's", c.DBRevision+1, c.LastRevision))
	case c.DB != "":
		out = append(out, "the log's entries after the db's wrote no revision")
	case c.LastRevision != 0:
		out = append(out, fmt.Sprintf("revisions %d to %d derived from the log", c.FirstRevision, c.LastRevision))
	}
	if c.RevisionsStop != "" {
		out = append(out, "revisions not established from here on: "+c.RevisionsStop)
	}
	if c.Tail != nil {
		out = append(out, "torn tail (the log ends there): "+c.Tail.String())
	}
	return out
}

// establishedStretches names the entries up to the db's consistent index
// whose revisions are established: "for entries 383 to 543".
func establishedStretches(c wal.WALCoverage) string {
	var parts []string
	next := c.FirstIndex
	for _, u := range c.PrefixUnknown {
		if u.FromIndex > next {
			parts = append(parts, fmt.Sprintf("%d to %d", next, u.FromIndex-1))
		}
		next = u.ToIndex + 1
	}
	if next <= c.ConsistentIndex {
		parts = append(parts, fmt.Sprintf("%d to %d", next, c.ConsistentIndex))
	}
	if len(parts) == 0 {
		return "for none of them"
	}
	return "for entries " + strings.Join(parts, ", ")
}

// walCheckLine describes for an operator the check of the replay over
// the db base.
func walCheckLine(c *wal.WALCheck, base string) string {
	if c.NotChecked != "" {
		return fmt.Sprintf("not checked against db %s (consistent index %d): %s", c.DB, c.ConsistentIndex, c.NotChecked)
	}
	return fmt.Sprintf("checked against db %s at its consistent index %d (revision %d): the replay over %s agrees on every key (%s) and on every value it wrote (%s)",
		c.DB, c.ConsistentIndex, c.Revision, base, Count(c.Keys, "key", "keys"), Count(c.Values, "value", "values"))
}

// unnamedWhat names the keys u may have deleted: "keys under P that the
// log never names".
func unnamedWhat(u wal.UnnamedDeletion) string {
	var keys string
	switch {
	case u.Lease != 0:
		keys = fmt.Sprintf("keys attached to lease %x", u.Lease)
	case u.End == "\x00":
		keys = "keys from " + u.From + " on"
	case u.UnderPrefix():
		keys = "keys under " + u.From
	default:
		keys = fmt.Sprintf("keys from %s to %s", u.From, u.End)
	}
	return keys + " that the log never names"
}

// unnamedEntry names u's entry: "entry 10, a range delete".
func unnamedEntry(u wal.UnnamedDeletion) string {
	if u.Lease != 0 {
		return fmt.Sprintf("entry %d, a lease revoke", u.Index)
	}
	return fmt.Sprintf("entry %d, a range delete", u.Index)
}

// UnnamedLine says what u may have deleted: "entry 10, a range delete,
// may have deleted keys under P that the log never names".
func UnnamedLine(u wal.UnnamedDeletion) string {
	return fmt.Sprintf("%s, may have deleted %s", unnamedEntry(u), unnamedWhat(u))
}
