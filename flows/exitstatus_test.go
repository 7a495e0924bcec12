package flows

import (
	"errors"
	"fmt"
	"testing"

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

func TestExitStatus(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("recover persistentvolumeclaim x in namespace demo: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, exitcode.OK},
		{"plain", errors.New("boom"), exitcode.Error},
		{"option", wrap(&session.OptionError{Option: "--verify x", Err: errors.New("bad")}), exitcode.Usage},
		{"refused", &RefusedError{Msg: "not confirmed; nothing written"}, exitcode.Refused},
		{"uncertain", wrap(surgery.ErrUncertain), exitcode.Uncertain},
		{"partial", wrap(surgery.ErrPartial), exitcode.Partial},
		{"not accepted", wrap(surgery.ErrNotAccepted), exitcode.NotAccepted},
		{"incomplete", wrap(ErrIncomplete), exitcode.Incomplete},
		{"undetermined", wrap(wal.ErrUndetermined), exitcode.Incomplete},
		{"compacted part way", wrap(&store.CompactedError{Op: "list /registry/", Revision: 9, Read: 3, Last: "/registry/x"}), exitcode.Incomplete},
		{"compacted", wrap(store.ErrCompacted), exitcode.Error},
		{"differ", wrap(inspect.ErrDiffer), exitcode.Differ},
		{"nothing compared", wrap(inspect.ErrNothingCompared), exitcode.NothingCompared},
		{"conflict", wrap(store.ErrConflict), exitcode.Conflict},
		{"not found", wrap(store.ErrNotFound), exitcode.NotFound},
		{"unavailable", wrap(store.ErrUnavailable), exitcode.Connection},
		{"lossy", wrap(codec.ErrLossy), exitcode.Refused},
		{"wrong key", wrap(encryption.ErrWrongKey), exitcode.Decode},
		{"immutable", wrap(surgery.ErrImmutableField), exitcode.Refused},
		{"exists", wrap(surgery.ErrExists), exitcode.Refused},
		{"changed since backup", wrap(surgery.ErrChangedSinceBackup), exitcode.Refused},
		{"bad backup", wrap(surgery.ErrBadBackup), exitcode.Refused},
		{"too large", wrap(surgery.ErrTooLarge), exitcode.Refused},
		{"invalid", wrap(surgery.ErrInvalid), exitcode.Refused},
		{"not applicable", wrap(surgery.ErrNotApplicable), exitcode.Refused},
		{"key mismatch", wrap(surgery.ErrKeyMismatch), exitcode.Refused},
		{"other cluster", wrap(surgery.ErrOtherCluster), exitcode.Refused},
		{"plaintext into encrypted", wrap(surgery.ErrPlaintextIntoEncrypted), exitcode.Refused},
		{"unsafe backup dir", wrap(surgery.ErrUnsafeBackupDir), exitcode.Refused},
		{"no room for the backups", wrap(surgery.ErrNoBackupRoom), exitcode.Refused},
		{"rejected", wrap(verify.ErrRejected), exitcode.Refused},
		{"cannot verify", wrap(verify.ErrCannotVerify), exitcode.Refused},
		{"key not found", wrap(encryption.ErrKeyNotFound), exitcode.Decode},
		{"no config", wrap(encryption.ErrNoConfig), exitcode.Decode},
		{"encrypted", wrap(codec.ErrEncrypted), exitcode.Decode},
		{"malformed", wrap(codec.ErrMalformed), exitcode.Decode},
		{"not object", wrap(codec.ErrNotObject), exitcode.Decode},
		{"unsupported", wrap(codec.ErrUnsupported), exitcode.Decode},
		{"empty", wrap(codec.ErrEmpty), exitcode.Decode},
		// The first rule that holds wins: a usage error over anything it
		// wraps, an unknown outcome over what else the error says.
		{"usage first", &session.OptionError{Option: "--db", Err: store.ErrUnavailable}, exitcode.Usage},
		{"uncertain over conflict", fmt.Errorf("%w: %w", surgery.ErrUncertain, store.ErrConflict), exitcode.Uncertain},
		{"partial over not found", fmt.Errorf("%w: %w", store.ErrNotFound, surgery.ErrPartial), exitcode.Partial},
		{"incomplete over differ", fmt.Errorf("%w: %w", inspect.ErrDiffer, ErrIncomplete), exitcode.Incomplete},
		{"not found over decode", fmt.Errorf("%w: %w", codec.ErrMalformed, store.ErrNotFound), exitcode.NotFound},
	} {
		if got := ExitStatus(tc.err); got != tc.want {
			t.Errorf("%s: ExitStatus(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}
