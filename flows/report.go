package flows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
)

// ListRequest is what ls lists: the objects of a scope (RESOURCE, -n, -A)
// as of a revision, selected by labels and fields, written in Format (or
// as Output: table, wide, json or yaml, when Format is not set).
type ListRequest struct {
	Resource, Namespace string
	AllNamespaces       bool
	Terminating         bool
	Deleted             bool
	// LabelSelector and FieldSelector are -l and --field-selector ("":
	// none).
	LabelSelector, FieldSelector string
	Output                       string
	Format                       inspect.ListFormat
	ShowKeys                     bool
	// ShowEtcd adds how each object is kept to a table (--show-etcd).
	ShowEtcd      bool
	PageSize, Rev int64
	// Now is the time ages are counted to.
	Now time.Time
}

// List writes the listing r asks for to w (inspect.List), telling t of
// the volumes a claims table could not read and, when nothing is listed,
// what is known of the scope. --deleted on a store that keeps no deleted
// keys is an *OptionError; a db file damaged part way, a log whose
// revisions stop before its end, and values that could not be read are
// incomplete (ErrIncomplete) after the rows written.
func (s *Session) List(ctx context.Context, t Terminal, w io.Writer, r ListRequest) error {
	scope, err := s.Scope(r.Resource, r.Namespace, r.AllNamespaces)
	if err != nil {
		return err
	}
	var enc inspect.Decrypter
	if s.Enc != nil {
		enc = s.Enc
	}
	sel, err := s.listSelection(ctx, scope, r.LabelSelector, r.FieldSelector, r.Rev)
	if err != nil {
		return err
	}
	f := r.Format
	if f.Kind == "" {
		f.Kind = r.Output
	}
	prefix := s.Options.Prefix
	cols := inspect.NewListTable(scope, f.Kind == inspect.FormatWide, r.ShowEtcd, r.Terminating, r.ShowKeys, r.Now)
	cols.Warn = func(err error) { t.Warn(err.Error()) }
	// A deleted key's time is read from a clock over the store's
	// revisions, read at the first one listed: none when none is.
	var tl *timeline
	times := func() error {
		if tl == nil {
			var err error
			if tl, err = s.timeline(ctx, 0); err != nil {
				return err
			}
			for _, n := range tl.notes {
				t.Note(n)
			}
		}
		return nil
	}
	if _, archive := s.Reader.(store.Archive); r.Deleted && archive && f.Kind != inspect.FormatName && (s.WAL != nil || s.readsRevisions()) {
		cols.Times = true
	}
	out := inspect.NewListWriter(w, f, cols)
	out.Filtered = r.Terminating || sel.NeedsObject()
	out.Skipped = func(it inspect.Listed) {
		t.Warn(fmt.Sprintf("%s not printed: %s", inspect.ObjectName(resource.Ref{Resource: it.Resource, Namespace: it.Namespace, Name: it.Name}), it.Unread))
	}
	if out.IsTable() {
		unread, err := cols.LoadJoins(ctx, s.Reader, enc, prefix, r.Rev)
		if err != nil {
			return err
		}
		if unread > 0 {
			t.Warn(fmt.Sprintf("%s not be read: a claim's VOLUME may show \"?\"",
				inspect.Count(unread, "persistentvolume could", "persistentvolumes could")))
		}
	}
	// The latest revision is read across a compaction; a pinned one is not.
	var span store.Span
	var onCompacted func(from, to int64)
	if r.Rev == 0 {
		onCompacted = span.Record
	}
	sum, err := inspect.List(ctx, s.Reader, enc, inspect.ListingOptions{
		StorePrefix: prefix, KeyPrefix: scope.Prefix,
		Match: func(key string) (resource.Resource, string, string, bool) {
			// A key that names no object is listed when it lies under a
			// resource's storage path (name ""), as LIST reads it.
			r, ns, name, _, ok := scope.Match(prefix, key)
			return r, ns, name, ok && r.Path != ""
		},
		Kind: cols.Kind, Objects: out.IsTable(), Terminating: r.Terminating, Deleted: r.Deleted,
		Select: sel, Content: f.NeedsObject(),
		PageSize: r.PageSize, Revision: r.Rev, OnCompacted: onCompacted,
	}, func(it inspect.Listed) error {
		if cols.Times {
			if err := times(); err != nil {
				return err
			}
			if tl != nil {
				iv := tl.at(it.DeleteRevision)
				it.DeleteTime = &iv
			}
		}
		return out.Row(it)
	})
	if span.Spans() {
		out.Spans(span.From, span.To)
		defer t.Warn(span.Note())
	}
	switch {
	case errors.Is(err, inspect.ErrNeedsArchive):
		return usageError("", "--deleted needs --db or --wal: live etcd keeps no index of deleted keys (use `etcdpvc history` on one key)")
	case errors.Is(err, store.ErrCorrupt):
		// What was read is printed; the rest of the file is not readable.
		if cerr := out.Close(); cerr != nil {
			return cerr
		}
		return &hintedError{&incompleteError{msg: fmt.Sprintf("listing stopped after %s: %v", inspect.Count(sum.Listed, "object", "objects"), err)},
			damagedDBHint}
	case errors.As(err, new(*store.CompactedError)):
		// What was read of the revision is printed; the rest is gone.
		if cerr := out.Close(); cerr != nil {
			return cerr
		}
		return compactedIncomplete(err, "listing", inspect.Count(sum.Listed, "object", "objects"))
	case err != nil:
		return err
	}
	if werr := s.Unsettled(scope.Prefix, r.Deleted, false); werr != nil && (r.Rev == 0 || r.Deleted) {
		if err := out.Close(); err != nil {
			return err
		}
		return werr
	}
	if err := out.Close(); err != nil {
		var se *inspect.SortError
		if errors.As(err, &se) {
			return usageError("--sort-by takes a JSONPath of a field the objects have, such as .metadata.creationTimestamp", "%w", err)
		}
		return err
	}
	if n := len(sum.BadKeys); n > 0 {
		names, them := "name", "them"
		if n == 1 {
			names, them = "names", "it"
		}
		t.Warn(fmt.Sprintf("%s under a resource's path but %s no single object (the first: %s): the apiserver's LIST reads %s, but no GET, update or delete through the API reaches %s; `etcdpvc delete --etcd-key KEY` removes one",
			inspect.Count(n, "key is", "keys are"), names, sum.BadKeys[0], them, them))
	}
	if sum.Partial > 0 {
		t.Warn(fmt.Sprintf("%s not in this build's scheme: only apiVersion, kind and metadata were decoded (see `etcdpvc get -o raw`)",
			inspect.Count(sum.Partial, "object's kind is", "objects' kinds are")))
	}
	if sum.Recreated > 0 {
		t.Note(fmt.Sprintf("%s created again after the deletion (STATUS re-created@REVISION): another object holds the name now, with another uid; recover creates only, and refuses while it exists: `etcdpvc history` lists the incarnations, `get --rev N` (or --index N of the log) reads the deleted one",
			inspect.Count(sum.Recreated, "deleted object listed was", "deleted objects listed were")))
	}
	if sum.Listed == 0 {
		what := "objects"
		switch {
		case r.Deleted:
			what = "deleted objects"
		case r.Terminating:
			what = "terminating objects"
		}
		if sel != nil {
			// Not "other namespaces hold N": those are not known to match.
			what += " matching the selectors"
		}
		t.Note(inspect.EmptyListing(ctx, s.Reader, prefix, scope.Resource, scope.Namespace, what, r.Rev))
		return nil
	}
	if sum.Unread.Total() > 0 {
		return &hintedError{&incompleteError{msg: sum.Unread.Message()}, sum.Unread.Hint()}
	}
	if sum.NotHeld > 0 {
		return &hintedError{&incompleteError{msg: fmt.Sprintf("%s without its last state (its uid, its metadata): the log does not establish the outcome of its writes before the deletion",
			inspect.Count(sum.NotHeld, "re-created object is listed", "re-created objects are listed"))}, s.UndeterminedHint() + "; `etcdpvc --wal DIR history` lists a key's writes"}
	}
	return nil
}

