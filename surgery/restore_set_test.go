package surgery

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestRestoreOperation recovers 200 objects in one operation (creates in
// transactions of 64) and undoes it as a unit: the audit log names the
// operation's backups, the restore deletes them newest first in
// transactions of 50, what is restored already is nothing to do (a second
// run, or a key put back by hand), and a key changed since its write
// refuses the whole restore.
func TestRestoreOperation(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	obj, err := codec.Decode(corpus(t, "configmaps__demo__web-config"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	plans := make([]*Plan, n)
	for i := range plans {
		cm := obj.Typed.(*corev1.ConfigMap).DeepCopy()
		cm.Name, cm.UID = fmt.Sprintf("cm-%03d", i), types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		v, err := codec.EncodeTyped(cm, codec.FormatProtobuf)
		if err != nil {
			t.Fatal(err)
		}
		if plans[i], err = (Planner{}).PlanRecover(ctx, s, store.KeyValue{Key: "/registry/configmaps/demo/" + cm.Name, Value: v, ModRevision: 1}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	steps, err := Execute(ctx, s, plans, ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}, MaxTxnOps: 64})
	if err != nil {
		t.Fatal(err)
	}
	id := steps[0].Result.Record.OperationID
	if undo := UndoLine(steps); undo != "etcdpvc restore --operation "+id+" --backup-dir "+dir {
		t.Fatalf("undo line %q", undo)
	}
	backups, _, err := OperationBackups(dir, id)
	if err != nil || len(backups) != n {
		t.Fatalf("OperationBackups: %d, %v; want %d", len(backups), err, n)
	}
	if _, _, err := OperationBackups(dir, "20200101T000000Z-00000000"); !errors.Is(err, ErrOperationNotFound) {
		t.Fatalf("another operation: %v, want ErrOperationNotFound", err)
	}

	// Changed since its write: the whole restore is refused.
	changed := "/registry/configmaps/demo/cm-100"
	kv := get(t, s, changed)
	if _, err := s.CompareAndSwap(ctx, changed, kv.ModRevision, pvcWithLabel(t, kv.Value), 0); err != nil {
		t.Fatal(err)
	}
	var set *RestoreSetError
	if _, err := (Planner{}).PlanRestores(ctx, s, backups, false); !errors.As(err, &set) || len(set.Changed) != 1 || set.Changed[0].Key != changed {
		t.Fatalf("a key changed since: %v, want a RestoreSetError naming %s", err, changed)
	}
	if _, err := s.Client().Delete(ctx, changed); err != nil {
		t.Fatal(err)
	}

	// Undo: newest write first, in transactions of 50, the deleted key
	// nothing to do.
	restores, err := (Planner{}).PlanRestores(ctx, s, backups, false)
	if err != nil {
		t.Fatal(err)
	}
	if restores[0].Key != "/registry/configmaps/demo/cm-199" || restores[n-1].Key != "/registry/configmaps/demo/cm-000" {
		t.Fatalf("restore order: %s … %s, want the newest write first", restores[0].Key, restores[n-1].Key)
	}
	noop := 0
	for _, p := range restores {
		if p.NoOp {
			noop++
			if !strings.Contains(p.NoOpReason, "already absent") {
				t.Errorf("%s: %q", p.Key, p.NoOpReason)
			}
		}
	}
	if noop != 1 {
		t.Fatalf("%d restores are nothing to do, want 1", noop)
	}
	rsteps, err := Execute(ctx, s, restores, ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}, MaxTxnOps: 50})
	if err != nil {
		t.Fatal(err)
	}
	revs := map[int64]int{}
	for _, st := range rsteps {
		if st.Written() {
			revs[st.Result.Revision]++
		}
	}
	if len(revs) < 4 || len(revs) > 6 {
		t.Errorf("199 deletes in %d transactions, want 4 to 6 of at most 50: %v", len(revs), revs)
	}
	for i := range n {
		if _, err := s.Get(ctx, fmt.Sprintf("/registry/configmaps/demo/cm-%03d", i), 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("cm-%03d after the restore: %v, want it gone", i, err)
		}
	}

	// A second run: nothing to do.
	again, err := (Planner{}).PlanRestores(ctx, s, backups, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range again {
		if !p.NoOp {
			t.Fatalf("second run: %s is not nothing to do", p.Key)
		}
	}
}

// TestRestoreUncertainCreate: an audit line of unknown outcome (revision
// 0) beside a create's backup is no record of the revision it made:
// restoring the create that landed deletes it.
func TestRestoreUncertainCreate(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	p, err := (Planner{}).PlanRecover(ctx, s, store.KeyValue{Key: pvcKey, Value: corpus(t, pvcFile), ModRevision: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Record
	rec.Outcome, rec.ToRevision = OutcomeUncertain, 0
	if err := appendAudits(dir+"/"+AuditLogName, []AuditRecord{rec}); err != nil {
		t.Fatal(err)
	}
	b, err := ReadBackup(res.BackupPath)
	if err != nil {
		t.Fatal(err)
	}
	if rp, err := (Planner{}).PlanRestore(ctx, s, b, false); err != nil || !rp.Delete {
		t.Fatalf("restore of the create: %+v, %v; want its delete", rp, err)
	}
}
