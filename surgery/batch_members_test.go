package surgery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
)

// createPlans returns n plans that each create a key of its own.
func createPlans(n int) []*Plan {
	var plans []*Plan
	for i := range n {
		v := []byte(fmt.Sprintf("not a stored object %d", i))
		plans = append(plans, &Plan{Key: fmt.Sprintf("/registry/configmaps/batch/c%d", i), NewPlain: v, NewStored: v,
			Description: fmt.Sprintf("create configmap c%d in namespace batch", i)})
	}
	return plans
}

// afterBatch is the real store with a hook run once a batch of creates has
// been answered, before its answer reaches the executor.
type afterBatch struct {
	*store.Etcd
	after func()
}

func (w *afterBatch) CreateBatch(ctx context.Context, kvs []store.KeyValue) (int64, error) {
	rev, err := w.Etcd.CreateBatch(ctx, kvs)
	w.after()
	return rev, err
}

// auditOutcomes counts the outcomes of the lines of dir's audit.log.
func auditOutcomes(t *testing.T, dir string) map[string]int {
	t.Helper()
	recs, _, err := ReadAuditLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range recs {
		out[r.Outcome]++
	}
	return out
}

// TestBatchMajorityHolds: a transaction of several keys answered as
// applied is reported written only once a majority of the members hold it
// at its revision, as a single write is; when only the member that
// answered holds it, its outcome is uncertain, in the error and in
// audit.log.
func TestBatchMajorityHolds(t *testing.T) {
	ctx := testCtx(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 3})
	s := openStore(t, []string{c.ClientURL(0)})
	w := &afterBatch{Etcd: s, after: func() {
		c.StopMember(1)
		c.StopMember(2)
	}}
	dir := t.TempDir()
	plans := createPlans(3)
	_, err := Execute(ctx, w, plans, ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}, MaxTxnOps: 10})
	if !errors.Is(err, ErrUncertain) || !strings.Contains(err.Error(), "members hold") {
		t.Fatalf("Execute = %v, want an uncertain outcome: the members that hold the batch are not a majority", err)
	}
	got := auditOutcomes(t, dir)
	if got[OutcomeUncertain] != 3 || got[OutcomeWritten] != 0 {
		t.Errorf("audit.log outcomes %v, want 3 uncertain and none written", got)
	}
	if left := backups(t, dir); len(left) != 3 {
		t.Errorf("backups %v, want the 3 kept", left)
	}
}

// TestBatchResolvedThroughAnotherMember: the one endpoint given stops
// answering once a transaction of several creates was applied and its
// answer lost; the members that still answer establish that it was
// applied, as for a single write.
func TestBatchResolvedThroughAnotherMember(t *testing.T) {
	ctx := testCtx(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 3})
	proxy := etcdtest.StartProxy(t, c.ClientURL(0))
	through := openStore(t, []string{proxy.Endpoint()})
	if err := through.ListMembers(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.HoldTxns(1)
	proxy.OnHold(func() {
		proxy.Release()
		proxy.Refuse(true)
	})
	defer proxy.OnHold(nil)
	dir := t.TempDir()
	plans := createPlans(3)
	steps, err := Execute(ctx, through, plans, ExecuteOptions{ApplyOptions: ApplyOptions{BackupDir: dir}, MaxTxnOps: 10})
	if err != nil {
		t.Fatalf("Execute = %v, want the batch established as written through the other members", err)
	}
	direct := openStore(t, []string{c.ClientURL(1)})
	for i, p := range plans {
		kv := get(t, direct, p.Key)
		if string(kv.Value) != string(p.NewStored) || kv.ModRevision != steps[i].Result.Revision {
			t.Errorf("%s: holds %q at %d, reported written at %d", p.Key, kv.Value, kv.ModRevision, steps[i].Result.Revision)
		}
	}
	if got := auditOutcomes(t, dir); got[OutcomeWritten] != 3 {
		t.Errorf("audit.log outcomes %v, want 3 written", got)
	}
	if _, err := os.Stat(filepath.Join(dir, AuditLogName)); err != nil {
		t.Fatal(err)
	}
}
