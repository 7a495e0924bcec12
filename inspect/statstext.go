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
		if l := db.sha256Line(); l != "" {
			out = append(out, "sha256:       "+l)
		}
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
		rows = append(rows, append([]string{s.Resource}, s.Counts.cells()...))
	}
	return rows
}

// EncryptionVerdict is the line above the encryption table: whether
// stale objects are known (an encryption config was given), and how many.
func (r *StatsReport) EncryptionVerdict() string {
	known := false
	var stale, unreadable int64
	for _, s := range r.Resources {
		if s.Stale != nil {
			known = true
			stale += *s.Stale
		}
		for _, c := range s.Storage {
			if c.NotReadable {
				unreadable += c.Objects
			}
		}
	}
	if unreadable > 0 {
		msg := Count(int(unreadable), "object is", "objects are") + " stored under a provider its resource's rule in the encryption config does not list (NOT READABLE): the apiserver can neither read nor rewrite them, and every LIST of their resource fails; delete them (etcdpvc delete --all-unreadable RESOURCE -A), or add that provider to the rule (for values in the clear, identity, last)"
		if stale > 0 {
			msg += "; " + Count(int(stale), "other is", "others are") + " STALE: rewrite them through the API (see docs/runbooks/encryption-rotation.md)"
		}
		return msg
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
			case c.NotReadable:
				status = "NOT READABLE: not in the encryption config"
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
	if err := r.writeGroups(w); err != nil {
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
	if len(r.Largest) > 0 {
		fmt.Fprintf(w, "\nLARGEST OBJECTS\n")
		if err := textout.NewTable(w, LargestColumns...).Rows(r.LargestRows()); err != nil {
			return err
		}
	}
	if r.HotKeys != nil {
		fmt.Fprintf(w, "\nHOTTEST KEYS\n%s\n", r.HotKeys.Verdict())
		if len(r.HotKeys.Keys) > 0 {
			if err := textout.NewTable(w, HotColumns...).Rows(r.HotKeys.Rows()); err != nil {
				return err
			}
		}
	}
	if r.Leases != nil {
		fmt.Fprintf(w, "\nLEASES\n%s\n", r.Leases.Verdict())
		if len(r.Leases.Top) > 0 {
			return textout.NewTable(w, LeaseColumns...).Rows(r.Leases.Rows())
		}
	}
	return nil
}

// writeGroups writes the counts table: per resource (StatsColumns) unless
// --by groups otherwise (GroupColumns).
func (r *StatsReport) writeGroups(w io.Writer) error {
	if len(r.By) <= 1 && (len(r.By) == 0 || r.By[0] == "resource") {
		return textout.NewTable(w, StatsColumns...).Rows(r.ResourceRows())
	}
	return textout.NewTable(w, r.GroupColumns()...).Rows(r.GroupRows())
}

// GroupColumns head the --by table: the words of By, then the counts.
func (r *StatsReport) GroupColumns() []string {
	var cols []string
	for _, b := range r.By {
		cols = append(cols, strings.ToUpper(b))
	}
	return append(cols, StatsColumns[1:]...)
}

// GroupRows are the --by groups' counts, under GroupColumns.
func (r *StatsReport) GroupRows() [][]string {
	var rows [][]string
	for _, g := range r.Groups {
		var row []string
		if g.Resource != nil {
			row = append(row, *g.Resource)
		}
		if g.Namespace != nil {
			ns := *g.Namespace
			if ns == "" {
				ns = NoNamespace
			}
			row = append(row, ns)
		}
		rows = append(rows, append(row, g.Counts.cells()...))
	}
	return rows
}

// cells are c's columns of StatsColumns after the first.
func (c *Counts) cells() []string {
	hist := "unknown"
	if c.HistoryBytes != nil {
		hist = HumanBytes(*c.HistoryBytes)
	}
	return []string{strconv.FormatInt(c.Objects, 10), HumanBytes(c.Bytes), strconv.FormatInt(c.Leased, 10),
		orUnknown(c.Revisions), orUnknown(c.Tombstones), orUnknown(c.Deleted), hist}
}

// HotColumns head the hottest keys (HotKeys.Rows).
var HotColumns = []string{"REVISIONS", "LAST", "LAST WRITE BY", "KEY"}

// Verdict is the line above the hottest keys: what is counted, over
// which revisions, in all.
func (h *HotKeys) Verdict() string {
	from := "all of them, to revision " + strconv.FormatInt(h.ToRevision, 10)
	if h.Since > 0 {
		from = fmt.Sprintf("from revision %d to %d", h.Since, h.ToRevision)
	}
	return fmt.Sprintf("%s of %s counted (%s, %s); LAST is the newest revision counted, LAST WRITE BY the field manager of the newest managedFields entry of the key's last write",
		Count(int(h.Revisions), "revision", "revisions"), Count(int(h.KeysChanged), "key", "keys"), h.Counted, from)
}

// Rows are the hottest keys, under HotColumns.
func (h *HotKeys) Rows() [][]string {
	var rows [][]string
	for _, k := range h.Keys {
		last := strconv.FormatInt(k.LastRevision, 10)
		if k.Deleted {
			last += " (deleted)"
		}
		by := "? (" + k.ManagerUnknown + ")"
		if k.LastWrite != nil {
			by = k.LastWrite.String()
			if k.LastWrite.Time != nil {
				by += " " + k.LastWrite.Time.Format("2006-01-02T15:04:05Z")
			}
		}
		rows = append(rows, []string{strconv.FormatInt(k.Revisions, 10), last, by, k.Key})
	}
	return rows
}

// LeaseColumns head the leases with the most keys (LeaseStats.Rows).
var LeaseColumns = []string{"LEASE", "KEYS", "BYTES", "TTL", "REMAINING", "RESOURCES"}

// Verdict is the line above the leases: how many keys and leases, and
// what is known of the leases held.
func (l *LeaseStats) Verdict() string {
	out := fmt.Sprintf("%s attached to %s", Count(int(l.LeasedKeys), "key", "keys"), Count(int(l.Named), "lease", "leases"))
	if l.Held != nil {
		out += fmt.Sprintf("; %s held (%s), %d without a key", Count(int(*l.Held), "lease", "leases"), l.Source, *l.WithoutKeys)
		if *l.NotHeld > 0 {
			out += fmt.Sprintf("; %s a lease not held (expired or revoked since)", Count(int(*l.NotHeld), "key names", "keys name"))
		}
	}
	if l.NotRead != "" {
		out += "; leases held not read: " + l.NotRead
	}
	return out
}

// Rows are the leases with the most keys, under LeaseColumns: a TTL not
// known is "?", a lease not held "NOT HELD".
func (l *LeaseStats) Rows() [][]string {
	var rows [][]string
	for _, c := range l.Top {
		ttl, rem := "?", "?"
		if c.TTL != nil {
			ttl = strconv.FormatInt(*c.TTL, 10) + "s"
		}
		if c.RemainingTTL != nil {
			rem = strconv.FormatInt(*c.RemainingTTL, 10) + "s"
		}
		if c.Held != nil && !*c.Held {
			ttl, rem = "NOT HELD", "-"
		}
		var res []string
		for _, r := range c.Resources {
			res = append(res, fmt.Sprintf("%s=%d", r.Name, r.Count))
		}
		rows = append(rows, []string{c.ID, strconv.FormatInt(c.Keys, 10), HumanBytes(c.Bytes), ttl, rem, strings.Join(res, ",")})
	}
	return rows
}

// sha256Line says the file's sha256 and its trailer, each where known.
func (db *DBStats) sha256Line() string {
	var parts []string
	if db.FileSHA256 != "" {
		parts = append(parts, db.FileSHA256+" (the file's)")
	}
	if db.TrailerSHA256 != "" {
		parts = append(parts, "trailer "+db.TrailerSHA256)
	}
	return strings.Join(parts, "; ")
}
