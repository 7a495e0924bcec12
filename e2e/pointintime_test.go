package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// consistentIndex reads a snapshot file's consistent index (etcdpvc
// stats -o json).
func consistentIndex(t *testing.T, snap string) uint64 {
	t.Helper()
	r := runEtcdpvc(t, nil, "--db", snap, "stats", "-o", "json")
	var st struct {
		DB struct {
			ConsistentIndex uint64 `json:"consistentIndex"`
		} `json:"db"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.DB.ConsistentIndex == 0 {
		t.Fatalf("stats -o json of %s: %v\n%s", snap, err, r)
	}
	return st.DB.ConsistentIndex
}

// snapshotStatus is `etcdutl snapshot status -w json` of a file.
type snapshotStatus struct {
	Hash      uint32 `json:"hash"`
	Revision  int64  `json:"revision"`
	TotalKey  int    `json:"totalKey"`
	TotalSize int64  `json:"totalSize"`
}

func etcdutlStatus(t *testing.T, snap string) snapshotStatus {
	t.Helper()
	var s snapshotStatus
	out := runTool(t, suite.etcdutl, "snapshot", "status", snap, "-w", "json")
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &s); err != nil {
		t.Fatalf("etcdutl snapshot status: %v\n%s", err, out)
	}
	return s
}

// TestPointInTimeRestore is point-in-time recovery end to end
// (docs/runbooks/point-in-time.md), with etcd itself as the oracle. An
// older snapshot A is taken; the kube-apiserver writes (ConfigMaps and
// Secrets created, updated, deleted, Events with their leases), a
// compaction runs; etcd's own snapshot T is taken at raft index N; then
// the disaster (every ConfigMap of a namespace deleted by prefix) and
// more writes. `etcdpvc --db A --wal LOG snapshot --index N` writes a
// file that etcdutl sees as T (revision, total keys, hashkv); the same
// point found with --before-delete; a log purged past A is refused. The
// file restored with `etcdutl snapshot restore --bump-revision
// --mark-compacted` under a new etcd and kube-apiserver serves every
// object the disaster deleted with its uid, and the API updates them.
func TestPointInTimeRestore(t *testing.T) {
	c := startCluster(t, "pit", ClusterOptions{APIServerFlags: []string{"--event-ttl=1h"}})
	ctx := context.Background()
	const ns = "prod"
	c.EnsureNamespace(t, ns)
	cms := c.Client.CoreV1().ConfigMaps(ns)
	for i := range 5 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("early-", i)}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a := saveSnapshot(t, c)
	aci := consistentIndex(t, a)

	// Traffic between A and the point.
	uids := map[string]types.UID{}
	for i := range 12 {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("app-", i), Labels: map[string]string{"app": "web"}}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			cm.Data["v"] = "2"
			if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		uids[cm.Name] = cm.UID
	}
	if err := cms.Delete(ctx, "early-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("s-", i)}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("ev-", i)}, InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "app-0"}, Reason: "Test", Message: "m"}
		if _, err := c.Client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := c.Etcd.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Etcd.Compact(ctx, cur.Header.Revision-10, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		cm, err := cms.Get(ctx, fmt.Sprint("app-", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = "3"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tsnap := saveSnapshot(t, c)
	n := consistentIndex(t, tsnap)

	// The disaster, and the cluster going on.
	del, err := c.Etcd.Delete(ctx, "/registry/configmaps/"+ns+"/", clientv3.WithPrefix())
	if err != nil || del.Deleted == 0 {
		t.Fatalf("the disaster: %v, %+v", err, del)
	}
	if _, err := c.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-disaster"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := c.Client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lastSeen := rv(t, list.ResourceVersion)
	now := saveSnapshot(t, c)
	log := copyWAL(t, c)
	dir := t.TempDir()

	// The dry run against the current state: the ConfigMaps come back.
	r := runEtcdpvc(t, nil, "--wal-base", a, "--db", now, "--wal", log, "snapshot", "--index", fmt.Sprint(n), "--dry-run", "-o", "json")
	if r.code != 0 {
		t.Fatalf("snapshot --dry-run: want exit status 0:\n%s", r)
	}
	var rep struct {
		Revision  int64 `json:"revision"`
		Resources []struct {
			Resource string `json:"resource"`
			Objects  int    `json:"objects"`
			Back     int    `json:"wouldComeBack"`
			Lost     int    `json:"wouldBeRemoved"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("snapshot -o json: %v\n%s", err, r)
	}
	for _, x := range rep.Resources {
		if x.Resource == "configmaps" && (x.Back != int(del.Deleted) || x.Lost != 1) {
			t.Errorf("dry run: configmaps would come back %d (want %d, the disaster's), removed %d (want 1, after-disaster)", x.Back, del.Deleted, x.Lost)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pit.db")); err == nil {
		t.Fatal("the dry run wrote a file")
	}

	pit := filepath.Join(dir, "pit.db")
	r = runEtcdpvc(t, nil, "--db", a, "--wal", log, "snapshot", "--index", fmt.Sprint(n), "--out", pit)
	if r.code != 0 {
		t.Fatalf("snapshot --index %d: want exit status 0:\n%s", n, r)
	}
	// etcd's tools see etcd's own snapshot.
	gs, ws := etcdutlStatus(t, pit), etcdutlStatus(t, tsnap)
	if gs.Revision != ws.Revision || gs.TotalKey != ws.TotalKey || gs.Hash != ws.Hash {
		t.Errorf("etcdutl snapshot status: point in time %+v, etcd's snapshot %+v", gs, ws)
	}
	if g, w := runTool(t, suite.etcdutl, "snapshot", "hashkv", pit, "-w", "json"), runTool(t, suite.etcdutl, "snapshot", "hashkv", tsnap, "-w", "json"); g != w {
		t.Errorf("etcdutl snapshot hashkv: point in time %s, etcd's snapshot %s", g, w)
	}

	// The same point, found from the disaster (the first deletion of
	// app-5; the prefix was deleted from before, early-0): the point
	// before it is at N or after (the apiserver may have written in
	// between).
	r = runEtcdpvc(t, nil, "--db", a, "--wal", log, "snapshot", "--before-delete", "/registry/configmaps/"+ns+"/app-5", "--dry-run", "-o", "json")
	if r.code != 0 {
		t.Fatalf("snapshot --before-delete: want exit status 0:\n%s", r)
	}
	var before struct {
		Index uint64 `json:"index"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &before); err != nil || before.Index < n {
		t.Errorf("--before-delete: index %d (%v), want at least %d (etcd's snapshot, before the disaster)", before.Index, err, n)
	}

	// A log purged past A does not reach from A to the point: refused.
	purged := purgeWAL(t, log, aci+3)
	if r := runEtcdpvc(t, nil, "--db", a, "--wal", purged, "snapshot", "--index", fmt.Sprint(n), "--out", filepath.Join(dir, "gap.db")); r.code == 0 || !strings.Contains(r.stderr, "does not continue the db") {
		t.Errorf("a log purged past the older snapshot: want a refusal naming the gap:\n%s", r)
	}

	// Restore it as the runbook says, and start the control plane on it.
	err = c.RestartOnNewDataDir(func(dataDir, member, peerURL string) error {
		out, err := exec.Command(suite.etcdutl, "snapshot", "restore", pit,
			"--data-dir", dataDir, "--name", member,
			"--initial-cluster", member+"="+peerURL, "--initial-advertise-peer-urls", peerURL,
			"--bump-revision", "1000000", "--mark-compacted",
		).CombinedOutput()
		if err != nil {
			return fmt.Errorf("etcdutl snapshot restore %s: %v\n%s", pit, err, out)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("restart the cluster on the point-in-time snapshot: %v", err)
	}
	cms = c.Client.CoreV1().ConfigMaps(ns)
	eventually(t, "the new apiserver serves the ConfigMaps of the point", func() error {
		_, err := cms.Get(ctx, "app-0", metav1.GetOptions{})
		return err
	})
	for name, uid := range uids {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("configmap %s/%s after the restore: %v", ns, name, err)
			continue
		}
		if cm.UID != uid {
			t.Errorf("configmap %s/%s: uid %s, want %s", ns, name, cm.UID, uid)
		}
		cm.Data["restored"] = "yes"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Errorf("an API update of the restored configmap %s/%s: %v", ns, name, err)
		}
	}
	if _, err := cms.Get(ctx, "early-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap early-0, deleted before the point: %v, want NotFound", err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "after-disaster", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap after-disaster, created after the point: %v, want NotFound", err)
	}
	list, err = c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rv(t, list.ResourceVersion); got <= lastSeen {
		t.Errorf("the restored cluster is at revision %d, not past the %d clients saw (--bump-revision)", got, lastSeen)
	}
}
