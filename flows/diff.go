package flows

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
)

// DiffRequest is what diff compares: two states A and B (a db or snapshot
// file, live, or rev:N), the objects of a scope (RESOURCE, -n, -A), written
// as Output (table, diff or json).
type DiffRequest struct {
	A, B string
	// DB is --db, the source of rev:N on both sides; WAL is --wal, which
	// diff does not read.
	DB                  string
	WAL                 []string
	Resource, Namespace string
	AllNamespaces       bool
	Output              string
	ShowSecrets         bool
	IgnoreMetadataOnly  bool
	PageSize            int64
	// Warn, when set, is told after the summary that a live side spans
	// revisions because etcd was compacted while it was read.
	Warn func(msg string)
}

// Sources are the states r compares (inspect.DiffSources); arguments that
// name no state, and --wal, are an *OptionError.
func (r DiffRequest) Sources() (a, b inspect.DiffSource, err error) {
	a, b, err = inspect.DiffSources(r.DB, r.A, r.B)
	if err != nil {
		return a, b, &session.OptionError{Err: err}
	}
	if len(r.WAL) > 0 {
		// Each side opens its own source: --wal would be replayed over
		// every side's db, and a log replays only the db it follows.
		return a, b, usageError("read the log with `etcdpvc --wal DIR [--db DB] dump --all-revisions` (every revision it establishes) or `history KEY`",
			"diff does not read --wal: each side is a db or snapshot file, live, or rev:N of --db")
	}
	return a, b, nil
}

// Diff compares the states r names (inspect.Diff) and writes the records
// and the summary to w. open opens one side's store: file a db or
// snapshot file, "" the live etcd; a side that reads the other's source
// shares its session. States that differ are inspect.ErrDiffer; values a
// side could not read, ErrIncomplete; a namespace empty on both sides
// while other namespaces hold keys of the scope, inspect.ErrNothingCompared
// (no verdict). Both sides' first pages are read before anything is
// written, so that a side that cannot be read (a compacted rev:N) prints
// no line.
func Diff(ctx context.Context, w io.Writer, open func(file string) (*Session, error), r DiffRequest) error {
	sa, sb, err := r.Sources()
	if err != nil {
		return err
	}
	a, err := open(sa.File)
	if err != nil {
		return fmt.Errorf("diff: A (%s): %w", sa, err)
	}
	defer a.Close()
	b := a
	if sb.File != sa.File {
		if b, err = open(sb.File); err != nil {
			return fmt.Errorf("diff: B (%s): %w", sb, err)
		}
		defer b.Close()
	}
	scope, err := a.Scope(r.Resource, r.Namespace, r.AllNamespaces)
	if err != nil {
		return err
	}
	prefix := a.Options.Prefix
	out := bufio.NewWriterSize(w, 64<<10)
	p := inspect.DiffWriter{W: out, JSON: r.Output == "json"}
	sum, err := inspect.Diff(ctx,
		inspect.DiffSide{Reader: a.Reader, Rev: sa.Rev, Codec: a.Planner.Codec},
		inspect.DiffSide{Reader: b.Reader, Rev: sb.Rev, Codec: b.Planner.Codec},
		inspect.DiffOptions{
			StorePrefix: prefix, ListPrefix: scope.Prefix,
			Match: func(key string) bool {
				_, _, _, _, ok := scope.Match(prefix, key)
				return ok
			},
			ShowSecrets: r.ShowSecrets, IgnoreMetadataOnly: r.IgnoreMetadataOnly,
			WithDiff: r.Output == "diff", PageSize: r.PageSize,
		}, p.Record)
	if err != nil {
		if ferr := out.Flush(); ferr != nil {
			return ferr
		}
		err = fmt.Errorf("diff %s with %s: %w", sa, sb, err)
		if errors.As(err, new(*store.CompactedError)) {
			// rev:N compacted part way: what was compared stands, the
			// rest cannot be.
			return compactedIncomplete(err, "diff", inspect.Count(sum.Compared, "key", "keys"))
		}
		if errors.Is(err, store.ErrCompacted) {
			return &hintedError{err, "etcd holds only the revisions after its last compaction (`etcdpvc stats` shows it): compare a later rev:N, or a snapshot taken before (`etcdpvc diff SNAPSHOT live`)"}
		}
		return err
	}
	if scope.Namespace != "" {
		sum.Namespace = scope.Namespace
		if scope.Resource != nil {
			sum.Resource = scope.Resource.String()
		}
	}
	if sum.Compared == 0 && scope.Namespace != "" {
		// An empty namespace: is it what was meant, or did the objects
		// live in another one (-n forgotten, or "default" assumed)?
		if sum.OtherNamespacesA, err = inspect.OtherNamespaces(ctx, a.Reader, prefix, scope.Resource, scope.Namespace, sum.RevA); err != nil {
			return fmt.Errorf("diff %s with %s: count the other namespaces of A: %w", sa, sb, err)
		}
		if sum.OtherNamespacesB, err = inspect.OtherNamespaces(ctx, b.Reader, prefix, scope.Resource, scope.Namespace, sum.RevB); err != nil {
			return fmt.Errorf("diff %s with %s: count the other namespaces of B: %w", sa, sb, err)
		}
		sum.NothingCompared = sum.OtherNamespacesA+sum.OtherNamespacesB > 0
	}
	if err := p.Summary(sa, sb, sum); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	for _, side := range []struct {
		name     string
		from, to int64
	}{{"A", sum.RevA, sum.ReadToA}, {"B", sum.RevB, sum.ReadToB}} {
		if side.to != 0 && r.Warn != nil {
			r.Warn(fmt.Sprintf("%s (live) spans revisions %d–%d: etcd was compacted while it was read, so it continued from the last key read at the newer revision", side.name, side.from, side.to))
		}
	}
	switch {
	case sum.NothingCompared:
		what, ls := "objects", "etcdpvc ls -A"
		if scope.Resource != nil {
			what = scope.Resource.String()
			ls = "etcdpvc ls " + what + " -A"
		}
		return &hintedError{fmt.Errorf("diff compared nothing: no %s in namespace %s on either side, while other namespaces hold %d in A and %d in B: %w",
			what, scope.Namespace, sum.OtherNamespacesA, sum.OtherNamespacesB, inspect.ErrNothingCompared),
			"-A compares every namespace; -n NAMESPACE names one (`" + ls + "` lists where they are)"}
	case sum.Unreadable > 0:
		return &hintedError{&incompleteError{msg: fmt.Sprintf("diff incomplete: %s could not be compared (listed, with why)",
			inspect.Count(sum.Unreadable, "object", "objects"))},
			"a value encrypted at rest needs the kube-apiserver's EncryptionConfiguration: --encryption-config FILE (or --kubeadm)"}
	case sum.Differ > 0:
		return fmt.Errorf("%s: %w", inspect.Count(sum.Differ, "object differs", "objects differ"), inspect.ErrDiffer)
	}
	return nil
}
