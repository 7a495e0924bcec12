package surgery

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdpvc/etcdpvc/store"
)

// planDemo seeds namespace demo into direct, deletes it, and plans its
// recovery from the history, read through r.
func planDemo(t *testing.T, direct *store.Etcd, r store.Reader) *SetPlan {
	t.Helper()
	rev := seedDemo(t, direct, true)
	plan, err := Planner{}.PlanRecoverSet(testCtx(t), r, r, RecoverSetOptions{Namespace: "demo", Rev: rev})
	if err != nil {
		t.Fatal(err)
	}
	if n := plan.Count(ActionCreate); n != 10 {
		t.Fatalf("plan: %d creates, want 10: %v", n, planActions(plan))
	}
	return plan
}

// createdOnce checks that every create of plan holds its new value,
// written once, at one revision, and returns that revision.
func createdOnce(t *testing.T, s *store.Etcd, plan *SetPlan) int64 {
	t.Helper()
	var rev int64
	for _, it := range plan.Items {
		if it.Action != ActionCreate {
			continue
		}
		kv := get(t, s, it.Key)
		if !bytes.Equal(kv.Value, it.Plan.NewStored) || kv.Version != 1 {
			t.Errorf("%s: version %d, holds the recovered value: %v; want it created once", it.Key, kv.Version, bytes.Equal(kv.Value, it.Plan.NewStored))
		}
		if rev != 0 && kv.ModRevision != rev {
			t.Errorf("%s at revision %d, the others at %d: not one transaction", it.Key, kv.ModRevision, rev)
		}
		rev = kv.ModRevision
	}
	return rev
}

// TestRecoverSetLostBatch loses the answer of a batch transaction (the
// proxy answers Unavailable and holds it) and lets it reach etcd at chosen
// points of the resolution, which reads the keys back.
func TestRecoverSetLostBatch(t *testing.T) {
	t.Run("released before the read-back: written, once", func(t *testing.T) {
		direct, proxy, through := proxied(t)
		plan := planDemo(t, direct, through)
		proxy.HoldTxns(1)
		proxy.ReleaseBefore(1)
		res, err := WriteRecoverSet(testCtx(t), through, plan, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: t.TempDir()}})
		if err != nil {
			t.Fatalf("WriteRecoverSet = %v", err)
		}
		if errs := proxy.Released(); len(errs) != 1 || errs[0] != nil {
			t.Fatalf("released transactions: %v, want one, applied", errs)
		}
		rev := createdOnce(t, direct, plan)
		if len(res.Written) != 10 || res.Written[0].Revision != rev {
			t.Errorf("result: %d written at revision %d, want 10 at %d", len(res.Written), res.Written[0].Revision, rev)
		}
	})

	t.Run("released during the read-back: written, once", func(t *testing.T) {
		direct, proxy, through := proxied(t)
		plan := planDemo(t, direct, through)
		// The first key is read absent, the transaction lands, the
		// others are read created: a second read-back sees them all.
		proxy.HoldTxns(1)
		proxy.ReleaseBefore(2)
		res, err := WriteRecoverSet(testCtx(t), through, plan, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: t.TempDir()}})
		if err != nil {
			t.Fatalf("WriteRecoverSet = %v", err)
		}
		rev := createdOnce(t, direct, plan)
		if len(res.Written) != 10 || res.Written[0].Revision != rev {
			t.Errorf("result: %d written at revision %d, want 10 at %d", len(res.Written), res.Written[0].Revision, rev)
		}
	})

	t.Run("released after the read-back: sent again, the late one fails its comparison", func(t *testing.T) {
		direct, proxy, through := proxied(t)
		plan := planDemo(t, direct, through)
		// Ten reads show every key absent; the transaction is sent again
		// and the held one is released just before, so it lands first
		// and the new one finds the keys (a conflict); the next read-back
		// finds them all holding exactly the recovered values.
		proxy.HoldTxns(1)
		proxy.ReleaseBefore(11)
		res, err := WriteRecoverSet(testCtx(t), through, plan, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: t.TempDir()}})
		if err != nil {
			t.Fatalf("WriteRecoverSet = %v", err)
		}
		if errs := proxy.Released(); len(errs) != 1 || errs[0] != nil {
			t.Fatalf("released transactions: %v, want one, applied", errs)
		}
		rev := createdOnce(t, direct, plan)
		if len(res.Written) != 10 || res.Written[0].Revision != rev {
			t.Errorf("result: %d written at revision %d, want 10 at %d", len(res.Written), res.Written[0].Revision, rev)
		}
	})

	t.Run("never released: uncertain, audited, and it may still land", func(t *testing.T) {
		direct, proxy, through := proxied(t)
		plan := planDemo(t, direct, through)
		proxy.HoldTxns(100)
		dir := t.TempDir()
		res, err := WriteRecoverSet(testCtx(t), through, plan, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}})
		if !errors.Is(err, ErrUncertain) || errors.Is(err, ErrPartial) {
			t.Fatalf("WriteRecoverSet = %v, want an uncertain outcome, not partial (nothing was written before)", err)
		}
		if !strings.Contains(err.Error(), "may still land") || !strings.Contains(err.Error(), "10 objects") {
			t.Errorf("error %q: want it to name the 10 objects and say they may still land", err)
		}
		if len(res.Written) != 0 {
			t.Errorf("%d reported written", len(res.Written))
		}
		log, rerr := os.ReadFile(filepath.Join(dir, AuditLogName))
		if rerr != nil || strings.Count(string(log), `"outcome":"uncertain"`) != 10 {
			t.Errorf("audit log %q (%v): want 10 uncertain records", log, rerr)
		}
		if n := len(backups(t, dir)); n != 10 {
			t.Errorf("%d backups, want one per object", n)
		}
		for _, it := range plan.Items {
			if it.Action == ActionCreate {
				if _, err := direct.Get(testCtx(t), it.Key, 0); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("%s created while held: %v", it.Key, err)
				}
			}
		}
		// Released late, one of them lands whole: the outcome was open.
		proxy.HoldTxns(0)
		proxy.Release()
		createdOnce(t, direct, plan)
	})
}

