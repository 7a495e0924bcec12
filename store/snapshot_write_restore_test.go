package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestSnapshotCopyRestore edits a real `etcdctl snapshot save` file and
// a stopped member's db, restores the result with the real etcdutl and
// starts the real etcd on it: the edits are there, with the revisions,
// versions and leases etcd itself would have given them, and etcd goes on
// writing after them.
func TestSnapshotCopyRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds etcd and etcdutl, restores and starts etcd")
	}
	etcdutl, etcd := etcdtest.EtcdBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// A cluster with an edit target, a deleted key, a key with a lease, and a
	// compaction that removed the newest revisions (a put and delete of a
	// scratch key), so the current revision is above every key's.
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cli.Put(ctx, "/registry/configmaps/demo/edit", "v1"))
	must(cli.Put(ctx, "/registry/configmaps/demo/edit", "v2"))
	must(cli.Put(ctx, "/registry/configmaps/demo/gone", "old"))
	must(cli.Delete(ctx, "/registry/configmaps/demo/gone"))
	must(cli.Put(ctx, "/registry/configmaps/demo/doomed", "\x00unreadable"))
	lease, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	must(cli.Put(ctx, "/registry/events/demo/leased", "e1", clientv3.WithLease(lease.ID)))
	must(cli.Put(ctx, "/scratch", "x"))
	del, err := cli.Delete(ctx, "/scratch")
	if err != nil {
		t.Fatal(err)
	}
	must(cli.Compact(ctx, del.Header.Revision, clientv3.WithCompactPhysical()))
	current := del.Header.Revision

	snapPath := filepath.Join(t.TempDir(), "snapshot.db")
	cfg := clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, snapPath); err != nil {
		t.Fatal(err)
	}
	memberDB := filepath.Join(c.DataDir(0), "member", "snap", "db")
	c.Stop()

	for _, tc := range []struct {
		name, in string
		bump     []string
	}{
		{name: "snapshot", in: snapPath},
		{name: "member db", in: memberDB},
		{name: "snapshot bump-revision", in: snapPath, bump: []string{"--bump-revision", "1000", "--mark-compacted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snapKeepsInput(t, tc.in)
			out := filepath.Join(t.TempDir(), "edited.db")
			sc, err := store.OpenSnapshotCopy(tc.in, out, store.BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.Meta().Revision; got != current {
				t.Fatalf("copy's current revision %d, etcd's %d", got, current)
			}
			edit, err := sc.Get(ctx, "/registry/configmaps/demo/edit", 0)
			if err != nil {
				t.Fatal(err)
			}
			leased, err := sc.Get(ctx, "/registry/events/demo/leased", 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sc.Get(ctx, "/registry/configmaps/demo/gone", 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("deleted key: %v", err)
			}
			r1, err := sc.CompareAndSwap(ctx, edit.Key, edit.ModRevision, []byte("v3"), edit.Lease)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := sc.CompareAndSwap(ctx, "/registry/configmaps/demo/gone", 0, []byte("recovered"), 0)
			if err != nil {
				t.Fatal(err)
			}
			r3, err := sc.CompareAndSwap(ctx, leased.Key, leased.ModRevision, []byte("e2"), leased.Lease)
			if err != nil {
				t.Fatal(err)
			}
			doomed, err := sc.Get(ctx, "/registry/configmaps/demo/doomed", 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sc.CompareAndDelete(ctx, doomed.Key, doomed.ModRevision-1); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("delete at a stale revision: %v, want a conflict", err)
			}
			r4, err := sc.CompareAndDelete(ctx, doomed.Key, doomed.ModRevision)
			if err != nil {
				t.Fatal(err)
			}
			if r1 != current+1 || r2 != current+2 || r3 != current+3 || r4 != current+4 {
				t.Fatalf("revisions %d %d %d %d, want %d, %d, %d, %d", r1, r2, r3, r4, current+1, current+2, current+3, current+4)
			}
			if _, err := sc.Get(ctx, doomed.Key, 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("deleted in the copy: %v", err)
			}
			if err := sc.Close(); err != nil {
				t.Fatal(err)
			}

			var bump int64
			if len(tc.bump) > 0 {
				bump, _ = strconv.ParseInt(tc.bump[1], 10, 64)
			}
			live := etcdtest.RestoreAndStart(t, etcdutl, etcd, out, tc.bump...)
			get := func(key string) *clientv3.GetResponse {
				t.Helper()
				resp, err := live.Get(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.Kvs) != 1 {
					t.Fatalf("%s: %d values after restore", key, len(resp.Kvs))
				}
				return resp
			}
			resp := get("/registry/configmaps/demo/edit")
			kv := resp.Kvs[0]
			if string(kv.Value) != "v3" || kv.ModRevision != r1 || kv.CreateRevision != edit.CreateRevision || kv.Version != edit.Version+1 {
				t.Errorf("edited key after restore: value %q mod %d create %d version %d; want v3 %d %d %d",
					kv.Value, kv.ModRevision, kv.CreateRevision, kv.Version, r1, edit.CreateRevision, edit.Version+1)
			}
			if resp.Header.Revision != r4+bump {
				t.Errorf("restored etcd at revision %d, want %d", resp.Header.Revision, r4+bump)
			}
			if gone, err := live.Get(ctx, doomed.Key); err != nil || len(gone.Kvs) != 0 {
				t.Errorf("the key deleted in the copy after restore: %v %v", gone, err)
			}
			if bump == 0 {
				// Its tombstone is etcd's: the value is there just before it.
				was, err := live.Get(ctx, doomed.Key, clientv3.WithRev(r4-1))
				if err != nil || len(was.Kvs) != 1 || string(was.Kvs[0].Value) != "\x00unreadable" {
					t.Errorf("the deleted key at revision %d after restore: %v %v", r4-1, was, err)
				}
			}
			kv = get("/registry/configmaps/demo/gone").Kvs[0]
			if string(kv.Value) != "recovered" || kv.ModRevision != r2 || kv.CreateRevision != r2 || kv.Version != 1 {
				t.Errorf("recreated key after restore: %q mod %d create %d version %d", kv.Value, kv.ModRevision, kv.CreateRevision, kv.Version)
			}
			kv = get("/registry/events/demo/leased").Kvs[0]
			if string(kv.Value) != "e2" || kv.Lease != int64(lease.ID) {
				t.Errorf("leased key after restore: %q lease %x, want e2 lease %x", kv.Value, kv.Lease, lease.ID)
			}
			ttl, err := live.TimeToLive(ctx, lease.ID, clientv3.WithAttachedKeys())
			if err != nil {
				t.Fatal(err)
			}
			if len(ttl.Keys) != 1 || string(ttl.Keys[0]) != "/registry/events/demo/leased" {
				t.Errorf("lease %x keys after restore: %q", lease.ID, ttl.Keys)
			}
			if bump == 0 {
				// The edits are revisions of their own: reading as of r1
				// sees the edit and not the re-creation at r2.
				at, err := live.Get(ctx, "/registry/configmaps/demo/", clientv3.WithPrefix(), clientv3.WithRev(r1))
				if err != nil || len(at.Kvs) != 2 || string(at.Kvs[1].Value) != "v3" {
					t.Errorf("read at revision %d after restore: %v %v", r1, at, err)
				}
			}
			// etcd writes on after the edits.
			put, err := live.Put(ctx, "/registry/configmaps/demo/edit", "v4")
			if err != nil {
				t.Fatal(err)
			}
			if put.Header.Revision != r4+bump+1 {
				t.Errorf("next write at revision %d, want %d", put.Header.Revision, r4+bump+1)
			}
		})
	}
}
