package flows

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/store"
)

// MembersRequest is what `diff --members` compares: the members of one
// cluster, as db or snapshot files (Files) or, without Files, the live
// members of the session's endpoints, each read through a client of its
// own endpoint; at one revision (Rev; 0: for files the lowest current
// revision among them, live the current revision of the first endpoint
// that answers); the objects of a scope (RESOURCE, -n, -A); written as
// Output (table or json).
type MembersRequest struct {
	Files               []string
	Rev                 int64
	Resource, Namespace string
	AllNamespaces       bool
	Output              string
	PageSize            int64
}

// ErrNotMembers is a request of members that names fewer than two.
var ErrNotMembers = errors.New("diff --members compares at least two members")

// Members compares the members r names (inspect.Members) and writes the
// records and the summary to w. s is the session of one of the files
// (its --db: its scope, prefix and file options open the others), or of
// the live endpoints. A member diverged, or members that differ, are
// inspect.ErrDiffer; a member that could not be read (or not to the end),
// ErrIncomplete; nothing compared (no key of the scope on any member,
// fewer than two members read), inspect.ErrNothingCompared. Only members
// that agree on every key compared return nil.
func (s *Session) Members(ctx context.Context, w io.Writer, r MembersRequest) error {
	srcs, closeAll, err := s.memberSources(ctx, r.Files)
	defer closeAll()
	if err != nil {
		return err
	}
	if len(srcs) < 2 {
		return usageError("give two or more db files (`diff --members A.db B.db C.db`), or two or more endpoints (`--endpoints E1,E2,E3 diff --members`)",
			"diff --members: %s given: %w", inspect.Count(len(srcs), "member", "members"), ErrNotMembers)
	}
	rev, err := membersRevision(ctx, srcs, r.Rev)
	if err != nil {
		return err
	}
	scope, err := s.Scope(r.Resource, r.Namespace, r.AllNamespaces)
	if err != nil {
		return err
	}
	prefix := s.Options.Prefix
	out := bufio.NewWriterSize(w, 64<<10)
	p := inspect.MembersWriter{W: out, JSON: r.Output == "json"}
	sum, err := inspect.Members(ctx, srcs, inspect.MembersOptions{
		StorePrefix: prefix, ListPrefix: scope.Prefix, Rev: rev, PageSize: r.PageSize,
		Match: func(key string) bool {
			_, _, _, _, ok := scope.Match(prefix, key)
			return ok
		},
	}, p.Record)
	if err != nil {
		if ferr := out.Flush(); ferr != nil {
			return ferr
		}
		return fmt.Errorf("diff --members: %w", err)
	}
	if err := p.Summary(sum); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	switch sum.Outcome {
	case inspect.MembersAgree:
		return nil
	case inspect.MembersDiverged, inspect.MembersDiffer:
		return fmt.Errorf("diff --members: %s: %w", inspect.MembersVerdict(sum), inspect.ErrDiffer)
	case inspect.MembersIncomplete:
		return &hintedError{&incompleteError{msg: "diff --members: " + inspect.MembersVerdict(sum)}, unreadHint(sum)}
	default:
		return &hintedError{fmt.Errorf("diff --members: no key of the scope on any member: %w", inspect.ErrNothingCompared),
			"-A compares every namespace; without RESOURCE every key under --prefix is compared (check --prefix: `etcdpvc stats` shows the keys' prefixes)"}
	}
}

// unreadHint says what to do about the members that could not be read.
func unreadHint(sum *inspect.MembersSummary) string {
	var hints []string
	seen := map[string]bool{}
	add := func(h string) {
		if !seen[h] {
			seen[h] = true
			hints = append(hints, h)
		}
	}
	for _, m := range sum.Members {
		switch {
		case m.Err == nil:
		case errors.Is(m.Err, store.ErrLocked):
			add("a running etcd locks its db: stop the member, or copy it with `etcdctl --endpoints ITS_ENDPOINT snapshot save FILE`")
		case errors.Is(m.Err, store.ErrCompacted):
			add(fmt.Sprintf("a member compacted past revision %d cannot be read at it: give --rev N at or above every member's compaction revision", sum.Revision))
		case errors.Is(m.Err, store.ErrUnavailable):
			add("check that each file is a db or snapshot file of the cluster, and that each endpoint answers (`etcdpvc doctor`); a cluster without a leader serves no linearizable read: --consistency s reads each member's own store")
		default:
			if h := Hint(m.Err); h != "" {
				add(h)
			}
		}
	}
	return strings.Join(hints, "; ")
}

// memberSources opens the members: the session's own store for the first
// file and the others with its file options, or each live endpoint
// alone. A member that cannot be opened is a source with its error, so
// that the report names it.
func (s *Session) memberSources(ctx context.Context, files []string) ([]inspect.MemberSource, func(), error) {
	var opened []store.Reader
	closeAll := func() {
		for _, r := range opened {
			r.Close()
		}
	}
	var srcs []inspect.MemberSource
	names := files
	if len(names) == 0 {
		names = s.Options.Endpoints
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return nil, closeAll, usageError("name each member once", "diff --members: %s is given twice", n)
		}
		seen[n] = true
	}
	// open opens a member other than the session's own db file.
	var open func(name string) (store.Reader, error)
	if len(files) > 0 {
		if !s.IsFile() || s.Bolt == nil {
			return nil, closeAll, usageError("give the members as db files, or their endpoints with --endpoints and no file", "diff --members: the first member is not a db file")
		}
		open = func(f string) (store.Reader, error) { return store.OpenBolt(f, s.Options.BoltOptions(ctx)) }
	} else {
		if s.IsFile() {
			return nil, closeAll, usageError("give the members' db files after --members, or their endpoints with --endpoints (without --db)", "diff --members: --db is one file, not a member each")
		}
		open = func(ep string) (store.Reader, error) {
			cfg := s.Options.EtcdConfig()
			cfg.Endpoints = []string{ep}
			return store.OpenEtcd(ctx, cfg)
		}
	}
	for _, n := range names {
		if len(files) > 0 && n == s.Options.DB {
			srcs = append(srcs, inspect.MemberSource{Name: n, Reader: s.Bolt})
			continue
		}
		r, err := open(n)
		if err != nil {
			srcs = append(srcs, inspect.MemberSource{Name: n, Err: err})
			continue
		}
		opened = append(opened, r)
		srcs = append(srcs, inspect.MemberSource{Name: n, Reader: r})
	}
	return srcs, closeAll, nil
}

// membersRevision is the revision the members are compared at: rev when
// given; else for db files the lowest current revision among them (each
// holds it, unless compacted past it), for live members the current
// revision of the first that answers.
func membersRevision(ctx context.Context, srcs []inspect.MemberSource, rev int64) (int64, error) {
	if rev > 0 {
		return rev, nil
	}
	var errs []string
	for _, m := range srcs {
		if m.Reader == nil {
			continue
		}
		info, err := m.Reader.Info(ctx)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", m.Name, err))
			continue
		}
		if _, live := m.Reader.(*store.Etcd); live {
			return info.Revision, nil
		}
		if rev == 0 || info.Revision < rev {
			rev = info.Revision
		}
	}
	if rev == 0 && len(errs) > 0 {
		return 0, &hintedError{&incompleteError{msg: "diff --members: no member could be read to find a revision to compare at: " + strings.Join(errs, "; ")},
			"give the revision to compare at with --rev N"}
	}
	// 0: no member opened; Members reports each one's error.
	return rev, nil
}