// TestRestoreBatchBackup restores the backup of one object a batch
// created: exactly that key is deleted (compare-and-delete); a key
// changed since is refused.
func TestRestoreBatchBackup(t *testing.T) {
	_, s := startEtcd(t)
	plan := planDemo(t, s, s)
	ctx := testCtx(t)
	dir := t.TempDir()
	res, err := WriteRecoverSet(ctx, s, plan, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}, MaxTxnOps: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Batches of four: the namespace, the CRD, the ServiceAccount and
	// the Secret; then the ConfigMap, the claim and two more.
	var cm, claim SetWritten
	for _, w := range res.Written {
		switch w.Item.Key {
		case "/registry/configmaps/demo/web-config":
			cm = w
		case "/registry/persistentvolumeclaims/demo/www-web-1":
			claim = w
		}
	}
	if cm.Revision == 0 || cm.Revision != claim.Revision {
		t.Fatalf("the configmap (revision %d) and the claim (revision %d) should be created by one transaction", cm.Revision, claim.Revision)
	}
	b, err := ReadBackup(cm.BackupPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Planner{}.PlanRestore(ctx, s, b, false)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Delete || p.Expect != cm.Revision || p.Key != cm.Item.Key {
		t.Fatalf("restore plan: Delete %v Expect %d Key %s; want a delete of %s at %d", p.Delete, p.Expect, p.Key, cm.Item.Key, cm.Revision)
	}
	rr, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, cm.Item.Key, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after restore, %s: %v, want deleted", cm.Item.Key, err)
	}
	// Every other key of the plan is untouched, the one created in the
	// same transaction included.
	for _, w := range res.Written {
		if w.Item.Key == cm.Item.Key {
			continue
		}
		kv := get(t, s, w.Item.Key)
		if kv.ModRevision != w.Revision || !bytes.Equal(kv.Value, w.Item.Plan.NewStored) {
			t.Errorf("%s changed by the restore of %s (revision %d → %d)", w.Item.Key, cm.Item.Key, w.Revision, kv.ModRevision)
		}
	}
	// The delete has its own backup: restoring it creates the object
	// again, byte for byte.
	db, err := ReadBackup(rr.BackupPath)
	if err != nil || !bytes.Equal(db.Value, cm.Item.Plan.NewStored) {
		t.Fatalf("backup of the delete: %v, holds the created value: %v", err, db != nil && bytes.Equal(db.Value, cm.Item.Plan.NewStored))
	}

	// A key changed since its create is not deleted without --force.
	bc, err := ReadBackup(claim.BackupPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().Put(ctx, claim.Item.Key, string(claim.Item.Plan.NewStored)); err != nil {
		t.Fatal(err)
	}
	_, err = Planner{}.PlanRestore(ctx, s, bc, false)
	var ce *ChangedError
	if !errors.As(err, &ce) || !errors.Is(err, ErrChangedSinceBackup) {
		t.Fatalf("restore of a create rewritten since: %v, want a ChangedError", err)
	}
	if kv := get(t, s, claim.Item.Key); kv.Version != 2 {
		t.Errorf("claim at version %d after a refused restore", kv.Version)
	}
}

// TestRecoverSetReleasedVolume: a claim recovered whose volume is Released
// in the live cluster gets a warning with the rebind command; one whose
// volume is Bound gets none.
func TestRecoverSetReleasedVolume(t *testing.T) {
	_, s := startEtcd(t)
	ctx := testCtx(t)
	claim := decode(t, corpus(t, pvcBound)).Typed.(*corev1.PersistentVolumeClaim)
	vol := claim.Spec.VolumeName
	if vol == "" {
		t.Fatalf("corpus claim %s is not bound", claim.Name)
	}
	pvAt := func(phase corev1.PersistentVolumePhase) []byte {
		return typedEdit(t, corpus(t, pvFile), func(pv *corev1.PersistentVolume) {
			pv.Name = vol
			pv.Status.Phase = phase
		})
	}
	key := "/registry/persistentvolumes/" + vol
	rev := seedDemo(t, s, true)
	tests := []struct {
		phase corev1.PersistentVolumePhase
		want  string
	}{
		{corev1.VolumeReleased, "persistentvolume " + vol + " is Released; if it does not bind to the recovered claim, bind it again with: etcdpvc rebind pv " + vol + " --to-claim demo/" + claim.Name},
		{corev1.VolumeBound, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.phase), func(t *testing.T) {
			if _, err := s.Client().Put(ctx, key, string(pvAt(tt.phase))); err != nil {
				t.Fatal(err)
			}
			plan, err := Planner{}.PlanRecoverSet(ctx, s, s, RecoverSetOptions{Namespace: "demo", Rev: rev})
			if err != nil {
				t.Fatal(err)
			}
			var warnings []string
			for _, it := range plan.Items {
				if it.Key == "/registry/persistentvolumeclaims/demo/"+claim.Name {
					warnings = it.Warnings
				}
			}
			switch {
			case tt.want == "" && len(warnings) != 0:
				t.Errorf("warnings %q, want none", warnings)
			case tt.want != "" && (len(warnings) != 1 || warnings[0] != tt.want):
				t.Errorf("warnings %q, want %q", warnings, tt.want)
			}
		})
	}
}

