package flows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
)

// WatchRequest is what `etcdpvc watch` follows and how it prints it.
type WatchRequest struct {
	// Resource, Namespace and AllNamespaces scope the watch as ls scopes
	// a listing; Key, if set, is the one key watched (RESOURCE NAME).
	Resource      string
	Namespace     string
	AllNamespaces bool
	Key           string
	// From and Until bound the revisions reported (0: from now on, and
	// until Ctrl-C).
	From, Until int64
	// Output is "table" or "json" (one object a line).
	Output    string
	NoHeaders bool
	// Selector is a label selector (kubectl's syntax; "": every object).
	Selector    string
	ShowSecrets bool
	Now         func() time.Time
}

// watchCompactedHint says where the changes etcd no longer holds are.
const watchCompactedHint = "start within the revisions etcd holds (a later --rev, or none to follow from now); older changes are in a snapshot or member db taken before the compaction (etcdpvc --db FILE history ...) or a member's write-ahead log (etcdpvc --wal DIR history ...)"

// Watch follows the changes r names (inspect.Watch) and writes each to w
// as it comes; t is told when the watch starts, is cut and resumed. It
// ends without an error when ctx is done (Ctrl-C) or r.Until is passed.
// A store that cannot be watched (a db file, a log) is an *OptionError.
func (s *Session) Watch(ctx context.Context, t Terminal, w io.Writer, r WatchRequest) error {
	watcher, ok := s.Reader.(store.Watcher)
	if !ok || s.WAL != nil {
		return &session.OptionError{Err: fmt.Errorf("watch: %w: follow a live etcd (--endpoints), or read what a file holds with history, ls --deleted or diff", store.ErrNoWatch)}
	}
	scope, err := s.Scope(r.Resource, r.Namespace, r.AllNamespaces)
	if err != nil {
		return err
	}
	o := inspect.WatchOptions{Codec: s.Planner.Codec, ShowSecrets: r.ShowSecrets, From: r.From, Until: r.Until, Now: r.Now,
		Note: func(msg string) { t.Note(msg) }}
	what := scope.Prefix
	if r.Key != "" {
		what = r.Key
	}
	o.Started = func(rev int64) {
		switch {
		case r.From > 0:
			t.Note(fmt.Sprintf("watching %s from revision %d (etcd is at revision %d)", what, r.From, rev))
		default:
			t.Note(fmt.Sprintf("watching %s for changes after revision %d (Ctrl-C ends)", what, rev))
		}
	}
	if r.Selector != "" {
		sel, err := inspect.ParseLabelSelector(r.Selector)
		if err != nil {
			return &session.OptionError{Err: err}
		}
		o.Labels = sel
	}
	// The changes replayed from a past revision are placed in time by the
	// revisions etcd holds from just before it.
	var tl *timeline
	if r.From > 0 {
		if tl, err = s.timeline(ctx, max(r.From-timelineReach, 1)); err != nil {
			return err
		}
		if tl != nil {
			for _, n := range tl.notes {
				t.Note(n)
			}
		}
	}
	table := inspect.NewWatchTable(w, !r.NoHeaders)
	if r.Now != nil {
		table.Now = r.Now()
	}
	err = inspect.Watch(ctx, watcher, s.Options.Prefix, scope, r.Key, o, func(row inspect.WatchRow) error {
		if tl != nil && row.Received == nil {
			iv := tl.at(row.Revision)
			row.Time = &iv
		}
		if r.Output == "json" {
			return inspect.WriteWatchJSON(w, row)
		}
		return table.Row(row)
	})
	switch {
	case errors.Is(err, store.ErrCompacted):
		// Changes asked for are not all there: incomplete, as a listing
		// a compaction cuts.
		return &hintedError{&lostError{err}, watchCompactedHint}
	case errors.Is(err, store.ErrSpansStores):
		return &session.OptionError{Err: err}
	}
	return err
}

// lostError is a watch's err that also matches ErrIncomplete: changes
// asked for are not all there.
type lostError struct{ err error }

func (e *lostError) Error() string   { return e.err.Error() }
func (e *lostError) Unwrap() []error { return []error{e.err, ErrIncomplete} }
