package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/connect"
	"github.com/etcdpvc/etcdpvc/store"
)

// undeterminedHint is the hint for store.ErrUndetermined.
const undeterminedHint = connect.UndeterminedHint

// indexFlag is --index of get and recover.
func indexFlag() cli.Flag {
	return &cli.Uint64Flag{Name: "index", Usage: "with --wal: read the object as of this raft index of the log"}
}

// getAtIndex reads key as of raft index index of the session's --wal,
// saying on stderr which entry wrote it.
func getAtIndex(e *env, s *session, key string, index uint64) (*store.KeyValue, error) {
	if s.WAL == nil {
		return nil, usagef("--index N reads raft index N of a write-ahead log: give --wal")
	}
	kv, ent, err := s.WAL.GetAtIndex(e.ctx, key, index)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%s at raft index %d: %w", objectName(s.g.Prefix, key), index, store.ErrNotFound)
		}
		return nil, err
	}
	switch {
	case ent.Index == 0:
		fmt.Fprintf(e.stderr, "etcdpvc: %s at raft index %d: revision %d of the db, unchanged by the log up to there\n", key, index, kv.ModRevision)
	default:
		fmt.Fprintf(e.stderr, "etcdpvc: %s at raft index %d: written by entry %d (term %d), revision %d\n", key, index, ent.Index, ent.Term, kv.ModRevision)
	}
	return kv, nil
}

// walUnsettled returns an error wrapping connect.ErrIncomplete when the session
// reads a log whose revisions stop before its end: a listing of the
// latest state lacks the writes the log cannot place.
func walUnsettled(s *session) error {
	if s.WAL == nil {
		return nil
	}
	cov := s.WAL.Coverage()
	if cov.RevisionsStop == "" {
		return nil
	}
	at := "no revision"
	if cov.LastRevision != 0 {
		at = fmt.Sprintf("revision %d only", cov.LastRevision)
	}
	return withHint(&incompleteError{msg: fmt.Sprintf("the log establishes the keyspace up to %s: its later writes are not in this output (%s)", at, cov.RevisionsStop)},
		undeterminedHint)
}
