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
// value found whose outcome or revision it cannot establish: that value
// may not be the last. Its errors carry a hint (Hint).
func (s *Session) RecoverSource(ctx context.Context, key string, rev int64) (*surgery.RecoverFrom, error) {
	from, err := surgery.FindRecoverSource(ctx, s.Reader, key, rev)
	if s.WAL != nil && rev == 0 && (err == nil || errors.Is(err, store.ErrNotFound)) {
		var after int64
		if err == nil {
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
	case err == nil:
		return from, nil
	case errors.Is(err, store.ErrNotFound) && rev != 0:
		return nil, &hintedError{err, "`etcdpvc history` lists the revisions held"}
	case errors.Is(err, store.ErrNotFound):
		return nil, &hintedError{err, "recover from an older snapshot: --db SNAPSHOT (with --endpoints to write live), or name a revision with --rev"}
	}
	return nil, err
}
