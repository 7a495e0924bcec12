package flows

import (
	"context"
	"io"
	"time"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// ReportRequest is what `etcdpvc report` writes.
type ReportRequest struct {
	// Top bounds the largest objects, hottest keys and leases; Details
	// the objects listed Terminating, unreadable and deleted.
	Top, Details int
	PageSize     int64
	// Since is the first revision the hottest keys count (as stats').
	Since int64
	// Now is the time the report says it was made.
	Now time.Time
}

// Report writes the HTML report of the store to w (inspect.WriteReport):
// the store read once as stats reads it, counted by resource and
// namespace, with the details listed. Its outcome is stats' (a report
// that covers only part of the store, or with values not read, is
// incomplete, after the page is written).
func (s *Session) Report(ctx context.Context, w io.Writer, r ReportRequest, progress Progress, warn func(msg string)) error {
	rep, err := s.statsReport(ctx, StatsRequest{Top: r.Top, PageSize: r.PageSize, Since: r.Since,
		By: inspect.GroupBy{Resource: true, Namespace: true}}, r.Details, progress)
	if rep == nil {
		return err
	}
	db := ""
	var flags []string
	if s.WAL == nil {
		db = store.RedactKineURL(s.Options.DB)
		if s.Options.Salvage {
			flags = append(flags, "--salvage")
		}
		if p := s.Options.Prefix; p != "" && p != kubevalue.DefaultPrefix {
			flags = append(flags, "--prefix", p)
		}
		if s.Options.EncryptionConfig != "" {
			flags = append(flags, "--encryption-config", s.Options.EncryptionConfig)
		}
	}
	noDeleted := ""
	if s.WAL != nil {
		noDeleted = "the keys the log deletes are not listed in this report: `etcdpvc --wal DIR ls --deleted -A` lists them, and recover --wal recreates one"
	}
	if werr := inspect.WriteReport(w, rep, inspect.ReportOptions{DB: db, Flags: flags, NoDeleted: noDeleted, Generated: r.Now}); werr != nil {
		return werr
	}
	return s.statsOutcome(rep, err, "report", warn)
}
