package exitcode

import (
	"errors"
	"fmt"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/connect"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
)

func TestOf(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("recover persistentvolumeclaim x in namespace demo: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, OK},
		{"plain", errors.New("boom"), Error},
		{"usage", cliargs.Usagef("get takes one object"), Usage},
		{"option", wrap(&connect.OptionError{Option: "--verify x", Err: errors.New("bad")}), Usage},
		{"refused", &connect.RefusedError{Msg: "not confirmed; nothing written"}, Refused},
		{"uncertain", wrap(surgery.ErrUncertain), Uncertain},
		{"partial", wrap(surgery.ErrPartial), Partial},
		{"not accepted", wrap(surgery.ErrNotAccepted), NotAccepted},
		{"incomplete", wrap(connect.ErrIncomplete), Incomplete},
		{"undetermined", wrap(store.ErrUndetermined), Incomplete},
		{"compacted part way", wrap(&store.CompactedError{Op: "list /registry/", Revision: 9, Read: 3, Last: "/registry/x"}), Incomplete},
		{"compacted", wrap(store.ErrCompacted), Error},
		{"differ", wrap(inspect.ErrDiffer), Differ},
		{"nothing compared", wrap(inspect.ErrNothingCompared), NothingCompared},
		{"conflict", wrap(store.ErrConflict), Conflict},
		{"not found", wrap(store.ErrNotFound), NotFound},
		{"unavailable", wrap(store.ErrUnavailable), Connection},
		{"lossy", wrap(codec.ErrLossy), Refused},
		{"wrong key", wrap(encryption.ErrWrongKey), Decode},
		{"immutable", wrap(surgery.ErrImmutableField), Refused},
		{"exists", wrap(surgery.ErrExists), Refused},
		{"changed since backup", wrap(surgery.ErrChangedSinceBackup), Refused},
		{"bad backup", wrap(surgery.ErrBadBackup), Refused},
		{"too large", wrap(surgery.ErrTooLarge), Refused},
		{"invalid", wrap(surgery.ErrInvalid), Refused},
		{"not applicable", wrap(surgery.ErrNotApplicable), Refused},
		{"key mismatch", wrap(surgery.ErrKeyMismatch), Refused},
		{"other cluster", wrap(surgery.ErrOtherCluster), Refused},
		{"plaintext into encrypted", wrap(surgery.ErrPlaintextIntoEncrypted), Refused},
		{"unsafe backup dir", wrap(surgery.ErrUnsafeBackupDir), Refused},
		{"rejected", wrap(verify.ErrRejected), Refused},
		{"cannot verify", wrap(verify.ErrCannotVerify), Refused},
		{"key not found", wrap(encryption.ErrKeyNotFound), Decode},
		{"no config", wrap(encryption.ErrNoConfig), Decode},
		{"encrypted", wrap(codec.ErrEncrypted), Decode},
		{"malformed", wrap(codec.ErrMalformed), Decode},
		{"not object", wrap(codec.ErrNotObject), Decode},
		{"unsupported", wrap(codec.ErrUnsupported), Decode},
		{"empty", wrap(codec.ErrEmpty), Decode},
		// The first rule that holds wins: a usage error over anything it
		// wraps, an unknown outcome over what else the error says.
		{"usage first", &connect.OptionError{Option: "--db", Err: store.ErrUnavailable}, Usage},
		{"uncertain over conflict", fmt.Errorf("%w: %w", surgery.ErrUncertain, store.ErrConflict), Uncertain},
		{"partial over not found", fmt.Errorf("%w: %w", store.ErrNotFound, surgery.ErrPartial), Partial},
		{"incomplete over differ", fmt.Errorf("%w: %w", inspect.ErrDiffer, connect.ErrIncomplete), Incomplete},
		{"not found over decode", fmt.Errorf("%w: %w", codec.ErrMalformed, store.ErrNotFound), NotFound},
	} {
		if got := Of(tc.err); got != tc.want {
			t.Errorf("%s: Of(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}
