// Package exitcode holds etcdpvc's exit statuses. They are listed in
// docs/cli.md and in the CLI's help; flows.ExitStatus maps an error onto
// them (cmd/etcdpvc/exit.go prints the error and returns the status).
package exitcode

// Exit statuses.
const (
	OK         = 0 // success, including a write with nothing to do ("nothing to do: …")
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
	// decrypt or decode, unreadable pages, a member), or an outcome was not
	// established (a value whose readability is not known here, a salvage
	// that lost pages); what was read is printed and what was skipped is
	// listed. Also a write made whose outcome line audit.log could not
	// take (each write named with its backup).
	Incomplete = 10
	// Differ: diff compared two states (or members) and found them
	// different (as diff(1) exits 1); nothing went wrong.
	Differ = 11
	// NotAccepted: written, but the apiserver rejects it: it does not
	// serve the object at the new revision or refuses an update of it.
	// The message names each backup to restore.
	NotAccepted = 12
	// NothingCompared: diff was narrowed to one namespace (-n, or
	// "default") that holds nothing of the scope on either side, while
	// other namespaces do: no verdict; -A compares them. diff --members:
	// no key of the scope on any member.
	NothingCompared = 13
)