// listSelection parses -l and --field-selector for scope: a field
// selector needs a RESOURCE (the fields each resource is selected by
// differ), and names only fields the apiserver selects it by, those of a
// custom resource read from its CustomResourceDefinition at rev.
func (s *Session) listSelection(ctx context.Context, scope inspect.Scope, labelSel, fieldSel string, rev int64) (*inspect.Selection, error) {
	if labelSel == "" && fieldSel == "" {
		return nil, nil
	}
	sel := &inspect.Selection{}
	if labelSel != "" {
		l, err := inspect.ParseLabelSelector(labelSel)
		if err != nil {
			return nil, usageError("kubectl's syntax: key=value, key!=value, 'key in (a,b)', key, !key; comma-separated", "-l %q: %w", labelSel, err)
		}
		sel.Labels = l
	}
	if fieldSel != "" {
		if scope.Resource == nil {
			return nil, usageError("name the RESOURCE: `etcdpvc ls pods --field-selector spec.nodeName=NODE`", "--field-selector %q needs a RESOURCE: each resource is selected by fields of its own", fieldSel)
		}
		var custom []string
		if r := scope.Resource; !r.BuiltIn {
			key := s.Options.Prefix + "/apiextensions.k8s.io/customresourcedefinitions/" + r.Plural + "." + r.Group
			cur, err := s.Planner.Load(ctx, s.Reader, key, rev)
			var nf *kubevalue.NotFoundError
			switch {
			case errors.As(err, &nf):
				// No definition: the name and namespace only.
			case err != nil:
				return nil, fmt.Errorf("--field-selector: read the CustomResourceDefinition %s.%s for its selectable fields: %w", r.Plural, r.Group, err)
			default:
				custom = inspect.CRDSelectableFields(cur.Obj.Content)
			}
		}
		f, err := inspect.ParseFieldSelector(*scope.Resource, fieldSel, custom)
		if err != nil {
			var uf *inspect.UnsupportedFieldError
			if errors.As(err, &uf) {
				return nil, usageError(uf.Hint(), "--field-selector %q: %w", fieldSel, err)
			}
			return nil, usageError("FIELD=VALUE, FIELD==VALUE or FIELD!=VALUE, comma-separated", "--field-selector %q: %w", fieldSel, err)
		}
		sel.Fields = f
	}
	return sel, nil
}

