package surgery

import (
	"errors"
	"github.com/etcdpvc/etcdpvc/store"
	"strings"
	"testing"
)

// kubeSystem is a kube-system namespace with uid, as JSON.
func kubeSystem(uid string) []byte {
	return []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system","uid":"` + uid + `"}}`)
}

// TestRestoreOtherKubeSystem refuses a backup that records a kube-system
// namespace uid, as one taken through kine does for want of a cluster
// ID, into a store whose kube-system namespace has another uid, and one
// where it cannot be read; it restores into the store with the same uid.
func TestRestoreOtherKubeSystem(t *testing.T) {
	ctx := testCtx(t)
	_, a := startEtcd(t)
	_, b := startEtcd(t)
	_, none := startEtcd(t)
	const nsKey = "/registry/namespaces/kube-system"
	create(t, a, nsKey, kubeSystem("uid-a"))
	create(t, b, nsKey, kubeSystem("uid-b"))
	orig := corpus(t, pvcFile)
	for _, s := range []*store.Etcd{a, b, none} {
		create(t, s, pvcKey, orig)
	}
	uid, err := Planner{}.KubeSystemUID(ctx, a)
	if err != nil || uid != "uid-a" {
		t.Fatalf("KubeSystemUID: %q, %v; want uid-a", uid, err)
	}
	p, err := Planner{}.MakePlan(ctx, a, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Apply(ctx, a, p, ApplyOptions{BackupDir: t.TempDir(), Source: &Source{KubeSystemUID: uid, Endpoints: a.Endpoints()}})
	if err != nil {
		t.Fatal(err)
	}
	bk, err := ReadBackup(res.BackupPath)
	if err != nil {
		t.Fatal(err)
	}
	if bk.KubeSystemUID() != "uid-a" {
		t.Fatalf("the backup records kube-system uid %q, want uid-a", bk.KubeSystemUID())
	}
	for _, s := range []*store.Etcd{b, none} {
		// The other store holds the bytes etcdpvc's write produced on a.
		kv := get(t, s, pvcKey)
		if _, err := s.CompareAndSwap(ctx, pvcKey, kv.ModRevision, get(t, a, pvcKey).Value, 0); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Planner{}.PlanRestore(ctx, b, bk, false)
	if !errors.Is(err, ErrOtherCluster) || !strings.Contains(err.Error(), "kube-system namespace uid uid-a") || !strings.Contains(err.Error(), "uid-b") {
		t.Errorf("restore into a store with another kube-system uid: %v, want ErrOtherCluster naming both uids", err)
	}
	_, err = Planner{}.PlanRestore(ctx, none, bk, false)
	if !errors.Is(err, ErrOtherCluster) || !strings.Contains(err.Error(), "an unknown kube-system namespace uid") {
		t.Errorf("restore into a store without kube-system: %v, want ErrOtherCluster", err)
	}
	fp, err := Planner{}.PlanRestore(ctx, b, bk, true)
	if err != nil || !strings.Contains(strings.Join(fp.Warnings, "\n"), "restoring anyway, as forced") {
		t.Errorf("forced restore into another cluster: %v, warnings %q", err, fp.Warnings)
	}
	own, err := Planner{}.PlanRestore(ctx, a, bk, false)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(own.Warnings, "\n"); strings.Contains(w, "uid") || strings.Contains(w, "cluster ID") {
		t.Errorf("restore into its own cluster warns: %q", own.Warnings)
	}
}
