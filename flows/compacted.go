package flows

import (
	"errors"
	"fmt"

	"github.com/etcdpvc/etcdpvc/store"
)

// compactedHint is what to do about a read of one revision that etcd
// compacted away while it ran (a *store.CompactedError).
const compactedHint = "etcd no longer holds that revision (kube-apiserver compacts it every 5 minutes): read it from a snapshot or a member's db taken before the compaction (--db FILE), or from a member's write-ahead log (--wal DIR); a read of the latest revision (without --rev) continues across a compaction"

// historyCompactedHint is what to do about a history that etcd's
// compaction kept cutting while it was read.
const historyCompactedHint = "etcd compacted the key's history while it was being read, each time it was read: run it again, or read the history from a snapshot or member db (--db FILE) or from a member's write-ahead log (--wal DIR), which a compaction does not cut"

// compactedIncomplete turns a read of one revision that etcd compacted
// part way (a *store.CompactedError) into an incomplete error (exit 10)
// saying how much had been written (done: "12 objects") before it
// stopped, and what to do. Any other error is returned as it is.
func compactedIncomplete(err error, what, done string) error {
	var ce *store.CompactedError
	if !errors.As(err, &ce) {
		return err
	}
	return &hintedError{&compactedError{
		incompleteError: incompleteError{msg: fmt.Sprintf("%s stopped after %s (the rest of revision %d is gone): %v", what, done, ce.Revision, err)},
		cause:           err,
	}, compactedHint}
}

// compactedError is an incomplete read (ErrIncomplete) whose cause is a
// *store.CompactedError.
type compactedError struct {
	incompleteError
	cause error
}

func (e *compactedError) Unwrap() error { return e.cause }
