package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// copyWAL copies etcd's wal directory while etcd runs, as an operator
// would on a control-plane node.
func copyWAL(t *testing.T, c *Cluster) string {
	t.Helper()
	src := filepath.Join(c.Dir, "etcd-data", "member", "wal")
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
	path := filepath.Join(t.TempDir(), "snap.db")
	rc, err := c.Etcd.Snapshot(context.Background())
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
	lg := zap.NewNop()
	r, err := wal.OpenForRead(lg, src, &walpb.Snapshot{Index: new(uint64), Term: new(uint64)})
	if err != nil {
		t.Fatal(err)
	}
	meta, hs, ents, err := r.ReadAll()
	r.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read %s: %v", src, err)
	}
	i := 0
	for i < len(ents) && ents[i].GetIndex() < from {
		i++
	}
	if i == 0 || i == len(ents) {
		t.Fatalf("purge from %d: the log holds entries %d to %d", from, ents[0].GetIndex(), ents[len(ents)-1].GetIndex())
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
	if err := w.Save(hs, ents[i:]); err != nil {
		t.Fatal(err)
	}
	return dst
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
