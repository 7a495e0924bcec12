package main

// Snapshot surgery: every write command takes --db IN --out OUT. The edit
// goes into a copy of IN written to OUT (store.SnapshotCopy), never into IN
// and never into a running member, and the runbook to put OUT into the
// cluster (`etcdutl snapshot restore` onto every member) is printed with
// the result.

import (
	"context"

	"github.com/etcdpvc/etcdpvc/store"
)

// openWriteSession opens the session a write command writes through: the
// usual one (live etcd; a read-only --db file), or with --out a snapshot
// copy of the --db file.
func openWriteSession(e *env, g *globalOptions, o writeOptions) (*cliSession, error) {
	if o.Out != "" && g.DB == "" {
		return nil, usagef("--out OUT edits a copy of the --db file: give --db IN (to edit a live cluster, leave out --out)")
	}
	s, err := openStore(e, g, o.Out)
	if err != nil {
		return nil, err
	}
	// Diffs follow get: managedFields (and last-applied) are hidden, and
	// a Secret's values unless --show-secrets.
	s.Planner.HideManagedFields, s.Planner.ShowSecrets = !o.ShowManagedFields, o.ShowSecrets
	if cl, ok := store.AsCluster(s.Reader); ok {
		if m, ok := cl.(interface{ ListMembers(context.Context) error }); ok {
			// The members now, before any question: a write compares its
			// key on each (an error here is met again there).
			_ = m.ListMembers(e.ctx)
		}
	}
	return s, nil
}
