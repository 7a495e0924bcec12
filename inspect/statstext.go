package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/etcdpvc/etcdpvc/internal/textout"
)

// The text form of a StatsReport, for `etcdpvc stats`: the summary lines,
// then its tables (per resource, encryption at rest, stored versions, the
// values not read when there are any, the largest objects), each given as
// its columns and rows.

// StatsColumns head the per-resource table (StatsReport.ResourceRows).
var StatsColumns = []string{"RESOURCE", "OBJECTS", "BYTES", "LEASED", "REVISIONS", "TOMBSTONES", "DELETED", "HISTORY BYTES"}

// StorageColumns head the encryption table (StatsReport.StorageRows).
var StorageColumns = []string{"RESOURCE", "STORED UNDER", "OBJECTS", "STATUS"}

// VersionColumns head the stored versions (StatsReport.VersionRows).
var VersionColumns = []string{"RESOURCE", "STORED AS", "OBJECTS", "STATUS"}

// UnreadableColumns head the values not read (StatsReport.UnreadableRows).
var UnreadableColumns = []string{"RESOURCE", "OBJECTS", "WHY"}

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

// VersionVerdict is the line above the stored versions: how many objects
// are stored at a version a Kubernetes release stopped serving, and how
// many versions are unknown.
func (r *StatsReport) VersionVerdict() string {
	var removed int64
	oldest := ""
	for _, s := range r.Resources {
		for _, v := range s.StoredVersions {
			if v.RemovedIn != "" {
				removed += v.Objects
				if oldest == "" || releaseLess(v.RemovedIn, oldest) {
					oldest = v.RemovedIn
				}
			}
		}
	}
	out := "no object is stored at an API version a Kubernetes release stopped serving"
	if removed > 0 {
		out = fmt.Sprintf("%s stored at an API version a Kubernetes release stopped serving (the first: %s): a release whose code no longer decodes that version cannot read them, and every LIST of their resource then fails; rewrite them through the apiserver before upgrading (kubectl get RESOURCE -A -o json | kubectl replace -f -)", Count(int(removed), "object is", "objects are"), oldest)
	}
	if r.NotRead > 0 {
		out += fmt.Sprintf("; the versions of %s are unknown (UNREADABLE)", Count(r.NotRead, "value", "values"))
	}
	return out
}

// releaseLess orders Kubernetes releases by their minor number: "v1.9"
// before "v1.22".
func releaseLess(a, b string) bool {
	minor := func(s string) int {
		_, m, _ := strings.Cut(s, ".")
		n, _ := strconv.Atoi(m)
		return n
	}
	return minor(a) < minor(b)
}

// VersionRows are each resource's objects by stored apiVersion, under
// VersionColumns: versions no longer served say from which release, the
// others "-" (whether this cluster serves them is not read here).
func (r *StatsReport) VersionRows() [][]string {
	var rows [][]string
	for _, s := range r.Resources {
		for _, v := range s.StoredVersions {
			status := "-"
			if v.RemovedIn != "" {
				status = "NOT SERVED from " + v.RemovedIn + ": rewrite before upgrading"
			}
			rows = append(rows, []string{s.Resource, v.APIVersion + " " + v.Kind, strconv.FormatInt(v.Objects, 10), status})
		}
	}
	return rows
}

// UnreadableRows are the objects whose value could not be read, by
// resource and why, under UnreadableColumns.
func (r *StatsReport) UnreadableRows() [][]string {
	var rows [][]string
	for _, s := range r.Resources {
		for _, u := range s.Unreadable {
			rows = append(rows, []string{s.Resource, strconv.FormatInt(u.Objects, 10), u.Reason})
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
	fmt.Fprintf(w, "\nSTORED VERSIONS\n%s\n", r.VersionVerdict())
	if err := textout.NewTable(w, VersionColumns...).Rows(r.VersionRows()); err != nil {
		return err
	}
	if r.NotRead > 0 {
		fmt.Fprintf(w, "\nUNREADABLE\n")
		if err := textout.NewTable(w, UnreadableColumns...).Rows(r.UnreadableRows()); err != nil {
			return err
		}
	}
	if len(r.Largest) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nLARGEST OBJECTS\n")
	return textout.NewTable(w, LargestColumns...).Rows(r.LargestRows())
}
