package main

import (
	"fmt"

	"github.com/etcdpvc/etcdpvc/store"
)

// Snapshot surgery: every write command takes --db IN --out OUT. The edit
// goes into a copy of IN written to OUT (store.SnapshotCopy), never into IN
// and never into a running member, and the runbook to put OUT into the
// cluster (`etcdutl snapshot restore` onto every member) is printed with
// the result.

// openWriteSession opens the session a write command writes through: the
// usual one (live etcd; a read-only --db file), or with --out a snapshot
// copy of the --db file.
func openWriteSession(e *env, g *globalOptions, o writeOptions) (*session, error) {
	if o.Out != "" && g.DB == "" {
		return nil, usagef("--out OUT edits a copy of the --db file: give --db IN (to edit a live cluster, leave out --out)")
	}
	return openStore(e, g, o.Out)
}

// snapshotCopyOf returns the session's snapshot copy, or nil.
func snapshotCopyOf(s *session) *store.SnapshotCopy { return s.SnapshotCopy() }

// finishSnapshotWrite, after a successful write, finishes a snapshot copy
// (connect.Session.FinishSnapshot) and prints what to do with it. It
// returns false for a session that is not a snapshot copy.
func finishSnapshotWrite(e *env, s *session) (bool, error) {
	if s.SnapshotCopy() == nil {
		return false, nil
	}
	r, err := s.FinishSnapshot()
	if err != nil {
		return true, err
	}
	fmt.Fprintf(e.stdout, "snapshot: %s (revision %d, sha256 %s); %s is unchanged\n", r.Path, r.Revision, r.SHA256, r.Input)
	fmt.Fprint(e.stdout, r.Runbook)
	return true, nil
}
