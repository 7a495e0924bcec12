package flows

import (
	"errors"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
)

// hintedError is an error with what to do about it (see WithHint).
type hintedError struct {
	err  error
	hint string
}

func (e *hintedError) Error() string { return e.err.Error() }
func (e *hintedError) Unwrap() error { return e.err }
func (e *hintedError) Hint() string  { return e.hint }

// WithHint returns err with hint, what to do about it (nil for nil).
func WithHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hintedError{err, hint}
}

// Hinter is an error that says what to do about it: every error type of
// the library that has more to say than its message (a store that cannot
// be opened, an object not found, an encrypted value, a refusal…).
type Hinter interface {
	error
	Hint() string
}

// Hint returns what to tell the user to do about err, "" when there is
// nothing more to say than the error itself: the first non-empty hint of
// the errors err wraps, outermost first (see Hinter), else the hint of
// the condition it wraps (a compaction, a sentinel).
func Hint(err error) string {
	if h := wrappedHint(err); h != "" {
		return h
	}
	if errors.As(err, new(*store.CompactedError)) {
		return compactedHint
	}
	for _, h := range sentinelHints {
		if errors.Is(err, h.err) {
			return h.hint
		}
	}
	return ""
}

// SessionHint returns err with the hint of a condition whose remedy
// depends on the sources given in o, when err has no hint of its own: a
// log read over a db that does not establish what was asked, or does not
// hold the revision asked for, is not helped by the db given again
// (session.UndeterminedHintFor). Other errors are returned as they are.
func SessionHint(err error, o session.Options) error {
	if err == nil || len(o.WAL) == 0 || o.DB == "" || wrappedHint(err) != "" {
		return err
	}
	switch {
	case errors.Is(err, wal.ErrUndetermined):
		return &hintedError{err, session.UndeterminedHintFor(o)}
	case errors.Is(err, store.ErrCompacted) || errors.As(err, new(*store.CompactedError)):
		return &hintedError{err, "neither the log nor the db given holds that revision: " + session.OlderSourcesHint}
	}
	return err
}

// wrappedHint is the first non-empty Hint of the errors in err's tree, in
// the order errors.As visits them.
func wrappedHint(err error) string {
	if err == nil {
		return ""
	}
	if h, ok := err.(Hinter); ok {
		if s := h.Hint(); s != "" {
			return s
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return wrappedHint(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if s := wrappedHint(e); s != "" {
				return s
			}
		}
	}
	return ""
}

// sentinelHints are the hints of the conditions callers branch on, in the
// order they are tested.
var sentinelHints = []struct {
	err  error
	hint string
}{
	{encryption.ErrKeyNotFound, "the value was encrypted with a key this EncryptionConfiguration does not hold: use the file the kube-apiserver runs with (--kubeadm finds it)"},
	{encryption.ErrWrongKey, inspect.WrongKeyHint},
	{encryption.ErrNoConfig, "pass --encryption-config with the kube-apiserver's EncryptionConfiguration (or --kubeadm on a control-plane node)"},
	{verify.ErrRejected, "fix the edit so that the apiserver accepts it; --verify=never writes it anyway, and the apiserver will then likely refuse to update the object"},
	{verify.ErrCannotVerify, "make the apiserver reachable (--kubeconfig, $KUBECONFIG, --kubeadm), or use --verify=auto to write unverified"},
	{store.ErrKineUnsupported, "kine keeps its data in a SQL database (k3s: /var/lib/rancher/k3s/server/db/state.db): look at its size and health there; docs/supported-versions.md says what etcdpvc does over kine"},
	{store.ErrKineTxn, store.KineTxnHint},
	{store.ErrConflict, "re-run the command: it reads the object again and shows a new diff"},
	{surgery.ErrUncertain, "the write may or may not have been applied: read the object again (etcdpvc get) and compare it with the backup before doing anything else"},
	{surgery.ErrBackupDirUnwritable, "nothing was sent: every write keeps a backup first; give --backup-dir DIR on a writable file system (in a pod, an emptyDir volume), or set $XDG_STATE_HOME"},
	{surgery.ErrNoBackupRoom, "nothing was sent: every write keeps a backup on local disk first; free space there, or give --backup-dir DIR on a file system with room (not the disk etcd's data directory is on, when that is what is full)"},
	{surgery.ErrOperationNotFound, "the operation id and the backup directory are those the write's undo line names; `etcdpvc backups --backup-dir DIR` lists the operations recorded there"},
	{surgery.ErrOperationIncomplete, "put the missing backups back into the backup directory (from where they were copied) and run the same command again; to undo only the rest, restore their backups one by one (etcdpvc restore BACKUP...)"},
	{surgery.ErrBadOperationID, "copy the operation id from the write's undo line, or from `etcdpvc backups`"},
	{surgery.ErrSeveralWrites, "restore each backup on its own, the newest first (`etcdpvc backups` lists them, newest first)"},
	{surgery.ErrKeyMismatch, "the stored value is another object than its key names: look at it with `etcdpvc get --etcd-key KEY -o yaml`; undelete --force edits it anyway"},
	{wal.ErrUndetermined, session.UndeterminedHint},
	{wal.ErrBeforeBase, "give an older snapshot of the cluster as --db: one taken before that point, whose consistent index the log continues"},
	{wal.ErrNoPointInTime, "`etcdpvc --db OLD.db --wal DIR history RESOURCE NAME` (or `ls --deleted`) lists the revisions and deletions the log holds"},
	{store.ErrOutputExists, "name a new file: etcdpvc never writes over one that exists (a file, a symbolic link, a device)"},
	{store.ErrMemberDir, "write outside the member's data directory (the one holding member/wal and member/snap)"},
	// A revision compacted before anything of it was read.
	{store.ErrCompacted, compactedHint},
	{codec.ErrLossy, "edit metadata with undelete, finalizers, label or annotate: they work at the wire level and keep unknown fields"},
}