// TestRecoverSetIntoSnapshotCopy: into a db copy (--db IN --out OUT),
// which cannot create keys in one transaction, each object is created by
// its own compare-and-swap, with its backup; IN is unchanged and OUT holds
// the namespace.
func TestRecoverSetIntoSnapshotCopy(t *testing.T) {
	c, s := startEtcd(t)
	rev := seedDemo(t, s, true)
	s.Close()
	c.Stop()
	in := filepath.Join(c.DataDir(0), "member", "snap", "db")
	before, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.db")
	cp, err := store.OpenSnapshotCopy(in, out, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := any(cp).(store.BatchCreator); ok {
		t.Fatal("a snapshot copy creates batches: this test no longer covers the fallback")
	}
	ctx := testCtx(t)
	plan, err := Planner{}.PlanRecoverSet(ctx, cp, cp, RecoverSetOptions{Namespace: "demo", Rev: rev})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := WriteRecoverSet(ctx, cp, plan, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written) != 10 || len(backups(t, dir)) != 10 {
		t.Fatalf("%d written, %d backups; want 10 and 10", len(res.Written), len(backups(t, dir)))
	}
	revs := map[int64]bool{}
	for _, w := range res.Written {
		revs[w.Revision] = true
	}
	if len(revs) != 10 {
		t.Errorf("%d distinct revisions, want one per object", len(revs))
	}
	if err := cp.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(in)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the input db changed (%v)", err)
	}
	db, err := store.OpenBolt(out, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, w := range res.Written {
		kv := get(t, db, w.Item.Key)
		if !bytes.Equal(kv.Value, w.Item.Plan.NewStored) || kv.ModRevision != w.Revision {
			t.Errorf("%s in the copy: revision %d (want %d), holds the recovered value: %v", w.Item.Key, kv.ModRevision, w.Revision, bytes.Equal(kv.Value, w.Item.Plan.NewStored))
		}
	}
	// A second plan, on the copy, finds everything identical (the CRD,
	// now there, is no longer part of the plan).
	again, err := Planner{}.PlanRecoverSet(ctx, db, db, RecoverSetOptions{Namespace: "demo", Rev: rev})
	if err != nil {
		t.Fatal(err)
	}
	if again.Count(ActionCreate) != 0 || again.Count(ActionIdentical) != 9 {
		t.Errorf("plan on the copy: %v", planActions(again))
	}
}

// TestRecoverSetManyClaims: with more claims than claimListThreshold the
// live volumes are listed once; each claim still gets the warning its
// own volume calls for.
func TestRecoverSetManyClaims(t *testing.T) {
	_, s := startEtcd(t)
	ctx := testCtx(t)
	n := claimListThreshold + 8
	create(t, s, nsKey, corpus(t, nsFile))
	name := func(i int) string { return fmt.Sprintf("claim-%02d", i) }
	vol := func(i int) string { return fmt.Sprintf("vol-%02d", i) }
	for i := 0; i < n; i++ {
		create(t, s, "/registry/persistentvolumeclaims/demo/"+name(i), typedEdit(t, corpus(t, pvcBound), func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Name, pvc.UID, pvc.Spec.VolumeName = name(i), types.UID(fmt.Sprintf("00000000-0000-0000-0000-0000000000%02d", i)), vol(i)
		}))
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().Delete(ctx, "/registry/persistentvolumeclaims/demo/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().Delete(ctx, nsKey); err != nil {
		t.Fatal(err)
	}
	// Volume i: Released when i%3 == 0, Bound when 1, gone when 2.
	for i := 0; i < n; i++ {
		phase := []corev1.PersistentVolumePhase{corev1.VolumeReleased, corev1.VolumeBound, ""}[i%3]
		if phase == "" {
			continue
		}
		create(t, s, "/registry/persistentvolumes/"+vol(i), typedEdit(t, corpus(t, pvFile), func(pv *corev1.PersistentVolume) {
			pv.Name, pv.Status.Phase = vol(i), phase
		}))
	}
	plan, err := Planner{}.PlanRecoverSet(ctx, s, s, RecoverSetOptions{Namespace: "demo", Rev: info.Revision})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, it := range plan.Items {
		if it.Resource.Path != "persistentvolumeclaims" {
			continue
		}
		seen++
		var i int
		if _, err := fmt.Sscanf(it.Name, "claim-%02d", &i); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"persistentvolume " + vol(i) + " is Released; if it does not bind to the recovered claim, bind it again with: etcdpvc rebind pv " + vol(i) + " --to-claim demo/" + name(i),
			"",
			"persistentvolumeclaim " + name(i) + " in namespace demo was bound to persistentvolume " + vol(i) + ", which is gone from the live cluster: with reclaim policy Delete its data was deleted with it; the claim will be Lost",
		}[i%3]
		switch {
		case want == "" && len(it.Warnings) != 0:
			t.Errorf("%s: warnings %q, want none", it.Name, it.Warnings)
		case want != "" && (len(it.Warnings) != 1 || it.Warnings[0] != want):
			t.Errorf("%s: warnings %q, want %q", it.Name, it.Warnings, want)
		}
	}
	if seen != n {
		t.Errorf("%d claims planned, want %d", seen, n)
	}
}
