package surgery

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/internal/regular"
)

// TestRestoreFencesUncertainWrite: an undelete whose transaction (and
// every fence of its resolution) a proxy holds is uncertain, the key
// unchanged. Its restore is not "nothing to do": it fences the key (its
// own bytes at a new revision, the record naming the settled backup), so
// that the held transaction, released, fails its comparison; run again,
// the restore has nothing to do.
func TestRestoreFencesUncertainWrite(t *testing.T) {
	ctx := testCtx(t)
	direct, proxy, through := proxied(t)
	orig := corpus(t, pvcFile)
	rev := resetPVC(t, direct, orig)
	p, err := Planner{}.MakePlan(ctx, through, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	proxy.HoldTxns(100)
	defer proxy.HoldTxns(0)
	dir := t.TempDir()
	if _, err := Apply(ctx, through, p, ApplyOptions{BackupDir: dir}); !errors.Is(err, ErrUncertain) {
		t.Fatalf("Apply = %v, want an uncertain outcome", err)
	}
	files := backups(t, dir)
	if len(files) != 1 {
		t.Fatalf("backups %v", files)
	}
	b, err := ReadBackup(files[0])
	if err != nil {
		t.Fatal(err)
	}

	fence, err := Planner{}.PlanRestore(ctx, direct, b, false)
	if err != nil {
		t.Fatal(err)
	}
	if fence.NoOp || fence.Settles != b.Path || !bytes.Equal(fence.NewStored, orig) || fence.Expect != rev {
		t.Fatalf("restore plan: no-op %v (%s), settles %q, expects %d: want a fence of revision %d", fence.NoOp, fence.NoOpReason, fence.Settles, fence.Expect, rev)
	}
	res, err := Apply(ctx, direct, fence, ApplyOptions{BackupDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Settles != b.Path {
		t.Errorf("the fence's record settles %q, want %q", res.Record.Settles, b.Path)
	}

	proxy.HoldTxns(0)
	proxy.Release()
	if kv := get(t, direct, pvcKey); !bytes.Equal(kv.Value, orig) || kv.ModRevision != res.Revision {
		t.Fatalf("after the release the key is at revision %d (fence %d), holding the backup's value: %v", kv.ModRevision, res.Revision, bytes.Equal(kv.Value, orig))
	}
	again, err := Planner{}.PlanRestore(ctx, direct, b, false)
	if err != nil || !again.NoOp {
		t.Fatalf("restore run again: %v, no-op %v; want nothing to do", err, again != nil && again.NoOp)
	}
}

// TestPlanRestoreAuditLogUnreadable: an audit.log beside the backup that
// exists and cannot be read refuses the restore. What it records (a write
// of unknown outcome, a fence) decides whether restore fences the key or
// calls it restored; read as empty, an uncertain write would be "nothing
// to do".
func TestPlanRestoreAuditLogUnreadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, AuditLogName), 0o700); err != nil {
		t.Fatal(err)
	}
	b := &Backup{Key: "/registry/configmaps/demo/a", Path: filepath.Join(dir, "b.json")}
	_, err := Planner{}.PlanRestore(context.Background(), nil, b, false)
	if !errors.Is(err, regular.ErrNotRegular) || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("PlanRestore = %v, want a refusal naming the audit log that cannot be read", err)
	}
}
