package inspect

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/etcdpvc/etcdpvc/internal/textout"
	"github.com/etcdpvc/etcdpvc/store/wal"
)

// HistoryColumns head the table of a history read from a db or etcd
// (HistoryRow.Cells); TIMED ones that of a history whose revisions are
// placed in time (HistoryRow.TimedCells).
var (
	HistoryColumns      = []string{"REVISION", "VERSION", "CREATED", "LEASE", "MANAGER", "CHANGE"}
	TimedHistoryColumns = []string{"REVISION", "TIME", "VERSION", "CREATED", "LEASE", "MANAGER", "CHANGE"}
)

// Cells are the row's cells under HistoryColumns: a deletion has no
// version or create revision, a key without a lease shows "-", a lease is
// in hexadecimal as etcdctl shows it, a manager not known is "-".
func (r HistoryRow) Cells() []string {
	lease := "-"
	if r.Lease != 0 {
		lease = strconv.FormatInt(r.Lease, 16)
	}
	ver, created := strconv.FormatInt(r.Version, 10), strconv.FormatInt(r.CreateRevision, 10)
	if r.Deleted {
		ver, created = "-", "-"
	}
	return []string{strconv.FormatInt(r.Revision, 10), ver, created, lease, r.managerCell(), r.Change}
}

// TimedCells are the row's cells under TimedHistoryColumns: Cells with
// TIME, the revision's interval (timeCell, at now in loc), after the
// revision.
func (r HistoryRow) TimedCells(now time.Time, loc *time.Location) []string {
	c := r.Cells()
	return append([]string{c[0], r.timeCell(now, loc)}, c[1:]...)
}

// timeCell is the TIME cell: the row's interval, "-" when not read.
func (r HistoryRow) timeCell(now time.Time, loc *time.Location) string {
	if r.Time == nil {
		return "-"
	}
	return TimeCell(*r.Time, now, loc)
}

// managerCell is the MANAGER cell: the field manager, "-" when not known.
func (r HistoryRow) managerCell() string {
	if r.Manager == nil {
		return "-"
	}
	return r.Manager.String()
}

// LogHistoryColumns head the table of a history read from a write-ahead
// log (HistoryRow.LogCells).
var LogHistoryColumns = []string{"INDEX", "TERM", "TIME", "OUTCOME", "REVISION", "VERSION", "CREATED", "LEASE", "MANAGER", "ETCD USER", "CHANGE"}

// LogCells are the row's cells under LogHistoryColumns: the raft entry and
// the outcome of the write ("in the db" for a revision the db holds and
// the log does not), its revision only where it is established, and why
// it is not after the change; the etcd user "-" where the request carried
// none (etcd records it only with its authentication enabled). TIME is
// the write's interval (TimeCell, at now in loc).
func (r HistoryRow) LogCells(now time.Time, loc *time.Location) []string {
	dash := func(n int64) string {
		if n == 0 {
			return "-"
		}
		return strconv.FormatInt(n, 10)
	}
	index, term, outcome := "-", "-", "in the db"
	if r.Index != 0 {
		index, term, outcome = strconv.FormatUint(r.Index, 10), strconv.FormatUint(r.Term, 10), r.Outcome
		if r.Outcome == wal.OutcomeApplied.String() && r.Revision == 0 {
			outcome = "applied, revision unknown"
		}
	}
	lease := "-"
	if r.Lease != 0 {
		lease = strconv.FormatInt(r.Lease, 16)
	}
	ver, created := dash(r.Version), dash(r.CreateRevision)
	if r.Deleted {
		ver, created = "-", "-"
	}
	change := r.Change
	if r.Reason != "" {
		change += " (" + r.Reason + ")"
	}
	user := r.EtcdUser
	if user == "" {
		user = "-"
	}
	return []string{index, term, r.timeCell(now, loc), outcome, dash(r.Revision), ver, created, lease, r.managerCell(), user, change}
}

// Write writes the report as "json" (indented) or "yaml", or as a table:
// a line "# ..." saying where a compacted history starts, then one row per
// revision (HistoryColumns, or LogHistoryColumns for a history read from a
// write-ahead log).
func (rep *HistoryReport) Write(w io.Writer, format string) error {
	switch format {
	case "json", "yaml":
		return WriteDocument(w, format, rep)
	}
	if rep.CompactedStart != "" {
		fmt.Fprintf(w, "# %s\n", rep.CompactedStart)
	}
	for _, n := range rep.TimeNotes {
		fmt.Fprintf(w, "# %s\n", n)
	}
	loc := rep.Zone
	if loc == nil {
		loc = time.Local
	}
	cols, cells := HistoryColumns, HistoryRow.Cells
	switch {
	case rep.Log != nil:
		cols, cells = LogHistoryColumns, func(r HistoryRow) []string { return r.LogCells(rep.Now, loc) }
	case len(rep.Rows) > 0 && rep.Rows[0].Time != nil:
		cols, cells = TimedHistoryColumns, func(r HistoryRow) []string { return r.TimedCells(rep.Now, loc) }
	}
	t := textout.NewTable(w, cols...)
	for _, r := range rep.Rows {
		if err := t.Row(cells(r)...); err != nil {
			return err
		}
	}
	return t.Flush()
}
