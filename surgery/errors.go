package surgery

import (
	"errors"
	"fmt"

	"github.com/etcdpvc/etcdpvc/store"
)

// Sentinel errors callers branch on; errors returned by this package wrap
// them (test with errors.Is).
var (
	// ErrNoOp means a plan changes nothing; Apply refuses it.
	ErrNoOp = errors.New("nothing to change")
	// ErrImmutableField means an edit would change apiVersion, kind,
	// metadata.name, metadata.namespace or metadata.uid.
	ErrImmutableField = errors.New("field cannot be changed by an edit")
	// ErrChangedSinceBackup means the key no longer holds the value that
	// the backed-up write produced: someone changed it since. The error is
	// a *ChangedError carrying the diff.
	ErrChangedSinceBackup = errors.New("object changed since etcdpvc's write")
	// ErrBadBackup means a backup file is not a valid etcdpvc backup or its
	// checksum does not match.
	ErrBadBackup = errors.New("invalid backup file")
	// ErrExists means a recover found the key present: recover only
	// recreates deleted objects.
	ErrExists = errors.New("object exists")
	// ErrEmptyEdit means an edited document holds nothing but comments and
	// whitespace: the edit is abandoned.
	ErrEmptyEdit = errors.New("edited file is empty")
	// ErrUncertain means the write's transaction failed without an answer
	// (a timeout, a lost connection, an interruption) and it could not be
	// established whether it was applied or could still apply. The error
	// is an *UncertainError.
	ErrUncertain = errors.New("outcome of the write is unknown")
	// ErrNotAccepted means a write was made but the apiserver does not
	// accept its result (it does not serve it at the new revision, or
	// refuses an update of it): the error is a *NotAcceptedError naming
	// each backup.
	ErrNotAccepted = errors.New("written, but the apiserver rejects it")
	// ErrTooLarge means a write was refused because its value is larger
	// than etcd accepts in one request; nothing was written.
	ErrTooLarge = errors.New("value too large for etcd")
	// ErrPartial means a write of several keys stopped after writing some
	// of them: the error says which were written (with their backups) and
	// which were not.
	ErrPartial = errors.New("partly written")
)

// ConflictError reports a compare-and-swap that found the key at another
// revision than the plan read: nothing was written. It wraps the store's
// *store.ConflictError, so it matches store.ErrConflict.
type ConflictError struct {
	Key string
	// Read is the mod revision the plan read (0: the key did not exist).
	Read int64
	// Current is the key's mod revision at the transaction (0: deleted).
	Current int64
	// Cause is the store's error.
	Cause *store.ConflictError
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("object changed since it was read (revision %s → %s); nothing written", revString(e.Read), revString(e.Current))
}

// Unwrap returns the store's *store.ConflictError.
func (e *ConflictError) Unwrap() error { return e.Cause }

// revString formats a mod revision, 0 meaning the key does not exist.
func revString(rev int64) string {
	if rev == 0 {
		return "deleted"
	}
	return fmt.Sprint(rev)
}

// ChangedError reports a restore refused because the key was changed after
// the backed-up write. It matches ErrChangedSinceBackup.
type ChangedError struct {
	Key string
	// Backup is the backup file's path.
	Backup string
	// Revision is the key's current mod revision.
	Revision int64
	// Diff is a unified diff from the current object to the backup's (a
	// raw one when the current value cannot be decoded).
	Diff string
	// Undecodable is why the current value could not be read, if so.
	Undecodable error
}

func (e *ChangedError) Error() string {
	msg := fmt.Sprintf("restore %s from %s: the key was changed after etcdpvc's write (it is now at revision %d and holds other bytes than that write produced); restoring would discard that change; force the restore to overwrite it", e.Key, e.Backup, e.Revision)
	if e.Diff != "" {
		msg += "\n" + e.Diff
	}
	return msg
}

// Is reports whether target is ErrChangedSinceBackup.
func (e *ChangedError) Is(target error) bool { return target == ErrChangedSinceBackup }

// Refusal is how a restore refused for e is told: msg says why nothing was
// written, hint what the diff shown (e.Diff) is and how to restore anyway.
func (e *ChangedError) Refusal() (msg, hint string) {
	if e.Undecodable != nil {
		return fmt.Sprintf("restore %s: the key's current value (revision %d) cannot be decoded: %v; nothing written", e.Key, e.Revision, e.Undecodable),
			"the raw diff above goes from the current bytes to the backup's; re-run with --force to replace them"
	}
	return fmt.Sprintf("restore %s: the object changed after etcdpvc's write (it is now at revision %d); nothing written", e.Key, e.Revision),
		"the diff above goes from the current object to the backup; re-run with --force to restore anyway"
}
