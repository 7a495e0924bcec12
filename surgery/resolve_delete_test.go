package surgery

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/kubevalue"
)

// TestLostDeleteFenced holds a compare-and-delete (restore of a create) in
// the proxy: "nothing deleted" is said only after the fence has landed,
// and the delete released afterwards must indeed find nothing to delete; a
// delete that lands while it is being resolved is reported as unknown.
func TestLostDeleteFenced(t *testing.T) {
	ctx := testCtx(t)
	direct, proxy, through := proxied(t)
	orig := corpus(t, pvcFile)
	deletePlan := func(t *testing.T) *Plan {
		t.Helper()
		resetPVC(t, direct, orig)
		kv := get(t, through, pvcKey)
		return &Plan{Key: pvcKey, Delete: true, Expect: kv.ModRevision, Before: &kubevalue.Current{KV: *kv}, Description: "restore: delete what recover created"}
	}

	t.Run("released after the fence: nothing deleted, and the delete then fails", func(t *testing.T) {
		p := deletePlan(t)
		proxy.HoldTxns(1)
		_, err := Apply(ctx, through, p, ApplyOptions{BackupDir: t.TempDir()})
		if err == nil || errors.Is(err, ErrUncertain) || !strings.Contains(err.Error(), "can no longer apply: nothing deleted") {
			t.Fatalf("Apply = %v, want nothing deleted after a fence", err)
		}
		if errs := proxy.Release(); len(errs) != 1 {
			t.Fatalf("released %d held transactions, want 1", len(errs))
		}
		if kv := get(t, direct, pvcKey); kv.ModRevision == p.Expect {
			t.Errorf("the key is still at revision %d: the fence did not land", p.Expect)
		}
	})

	t.Run("released before the fence: outcome unknown, never nothing deleted", func(t *testing.T) {
		p := deletePlan(t)
		proxy.HoldTxns(1)
		proxy.ReleaseBefore(2) // after the re-read, as the fence is sent
		dir := t.TempDir()
		_, err := Apply(ctx, through, p, ApplyOptions{BackupDir: dir})
		var ue *UncertainError
		if !errors.As(err, &ue) || !errors.Is(err, ErrUncertain) || strings.Contains(err.Error(), "nothing deleted") {
			t.Fatalf("Apply = %v, want an unknown outcome", err)
		}
		// Said as a delete, naming the backup that puts it back, and
		// recorded in the audit log as a put's unknown outcome is.
		for _, want := range []string{"delete " + p.ObjectName() + ":", ue.Backup, "etcdpvc restore"} {
			if want == "" || !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if log, rerr := os.ReadFile(filepath.Join(dir, AuditLogName)); rerr != nil || !strings.Contains(string(log), `"outcome":"uncertain"`) {
			t.Errorf("audit log %q (%v) records no uncertain outcome", log, rerr)
		}
		if proxy.Held() != 0 {
			t.Fatal("the held delete was not released")
		}
		if _, err := direct.Get(ctx, pvcKey, 0); err == nil {
			t.Error("the released delete did not delete the key")
		}
	})
}
