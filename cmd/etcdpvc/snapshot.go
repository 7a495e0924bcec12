package main

import (
	"errors"
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

func snapshotCopyError(err error, in string) error {
	switch {
	case errors.Is(err, store.ErrLocked):
		return withHint(fmt.Errorf("%w: %w", store.ErrUnavailable, err),
			"a running member's db is never edited: `etcdctl snapshot save copy.db` from the cluster, or stop every member first, then --db copy.db --out edited.db")
	case errors.Is(err, store.ErrMemberDir):
		return &refusedError{msg: err.Error(), hint: "write OUT outside any member's data directory; put it into the cluster with `etcdutl snapshot restore OUT` on every member"}
	case errors.Is(err, store.ErrOutputExists):
		return &refusedError{msg: err.Error(), hint: "give --out a new file name"}
	}
	return boltError(err)
}

// snapshotCopyOf returns the session's snapshot copy, or nil.
func snapshotCopyOf(s *session) *store.SnapshotCopy { return s.cs.SnapshotCopy() }

// finishSnapshotWrite, after a successful write, finishes a snapshot copy
// (sha256 trailer) and prints what to do with it. It returns false for a
// session that is not a snapshot copy.
func finishSnapshotWrite(e *env, s *session) (bool, error) {
	sc := snapshotCopyOf(s)
	if sc == nil {
		return false, nil
	}
	rev := sc.Meta().Revision
	if err := sc.Close(); err != nil {
		return true, err
	}
	fmt.Fprintf(e.stdout, "snapshot: %s (revision %d, sha256 %s); %s is unchanged\n", sc.Path(), rev, sc.SHA256(), sc.Input())
	fmt.Fprint(e.stdout, snapshotRunbook(sc.Path()))
	return true, nil
}

// snapshotRunbook is printed after a snapshot-surgery write.
func snapshotRunbook(out string) string {
	return fmt.Sprintf(`
Nothing in the cluster has changed yet. To make %[1]s the cluster's state
(see docs/runbooks/forensics.md, "Snapshot surgery"):
  1. check it:  etcdpvc --db %[1]s get ...   and   etcdutl snapshot status %[1]s
  2. stop kube-apiserver on every control-plane node, then stop etcd on EVERY member
     (kubeadm: move kube-apiserver.yaml and etcd.yaml out of /etc/kubernetes/manifests)
  3. on EVERY member, from the SAME file, into a new data dir (keep the old one to roll back):
       etcdutl snapshot restore %[1]s --data-dir /var/lib/etcd-restored \
         --name MEMBER --initial-cluster NAME1=https://IP1:2380,... \
         --initial-advertise-peer-urls https://MEMBER_IP:2380 \
         --bump-revision 1000000000 --mark-compacted
     (--bump-revision/--mark-compacted: clients such as kube-apiserver's watch cache
     have seen revisions up to the cluster's last one; the bump keeps revisions
     moving forward and makes watchers re-list)
  4. point each member at the new data dir, start every member, then kube-apiserver
Never copy %[1]s into a member's data dir or restore it onto some members only:
members would diverge. Roll back: stop every member and start them on the old data dirs.
`, out)
}