// StatsRequest is what `etcdpvc stats` counts and how it writes it.
type StatsRequest struct {
	// JSON writes the report as JSON (docs/stats-schema.md), else tables.
	JSON bool
	// Top bounds the lists: largest objects, hottest keys, leases.
	Top      int
	PageSize int64
	// By groups the counts (--by).
	By inspect.GroupBy
	// Since is the first revision the hottest keys count (--since; 0:
	// every revision a db file holds, none live).
	Since int64
}

// Stats writes the stats report r asks for to w (inspect.BoltStats of a
// db file, else inspect.LiveStats; a log's coverage with --wal), as JSON
// or as tables, telling progress (when set) of the read. A report that
// covers only part of the store is written, then incomplete
// (ErrIncomplete). A live read that etcd's compaction made span revisions
// is told to warn (when set) after the report, which says so too. A
// --since the source cannot count from (compacted, ahead of it) is an
// *OptionError naming the revisions it holds.
func (s *Session) Stats(ctx context.Context, w io.Writer, r StatsRequest, progress Progress, warn func(msg string)) error {
	rep, err := s.statsReport(ctx, r, 0, progress)
	if rep == nil {
		return err
	}
	if werr := rep.Write(w, r.JSON); werr != nil {
		return werr
	}
	return s.statsOutcome(rep, err, "stats", warn)
}

// statsReport counts what r asks for (inspect.BoltStats of a db file,
// else inspect.LiveStats; a log's coverage with --wal), with up to details
// of each detail listed (inspect.StatsOptions.Details), telling progress
// (when set). A nil report comes with the error that stopped it: a
// --since the source cannot count from is an *OptionError.
func (s *Session) statsReport(ctx context.Context, r StatsRequest, details int, progress Progress) (*inspect.StatsReport, error) {
	prefix := s.Options.Prefix + "/"
	var update inspect.Progress
	if progress != nil {
		update = progress.Update
	}
	var write inspect.WriteProviderFunc
	var readers func(schema.GroupResource) []string
	if s.Enc != nil {
		write = func(gr schema.GroupResource) string { return s.Enc.Providers(gr)[0] }
		readers = s.Enc.Providers
	}
	codec := s.Planner.Codec
	o := inspect.StatsOptions{Prefix: prefix, Top: r.Top, PageSize: r.PageSize, Progress: update, Write: write, Readers: readers, By: r.By, Since: r.Since, Details: details,
		Open: func(ctx context.Context, kv store.KeyValue) (map[string]any, error) {
			cur, err := codec.Open(ctx, kv)
			if err != nil {
				return nil, err
			}
			return cur.Obj.Content, nil
		}}
	if s.Enc != nil {
		o.Dec = s.Enc
	}
	var rep *inspect.StatsReport
	var err error
	if b, ok := s.Reader.(*store.Bolt); ok {
		if progress != nil {
			progress.Start(b.Meta().Revision)
		}
		rep, err = inspect.BoltStats(ctx, b, o)
	} else {
		if progress != nil {
			progress.Start(0)
		}
		rep, err = inspect.LiveStats(ctx, s.Reader, o)
	}
	if progress != nil {
		progress.Done()
	}
	if rep == nil {
		var since *inspect.SinceError
		switch {
		case errors.As(err, &since):
			return nil, &hintedError{&session.OptionError{Err: err}, since.Hint()}
		case errors.Is(err, store.ErrSpansStores):
			return nil, &session.OptionError{Err: err}
		}
		return nil, err
	}
	rep.Source = s.Description
	if s.WAL != nil {
		inspect.FromWAL(rep, s.WAL.Coverage())
	}
	if k, kine := s.Reader.(*store.KineDB); kine {
		inspect.FromKine(rep, k.Database())
	}
	return rep, err
}

