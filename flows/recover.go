package flows

import (
	"context"
	"errors"
	"fmt"

	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// RecoverSource finds the revision of key to recover from
// (surgery.FindRecoverSource): rev when given, else the last value before
// the key's deletion. Read from a write-ahead log without rev, it refuses
// (wal.ErrUndetermined) when the log holds writes of the key after the
// value found whose outcome or revision it cannot establish (that value
// may not be the last), or, when it establishes no deletion, any such
// write (one may have been a deletion of another object). A key created
// again after its deletion is refused while another object holds it
// (Session.heldFrom). Its errors carry a hint (Hint).
func (s *Session) RecoverSource(ctx context.Context, key string, rev int64) (*surgery.RecoverFrom, error) {
	from, err := surgery.FindRecoverSource(ctx, s.Reader, key, rev)
	if s.WAL != nil && rev == 0 && (err == nil || errors.Is(err, store.ErrNotFound)) {
		var after int64
		if err == nil && from.DeletedAt != 0 {
			// Without a deletion established, a write before the value
			// found may have deleted another object: that value is then
			// the one created after it, not the one deleted.
			after = from.KV.ModRevision
		}
		if un := s.WAL.Unsettled(key, after); len(un) > 0 {
			hint := s.UndeterminedHint() + "; `etcdpvc --wal DIR history` lists the writes"
			if err == nil {
				hint += fmt.Sprintf(", and --index N (below %d) recovers the object as the log establishes it then", un[0].Index)
			}
			return nil, &hintedError{fmt.Errorf("recover %s: the log holds %d write(s) of it from raft index %d on whose outcome or revision it cannot establish (%s): %w",
				session.ObjectName(s.Options.Prefix, key), len(un), un[0].Index, un[0].Reason, wal.ErrUndetermined), hint}
		}
	}
	switch {
	case err == nil && from.Holder != nil:
		return s.heldFrom(ctx, key, from)
	case err == nil && rev == 0 && from.DeletedAt == 0 && !s.ReadOnly():
		// The newest value is the object there, in the store written.
		return nil, s.notDeleted(ctx, key, from.KV)
	case err == nil:
		return from, nil
	case errors.Is(err, store.ErrNotFound) && rev != 0:
		return nil, &hintedError{err, "`etcdpvc history` lists the revisions held"}
	case s.WAL != nil && errors.As(err, new(*surgery.DeletionOnlyError)):
		return nil, s.deletionOnly(ctx, key, err)
	case errors.Is(err, store.ErrNotFound):
		return nil, &hintedError{err, "recover from an older snapshot: --db SNAPSHOT (with --endpoints to write live), or name a revision with --rev"}
	}
	return nil, err
}

// deletionOnly is the error of a recover from the session's log of key,
// whose deletion the log holds and none of its values (err, a
// *surgery.DeletionOnlyError): they are before the log, and the db it
// was read over compacted them (a log alone holds every revision it
// derives). It names the db's compaction revision, not the history's,
// which is the revision before the log.
func (s *Session) deletionOnly(ctx context.Context, key string, err error) error {
	cov := s.WAL.Coverage()
	if cov.DB == "" {
		return err
	}
	var do *surgery.DeletionOnlyError
	errors.As(err, &do)
	compacted := "compacted them"
	if info, ierr := s.Reader.Info(ctx); ierr == nil && info.CompactRevision > 0 {
		compacted = fmt.Sprintf("compacted them (compaction revision %d)", info.CompactRevision)
	}
	return &hintedError{fmt.Errorf("recover %s: only its deletion at %s is held: its values are before the log (raft index %d on), and the db %s %s: %w",
		session.ObjectName(s.Options.Prefix, key), atRevision(do.DeletedAt), cov.FirstIndex, cov.DB, compacted, store.ErrNotFound), session.OlderSourcesHint}
}

// heldFrom is the RecoverSource of key when an object was created under
// it after its last deletion (from.Holder): that object's newest value
// when it has the deleted one's uid (it is the one deleted, recovered
// before), else a refusal naming it, since recover never replaces an
// object: the hint names the deleted one's revision.
func (s *Session) heldFrom(ctx context.Context, key string, from *surgery.RecoverFrom) (*surgery.RecoverFrom, error) {
	uid := func(kv store.KeyValue) string {
		if cur, err := s.Planner.Open(ctx, kv); err == nil && cur.Obj.Meta.UID != "" {
			return string(cur.Obj.Meta.UID)
		}
		return ""
	}
	have, want := uid(*from.Holder), ""
	if from.KV.Value != nil {
		want = uid(from.KV)
	}
	if have != "" && have == want {
		return &surgery.RecoverFrom{KV: *from.Holder}, nil
	}
	what := session.ObjectName(s.Options.Prefix, key)
	msg := fmt.Sprintf("recover %s: the key holds another object, uid %s (created at %s), not the one deleted at %s, uid %s (last written at %s)",
		what, have, atRevision(from.Holder.CreateRevision), atRevision(from.DeletedAt), want, atRevision(from.KV.ModRevision))
	name := "recover the deleted one from an older snapshot (--db SNAPSHOT)"
	if have == "" || want == "" {
		held := "its uid is not read"
		if from.KV.Value == nil {
			held = "its values are not held here"
		}
		if have == "" {
			have = "not read"
		}
		msg = fmt.Sprintf("recover %s: the key holds an object created again after the deletion at %s (uid %s, created at %s); whether it is the one deleted is not known: %s",
			what, atRevision(from.DeletedAt), have, atRevision(from.Holder.CreateRevision), held)
	}
	if from.KV.Value != nil {
		name = "name the deleted one with --index N (a raft index of its writes: `etcdpvc history` lists them)"
		if from.KV.ModRevision > 0 {
			name = fmt.Sprintf("name the deleted one with --rev %d", from.KV.ModRevision)
		}
		name += " to print it (-o yaml) or to write it where its name is free"
	}
	return nil, &RefusedError{Msg: msg + "; nothing written",
		Advice: "recover never replaces an object, and whether the one there gives its name back is for its owner to decide: " + name}
}

// notDeleted is the refusal of a recover of key from the store it
// writes into, whose history shows no deletion of the object there (kv,
// its newest revision): nothing deleted to recover. One deleted before the
// history held (a compaction removes deletions) is in an older snapshot.
func (s *Session) notDeleted(ctx context.Context, key string, kv store.KeyValue) error {
	uid := "not read"
	if cur, err := s.Planner.Open(ctx, kv); err == nil && cur.Obj.Meta.UID != "" {
		uid = string(cur.Obj.Meta.UID)
	}
	return &RefusedError{Msg: fmt.Sprintf("recover %s: it exists (revision %d, uid %s, created at revision %d), and the history held shows no deletion of it: nothing deleted to recover; nothing written",
		session.ObjectName(s.Options.Prefix, key), kv.ModRevision, uid, kv.CreateRevision),
		Advice: "recover recreates a deleted object and never replaces one: an object deleted under this name before the history held (a compaction removes deletions) is recovered from an older snapshot (--db SNAPSHOT, with --endpoints to write live); `etcdpvc history` lists what is held"}
}

// atRevision names revision r, which a write-ahead log leaves 0 (or -1)
// where it does not establish it.
func atRevision(r int64) string {
	if r <= 0 {
		return "a revision the log does not establish"
	}
	return fmt.Sprintf("revision %d", r)
}
