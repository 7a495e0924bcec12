package inspect

import "strconv"

// HistoryColumns head the table of a history read from a db or etcd
// (HistoryRow.Cells).
var HistoryColumns = []string{"REVISION", "VERSION", "CREATED", "LEASE", "CHANGE"}

// Cells are the row's cells under HistoryColumns: a deletion has no
// version or create revision, a key without a lease shows "-", a lease is
// in hexadecimal as etcdctl shows it.
func (r HistoryRow) Cells() []string {
	lease := "-"
	if r.Lease != 0 {
		lease = strconv.FormatInt(r.Lease, 16)
	}
	ver, created := strconv.FormatInt(r.Version, 10), strconv.FormatInt(r.CreateRevision, 10)
	if r.Deleted {
		ver, created = "-", "-"
	}
	return []string{strconv.FormatInt(r.Revision, 10), ver, created, lease, r.Change}
}
