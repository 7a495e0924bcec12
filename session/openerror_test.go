package session

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// TestOpenErrorHint: each failure to open a store says what to do about
// it, names the files where the store's error does not, and is
// store.ErrUnavailable (exit status 7) where nothing could be read at all.
func TestOpenErrorHint(t *testing.T) {
	// A store.ConnectError is store.ErrUnavailable.
	tlsErr := &store.ConnectError{Endpoints: []string{"https://a:2379"}, TLS: true, Cause: errors.New("tls: certificate required")}
	refused := &store.ConnectError{Endpoints: []string{"a:2379"}, Cause: errors.New("connect: connection refused")}
	timeout := &store.ConnectError{Endpoints: []string{"a:2379"}, Cause: errors.New("context deadline exceeded")}
	// A probe's diagnoses name TLS, for the other side's choice.
	notTLS := &store.ConnectError{Endpoints: []string{"https://a:2379"}, TLS: true,
		Cause: fmt.Errorf("%w (it answers plaintext gRPC), and the client spoke TLS (%w)", store.ErrNotTLS, errors.New("tls: first record does not look like a TLS handshake"))}
	wantsTLS := &store.ConnectError{Endpoints: []string{"a:2379"}, Cause: fmt.Errorf("%w, and the client spoke plaintext (%w)", store.ErrWantsTLS, errors.New("context deadline exceeded"))}
	walDB := Options{WAL: []string{"/m/wal"}, DB: "/m/db"}
	tests := []struct {
		name        string
		kind        StoreKind
		err         error
		o           Options
		msg         string // "" when the store's own
		hint        string // a part of it; "" for none
		unavailable bool
		refused     bool
	}{
		{name: "TLS without certificates", kind: StoreEtcd, err: tlsErr, hint: "etcd wants TLS client certificates: give --cacert, --cert and --key", unavailable: true},
		{name: "TLS with certificates", kind: StoreEtcd, err: tlsErr, o: Options{CACert: "ca", Cert: "c"}, hint: "check that --cacert signed etcd's certificate", unavailable: true},
		{name: "TLS to a plaintext etcd", kind: StoreEtcd, err: notTLS, hint: "this etcd does not speak TLS: give an http:// endpoint (or host:port) and no --cacert, --cert or --key", unavailable: true},
		{name: "TLS with certificates to a plaintext etcd", kind: StoreEtcd, err: notTLS, o: Options{CACert: "ca", Cert: "c", Key: "k"}, hint: "this etcd does not speak TLS", unavailable: true},
		{name: "TLS to a server that answers no TLS, unprobed", kind: StoreEtcd, err: &store.ConnectError{Endpoints: []string{"https://a:2379"}, TLS: true, Cause: errors.New("tls: first record does not look like a TLS handshake")},
			hint: "this etcd does not speak TLS", unavailable: true},
		{name: "plaintext to a TLS etcd", kind: StoreEtcd, err: wantsTLS, hint: "this etcd speaks TLS: give an https:// endpoint with --cacert, --cert and --key", unavailable: true},
		{name: "refused", kind: StoreEtcd, err: refused, hint: "nothing listens there", unavailable: true},
		{name: "timeout", kind: StoreEtcd, err: timeout, hint: "is this the etcd client port (2379)?", unavailable: true},
		{name: "not a connection failure", kind: StoreEtcd, err: errors.New("bad endpoint")},
		{name: "db locked", kind: StoreDB, err: store.ErrLocked, msg: store.ErrUnavailable.Error() + ": " + store.ErrLocked.Error(), hint: "run `etcdctl snapshot save copy.db` against the running member", unavailable: true},
		{name: "db hash", kind: StoreDB, err: store.ErrHashMismatch, hint: "--skip-hash-check reads it anyway"},
		{name: "db missing", kind: StoreDB, err: &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}, hint: "check the path: --db takes a member's db"},
		{name: "db unreadable", kind: StoreDB, err: &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrPermission}, hint: "this user cannot read the file"},
		{name: "db corrupt", kind: StoreDB, err: store.ErrCorrupt, hint: "a damaged one cannot be read"},
		{name: "db other", kind: StoreDB, err: errors.New("odd")},
		{name: "copy of a locked db", kind: StoreSnapshotCopy, err: store.ErrLocked, msg: store.ErrUnavailable.Error() + ": " + store.ErrLocked.Error(), hint: "a running member's db is never edited", unavailable: true},
		{name: "copy into a member", kind: StoreSnapshotCopy, err: store.ErrMemberDir, hint: "write OUT outside any member's data directory", refused: true},
		{name: "copy over a file", kind: StoreSnapshotCopy, err: fmt.Errorf("out.db: %w", store.ErrOutputExists), hint: "give --out a new file name", refused: true},
		{name: "copy of a missing db", kind: StoreSnapshotCopy, err: fs.ErrNotExist, hint: "check the path: --db takes"},
		{name: "wal after a newer db", kind: StoreWAL, err: wal.ErrDBNewer, o: walDB, msg: "--wal /m/wal --db /m/db: " + wal.ErrDBNewer.Error(), hint: "copied together"},
		{name: "wal with a gap", kind: StoreWAL, err: wal.ErrLogGap, o: walDB, msg: "--wal /m/wal --db /m/db: " + wal.ErrLogGap.Error(), hint: "the member purged the log past the db"},
		{name: "wal and another cluster's db", kind: StoreWAL, err: wal.ErrOtherCluster, o: walDB, msg: "--wal /m/wal --db /m/db: " + wal.ErrOtherCluster.Error(), hint: "the db of the member whose log it is"},
		{name: "no wal", kind: StoreWAL, err: walfile.ErrNoLog, msg: store.ErrUnavailable.Error() + ": " + walfile.ErrNoLog.Error(), hint: "--wal takes a member's wal directory", unavailable: true},
		{name: "wal unreadable", kind: StoreWAL, err: fs.ErrPermission, msg: store.ErrUnavailable.Error() + ": " + fs.ErrPermission.Error(), hint: "cannot read the log", unavailable: true},
		{name: "wal corrupt", kind: StoreWAL, err: walfile.ErrCorrupt, hint: "read another member's log"},
		{name: "wals that disagree", kind: StoreWAL, err: walfile.ErrConflict, hint: "read each --wal alone and leave the odd one out"},
		{name: "merged wals after a newer db", kind: StoreWAL, err: wal.ErrDBNewer, o: Options{WAL: []string{"/a/wal", "/b/wal"}, DB: "/m/db"}, msg: "--wal /a/wal --wal /b/wal --db /m/db: " + wal.ErrDBNewer.Error(), hint: "copied together"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := error(openError(tc.kind, tc.err, tc.o))
			msg := tc.msg
			if msg == "" {
				msg = tc.err.Error()
			}
			if err.Error() != msg {
				t.Errorf("message %q, want %q", err.Error(), msg)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("%v does not wrap %v", err, tc.err)
			}
			h := err.(*OpenError).Hint()
			if tc.hint == "" && h != "" || !strings.Contains(h, tc.hint) {
				t.Errorf("hint %q, want one with %q", h, tc.hint)
			}
			if got := errors.Is(err, store.ErrUnavailable); got != tc.unavailable {
				t.Errorf("unavailable: %v, want %v", got, tc.unavailable)
			}
			if got := Refused(err); got != tc.refused {
				t.Errorf("refused: %v, want %v", got, tc.refused)
			}
		})
	}
}
