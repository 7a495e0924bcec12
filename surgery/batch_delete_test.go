package surgery

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// deletePlans puts n values under /registry/secrets/batch/ through s and
// returns a compare-and-delete plan for each.
func deletePlans(t *testing.T, s *store.Etcd, n int) []*Plan {
	t.Helper()
	var plans []*Plan
	for i := range n {
		key := fmt.Sprintf("/registry/secrets/batch/s%d", i)
		if kv, err := s.Get(testCtx(t), key, 0); err == nil {
			if _, err := s.CompareAndDelete(testCtx(t), key, kv.ModRevision); err != nil {
				t.Fatal(err)
			}
		}
		create(t, s, key, []byte("not a stored object"))
		kv := get(t, s, key)
		plans = append(plans, &Plan{Key: key, Delete: true, Expect: kv.ModRevision, Before: &kubevalue.Current{KV: *kv},
			Description: fmt.Sprintf("delete secret s%d in namespace batch, whose stored value cannot be read", i)})
	}
	return plans
}

// TestExecuteDeleteBatch: compare-and-deletes in transactions of
// MaxTxnOps keys, each all or nothing, every backup durable first; a key
// that moved deletes nothing of its transaction, and its backups go.
func TestExecuteDeleteBatch(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	dir := t.TempDir()
	plans := deletePlans(t, s, 5)
	steps, err := Execute(ctx, s, plans, ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}, MaxTxnOps: 3})
	if err != nil {
		t.Fatal(err)
	}
	revs := map[int64]int{}
	for _, st := range steps {
		if !st.Written() {
			t.Fatalf("%s not written", st.Plan.Key)
		}
		revs[st.Result.Revision]++
		if _, err := s.Get(ctx, st.Plan.Key, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s still there: %v", st.Plan.Key, err)
		}
		b, err := ReadBackup(st.Result.BackupPath)
		if err != nil || string(b.Value) != "not a stored object" || b.ModRevision != st.Plan.Expect {
			t.Errorf("backup %s: %+v, %v", st.Result.BackupPath, b, err)
		}
	}
	if len(revs) != 2 {
		t.Errorf("deleted at revisions %v, want two transactions (3 and 2 keys)", revs)
	}
	log, err := os.ReadFile(filepath.Join(dir, AuditLogName))
	if err != nil || strings.Count(string(log), `"outcome":"intent"`) != 5 || strings.Count(string(log), `"outcome":"written"`) != 5 {
		t.Errorf("audit log %s (%v): want 5 intents, then 5 written", log, err)
	}

	// One key moved: nothing of its transaction is deleted.
	plans = deletePlans(t, s, 3)
	if _, err := s.CompareAndSwap(ctx, plans[1].Key, plans[1].Expect, []byte("moved"), 0); err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	_, err = Execute(ctx, s, plans, ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}, MaxTxnOps: 3})
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), plans[1].Key+" (now at revision") || !strings.Contains(err.Error(), "its backups were removed") {
		t.Fatalf("Execute = %v, want a conflict naming %s, nothing written", err, plans[1].Key)
	}
	for _, p := range plans {
		get(t, s, p.Key)
	}
	if left := backups(t, dir); len(left) != 0 {
		t.Errorf("backups of a transaction never applied are left: %v", left)
	}
}

