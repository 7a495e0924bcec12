package session

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// OpenError's hints: what to do when a store cannot be opened, or when a
// log does not establish what was asked.

// UndeterminedHint is the hint for wal.ErrUndetermined.
const UndeterminedHint = "the write-ahead log cannot establish it: give the same member's db (member/snap/db) or a snapshot of it with --db, so that the log is replayed from the db's state; or read an earlier revision or raft index"

// UndeterminedHint is the hint for what the session's log does not
// establish (UndeterminedHintFor).
func (s *Session) UndeterminedHint() string { return UndeterminedHintFor(s.Options) }

// UndeterminedHintFor is the hint for what a log read with the options o
// does not establish: alone, the member's db; over a db, what reaches
// further back than the db and the log given, never the db given again.
func UndeterminedHintFor(o Options) string {
	if o.DB == "" {
		return UndeterminedHint
	}
	return "the log and this db do not establish it: " + OlderSourcesHint
}

// OlderSourcesHint is what reaches further back than a log and a db: an
// older snapshot, or the other members' logs.
const OlderSourcesHint = "give an older snapshot of the same member, taken before what is sought, as --wal-base OLDER (the log's entries after it are replayed from its state, and the db given checks the replay) or, when the log does not reach back to it, as --db OLDER without --wal; or the other members' logs (one --wal each: members purge at different points)"

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
		case errors.Is(err, wal.ErrCheckFailed):
			return context("--wal-base, --db and --wal must be one member's (or one cluster's): read the log over each db alone (--wal DIR --db FILE) to find the odd one; a diverged member's data is not the cluster's")
		case errors.Is(err, wal.ErrCheckOrder):
			return context("--wal-base takes the older db (the start of the replay), --db the current one: swap them")
		case errors.Is(err, wal.ErrDBNewer):
			return context("give the same member's wal and db, copied together (the wal after the db), or an older snapshot of its db")
		case errors.Is(err, wal.ErrOtherCluster):
			return context("give the db of the member whose log it is (member/snap/db, copied before its wal), or a snapshot of that cluster")
		case errors.Is(err, wal.ErrLogGap):
			return context("the member purged the log past the db: give a newer db of the same member (member/snap/db), or another member's wal")
		case errors.Is(err, walfile.ErrNoLog), errors.Is(err, fs.ErrNotExist):
			return unavailable("--wal takes a member's wal directory (member/wal under etcd's --data-dir) or its data dir")
		case errors.Is(err, fs.ErrPermission):
			return unavailable("this user cannot read the log: run as root, or read a copy")
		case errors.Is(err, walfile.ErrCorrupt):
			e.hint = "a record in the middle of the log is damaged; read another member's log"
		case errors.Is(err, walfile.ErrConflict):
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
