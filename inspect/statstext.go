package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/etcdpvc/etcdpvc/internal/textout"
)

// The text form of a StatsReport, for `etcdpvc stats`: the summary lines,
// then three tables (per resource, encryption at rest, the largest
// objects), each given as its columns and rows.

// StatsColumns head the per-resource table (StatsReport.ResourceRows).
var StatsColumns = []string{"RESOURCE", "OBJECTS", "BYTES", "LEASED", "REVISIONS", "TOMBSTONES", "DELETED", "HISTORY BYTES"}

// StorageColumns head the encryption table (StatsReport.StorageRows).
var StorageColumns = []string{"RESOURCE", "STORED UNDER", "OBJECTS", "STATUS"}

// LargestColumns head the largest objects (StatsReport.LargestRows).
var LargestColumns = []string{"BYTES", "REVISION", "KEY"}

// orUnknown is a count that is not always known.
func orUnknown(p *int64) string {
	if p == nil {
		return "unknown"
	}
	return strconv.FormatInt(*p, 10)
}

// Summary returns the lines above the tables: source, snapshot, revisions,
// compaction, totals, the db file, notes, and what an incomplete read
// covers.
func (r *StatsReport) Summary() []string {
	out := []string{"source:       " + r.Source, "snapshot:     " + r.Snapshot}
	if r.OldestRevision != 0 {
		out = append(out, fmt.Sprintf("revisions:    %d to %d (%s held)", r.OldestRevision, r.Revision, orUnknown(r.Revisions)))
	} else {
		out = append(out, fmt.Sprintf("revision:     %d", r.Revision))
	}
	if r.ReadFrom != 0 {
		out = append(out, fmt.Sprintf("read at:      revisions %d to %d (etcd was compacted during the read)", r.ReadFrom, r.ReadTo))
	}
	if r.ScheduledCompactRevision != nil {
		out = append(out, fmt.Sprintf("compaction:   finished %d, scheduled %d", r.CompactRevision, *r.ScheduledCompactRevision))
	} else {
		out = append(out, fmt.Sprintf("compaction:   %d", r.CompactRevision))
	}
	out = append(out, fmt.Sprintf("objects:      %d (%s bytes), %d with a lease", r.Objects, HumanBytes(r.Bytes), r.Leased),
		fmt.Sprintf("deleted:      %s keys whose newest revision is a deletion, %s tombstones held", orUnknown(r.Deleted), orUnknown(r.Tombstones)))
	if db := r.DB; db != nil {
		l := fmt.Sprintf("db:           %s bytes in file, %s in use, page size %d, consistent index %d, term %d", HumanBytes(db.FileSize), HumanBytes(db.DataSize), db.PageSize, db.ConsistentIndex, db.Term)
		if db.StorageVersion != "" {
			l += ", storage version " + db.StorageVersion
		}
		out = append(out, l)
	}
	for _, n := range r.Notes {
		out = append(out, "note:         "+n)
	}
	if r.Incomplete != "" {
		out = append(out, "INCOMPLETE:   "+r.Incomplete+"; the counts below cover only what was read")
	}
	return out
}

// ResourceRows are the per-resource counts, under StatsColumns.
func (r *StatsReport) ResourceRows() [][]string {
	var rows [][]string
	for _, s := range r.Resources {
		hist := "unknown"
		if s.HistoryBytes != nil {
			hist = HumanBytes(*s.HistoryBytes)
		}
		rows = append(rows, []string{s.Resource, strconv.FormatInt(s.Objects, 10), HumanBytes(s.Bytes), strconv.FormatInt(s.Leased, 10),
			orUnknown(s.Revisions), orUnknown(s.Tombstones), orUnknown(s.Deleted), hist})
	}
	return rows
}

// EncryptionVerdict is the line above the encryption table: whether
// stale objects are known (an encryption config was given), and how many.
func (r *StatsReport) EncryptionVerdict() string {
	known := false
	var stale int64
	for _, s := range r.Resources {
		if s.Stale != nil {
			known = true
			stale += *s.Stale
		}
	}
	switch {
	case !known:
		return "no --encryption-config: providers are read from each value's k8s:enc: header; which are stale (not under a resource's write provider) is unknown"
	case stale == 0:
		return "every object is stored under its resource's write provider (the config's first)"
	}
	return Count(int(stale), "object is", "objects are") + " not under the resource's write provider (STALE): rewrite them through the API (see docs/runbooks/encryption-rotation.md)"
}

// StorageRows are the objects of each resource stored under each provider
// and key, under StorageColumns: those not under the write provider are
// STALE; "-" when the write provider is unknown.
func (r *StatsReport) StorageRows() [][]string {
	var rows [][]string
	for _, s := range r.Resources {
		for _, c := range s.Storage {
			status := "-"
			switch {
			case s.WriteProvider == "":
			case c.Stale:
				status = "STALE: writes use " + s.WriteProvider
			default:
				status = "current"
			}
			rows = append(rows, []string{s.Resource, c.Provider, strconv.FormatInt(c.Objects, 10), status})
		}
	}
	return rows
}

// LargestRows are the largest objects, under LargestColumns.
func (r *StatsReport) LargestRows() [][]string {
	var rows [][]string
	for _, l := range r.Largest {
		rows = append(rows, []string{HumanBytes(l.Bytes), strconv.FormatInt(l.ModRevision, 10), l.Key})
	}
	return rows
}

// Write writes the report: indented JSON, or its summary lines and its
// tables (per resource, encryption at rest with its verdict, the largest
// objects when there are any).
func (r *StatsReport) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	for _, l := range r.Summary() {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
	if err := textout.NewTable(w, StatsColumns...).Rows(r.ResourceRows()); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nENCRYPTION AT REST\n%s\n", r.EncryptionVerdict())
	if err := textout.NewTable(w, StorageColumns...).Rows(r.StorageRows()); err != nil {
		return err
	}
	if len(r.Largest) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nLARGEST OBJECTS\n")
	return textout.NewTable(w, LargestColumns...).Rows(r.LargestRows())
}
