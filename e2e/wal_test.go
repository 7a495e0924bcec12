package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// copyWAL copies etcd's wal directory while etcd runs, as an operator
// would on a control-plane node.
func copyWAL(t *testing.T, c *Cluster) string {
	t.Helper()
	return copyWALDir(t, filepath.Join(c.Dir, "etcd-data", "member", "wal"))
}

// copyWALDir copies the wal directory src, which etcd may be writing to,
// into a new temp dir.
func copyWALDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if os.IsNotExist(err) {
			continue // a preallocated segment renamed meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(out, in)
		in.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// saveSnapshot saves a snapshot of the member's db (etcdctl snapshot save).
func saveSnapshot(t *testing.T, c *Cluster) string {
	t.Helper()
	return saveSnapshotFrom(t, c.Etcd)
}

// saveSnapshotFrom saves a snapshot of the db of the member cli talks to.
func saveSnapshotFrom(t *testing.T, cli *clientv3.Client) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snap.db")
	rc, err := cli.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// purgeWAL writes a copy of a wal directory that starts at raft index
// from, as a member's log is after etcd snapshotted and purged the
// segments before it: etcd's own wal package reads the copy and writes the
// new log (a snapshot record at from-1, the entries from from on, the last
// hard state).
func purgeWAL(t *testing.T, src string, from uint64) string {
	t.Helper()
	return purgeWALRange(t, src, from, 0)
}

// purgeWALRange is purgeWAL of a log that also ends at raft index to (0:
// where src ends), as the log of a member stopped, or cut off from its
// peers, after it: its entries from from to to, and the last hard state
// with its commit index at most to.
func purgeWALRange(t *testing.T, src string, from, to uint64) string {
	t.Helper()
	lg := zap.NewNop()
	meta, hs, ents := readWAL(t, src)
	i := 0
	for i < len(ents) && ents[i].GetIndex() < from {
		i++
	}
	j := len(ents)
	if to > 0 {
		for j > i && ents[j-1].GetIndex() > to {
			j--
		}
		if hs.GetCommit() > to {
			hs = proto.Clone(hs).(*raftpb.HardState)
			hs.Commit = &to
		}
	}
	if i == 0 || i == j {
		t.Fatalf("purge from %d to %d: the log holds entries %d to %d", from, to, ents[0].GetIndex(), ents[len(ents)-1].GetIndex())
	}
	dst := filepath.Join(t.TempDir(), "wal")
	w, err := wal.Create(lg, dst, meta)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	index, term := ents[i-1].GetIndex(), ents[i-1].GetTerm()
	if err := w.SaveSnapshot(&walpb.Snapshot{Index: &index, Term: &term, ConfState: &raftpb.ConfState{}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Save(hs, ents[i:j]); err != nil {
		t.Fatal(err)
	}
	return dst
}

// readWAL reads a wal directory from its start with etcd's wal package:
// its metadata, last hard state and entries. A torn last record (the copy
// was taken while etcd wrote) ends the entries.
func readWAL(t *testing.T, src string) (meta []byte, hs *raftpb.HardState, ents []*raftpb.Entry) {
	t.Helper()
	r, err := wal.OpenForRead(zap.NewNop(), src, &walpb.Snapshot{Index: new(uint64), Term: new(uint64)})
	if err != nil {
		t.Fatal(err)
	}
	meta, hs, ents, err = r.ReadAll()
	r.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read %s: %v", src, err)
	}
	return meta, hs, ents
}

// TestRecoverFromWAL creates a PVC and a Secret (encrypted at rest)
// through the API, updates them, deletes them for good, then compacts and
// defragments etcd: etcd no longer holds them. Their writes are still in
// the member's write-ahead log, copied while etcd runs: the Secret is
// recovered from the log alone, the PVC from the log replayed over a
// snapshot of the db taken before its last update. The apiserver serves
// both with their uid and last values, and they can be updated.
func TestRecoverFromWAL(t *testing.T) {
	c := startCluster(t, "wal", ClusterOptions{})
	cfg := filepath.Join(c.Dir, "encryption-config.yaml")
	if err := os.WriteFile(cfg, []byte(encryptionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartAPIServer(ClusterOptions{EncryptionConfig: cfg}); err != nil {
		t.Fatalf("restart kube-apiserver with encryption at rest: %v", err)
	}
	const ns = "demo"
	c.EnsureNamespace(t, ns)
	ctx := context.Background()
	pvcs := c.Client.CoreV1().PersistentVolumeClaims(ns)
	secrets := c.Client.CoreV1().Secrets(ns)

	pvc, err := pvcs.Create(ctx, newPVC("wal-data", "local-disks", "5Gi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pvc: %v", err)
	}
	// Where a purged log will start: after the pvc was created.
	st, err := c.Etcd.Status(ctx, c.EtcdURL)
	if err != nil {
		t.Fatal(err)
	}
	logStart := st.RaftIndex + 1
	leadWrite(t, c, ns)
	secret, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "wal-creds", Labels: map[string]string{"app": "web"}},
		Data:       map[string][]byte{"password": []byte("first-test-value")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create secret: %v", err)
	}
	secret.Data["password"] = []byte("rotated-test-value")
	if secret, err = secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update secret: %v", err)
	}

	// A snapshot of the member's db, as a backup job takes them.
	snap := saveSnapshot(t, c)

	pvc.Labels["tier"] = "gold"
	if pvc, err = pvcs.Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update pvc: %v", err)
	}
	if err := secrets.Delete(ctx, "wal-creds", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete secret: %v", err)
	}
	if err := pvcs.Delete(ctx, "wal-data", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pvc: %v", err)
	}
	terminating, err := pvcs.Get(ctx, "wal-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	terminating.Finalizers = nil
	if _, err := pvcs.Update(ctx, terminating, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("remove the finalizer through the API: %v", err)
	}
	if _, err := pvcs.Get(ctx, "wal-data", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pvc after its finalizer was removed: %v, want not found", err)
	}
	resp, err := c.Etcd.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Etcd.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Etcd.Defragment(ctx, c.EtcdURL); err != nil {
		t.Fatal(err)
	}
	// etcd no longer holds them: live history cannot recover them.
	if r := c.etcdpvc(t, "recover", "pvc", "wal-data", "-n", ns, "--yes", "--backup-dir", t.TempDir()); r.code != 3 {
		t.Fatalf("recover from live history after compaction: want exit status 3:\n%s", r)
	}

	// The member's current db (an etcdctl snapshot save of it), then its
	// log: the deletions are in the db's compacted past.
	cur := saveSnapshot(t, c)
	wal := copyWAL(t, c)

	// The history the log holds, with raft indexes and outcomes.
	r := c.mustEtcdpvc(t, "--wal", wal, "--encryption-config", cfg, "history", "secret", "wal-creds", "-n", ns)
	if !strings.Contains(r.stdout, "applied") || !strings.Contains(r.stdout, "deleted") || strings.Contains(r.stdout, "rotated-test-value") {
		t.Errorf("history of the secret from the log:\n%s", r)
	}
	r = c.mustEtcdpvc(t, "--wal", wal, "--db", snap, "--encryption-config", cfg, "ls", "pvc", "--deleted", "-n", ns)
	if !strings.Contains(r.stdout, "wal-data") {
		t.Errorf("ls --deleted from the log over the snapshot:\n%s", r)
	}

	c.mustEtcdpvc(t, "--wal", wal, "--encryption-config", cfg, "recover", "secret", "wal-creds", "-n", ns, "--yes", "--backup-dir", t.TempDir())
	// The member's log as etcd leaves it after a raft snapshot (it starts
	// after the pvc's creation), with the member's current db: the log's
	// entries the db holds are worked out back from it.
	purged := purgeWAL(t, wal, logStart)
	r = c.mustEtcdpvc(t, "--wal", purged, "--db", cur, "--encryption-config", cfg, "ls", "pvc", "--deleted", "-n", ns)
	if !strings.Contains(r.stdout, "wal-data") || !strings.Contains(r.stderr, "worked out back from the db") || !strings.Contains(r.stderr, "object times: from about 20") {
		t.Errorf("ls --deleted from the purged log over the current db:\n%s", r)
	}
	r = c.mustEtcdpvc(t, "--wal", purged, "--db", cur, "--encryption-config", cfg, "history", "pvc", "wal-data", "-n", ns)
	if !strings.Contains(r.stdout, "+deletionTimestamp") || !strings.Contains(r.stdout, "deleted") || strings.Contains(r.stdout, "unknown") || strings.Contains(r.stdout, "in the db") {
		t.Errorf("history from the purged log over the current db:\n%s", r)
	}
	c.mustEtcdpvc(t, "--wal", purged, "--db", cur, "--encryption-config", cfg, "recover", "pvc", "wal-data", "-n", ns, "--yes", "--backup-dir", t.TempDir())

	if v := c.etcdGet(t, "/registry/secrets/demo/wal-creds").Value; storedPrefix(v) != aescbcPrefix {
		t.Errorf("the recovered secret is stored as %s, want %s", storedPrefix(v), aescbcPrefix)
	}
	var gotSecret *corev1.Secret
	eventually(t, "the apiserver serves the recovered secret", func() error {
		gotSecret, err = secrets.Get(ctx, "wal-creds", metav1.GetOptions{})
		return err
	})
	if gotSecret.UID != secret.UID || string(gotSecret.Data["password"]) != "rotated-test-value" {
		t.Errorf("recovered secret: uid %s (want %s), password %q", gotSecret.UID, secret.UID, gotSecret.Data["password"])
	}
	var gotPVC *corev1.PersistentVolumeClaim
	eventually(t, "the apiserver serves the recovered pvc", func() error {
		gotPVC, err = pvcs.Get(ctx, "wal-data", metav1.GetOptions{})
		return err
	})
	if gotPVC.UID != pvc.UID || gotPVC.Labels["tier"] != "gold" || gotPVC.DeletionTimestamp != nil {
		t.Errorf("recovered pvc: uid %s (want %s), labels %v, deletionTimestamp %v", gotPVC.UID, pvc.UID, gotPVC.Labels, gotPVC.DeletionTimestamp)
	}

	gotSecret.Labels["touched"] = "by-api"
	if _, err := secrets.Update(ctx, gotSecret, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an API Update of the recovered secret failed: %v", err)
	}
	gotPVC.Labels["touched"] = "by-api"
	if _, err := pvcs.Update(ctx, gotPVC, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an API Update of the recovered pvc failed: %v", err)
	}
}

// TestWALAgreesWithTheAPIServer drives a real kube-apiserver: ConfigMaps
// created, then (in the log a purge leaves) updated twice, some deleted,
// Events stored with a lease, a conflicting update refused by the
// apiserver; etcd is then compacted. Read from the purged log over an
// etcdctl snapshot of the member taken after all that, every write the log
// shows applied has the revision the apiserver returned as its
// resourceVersion, the deletions are there, and no write is left unknown.
func TestWALAgreesWithTheAPIServer(t *testing.T) {
	c := startCluster(t, "walapi", ClusterOptions{})
	const ns = "agree"
	c.EnsureNamespace(t, ns)
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(ns)
	const n = 8
	var objs []*corev1.ConfigMap
	for i := range n {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, cm)
	}
	st, err := c.Etcd.Status(ctx, c.EtcdURL)
	if err != nil {
		t.Fatal(err)
	}
	logStart := st.RaftIndex + 1
	// As in a member's real log, other writes come before the ones the
	// test follows: a ConfigMap written once and kept, which the db holds
	// (a first compare at the log's very start, with nothing the db holds
	// before it, may have failed for all the log and db tell).
	leadWrite(t, c, ns)

	// In the log: two updates each (their resourceVersions are the
	// revisions etcd gave them), a stale update the apiserver refuses,
	// Events (stored with a lease), deletions.
	applied := map[string][]string{}
	for round := 1; round <= 2; round++ {
		for i, cm := range objs {
			cm.Data["v"] = fmt.Sprint(round)
			got, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			objs[i] = got
			applied[got.Name] = append(applied[got.Name], got.ResourceVersion)
		}
	}
	stale := objs[0].DeepCopy()
	stale.ResourceVersion = applied["cm-0"][0]
	stale.Data["v"] = "stale"
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v, want a conflict", err)
	}
	for i := range 3 {
		if _, err := c.Client.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("ev-%d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "cm-0"},
			Reason:         "Test", Message: "walapi", Type: corev1.EventTypeNormal,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"cm-1", "cm-4", "cm-6"} {
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.Etcd.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Etcd.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	cur := saveSnapshot(t, c)
	purged := purgeWAL(t, copyWAL(t, c), logStart)

	r := c.mustEtcdpvc(t, "--wal", purged, "--db", cur, "ls", "configmaps", "-n", ns, "--deleted")
	for _, name := range []string{"cm-1", "cm-4", "cm-6"} {
		if !strings.Contains(r.stdout, name) {
			t.Errorf("ls --deleted: %s missing:\n%s", name, r)
		}
	}
	if !strings.Contains(r.stderr, "worked out back from the db") {
		t.Fatalf("the log's entries the db holds were not worked out:\n%s", r)
	}
	for i := range n {
		name := fmt.Sprintf("cm-%d", i)
		r := c.mustEtcdpvc(t, "--wal", purged, "--db", cur, "history", "configmap", name, "-n", ns, "-o", "json")
		var rep struct {
			Events []struct {
				Revision int64  `json:"revision"`
				Index    uint64 `json:"index"`
				Outcome  string `json:"outcome"`
				Deleted  bool   `json:"deleted"`
			} `json:"events"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("history %s: %v\n%s", name, err, r)
		}
		var got []string
		deleted := false
		for _, e := range rep.Events {
			switch {
			case e.Outcome == "unknown" || e.Index == 0:
				t.Errorf("history %s: a row unknown or not from the log: %+v", name, e)
			case e.Outcome == "applied" && e.Deleted:
				deleted = true
			case e.Outcome == "applied":
				got = append(got, fmt.Sprint(e.Revision))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(applied[name]) {
			t.Errorf("history %s: revisions %v from the log, the apiserver returned %v", name, got, applied[name])
		}
		if wantDeleted := name == "cm-1" || name == "cm-4" || name == "cm-6"; deleted != wantDeleted {
			t.Errorf("history %s: deleted %v, want %v", name, deleted, wantDeleted)
		}
	}
}

// walEntry is one entry of a member's log: its raft index and, for a
// normal entry that carries one, the request (nil for an empty entry or a
// conf change).
type walEntry struct {
	index uint64
	req   *pb.InternalRaftRequest
}

// walEntries decodes every entry of a wal directory.
func walEntries(t *testing.T, dir string) []walEntry {
	t.Helper()
	_, _, raw := readWAL(t, dir)
	out := make([]walEntry, 0, len(raw))
	for _, e := range raw {
		we := walEntry{index: e.GetIndex()}
		if e.GetType() == raftpb.EntryNormal && len(e.GetData()) > 0 {
			var req pb.InternalRaftRequest
			if err := proto.Unmarshal(e.GetData(), &req); err != nil {
				t.Fatalf("entry %d of %s: %v", e.GetIndex(), dir, err)
			}
			we.req = &req
		}
		out = append(out, we)
	}
	return out
}

// eventCreate reports whether req is the apiserver's create of an Event:
// a txn that puts a key under /registry/events/ if it does not exist. No
// later compare names the revision it makes (nothing updates an Event).
func eventCreate(req *pb.InternalRaftRequest) bool {
	txn := req.GetTxn()
	if txn == nil || len(txn.GetSuccess()) != 1 || len(txn.GetCompare()) == 0 {
		return false
	}
	put := txn.GetSuccess()[0].GetRequestPut()
	if put == nil || !strings.HasPrefix(string(put.GetKey()), "/registry/events/") {
		return false
	}
	for _, cmp := range txn.GetCompare() {
		if cmp.GetTarget() != pb.Compare_MOD || cmp.GetResult() != pb.Compare_EQUAL || cmp.GetModRevision() != 0 {
			return false
		}
	}
	return true
}

// putLeases returns the leases req's puts attach keys to.
func putLeases(req *pb.InternalRaftRequest) []int64 {
	var out []int64
	if p := req.GetPut(); p != nil && p.GetLease() != 0 {
		out = append(out, p.GetLease())
	}
	var ops func(txn *pb.TxnRequest)
	ops = func(txn *pb.TxnRequest) {
		for _, op := range append(append([]*pb.RequestOp{}, txn.GetSuccess()...), txn.GetFailure()...) {
			if p := op.GetRequestPut(); p != nil && p.GetLease() != 0 {
				out = append(out, p.GetLease())
			}
			if sub := op.GetRequestTxn(); sub != nil {
				ops(sub)
			}
		}
	}
	if txn := req.GetTxn(); txn != nil {
		ops(txn)
	}
	return out
}

// describeEntry says in a few words what an entry is, for the test's log.
func describeEntry(e walEntry) string {
	r := e.req
	switch {
	case r == nil:
		return "no request"
	case eventCreate(r):
		return "create " + string(r.GetTxn().GetSuccess()[0].GetRequestPut().GetKey())
	case r.GetLeaseGrant() != nil:
		return fmt.Sprintf("lease grant %x", r.GetLeaseGrant().GetID())
	case r.GetLeaseRevoke() != nil:
		return fmt.Sprintf("lease revoke %x", r.GetLeaseRevoke().GetID())
	case r.GetTxn() != nil:
		var keys []string
		for _, op := range r.GetTxn().GetSuccess() {
			switch {
			case op.GetRequestPut() != nil:
				keys = append(keys, "put "+string(op.GetRequestPut().GetKey()))
			case op.GetRequestDeleteRange() != nil:
				keys = append(keys, "delete "+string(op.GetRequestDeleteRange().GetKey()))
			case op.GetRequestRange() != nil:
				keys = append(keys, "range "+string(op.GetRequestRange().GetKey()))
			}
		}
		return "txn: " + strings.Join(keys, ", ")
	case r.GetPut() != nil:
		return "put " + string(r.GetPut().GetKey())
	case r.GetDeleteRange() != nil:
		return "delete " + string(r.GetDeleteRange().GetKey())
	case r.GetCompaction() != nil:
		return fmt.Sprintf("compaction at %d", r.GetCompaction().GetRevision())
	}
	return "other request"
}

// describeEntries says what entries are, one a line.
func describeEntries(ents []walEntry) string {
	var b strings.Builder
	for _, e := range ents {
		fmt.Fprintf(&b, "  %d: %s\n", e.index, describeEntry(e))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// cutBeforeRevoke finds in ents the first revoke, after raft index after,
// of one of leases, and the run of Event creates (and lease grants) right
// before it, at most 5 entries: a purged log that starts at ents[cut]
// holds, before that revoke, only writes no later compare names. why says
// what is missing when there is no such run.
func cutBeforeRevoke(ents []walEntry, leases map[int64]bool, after uint64) (rev, cut int, why string) {
	rev = slices.IndexFunc(ents, func(e walEntry) bool {
		return e.index > after && leases[e.req.GetLeaseRevoke().GetID()]
	})
	if rev < 0 {
		return -1, -1, fmt.Sprintf("no revoke of the leases %x in the log", slices.Sorted(maps.Keys(leases)))
	}
	id := ents[rev].req.GetLeaseRevoke().GetID()
	cut = rev
	for cut > 0 && rev-cut < 5 && ents[cut-1].index > after && ents[cut-1].req.GetLeaseGrant().GetID() != id &&
		(eventCreate(ents[cut-1].req) || ents[cut-1].req.GetLeaseGrant() != nil) {
		cut--
	}
	for _, e := range ents[cut:rev] {
		if eventCreate(e.req) {
			return rev, cut, ""
		}
	}
	return rev, cut, fmt.Sprintf("the revoke of lease %x at %d does not follow Event creates:\n%s",
		id, ents[rev].index, describeEntries(ents[max(0, cut-3):min(len(ents), rev+3)]))
}

// raftIndex is the member's raft index now.
func raftIndex(t *testing.T, c *Cluster) uint64 {
	t.Helper()
	st, err := c.Etcd.Status(context.Background(), c.EtcdURL)
	if err != nil {
		t.Fatal(err)
	}
	return st.RaftIndex
}

// leaseTTL is the seconds a lease has left, -1 once etcd revoked it.
func leaseTTL(t *testing.T, c *Cluster, id int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Etcd.TimeToLive(ctx, clientv3.LeaseID(id))
	if err != nil {
		t.Fatalf("lease %x: %v", id, err)
	}
	return resp.TTL
}

// walEventTTL is the --event-ttl of TestWALPurgedWithEarlyRevoke's
// kube-apiserver. It stores each Event with an etcd lease of that TTL plus
// 5% (1s), reused for the Events it creates within that 1s; etcd's lessor
// revokes a lease when it expires, through a LeaseRevoke entry in the log.
const walEventTTL = 20 * time.Second

// TestWALPurgedWithEarlyRevoke is the issue "WAL recovery in the real
// case": a member's log purged after a raft snapshot, with near its start
// the revoke of a lease granted before it (an Event's lease expiring, as
// they do all day long on a real cluster). Whether that revoke deleted keys
// (made a revision) cannot be read from the log; nothing in the log
// between its start and the revoke is named by a later compare.
//
// A ConfigMap, a Secret and a PVC (encrypted at rest) are created, then
// Events stored with one lease; when that lease is about to expire, Events
// are created every 50ms until etcd revokes it. The log is cut a few
// entries before the revoke, at the first of a run of Event creates. After
// the revoke the three objects are updated and deleted, other writes made,
// etcd compacted and defragmented, its db saved (etcdctl snapshot save)
// and its log copied. Read from the purged log over that db, the
// deletions are listed, their history has the update and the deletion
// applied with revisions, every object is recovered, and the apiserver
// serves each with its uid and last values and accepts an update.
func TestWALPurgedWithEarlyRevoke(t *testing.T) {
	began := time.Now()
	cfg := filepath.Join(t.TempDir(), "encryption-config.yaml")
	if err := os.WriteFile(cfg, []byte(encryptionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "walrevoke", ClusterOptions{
		EncryptionConfig: cfg,
		APIServerFlags:   []string{"--event-ttl=" + walEventTTL.String()},
	})
	t.Logf("cluster started in %s", time.Since(began).Round(time.Second))
	const ns = "revoke"
	c.EnsureNamespace(t, ns)
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(ns)
	secrets := c.Client.CoreV1().Secrets(ns)
	pvcs := c.Client.CoreV1().PersistentVolumeClaims(ns)
	events := c.Client.CoreV1().Events(ns)

	// Before the log: the three objects.
	cm, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "rv-config", Labels: map[string]string{"app": "web"}},
		Data:       map[string]string{"mode": "first"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	secret, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "rv-creds", Labels: map[string]string{"app": "web"}},
		Data:       map[string][]byte{"password": []byte("first-test-value")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create secret: %v", err)
	}
	pvc, err := pvcs.Create(ctx, newPVC("rv-data", "local-disks", "5Gi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pvc: %v", err)
	}
	created := raftIndex(t, c)

	newEvent := func(name string) error {
		_, err := events.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "rv-config", UID: cm.UID},
			Reason:         "Test", Message: "walrevoke", Type: corev1.EventTypeNormal,
		}, metav1.CreateOptions{})
		return err
	}
	// Still before the log: Events stored with a lease (one, unless the
	// burst straddles the apiserver's 1s of reuse). When it is about to
	// expire, Events are created every 50ms (each second's on a lease
	// granted by then) until etcd has revoked it. The log will start a few
	// entries before that revoke, at the first of the Event creates right
	// before it; should the apiserver have written something else there
	// (its own Lease object, say), the round is played again.
	var (
		rev, cut  int // in ents: the revoke, the purged log's first entry
		ents      []walEntry
		revokedID int64
		revoked   time.Time
	)
	const rounds = 3
	for round := 1; ; round++ {
		early := map[int64]bool{}
		for i := range 3 {
			name := fmt.Sprintf("early-%d-%d", round, i)
			if err := newEvent(name); err != nil {
				t.Fatalf("create event: %v", err)
			}
			id := c.etcdGet(t, "/registry/events/"+ns+"/"+name).Lease
			if id == 0 {
				t.Fatalf("setup: event %s is stored without a lease", name)
			}
			early[id] = true
		}
		deadline := time.Now().Add(walEventTTL + 30*time.Second)
		for {
			left := int64(-1)
			for id := range early {
				if ttl := leaseTTL(t, c, id); left < 0 || (ttl >= 0 && ttl < left) {
					left = ttl
				}
			}
			if left <= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("setup: the Events' leases still have %ds to live", left)
			}
			time.Sleep(200 * time.Millisecond)
		}
		genCtx, stopGen := context.WithCancel(ctx)
		genDone := make(chan error, 1)
		go func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-genCtx.Done():
					genDone <- nil
					return
				case <-tick.C:
				}
				if err := newEvent(fmt.Sprintf("tick-%d-%d", round, i)); err != nil {
					genDone <- err
					return
				}
			}
		}()
		for {
			alive := 0
			for id := range early {
				if leaseTTL(t, c, id) >= 0 {
					alive++
				}
			}
			if alive == 0 {
				break
			}
			if time.Now().After(deadline) {
				stopGen()
				<-genDone
				t.Fatalf("setup: %d of the Events' leases not revoked by etcd in time", alive)
			}
			time.Sleep(50 * time.Millisecond)
		}
		stopGen()
		if err := <-genDone; err != nil {
			t.Fatalf("create events: %v", err)
		}
		revoked = time.Now()
		ents = walEntries(t, copyWAL(t, c))
		var why string
		if rev, cut, why = cutBeforeRevoke(ents, early, created); why == "" {
			revokedID = ents[rev].req.GetLeaseRevoke().GetID()
			break
		}
		if round == rounds {
			t.Fatalf("setup: round %d: %s", round, why)
		}
		t.Logf("round %d: %s; once more", round, why)
	}
	from, revIndex := ents[cut].index, ents[rev].index
	granted := uint64(0)
	for _, e := range ents[:rev] {
		if e.req.GetLeaseGrant().GetID() == revokedID {
			granted = e.index
		}
	}

	// In the log, after the revoke: the three objects updated, then
	// deleted; other writes; etcd compacted past the deletions.
	cm.Labels["stage"] = "updated"
	cm.Data["mode"] = "second"
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update configmap: %v", err)
	}
	secret.Labels["stage"] = "updated"
	secret.Data["password"] = []byte("rotated-test-value")
	if secret, err = secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update secret: %v", err)
	}
	pvc.Labels["tier"] = "gold"
	if pvc, err = pvcs.Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update pvc: %v", err)
	}
	updateRV := map[string]int64{"rv-config": rv(t, cm.ResourceVersion), "rv-creds": rv(t, secret.ResourceVersion), "rv-data": rv(t, pvc.ResourceVersion)}
	if err := cms.Delete(ctx, "rv-config", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete configmap: %v", err)
	}
	if err := secrets.Delete(ctx, "rv-creds", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete secret: %v", err)
	}
	if err := pvcs.Delete(ctx, "rv-data", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pvc: %v", err)
	}
	terminating, err := pvcs.Get(ctx, "rv-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	terminating.Finalizers = nil
	if _, err := pvcs.Update(ctx, terminating, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("remove the pvc's finalizer through the API: %v", err)
	}
	if _, err := pvcs.Get(ctx, "rv-data", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pvc after its finalizer was removed: %v, want not found", err)
	}
	other, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rv-other"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		other.Data["n"] = fmt.Sprint(i)
		if other, err = cms.Update(ctx, other, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.Etcd.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Etcd.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Etcd.Defragment(ctx, c.EtcdURL); err != nil {
		t.Fatal(err)
	}
	cur := saveSnapshot(t, c)
	walDir := copyWAL(t, c)
	t.Logf("db saved and log copied %s after the revoke", time.Since(revoked).Round(time.Millisecond))

	// The log as the member holds it now, from the cut: the revokes in it
	// of leases it neither grants nor attaches a key to before them may or
	// may not have made a revision.
	ents = walEntries(t, walDir)
	inLog := map[int64]bool{}
	var uncertain []string
	start := slices.IndexFunc(ents, func(e walEntry) bool { return e.index == from })
	if start < 0 || start+rev-cut >= len(ents) || ents[start+rev-cut].index != revIndex {
		t.Fatalf("setup: the log copied last does not hold entries %d to %d", from, revIndex)
	}
	for _, e := range ents[start:] {
		if id := e.req.GetLeaseGrant().GetID(); id != 0 {
			inLog[id] = true
		}
		if id := e.req.GetLeaseRevoke().GetID(); id != 0 && !inLog[id] {
			uncertain = append(uncertain, fmt.Sprintf("%d (lease %x)", e.index, id))
		}
		for _, id := range putLeases(e.req) {
			inLog[id] = true
		}
	}
	t.Logf("the purged log starts at raft index %d, %d entries before the revoke at %d of lease %x (granted at %d, before the log; the objects were created by %d); it ends at %d; its revokes of leases from before it: %s\n%s",
		from, rev-cut, revIndex, revokedID, granted, created, ents[len(ents)-1].index, strings.Join(uncertain, ", "),
		describeEntries(ents[max(0, start-3):min(len(ents), start+rev-cut+3)]))
	purged := purgeWAL(t, walDir, from)

	base := []string{"--wal", purged, "--db", cur, "--encryption-config", cfg}
	run := func(args ...string) result {
		t.Helper()
		return c.etcdpvc(t, append(append([]string{}, base...), args...)...)
	}
	objs := []struct {
		kind, plural, name, key, prefix string
	}{
		{"configmap", "configmaps", "rv-config", "/registry/configmaps/" + ns + "/rv-config", aesgcmPrefix},
		{"secret", "secrets", "rv-creds", "/registry/secrets/" + ns + "/rv-creds", aescbcPrefix},
		{"pvc", "pvc", "rv-data", "/registry/persistentvolumeclaims/" + ns + "/rv-data", secretboxPrefix},
	}

	t.Run("coverage", func(t *testing.T) {
		r := run("ls", "configmaps", "--deleted", "-n", ns)
		if strings.Contains(r.stderr, "outcomes and revisions not established") || !strings.Contains(r.stderr, "worked out back from the db") {
			t.Errorf("the log's entries the db holds are not worked out back from it:\n%s", r)
		}
	})
	t.Run("ls", func(t *testing.T) {
		for _, o := range objs {
			// The revoke of the Events' lease, granted before the log, may
			// have deleted keys the log never names (the db compacted
			// their deletions away): the listing says so and is
			// incomplete (exit 10), and still lists what it can name.
			r := run("ls", o.plural, "--deleted", "-n", ns)
			if r.code != 10 || !strings.Contains(r.stdout, o.name) || !strings.Contains(r.stderr, "a lease revoke, may have deleted keys attached to lease") {
				t.Errorf("ls %s --deleted: want exit status 10, %s listed and the revoke named as one that may have deleted keys the log never names:\n%s", o.plural, o.name, r)
			}
		}
	})
	t.Run("history", func(t *testing.T) {
		for _, o := range objs {
			r := run("history", o.kind, o.name, "-n", ns, "-o", "json")
			if r.code != 0 {
				t.Errorf("history %s: want exit status 0:\n%s", o.name, r)
				continue
			}
			var rep struct {
				Events []struct {
					Revision int64  `json:"revision"`
					Index    uint64 `json:"index"`
					Outcome  string `json:"outcome"`
					Reason   string `json:"reason"`
					Deleted  bool   `json:"deleted"`
				} `json:"events"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Errorf("history %s: %v\n%s", o.name, err, r)
				continue
			}
			var update, deletion bool
			var unknown int
			var rows []string
			for _, e := range rep.Events {
				rows = append(rows, fmt.Sprintf("  entry %d: %s, revision %d, deleted %v %s", e.Index, e.Outcome, e.Revision, e.Deleted, e.Reason))
				switch {
				case e.Outcome == "unknown":
					unknown++
				case e.Outcome == "applied" && !e.Deleted && e.Revision == updateRV[o.name]:
					update = true
				case e.Outcome == "applied" && e.Deleted && e.Revision > updateRV[o.name]:
					deletion = true
				}
			}
			if unknown > 0 || !update || !deletion {
				t.Errorf("history %s: %d rows unknown; the update applied at revision %d: %v; the deletion applied after it: %v; rows:\n%s\n--- stderr:\n%s",
					o.name, unknown, updateRV[o.name], update, deletion, strings.Join(rows, "\n"), r.stderr)
			}
		}
	})
	recovered := t.Run("recover", func(t *testing.T) {
		for _, o := range objs {
			if r := run("recover", o.kind, o.name, "-n", ns, "--yes", "--backup-dir", t.TempDir()); r.code != 0 {
				t.Errorf("recover %s: want exit status 0:\n%s", o.name, r)
			}
		}
	})
	if !recovered {
		t.FailNow()
	}

	for _, o := range objs {
		if p := storedPrefix(c.etcdGet(t, o.key).Value); p != o.prefix {
			t.Errorf("the recovered %s is stored as %s, want %s", o.kind, p, o.prefix)
		}
	}
	var gotCM *corev1.ConfigMap
	eventually(t, "the apiserver serves the recovered configmap", func() error {
		gotCM, err = cms.Get(ctx, "rv-config", metav1.GetOptions{})
		return err
	})
	if gotCM.UID != cm.UID || gotCM.Labels["stage"] != "updated" || gotCM.Data["mode"] != "second" {
		t.Errorf("recovered configmap: uid %s (want %s), labels %v, data %v", gotCM.UID, cm.UID, gotCM.Labels, gotCM.Data)
	}
	var gotSecret *corev1.Secret
	eventually(t, "the apiserver serves the recovered secret", func() error {
		gotSecret, err = secrets.Get(ctx, "rv-creds", metav1.GetOptions{})
		return err
	})
	if gotSecret.UID != secret.UID || gotSecret.Labels["stage"] != "updated" || string(gotSecret.Data["password"]) != "rotated-test-value" {
		t.Errorf("recovered secret: uid %s (want %s), labels %v, password %q", gotSecret.UID, secret.UID, gotSecret.Labels, gotSecret.Data["password"])
	}
	var gotPVC *corev1.PersistentVolumeClaim
	eventually(t, "the apiserver serves the recovered pvc", func() error {
		gotPVC, err = pvcs.Get(ctx, "rv-data", metav1.GetOptions{})
		return err
	})
	if gotPVC.UID != pvc.UID || gotPVC.Labels["tier"] != "gold" || gotPVC.DeletionTimestamp != nil {
		t.Errorf("recovered pvc: uid %s (want %s), labels %v, deletionTimestamp %v", gotPVC.UID, pvc.UID, gotPVC.Labels, gotPVC.DeletionTimestamp)
	}

	gotCM.Labels["touched"] = "by-api"
	if _, err := cms.Update(ctx, gotCM, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an API Update of the recovered configmap failed: %v", err)
	}
	gotSecret.Labels["touched"] = "by-api"
	if _, err := secrets.Update(ctx, gotSecret, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an API Update of the recovered secret failed: %v", err)
	}
	gotPVC.Labels["touched"] = "by-api"
	if _, err := pvcs.Update(ctx, gotPVC, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an API Update of the recovered pvc failed: %v", err)
	}
	t.Logf("took %s", time.Since(began).Round(time.Second))
}

// leadWrite creates a ConfigMap in ns that nothing writes again: in a
// member's real log, other objects' writes come before those a test
// follows, and the db holds their values.
func leadWrite(t *testing.T, c *Cluster, ns string) {
	t.Helper()
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "lead"}, Data: map[string]string{"kept": "yes"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the lead configmap: %v", err)
	}
}
