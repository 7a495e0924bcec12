package flows

import (
	"errors"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
)

// exitRules map errors onto exit statuses: the first rule one of whose
// matches holds gives the status; none, Error.
var exitRules = []struct {
	code    int
	matches []func(error) bool
}{
	{exitcode.Usage, []func(error) bool{errorAs[*session.OptionError]}},
	{exitcode.Refused, []func(error) bool{errorAs[*RefusedError]}},
	{exitcode.Uncertain, errorIs(surgery.ErrUncertain)},
	{exitcode.Partial, errorIs(surgery.ErrPartial)},
	{exitcode.NotAccepted, errorIs(surgery.ErrNotAccepted)},
	{exitcode.Incomplete, errorIs(ErrIncomplete, wal.ErrUndetermined, surgery.ErrReadabilityUnknown, surgery.ErrNotRecorded)},
	{exitcode.Incomplete, []func(error) bool{errorAs[*store.CompactedError]}},
	{exitcode.Differ, errorIs(inspect.ErrDiffer)},
	{exitcode.NothingCompared, errorIs(inspect.ErrNothingCompared)},
	{exitcode.Conflict, errorIs(store.ErrConflict)},
	{exitcode.NotFound, errorIs(store.ErrNotFound, surgery.ErrOperationNotFound, wal.ErrNoPointInTime)},
	{exitcode.Connection, errorIs(store.ErrUnavailable)},
	{exitcode.Refused, errorIs(codec.ErrLossy, surgery.ErrImmutableField, surgery.ErrExists,
		surgery.ErrChangedSinceBackup, surgery.ErrBadBackup, surgery.ErrTooLarge, surgery.ErrTooManyOps,
		surgery.ErrInvalid, surgery.ErrNotApplicable,
		surgery.ErrKeyMismatch, surgery.ErrMembersDiffer, surgery.ErrOtherCluster, surgery.ErrPlaintextIntoEncrypted,
		surgery.ErrUnsafeBackupDir, surgery.ErrNoBackupRoom, surgery.ErrReadable, surgery.ErrSeveralWrites, surgery.ErrOperationIncomplete, surgery.ErrBadOperationID, surgery.ErrNotObjectKey, verify.ErrRejected, verify.ErrCannotVerify, wal.ErrCheckFailed, wal.ErrBeforeBase,
		store.ErrOutputExists, store.ErrMemberDir)},
	{exitcode.Decode, errorIs(encryption.ErrKeyNotFound, encryption.ErrNoConfig, encryption.ErrWrongKey,
		codec.ErrEncrypted, codec.ErrMalformed, codec.ErrNotObject, codec.ErrUnsupported, codec.ErrEmpty)},
}

// errorAs matches an error that is, or wraps, a T.
func errorAs[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// errorIs returns the matches of errors that are, or wrap, one of targets.
func errorIs(targets ...error) []func(error) bool {
	out := make([]func(error) bool, len(targets))
	for i, t := range targets {
		out[i] = func(err error) bool { return errors.Is(err, t) }
	}
	return out
}

// ExitStatus returns the exit status of err (exitcode.OK for nil): the
// first rule that matches, else exitcode.Error. A usage error of the
// command line itself is the CLI's to map (exitcode.Usage).
func ExitStatus(err error) int {
	if err == nil {
		return exitcode.OK
	}
	for _, r := range exitRules {
		for _, m := range r.matches {
			if m(err) {
				return r.code
			}
		}
	}
	return exitcode.Error
}