// statsOutcome is the outcome of a report written (err: what stopped its
// read part way), for command what: a read across a compaction is told to
// warn (when set); a report that covers only part of the store, or with
// values not read, is incomplete (ErrIncomplete).
func (s *Session) statsOutcome(rep *inspect.StatsReport, err error, what string, warn func(msg string)) error {
	if rep.ReadFrom != 0 && warn != nil {
		warn(fmt.Sprintf("the read spans revisions %d–%d: etcd was compacted while it ran, so it continued from the last key read at the newer revision", rep.ReadFrom, rep.ReadTo))
	}
	if rep.Incomplete != "" {
		// The counts above cover what was read: before the damaged page,
		// or up to the last revision the log establishes.
		hint := damagedDBHint
		if s.WAL != nil {
			hint = s.UndeterminedHint()
		}
		return &hintedError{&incompleteError{msg: what + " incomplete: " + rep.Incomplete}, hint}
	}
	if err == nil && rep.Unread.Total() > 0 {
		// The counts hold; the stored versions of these are unknown.
		where := "UNREADABLE says why"
		if what != "stats" {
			where = "the " + what + " lists them and why"
		}
		return &hintedError{&incompleteError{msg: rep.Unread.Message() + " (their stored versions are unknown; " + where + ")"}, rep.Unread.Hint()}
	}
	return err
}

// History writes the history of ref to w as output (table, json or yaml):
// from the log with --wal (inspect.WALHistory), else from the store
// (inspect.History), its times shown at now. Revisions that could not be read are listed, then
// incomplete (ErrIncomplete).
func (s *Session) History(ctx context.Context, w io.Writer, ref resource.Ref, output string, showSecrets bool, now time.Time) error {
	planner := s.Planner
	planner.ShowSecrets = showSecrets // the start of an undecodable Secret's value, in its error
	o := inspect.HistoryOptions{Codec: planner.Codec, ShowSecrets: showSecrets}
	var rep *inspect.HistoryReport
	var err error
	if s.WAL != nil {
		rep, err = inspect.WALHistory(ctx, s.WAL, ref, o)
	} else {
		rep, err = inspect.History(ctx, s.Reader, ref, o)
	}
	if err == nil {
		err = s.historyTimes(ctx, rep, now)
	}
	if err != nil {
		var none *inspect.NoHistoryError
		if errors.As(err, &none) && none.Hint() != "" {
			return &hintedError{err, none.Hint()}
		}
		if errors.Is(err, store.ErrCompacted) && s.WAL == nil {
			return &hintedError{err, historyCompactedHint}
		}
		return err
	}
	if _, isDB := s.Reader.(*store.Bolt); s.WAL == nil && !isDB && rep.CompactedStart != "" && rep.CompactRevision > 0 {
		rep.CompactedStart += fmt.Sprintf("; older revisions may be in a snapshot or member db taken before revision %d (--db FILE) or in a member's write-ahead log (--wal DIR)", rep.CompactRevision)
	}
	if err := rep.Write(w, output); err != nil {
		return err
	}
	if rep.Undecodable > 0 {
		return fmt.Errorf("history of %s: %d of %d revisions could not be read (listed above as undecodable): %w", inspect.ObjectName(ref), rep.Undecodable, len(rep.Rows), ErrIncomplete)
	}
	if n, first := rep.UnknownOutcomes(); n > 0 {
		// The history holds writes whose outcome is not established:
		// what the key held after them is not either.
		return &hintedError{fmt.Errorf("history of %s: %d of %d writes have an outcome the log does not establish (the first at raft index %d, listed above as unknown): %w", inspect.ObjectName(ref), n, len(rep.Rows), first, wal.ErrUndetermined), s.UndeterminedHint()}
	}
	return nil
}
