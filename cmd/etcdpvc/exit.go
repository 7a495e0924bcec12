package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/session"
)

// exitStatusHelp is the EXIT STATUS section shared by every command's help.
const exitStatusHelp = `EXIT STATUS:
   0  success; also a write with nothing to do ("nothing to do: …; nothing written")
   1  error
   2  usage error
   3  not found (restore --operation: no write of it in audit.log or the backups)
   4  conflict: the object changed since it was read; nothing written
   5  refused: unsafe, or not confirmed (use --yes); nothing written
   6  the stored value cannot be decoded (or decrypted: no key given, or the key of its name does not decrypt it)
   7  cannot reach etcd or open the db file
   8  outcome unknown: a write was sent and may or may not have been applied; see the backup named
   9  partly written: a write of several keys stopped after writing some of them (listed)
  10  incomplete: some values could not be read, or an outcome was not established (listed); the output holds the rest; also a write made whose outcome line audit.log could not take
  11  diff: the two states (diff --members: the members) differ (0: they are the same)

  12  written, but the apiserver rejects it (does not serve it at the new revision, or refuses to update it); restore the backup named
  13  diff: no verdict: the namespace compared holds nothing of the scope on either side, while other namespaces do (-A compares them); diff --members: no key of the scope on any member`

// usageError marks errors in flags or arguments.
type usageError = cliargs.UsageError

// usagef returns a *usageError (cliargs.Usagef).
var usagef = cliargs.Usagef

// hintFor returns the hint to print after an error, if any.
func hintFor(err error) string {
	if h := flows.Hint(err); h != "" {
		return h
	}
	var u *usageError
	var oe *session.OptionError
	if errors.As(err, &u) || errors.As(err, &oe) {
		return "see 'etcdpvc help' or 'etcdpvc COMMAND --help'"
	}
	return ""
}

// report prints err in the project's format and returns the exit status.
func report(stderr io.Writer, err error) int {
	if errors.Is(err, inspect.ErrDiffer) && !errors.Is(err, flows.ErrIncomplete) {
		// An outcome, not an error: diff has printed its verdict.
		return exitcode.Differ
	}
	msg := strings.TrimSpace(err.Error())
	// A named object that does not exist: its own message names it and
	// where else it exists, without the chain of what was being done.
	var nf *kubevalue.NotFoundError
	if errors.As(err, &nf) {
		msg = nf.Error()
	}
	fmt.Fprintf(stderr, "etcdpvc: error: %s\n", msg)
	if h := hintFor(err); h != "" {
		fmt.Fprintf(stderr, "etcdpvc: hint: %s\n", h)
	}
	return exitStatus(err)
}

// exitStatus is err's exit status: a usage error of the command line is
// exitcode.Usage; the library maps every other (flows.ExitStatus).
func exitStatus(err error) int {
	var u *usageError
	if errors.As(err, &u) {
		return exitcode.Usage
	}
	return flows.ExitStatus(err)
}
