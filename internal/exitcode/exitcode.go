// Package exitcode holds etcdpvc's exit statuses and the table that maps
// an error onto them. They are listed in docs/cli.md and in the CLI's
// help (cmd/etcdpvc/exit.go prints the error and returns the status).
package exitcode

import (
	"errors"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/connect"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
)

// Exit statuses.
const (
	OK         = 0 // success, including a no-op edit
	Error      = 1 // any other failure
	Usage      = 2 // bad flags or arguments
	NotFound   = 3 // the object or key does not exist
	Conflict   = 4 // the object changed between read and write; nothing written
	Refused    = 5 // refused as unsafe, or needs --yes / confirmation; nothing written
	Decode     = 6 // the stored value cannot be decoded (malformed, encrypted without a key or with a key that does not decrypt it, unsupported)
	Connection = 7 // etcd or the db file cannot be reached (dial, TLS, timeout, lock)
	// Uncertain: a write was sent but its outcome is not known (the
	// answer was lost, or Ctrl-C came while it was under way); the key may
	// hold the old or the new value. The message names the backup.
	Uncertain = 8
	// Partial: a write of several keys stopped part way: some keys were
	// written (each listed with its backup), the rest were not.
	Partial = 9
	// Incomplete: a read could not read everything (values it could not
	// decrypt or decode, unreadable pages); what was read is printed and
	// what was skipped is listed.
	Incomplete = 10
	// Differ: diff compared two states and found them different (as
	// diff(1) exits 1); nothing went wrong.
	Differ = 11
	// NotAccepted: written, but the apiserver rejects it: it does not
	// serve the object at the new revision or refuses an update of it.
	// The message names each backup to restore.
	NotAccepted = 12
	// NothingCompared: diff was narrowed to one namespace (-n, or
	// "default") that holds nothing of the scope on either side, while
	// other namespaces do: no verdict; -A compares them.
	NothingCompared = 13
)

// rules map errors onto exit statuses: the first rule one of whose
// matches holds gives the status; none, Error.
var rules = []struct {
	code    int
	matches []func(error) bool
}{
	{Usage, []func(error) bool{as[*cliargs.UsageError], as[*connect.OptionError]}},
	{Refused, []func(error) bool{as[*connect.RefusedError]}},
	{Uncertain, is(surgery.ErrUncertain)},
	{Partial, is(surgery.ErrPartial)},
	{NotAccepted, is(surgery.ErrNotAccepted)},
	{Incomplete, is(connect.ErrIncomplete, store.ErrUndetermined)},
	{Incomplete, []func(error) bool{as[*store.CompactedError]}},
	{Differ, is(inspect.ErrDiffer)},
	{NothingCompared, is(inspect.ErrNothingCompared)},
	{Conflict, is(store.ErrConflict)},
	{NotFound, is(store.ErrNotFound)},
	{Connection, is(store.ErrUnavailable)},
	{Refused, is(codec.ErrLossy, surgery.ErrImmutableField, surgery.ErrExists,
		surgery.ErrChangedSinceBackup, surgery.ErrBadBackup, surgery.ErrTooLarge, surgery.ErrTooManyOps,
		surgery.ErrInvalid, surgery.ErrNotApplicable,
		surgery.ErrKeyMismatch, surgery.ErrOtherCluster, surgery.ErrPlaintextIntoEncrypted,
		surgery.ErrUnsafeBackupDir, verify.ErrRejected, verify.ErrCannotVerify, store.ErrCheckFailed)},
	{Decode, is(encryption.ErrKeyNotFound, encryption.ErrNoConfig, encryption.ErrWrongKey,
		codec.ErrEncrypted, codec.ErrMalformed, codec.ErrNotObject, codec.ErrUnsupported, codec.ErrEmpty)},
}

// as matches an error that is, or wraps, a T.
func as[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// is returns the matches of errors that are, or wrap, one of targets.
func is(targets ...error) []func(error) bool {
	out := make([]func(error) bool, len(targets))
	for i, t := range targets {
		out[i] = func(err error) bool { return errors.Is(err, t) }
	}
	return out
}

// Of returns the exit status of err: OK for nil.
func Of(err error) int {
	if err == nil {
		return OK
	}
	for _, r := range rules {
		for _, m := range r.matches {
			if m(err) {
				return r.code
			}
		}
	}
	return Error
}
