package flows

import (
	"fmt"
)

// SnapshotResult is a finished snapshot copy: the file written, and how
// to make it the cluster's state.
type SnapshotResult struct {
	// Path is the copy, Input the --db file it was made from (unchanged).
	Path, Input string
	// Revision is the copy's revision, FileSHA256 its sha256 (as
	// sha256sum prints it), TrailerSHA256 its trailer (the sha256 of all
	// but its last 32 bytes).
	Revision                  int64
	FileSHA256, TrailerSHA256 string
	// Runbook is the procedure to restore Path onto every member.
	Runbook string
}

// FinishSnapshot, after a successful write into a snapshot copy, finishes
// it (sha256 trailer, closed). It returns nil for a session that is not a
// snapshot copy.
func (s *Session) FinishSnapshot() (*SnapshotResult, error) {
	sc := s.SnapshotCopy()
	if sc == nil {
		return nil, nil
	}
	rev := sc.Meta().Revision
	if err := sc.Close(); err != nil {
		return nil, err
	}
	w := sc.Written()
	return &SnapshotResult{Path: sc.Path(), Input: sc.Input(), Revision: rev, FileSHA256: w.FileSHA256, TrailerSHA256: w.SHA256, Runbook: SnapshotRunbook(sc.Path())}, nil
}

// SnapshotRunbook is the procedure to make the snapshot file out the
// cluster's state.
func SnapshotRunbook(out string) string {
	return snapshotRunbook(out, `docs/runbooks/forensics.md, "Snapshot surgery"`)
}

// snapshotRunbook is SnapshotRunbook citing the runbook doc.
func snapshotRunbook(out, doc string) string {
	return fmt.Sprintf(`
Nothing in the cluster has changed yet. To make %[1]s the cluster's state
(see %[2]s):
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
`, out, doc)
}
