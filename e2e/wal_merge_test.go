package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// historyRow is one event of `etcdpvc history -o json`.
type historyRow struct {
	Revision int64  `json:"revision"`
	Index    uint64 `json:"index"`
	Outcome  string `json:"outcome"`
	Reason   string `json:"reason"`
	Deleted  bool   `json:"deleted"`
}

// historyRows decodes the events of a `history -o json` run.
func historyRows(r result) ([]historyRow, error) {
	var rep struct {
		Events []historyRow `json:"events"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		return nil, err
	}
	return rep.Events, nil
}

// describeRows is rows one a line, for a failure message.
func describeRows(rows []historyRow) string {
	var b strings.Builder
	for _, e := range rows {
		fmt.Fprintf(&b, "  entry %d: %s, revision %d, deleted %v %s\n", e.Index, e.Outcome, e.Revision, e.Deleted, e.Reason)
	}
	return b.String()
}

// keyWrites returns the entries of ents whose txn (or put or delete) names
// key among the operations it runs when its compares hold.
func keyWrites(ents []walEntry, key string) []walEntry {
	var out []walEntry
	for _, e := range ents {
		r := e.req
		if r == nil {
			continue
		}
		hit := string(r.GetPut().GetKey()) == key || string(r.GetDeleteRange().GetKey()) == key
		for _, op := range r.GetTxn().GetSuccess() {
			hit = hit || string(op.GetRequestPut().GetKey()) == key || string(op.GetRequestDeleteRange().GetKey()) == key
		}
		if hit {
			out = append(out, e)
		}
	}
	return out
}

// walSpan is the first and last raft index of the entries in a wal dir
// that may start after a raft snapshot (a purged log), read with etcd's
// wal package from the last snapshot record it holds (wal.Create writes
// one at index 0 first).
func walSpan(t *testing.T, dir string) (first, last uint64) {
	t.Helper()
	snaps, err := wal.ValidSnapshotEntries(zap.NewNop(), dir)
	if err != nil || len(snaps) == 0 {
		t.Fatalf("the snapshot records of %s: %v (%d)", dir, err, len(snaps))
	}
	r, err := wal.OpenForRead(zap.NewNop(), dir, snaps[len(snaps)-1])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, _, ents, err := r.ReadAll()
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	if len(ents) == 0 {
		t.Fatalf("%s holds no entries", dir)
	}
	return ents[0].GetIndex(), ents[len(ents)-1].GetIndex()
}

// TestWALMergedFromThreeMembers reads the logs of a three-member etcd,
// each member's copy purged at a different raft index (the members
// snapshotted at different times) and one of them ending early (that
// member stopped, or was cut off from its peers, before the deletions): no
// one copy holds both the writes of the objects' last values and their
// deletions; the merged log does.
//
// A ConfigMap, a Secret and a PVC (encrypted at rest) are created, updated
// (the PVC also deleted: Terminating, held by its finalizer), then, after
// writes to another ConfigMap, deleted for good, and more writes made; etcd
// is compacted and one member defragmented, and a snapshot of its db is the
// current db. Member 1's copy holds the entries from just after the
// creates to just before the deletions; member 2's from after the updates
// on; member 3's from after the deletions on. Read alone over the db, none
// establishes the recovery: member 1's copy ends before the db (refused),
// member 2's and 3's lack the updates, and recover --dry-run exits non-zero
// with each. Merged (--wal three times, in several orders), the log is read
// from member 1's first entry, the deletions are listed, the history has
// the writes of each object's last values and its deletion applied at the
// resourceVersions the apiserver returned, and recover brings each object
// back: served with its uid and last data and labels, stored encrypted, and
// updated through the API. Logs of two different clusters are refused.
func TestWALMergedFromThreeMembers(t *testing.T) {
	began := time.Now()
	cfg := filepath.Join(t.TempDir(), "encryption-config.yaml")
	if err := os.WriteFile(cfg, []byte(encryptionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "walmerge", ClusterOptions{EncryptionConfig: cfg, EtcdMembers: 3})
	t.Logf("cluster of %d etcd members started in %s", len(c.Members), time.Since(began).Round(time.Millisecond))
	const ns = "merge"
	c.EnsureNamespace(t, ns)
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(ns)
	secrets := c.Client.CoreV1().Secrets(ns)
	pvcs := c.Client.CoreV1().PersistentVolumeClaims(ns)

	// Before every copy: the three objects.
	cm, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "mg-config", Labels: map[string]string{"app": "web"}},
		Data:       map[string]string{"mode": "first"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	secret, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "mg-creds", Labels: map[string]string{"app": "web"}},
		Data:       map[string][]byte{"password": []byte("first-test-value")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create secret: %v", err)
	}
	pvc, err := pvcs.Create(ctx, newPVC("mg-data", "local-disks", "5Gi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pvc: %v", err)
	}
	// A ConfigMap nothing writes again: the merged log's first entry
	// (see leadWrite).
	leadWrite(t, c, ns)
	// The apiserver's watch of each, from its creation: the DELETED event
	// carries the revision of the deletion as its resourceVersion.
	watchOf := func(name, rv string, w func(context.Context, metav1.ListOptions) (watch.Interface, error)) watch.Interface {
		t.Helper()
		wi, err := w(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: rv})
		if err != nil {
			t.Fatalf("watch %s: %v", name, err)
		}
		t.Cleanup(wi.Stop)
		return wi
	}
	watches := map[string]watch.Interface{
		"mg-config": watchOf("mg-config", cm.ResourceVersion, cms.Watch),
		"mg-creds":  watchOf("mg-creds", secret.ResourceVersion, secrets.Watch),
		"mg-data":   watchOf("mg-data", pvc.ResourceVersion, pvcs.Watch),
	}

	// The updates: only member 1's copy will hold them.
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
	// The PVC's Delete is an update too (its finalizer keeps it, with a
	// deletionTimestamp): that put holds its last value, so it goes with
	// the updates.
	if err := pvcs.Delete(ctx, "mg-data", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pvc: %v", err)
	}
	terminating, err := pvcs.Get(ctx, "mg-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if terminating.DeletionTimestamp == nil {
		t.Fatalf("setup: the deleted pvc is not Terminating")
	}
	// The revisions of the writes that hold each object's last values, as
	// the apiserver returned them.
	valueRVs := map[string][]int64{
		"mg-config": {rv(t, cm.ResourceVersion)},
		"mg-creds":  {rv(t, secret.ResourceVersion)},
		"mg-data":   {rv(t, pvc.ResourceVersion), rv(t, terminating.ResourceVersion)},
	}

	// Writes of another object between the updates and the deletions (where
	// member 1's copy ends and member 2's starts), and after the deletions
	// (where member 3's starts).
	other, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mg-other"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bump := func(times int) {
		t.Helper()
		for range times {
			other.Data["n"] = fmt.Sprint(rv(t, other.ResourceVersion))
			if other, err = cms.Update(ctx, other, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	bump(4)

	// The deletions: only members 2's and 3's copies will hold them.
	if err := cms.Delete(ctx, "mg-config", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete configmap: %v", err)
	}
	if err := secrets.Delete(ctx, "mg-creds", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete secret: %v", err)
	}
	terminating.Finalizers = nil
	if _, err := pvcs.Update(ctx, terminating, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("remove the pvc's finalizer through the API: %v", err)
	}
	if _, err := pvcs.Get(ctx, "mg-data", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pvc after its finalizer was removed: %v, want not found", err)
	}
	deleteRV := map[string]int64{}
	for name, w := range watches {
		for deleteRV[name] == 0 {
			ev := nextEvent(t, w, "watch "+name)
			switch ev.Type {
			case watch.Deleted:
				m, err := meta.Accessor(ev.Object)
				if err != nil {
					t.Fatalf("watch %s: %v", name, err)
				}
				deleteRV[name] = rv(t, m.GetResourceVersion())
			case watch.Error:
				t.Fatalf("watch %s: %v", name, apierrors.FromObject(ev.Object))
			}
		}
		w.Stop()
	}
	bump(3)

	// etcd compacted past the deletions, one member defragmented, a
	// snapshot of its db saved: the current db.
	m1 := c.Members[0]
	cli1 := c.memberClient(t, m1)
	resp, err := cli1.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli1.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli1.Defragment(ctx, m1.ClientURL); err != nil {
		t.Fatal(err)
	}
	cur := saveSnapshotFrom(t, cli1)
	// The members' logs, copied once they have all applied as much.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var applied []uint64
		for _, m := range c.Members {
			st, err := c.Etcd.Status(ctx, m.ClientURL)
			if err != nil {
				t.Fatalf("status of %s: %v", m.Name, err)
			}
			applied = append(applied, st.RaftAppliedIndex)
		}
		if slices.Min(applied) == slices.Max(applied) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("setup: the members' applied indexes %v do not meet", applied)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var full []string
	for _, m := range c.Members {
		full = append(full, copyWALDir(t, filepath.Join(m.DataDir, "member", "wal")))
	}

	// Where the writes are in the log (every member's holds the same
	// entries): the cuts fall between them.
	ents := walEntries(t, full[0])
	objs := []struct {
		kind, plural, name, key, prefix string
	}{
		{"configmap", "configmaps", "mg-config", "/registry/configmaps/" + ns + "/mg-config", aesgcmPrefix},
		{"secret", "secrets", "mg-creds", "/registry/secrets/" + ns + "/mg-creds", aescbcPrefix},
		{"pvc", "pvc", "mg-data", "/registry/persistentvolumeclaims/" + ns + "/mg-data", secretboxPrefix},
	}
	others := keyWrites(ents, "/registry/configmaps/"+ns+"/mg-other")
	if len(others) < 8 {
		t.Fatalf("setup: %d writes of mg-other in the log, want 8 (a create, 7 updates):\n%s", len(others), describeEntries(others))
	}
	lastCreate := uint64(0)
	for _, o := range objs {
		w := keyWrites(ents, o.key)
		if len(w) < 3 {
			t.Fatalf("setup: %d writes of %s in the log:\n%s", len(w), o.key, describeEntries(w))
		}
		lastCreate = max(lastCreate, w[0].index)
		// Its updates before mg-other's first write, its deletion between
		// mg-other's fifth and sixth.
		for _, e := range w[1:] {
			if e.index >= others[0].index && (e.index <= others[4].index || e.index >= others[5].index) {
				t.Fatalf("setup: a write of %s at %d, not between the writes of mg-other it should fall between:\n%s\nmg-other:\n%s", o.key, e.index, describeEntries(w), describeEntries(others))
			}
		}
		if last := w[len(w)-1].index; last < others[4].index {
			t.Fatalf("setup: the last write of %s, at %d, is before mg-other's fifth:\n%s\nmg-other:\n%s", o.key, last, describeEntries(w), describeEntries(others))
		}
	}
	// Member 1: from just after the creates to the last write before the
	// deletions. Member 2: from the second write of mg-other (after the
	// updates) on. Member 3: from the first write after the deletions on.
	b, x := lastCreate+1, others[4].index
	mid, late := others[1].index, others[5].index
	copies := []string{
		purgeWALRange(t, full[0], b, x),
		purgeWAL(t, full[1], mid),
		purgeWAL(t, full[2], late),
	}
	var spans []string
	for i, dir := range copies {
		first, last := walSpan(t, dir)
		spans = append(spans, fmt.Sprintf("%s: %d to %d", c.Members[i].Name, first, last))
		if want := []uint64{b, mid, late}[i]; first != want || (i == 0 && last != x) {
			t.Fatalf("setup: %s's copy holds entries %d to %d, want from %d", c.Members[i].Name, first, last, want)
		}
	}
	end := ents[len(ents)-1].index
	t.Logf("the objects were created by raft index %d; the copies hold entries %s; the full log ends at %d\n%s",
		lastCreate, strings.Join(spans, ", "), end, describeEntries(slices.DeleteFunc(slices.Clone(ents), func(e walEntry) bool { return e.index < b })))

	run := func(wals []string, args ...string) result {
		t.Helper()
		var flags []string
		for _, w := range wals {
			flags = append(flags, "--wal", w)
		}
		flags = append(flags, "--db", cur, "--encryption-config", cfg)
		return c.etcdpvc(t, append(flags, args...)...)
	}
	// history's verdict on one object: whether the writes of its last
	// values are applied at the revisions the apiserver returned and its
	// deletion at the revision its watch sent, and the rows left unknown.
	verdict := func(wals []string, kind, name string) (values, deletion bool, unknown int, r result, rows []historyRow) {
		t.Helper()
		r = run(wals, "history", kind, name, "-n", ns, "-o", "json")
		if r.code != 0 && r.code != 10 {
			// 10: rows whose outcome is not established, counted below.
			return false, false, 0, r, nil
		}
		rows, err := historyRows(r)
		if err != nil {
			t.Fatalf("history %s: %v\n%s", name, err, r)
		}
		held := 0
		for _, e := range rows {
			switch {
			case e.Outcome == "unknown":
				unknown++
			case e.Outcome == "applied" && !e.Deleted && slices.Contains(valueRVs[name], e.Revision):
				held++
			case e.Outcome == "applied" && e.Deleted && e.Revision == deleteRV[name]:
				deletion = true
			}
		}
		return held == len(valueRVs[name]), deletion, unknown, r, rows
	}

	// errorLine is the error a run printed, if any.
	errorLine := func(r result) string {
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.HasPrefix(l, "etcdpvc: error: ") {
				return l
			}
		}
		return "(no error)"
	}
	t.Run("each copy alone", func(t *testing.T) {
		for i, dir := range copies {
			wals := []string{dir}
			for _, o := range objs {
				values, deletion, _, r, rows := verdict(wals, o.kind, o.name)
				if values && deletion {
					t.Errorf("%s's copy alone has %s's last values (revisions %v) and its deletion (revision %d) applied: the cuts do not make the merge necessary:\n%s", c.Members[i].Name, o.name, valueRVs[o.name], deleteRV[o.name], r)
				}
				dry := run(wals, "recover", o.kind, o.name, "-n", ns, "--dry-run")
				if dry.code == 0 {
					t.Errorf("%s's copy alone lacks the last values or the deletion of %s, yet recover --dry-run exits 0:\n%s", c.Members[i].Name, o.name, dry)
				}
				t.Logf("%s alone, %s: history exit %d, last values applied %v, deletion applied %v, rows:\n%s  recover --dry-run exit %d: %s",
					c.Members[i].Name, o.name, r.code, values, deletion, describeRows(rows), dry.code, errorLine(dry))
			}
		}
	})

	// The merged logs, given in different orders: each copy is needed,
	// wherever it comes.
	inOrder := func(order ...int) []string {
		var out []string
		for _, i := range order {
			out = append(out, copies[i])
		}
		return out
	}
	t.Run("coverage", func(t *testing.T) {
		r := run(inOrder(0, 1, 2), "ls", "configmaps", "--deleted", "-n", ns)
		if want := fmt.Sprintf("raft entries %d (", b); r.code != 0 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "worked out back from the db") {
			t.Errorf("the merged logs: want them read from raft entry %d on, and worked out back from the db:\n%s", b, r)
		}
	})
	t.Run("ls", func(t *testing.T) {
		for _, o := range objs {
			r := run(inOrder(0, 1, 2), "ls", o.plural, "--deleted", "-n", ns)
			if r.code != 0 || !strings.Contains(r.stdout, o.name) {
				t.Errorf("ls %s --deleted from the merged logs: want exit status 0 and %s listed:\n%s", o.plural, o.name, r)
			}
		}
	})
	t.Run("history", func(t *testing.T) {
		for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}} {
			for _, o := range objs {
				values, deletion, unknown, r, rows := verdict(inOrder(order...), o.kind, o.name)
				if fmt.Sprint(order) == "[0 1 2]" {
					t.Logf("history %s from the merged logs: exit %d, rows:\n%s", o.name, r.code, describeRows(rows))
				}
				if r.code != 0 || unknown > 0 || !values || !deletion {
					t.Errorf("history %s from the merged logs: exit %d, %d rows unknown; the last values applied at revisions %v: %v; the deletion applied at revision %d: %v; rows:\n%s--- stderr:\n%s",
						o.name, r.code, unknown, valueRVs[o.name], values, deleteRV[o.name], deletion, describeRows(rows), r.stderr)
				}
			}
		}
	})
	t.Run("two clusters", func(t *testing.T) {
		// A bare etcd of its own: another cluster, with a log of its own.
		o := &Cluster{Name: "walother", Dir: t.TempDir()}
		if err := o.startEtcd(); err != nil {
			t.Fatalf("start another etcd: %v", err)
		}
		defer o.Stop()
		if _, err := o.Etcd.Put(ctx, "/registry/configmaps/"+ns+"/elsewhere", "x"); err != nil {
			t.Fatal(err)
		}
		foreign := copyWALDir(t, filepath.Join(o.Dir, "etcd-data", "member", "wal"))
		r := run([]string{copies[1], foreign}, "ls", "configmaps", "--deleted", "-n", ns)
		if r.code == 0 || !strings.Contains(r.stderr, copies[1]) || !strings.Contains(r.stderr, foreign) || !strings.Contains(r.stderr, "different clusters") {
			t.Errorf("--wal with logs of two clusters: want a non-zero exit status and both named:\n%s", r)
		}
		t.Logf("--wal with logs of two clusters: exit %d: %s", r.code, errorLine(r))
	})
	recovered := t.Run("recover", func(t *testing.T) {
		for _, o := range objs {
			if r := run(inOrder(1, 0, 2), "recover", o.kind, o.name, "-n", ns, "--yes", "--backup-dir", t.TempDir()); r.code != 0 {
				t.Errorf("recover %s from the merged logs: want exit status 0:\n%s", o.name, r)
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
		gotCM, err = cms.Get(ctx, "mg-config", metav1.GetOptions{})
		return err
	})
	if gotCM.UID != cm.UID || gotCM.Labels["stage"] != "updated" || gotCM.Data["mode"] != "second" {
		t.Errorf("recovered configmap: uid %s (want %s), labels %v, data %v", gotCM.UID, cm.UID, gotCM.Labels, gotCM.Data)
	}
	var gotSecret *corev1.Secret
	eventually(t, "the apiserver serves the recovered secret", func() error {
		gotSecret, err = secrets.Get(ctx, "mg-creds", metav1.GetOptions{})
		return err
	})
	if gotSecret.UID != secret.UID || gotSecret.Labels["stage"] != "updated" || string(gotSecret.Data["password"]) != "rotated-test-value" {
		t.Errorf("recovered secret: uid %s (want %s), labels %v, password %q", gotSecret.UID, secret.UID, gotSecret.Labels, gotSecret.Data["password"])
	}
	var gotPVC *corev1.PersistentVolumeClaim
	eventually(t, "the apiserver serves the recovered pvc", func() error {
		gotPVC, err = pvcs.Get(ctx, "mg-data", metav1.GetOptions{})
		return err
	})
	if gotPVC.UID != pvc.UID || gotPVC.Labels["tier"] != "gold" || gotPVC.DeletionTimestamp != nil || !slices.Contains(gotPVC.Finalizers, pvcProtection) {
		t.Errorf("recovered pvc: uid %s (want %s), labels %v, deletionTimestamp %v, finalizers %v", gotPVC.UID, pvc.UID, gotPVC.Labels, gotPVC.DeletionTimestamp, gotPVC.Finalizers)
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