// TestLostDeleteBatch holds a transaction of compare-and-deletes in the
// proxy: "nothing deleted" only once a fence has landed (the transaction
// released afterwards deletes nothing); released before the fence, or
// before the re-read, the outcome is unknown, never "nothing deleted".
func TestLostDeleteBatch(t *testing.T) {
	ctx := testCtx(t)
	direct, proxy, through := proxied(t)
	o := func(dir string) ExecuteOptions {
		return ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}, MaxTxnOps: 10}
	}

	t.Run("released after the fence: nothing deleted", func(t *testing.T) {
		plans := deletePlans(t, direct, 3)
		proxy.HoldTxns(1)
		dir := t.TempDir()
		_, err := Execute(ctx, through, plans, o(dir))
		if err == nil || errors.Is(err, ErrUncertain) || !strings.Contains(err.Error(), "can no longer apply") || !strings.Contains(err.Error(), "run the same command again") || !strings.Contains(err.Error(), "nothing of it was deleted") {
			t.Fatalf("Execute = %v, want nothing deleted after a fence", err)
		}
		if errs := proxy.Release(); len(errs) != 1 {
			t.Fatalf("released %d held transactions, want 1", len(errs))
		}
		for _, p := range plans {
			get(t, direct, p.Key)
		}
		if left := backups(t, dir); len(left) != 0 {
			t.Errorf("backups of a transaction fenced off are left: %v", left)
		}
	})

	for _, tc := range []struct {
		name   string
		before int
	}{
		{"released before the re-read", 1},
		{"released before the fence", 4},
	} {
		t.Run(tc.name+": outcome unknown", func(t *testing.T) {
			plans := deletePlans(t, direct, 3)
			proxy.HoldTxns(1)
			proxy.ReleaseBefore(tc.before)
			dir := t.TempDir()
			_, err := Execute(ctx, through, plans, o(dir))
			if !errors.Is(err, ErrUncertain) || strings.Contains(err.Error(), "nothing of it was deleted") {
				t.Fatalf("Execute = %v, want an unknown outcome", err)
			}
			if log, rerr := os.ReadFile(filepath.Join(dir, AuditLogName)); rerr != nil || strings.Count(string(log), `"outcome":"uncertain"`) != 3 {
				t.Errorf("audit log %q (%v): want 3 uncertain outcomes", log, rerr)
			}
			if left := backups(t, dir); len(left) != 3 {
				t.Errorf("backups %v, want the 3 kept", left)
			}
			for _, p := range plans {
				if _, err := direct.Get(ctx, p.Key, 0); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s: the released transaction did not delete it: %v", p.Key, err)
				}
			}
		})
	}
}

// TestResolveDeleteBatch: what a re-read shows does not settle a lost
// transaction of deletes on its own. Applied, then one key created again
// by another client: uncertain, never "nothing deleted". Not applied, one
// key changed by another client: a key still at its revision is fenced,
// and only then is "nothing deleted" said.
func TestResolveDeleteBatch(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	lost := errors.New("the answer was lost")
	kvsOf := func(plans []*Plan) []store.KeyValue {
		var kvs []store.KeyValue
		for _, p := range plans {
			kvs = append(kvs, store.KeyValue{Key: p.Key, ModRevision: p.Expect})
		}
		return kvs
	}

	t.Run("applied, one key created again", func(t *testing.T) {
		plans := deletePlans(t, s, 3)
		kvs := kvsOf(plans)
		if _, err := s.DeleteBatch(ctx, kvs); err != nil {
			t.Fatal(err)
		}
		create(t, s, kvs[1].Key, []byte("created again"))
		_, _, err := resolve(ctx, s, batchTxn(s.DeleteBatch, plans, false), lost)
		var fe *FenceError
		if !errors.Is(err, ErrUncertain) || errors.As(err, &fe) {
			t.Fatalf("resolve = %v, want an uncertain outcome", err)
		}
	})

	t.Run("not applied, one key changed", func(t *testing.T) {
		plans := deletePlans(t, s, 3)
		kvs := kvsOf(plans)
		if _, err := s.CompareAndSwap(ctx, kvs[0].Key, kvs[0].ModRevision, []byte("changed"), 0); err != nil {
			t.Fatal(err)
		}
		_, _, err := resolve(ctx, s, batchTxn(s.DeleteBatch, plans, false), lost)
		var fe *FenceError
		if !errors.As(err, &fe) || fe.Key != kvs[1].Key || errors.Is(err, ErrUncertain) || !strings.Contains(err.Error(), kvs[1].Key+" was still at revision") {
			t.Fatalf("resolve = %v, want nothing deleted after a fence on %s", err, kvs[1].Key)
		}
		if kv := get(t, s, kvs[1].Key); kv.ModRevision == kvs[1].ModRevision {
			t.Errorf("%s is still at revision %d: the fence did not land", kvs[1].Key, kv.ModRevision)
		}
		if _, err := s.DeleteBatch(ctx, kvs[1:]); !errors.Is(err, store.ErrConflict) {
			t.Errorf("the transaction still applies after the fence: %v", err)
		}
	})
}
