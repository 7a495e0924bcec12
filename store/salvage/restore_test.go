package salvage_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store/salvage"
)

// TestSalvageRestore salvages a real etcd's member db with a damaged leaf
// page, restores the result with the real `etcdutl snapshot restore` and
// starts the real etcd on it: etcd serves exactly the salvaged keys, at a
// revision no lower than the highest the scan saw, with their leases,
// refuses reads below it as compacted, and goes on writing.
func TestSalvageRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds etcd and etcdutl, writes, restores and starts etcd")
	}
	etcdutl, etcd := etcdtest.EtcdBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := writeEtcdDB(t, 2000)
	d := describe(t, db.memberDB)
	damaged := copyFile(t, db.memberDB, t.TempDir(), "damaged.db")
	id := d.leaves[len(d.leaves)/2]
	overwrite(t, damaged, int64(id)*int64(d.pageSize), randomBytes(9, d.pageSize))

	rep, out := salvageFile(t, damaged, salvage.Options{})
	if rep.Complete || len(rep.LostRanges) == 0 {
		t.Errorf("damaged leaf page %d: complete %v, lost ranges %v", id, rep.Complete, rep.LostRanges)
	}
	want := latest(t, out)
	live := etcdtest.RestoreAndStart(t, etcdutl, etcd, out)
	resp, err := live.Get(ctx, "", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]storeKV{}
	for _, kv := range resp.Kvs {
		got[string(kv.Key)] = storeKV{Key: string(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision,
			ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease}
	}
	if diff := cmpLatest(want, got); diff != "" {
		t.Errorf("etcd serves (-salvaged +served):\n%s", diff)
	}
	if len(got) != rep.Keys {
		t.Errorf("etcd serves %d keys, the report says %d recovered", len(got), rep.Keys)
	}
	minRev := max(rep.MaxRevisionSeen, rep.MaxRevisionNamed)
	if resp.Header.Revision < minRev {
		t.Errorf("restored etcd at revision %d, below the highest seen %d", resp.Header.Revision, minRev)
	}
	if _, err := live.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision-1)); err == nil {
		t.Errorf("a read below the salvaged revision was served: the salvage holds one revision per key")
	}
	ttl, err := live.TimeToLive(ctx, clientv3.LeaseID(db.leaseID), clientv3.WithAttachedKeys())
	if err != nil {
		t.Fatal(err)
	}
	attached := 0
	for _, k := range want {
		if k.Lease == db.leaseID {
			attached++
		}
	}
	if attached == 0 || len(ttl.Keys) != attached {
		t.Errorf("lease %x: %d keys attached after restore, %d salvaged with it", db.leaseID, len(ttl.Keys), attached)
	}
	put, err := live.Put(ctx, "/registry/configmaps/ns-0/after", "x")
	if err != nil {
		t.Fatal(err)
	}
	if put.Header.Revision != resp.Header.Revision+1 {
		t.Errorf("next write at %d, want %d", put.Header.Revision, resp.Header.Revision+1)
	}
	if b, _ := os.ReadFile(damaged); !bytes.Contains(b, []byte("cm-")) {
		t.Error("the input changed")
	}
}
