package connect

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
	"github.com/etcdpvc/etcdpvc/walread"
)

// UndeterminedHint is the hint for store.ErrUndetermined.
const UndeterminedHint = "the write-ahead log cannot establish it: give the same member's db (member/snap/db) or a snapshot of it with --db, so that the log is replayed from the db's state; or read an earlier revision or raft index"

// undeterminedOverDBHint is the hint for what a log read over a db does
// not establish.
const undeterminedOverDBHint = "the log and this db do not establish it: give an older snapshot of the same member, taken before the change, with --db (the log's entries after it are replayed from its state), or another member's log"

// undeterminedHint is the hint for what the session's log does not
// establish.
func (s *Session) undeterminedHint() string {
	if s.WAL != nil && s.WAL.Coverage().DB != "" {
		return undeterminedOverDBHint
	}
	return UndeterminedHint
}

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
	{store.ErrConflict, "re-run the command: it reads the object again and shows a new diff"},
	{surgery.ErrUncertain, "the write may or may not have been applied: read the object again (etcdpvc get) and compare it with the backup before doing anything else"},
	{surgery.ErrKeyMismatch, "the stored value is another object than its key names: look at it with `etcdpvc get --etcd-key KEY -o yaml`; undelete --force edits it anyway"},
	{store.ErrUndetermined, UndeterminedHint},
	// A revision compacted before anything of it was read.
	{store.ErrCompacted, compactedHint},
	{codec.ErrLossy, "edit metadata with undelete, finalizers, label or annotate: they work at the wire level and keep unknown fields"},
}

// openError is the *OpenError for err, a failure to open the store of
// kind: with the context and the hint that say what to do about it, and
// store.ErrUnavailable wrapped where the store cannot be reached at all.
func openError(kind StoreKind, err error, o Options) *OpenError {
	e := &OpenError{Kind: kind, Err: err}
	unavailable := func(hint string) *OpenError {
		e.Err, e.hint = fmt.Errorf("%w: %w", store.ErrUnavailable, err), hint
		return e
	}
	switch kind {
	case StoreEtcd:
		var ce *store.ConnectError
		if !errors.As(err, &ce) {
			return e
		}
		e.hint = "is this the etcd client port (2379)? on a control-plane node try --kubeadm"
		msg := err.Error()
		switch {
		// A probe's diagnosis of a TLS mismatch comes first: the error's
		// words then name TLS, for the other side's choice.
		case errors.Is(err, store.ErrNotTLS), strings.Contains(msg, "does not look like a TLS handshake"):
			e.hint = "this etcd does not speak TLS: give an http:// endpoint (or host:port) and no --cacert, --cert or --key"
		case errors.Is(err, store.ErrWantsTLS):
			e.hint = "this etcd speaks TLS: give an https:// endpoint with --cacert, --cert and --key (kubeadm: /etc/kubernetes/pki/etcd/ca.crt, /etc/kubernetes/pki/apiserver-etcd-client.crt and .key), or use --kubeadm"
		case strings.Contains(msg, "certificate") || strings.Contains(msg, "tls"):
			if o.CACert == "" || o.Cert == "" {
				e.hint = "etcd wants TLS client certificates: give --cacert, --cert and --key (kubeadm: /etc/kubernetes/pki/etcd/ca.crt, /etc/kubernetes/pki/apiserver-etcd-client.crt and .key), or use --kubeadm"
			} else {
				e.hint = "check that --cacert signed etcd's certificate and that --cert/--key are an etcd client pair; or use --kubeadm"
			}
		case strings.Contains(msg, "refused"):
			e.hint = "nothing listens there: check --endpoints (etcd's client port is usually 2379), or use --kubeadm"
		}
		return e
	case StoreWAL:
		context := func(hint string) *OpenError {
			dbs := ""
			if o.WALBase != "" {
				dbs += " --wal-base " + o.WALBase
			}
			if o.DB != "" {
				dbs += " --db " + o.DB
			}
			e.Err, e.hint = fmt.Errorf("%s%s: %w", WALFlags(o.WAL), dbs, err), hint
			return e
		}
		switch {
		case errors.Is(err, store.ErrCheckFailed):
			return context("--wal-base, --db and --wal must be one member's (or one cluster's): read the log over each db alone (--wal DIR --db FILE) to find the odd one; a diverged member's data is not the cluster's")
		case errors.Is(err, store.ErrCheckOrder):
			return context("--wal-base takes the older db (the start of the replay), --db the current one: swap them")
		case errors.Is(err, store.ErrDBNewer):
			return context("give the same member's wal and db, copied together (the wal after the db), or an older snapshot of its db")
		case errors.Is(err, store.ErrOtherCluster):
			return context("give the db of the member whose log it is (member/snap/db, copied before its wal), or a snapshot of that cluster")
		case errors.Is(err, store.ErrLogGap):
			return context("the member purged the log past the db: give a newer db of the same member (member/snap/db), or another member's wal")
		case errors.Is(err, walread.ErrNoLog), errors.Is(err, fs.ErrNotExist):
			return unavailable("--wal takes a member's wal directory (member/wal under etcd's --data-dir) or its data dir")
		case errors.Is(err, fs.ErrPermission):
			return unavailable("this user cannot read the log: run as root, or read a copy")
		case errors.Is(err, walread.ErrCorrupt):
			e.hint = "a record in the middle of the log is damaged; read another member's log"
		case errors.Is(err, walread.ErrConflict):
			e.hint = "give the logs of one cluster's members, one --wal each; if they are, the log that disagrees is a diverged member's: read each --wal alone and leave the odd one out"
		}
		return e
	case StoreSnapshotCopy:
		switch {
		case errors.Is(err, store.ErrLocked):
			return unavailable("a running member's db is never edited: `etcdctl snapshot save copy.db` from the cluster, or stop every member first, then --db copy.db --out edited.db")
		case errors.Is(err, store.ErrMemberDir):
			e.hint = "write OUT outside any member's data directory; put it into the cluster with `etcdutl snapshot restore OUT` on every member"
			return e
		case errors.Is(err, store.ErrOutputExists):
			e.hint = "give --out a new file name"
			return e
		}
	}
	// A db file: --db, or the input of a snapshot copy.
	switch {
	case errors.Is(err, store.ErrLocked):
		return unavailable("run `etcdctl snapshot save copy.db` against the running member, or read it live with --endpoints")
	case errors.Is(err, store.ErrHashMismatch):
		e.hint = "the snapshot is damaged or was edited; --skip-hash-check reads it anyway"
	case errors.Is(err, fs.ErrNotExist):
		e.hint = "check the path: --db takes a member's db (member/snap/db under etcd's --data-dir) or an `etcdctl snapshot save` file"
	case errors.Is(err, fs.ErrPermission):
		e.hint = "this user cannot read the file: run as root, or read a copy"
	case errors.Is(err, store.ErrCorrupt):
		e.hint = "--db takes a member's db (member/snap/db) or an `etcdctl snapshot save` file; a damaged one cannot be read"
	}
	return e
}

// Refused reports whether err is a store Open refused to open as asked (a
// snapshot copy into a member's directory or over an existing file):
// nothing was written.
func Refused(err error) bool {
	var oe *OpenError
	return errors.As(err, &oe) && (errors.Is(oe.Err, store.ErrMemberDir) || errors.Is(oe.Err, store.ErrOutputExists))
}
