package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/connect"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
)

// Exit statuses. They are listed in docs/cli.md and in every command's help.
const (
	exitOK         = 0 // success, including a no-op edit
	exitError      = 1 // any other failure
	exitUsage      = 2 // bad flags or arguments
	exitNotFound   = 3 // the object or key does not exist
	exitConflict   = 4 // the object changed between read and write; nothing written
	exitRefused    = 5 // refused as unsafe, or needs --yes / confirmation; nothing written
	exitDecode     = 6 // the stored value cannot be decoded (malformed, encrypted without a key, unsupported)
	exitConnection = 7 // etcd or the db file cannot be reached (dial, TLS, timeout, lock)
	// exitUncertain: a write was sent but its outcome is not known (the
	// answer was lost, or Ctrl-C came while it was under way); the key may
	// hold the old or the new value. The message names the backup.
	exitUncertain = 8
	// exitPartial: a write of several keys stopped part way: some keys
	// were written (each listed with its backup), the rest were not.
	exitPartial = 9
	// exitIncomplete: a read could not read everything (values it could
	// not decrypt or decode, unreadable pages); what was read is printed
	// and what was skipped is listed.
	exitIncomplete = 10
	// exitDiffer: diff compared two states and found them different (as
	// diff(1) exits 1); nothing went wrong.
	exitDiffer = 11
	// exitNotAccepted: written, but the apiserver rejects it: it does not
	// serve the object at the new revision or refuses an update of it.
	// The message names each backup to restore.
	exitNotAccepted = 12
)

// exitStatusHelp is the EXIT STATUS section shared by every command's help.
const exitStatusHelp = `EXIT STATUS:
   0  success (a no-op edit included)
   1  error
   2  usage error
   3  not found
   4  conflict: the object changed since it was read; nothing written
   5  refused: unsafe, or not confirmed (use --yes); nothing written
   6  the stored value cannot be decoded
   7  cannot reach etcd or open the db file
   8  outcome unknown: a write was sent and may or may not have been applied; see the backup named
   9  partly written: a write of several keys stopped after writing some of them (listed)
  10  incomplete: some values could not be read (listed); the output holds the rest
  11  diff: the two states differ (0: they are the same)

  12  written, but the apiserver rejects it (does not serve it at the new revision, or refuses to update it); restore the backup named`

// ErrIncomplete marks a read that skipped values it could not read; the
// command has printed what it read and listed what it skipped.
var ErrIncomplete = connect.ErrIncomplete

// usageError marks errors in flags or arguments.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// refusedError marks a write the tool declined to make.
type refusedError struct {
	msg  string
	hint string
}

func (e *refusedError) Error() string { return e.msg }

// hinted carries a hint for the user alongside an error.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

func withHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hinted{err: err, hint: hint}
}

// exitCode maps an error to the documented exit status.
func exitCode(err error) int {
	var u *usageError
	var oe *connect.OptionError
	var r *refusedError
	var cr *connect.RefusedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &u), errors.As(err, &oe):
		return exitUsage
	case errors.As(err, &r), errors.As(err, &cr):
		return exitRefused
	case errors.Is(err, surgery.ErrUncertain):
		return exitUncertain
	case errors.Is(err, surgery.ErrPartial):
		return exitPartial
	case errors.Is(err, surgery.ErrNotAccepted):
		return exitNotAccepted
	case errors.Is(err, ErrIncomplete), errors.Is(err, store.ErrUndetermined):
		return exitIncomplete
	case errors.Is(err, ErrDiffer):
		return exitDiffer
	case errors.Is(err, store.ErrConflict):
		return exitConflict
	case errors.Is(err, store.ErrNotFound):
		return exitNotFound
	case errors.Is(err, store.ErrUnavailable):
		return exitConnection
	case errors.Is(err, codec.ErrLossy), errors.Is(err, surgery.ErrImmutableField), errors.Is(err, surgery.ErrExists),
		errors.Is(err, surgery.ErrChangedSinceBackup), errors.Is(err, surgery.ErrBadBackup), errors.Is(err, surgery.ErrTooLarge),
		errors.Is(err, surgery.ErrInvalid), errors.Is(err, surgery.ErrNotApplicable),
		errors.Is(err, surgery.ErrKeyMismatch), errors.Is(err, surgery.ErrOtherCluster), errors.Is(err, surgery.ErrPlaintextIntoEncrypted),
		errors.Is(err, surgery.ErrUnsafeBackupDir), errors.Is(err, verify.ErrRejected), errors.Is(err, verify.ErrCannotVerify):
		return exitRefused
	case errors.Is(err, encryption.ErrKeyNotFound), errors.Is(err, encryption.ErrNoConfig):
		return exitDecode
	case errors.Is(err, codec.ErrEncrypted), errors.Is(err, codec.ErrMalformed), errors.Is(err, codec.ErrNotObject),
		errors.Is(err, codec.ErrUnsupported), errors.Is(err, codec.ErrEmpty):
		return exitDecode
	}
	return exitError
}

// hintFor returns the hint to print after an error, if any.
func hintFor(err error) string {
	var h *hinted
	if errors.As(err, &h) {
		return h.hint
	}
	var r *refusedError
	if errors.As(err, &r) && r.hint != "" {
		return r.hint
	}
	if h := connect.Hint(err); h != "" {
		return h
	}
	var u *usageError
	var oe *connect.OptionError
	if errors.As(err, &u) || errors.As(err, &oe) {
		return "see 'etcdpvc help' or 'etcdpvc COMMAND --help'"
	}
	return ""
}

// report prints err in the project's format and returns the exit status.
func report(stderr io.Writer, err error) int {
	if errors.Is(err, ErrDiffer) && !errors.Is(err, ErrIncomplete) {
		// An outcome, not an error: diff has printed its verdict.
		return exitDiffer
	}
	msg := strings.TrimSpace(err.Error())
	// A named object that does not exist: its own message names it and
	// where else it exists, without the chain of what was being done.
	var nf *surgery.NotFoundError
	if errors.As(err, &nf) {
		msg = nf.Error()
	}
	fmt.Fprintf(stderr, "etcdpvc: error: %s\n", msg)
	if h := hintFor(err); h != "" {
		fmt.Fprintf(stderr, "etcdpvc: hint: %s\n", h)
	}
	return exitCode(err)
}
