package wal

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestWALOverSnapshotOmitsNothing replays a log over an older snapshot
// taken after a compaction: before it, the log deletes keys with writes
// whose outcomes or revisions it does not establish, and the db holds
// nothing of them. A key created before the log and deleted in the else
// branch of transactions comparing it (what the log never establishes
// existed) is named as may have been deleted; keys created inside the log
// and deleted by the revoke of their lease are listed deleted at a
// revision not established. None is left out, none is listed live.
func TestWALOverSnapshotOmitsNothing(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{InProcess: true})
	cli := c.Client(t)
	const p = "/registry/configmaps/raw/"
	put := func(key, value string, opts ...clientv3.OpOption) {
		t.Helper()
		if _, err := cli.Put(ctx, p+key, value, opts...); err != nil {
			t.Fatal(err)
		}
	}
	txn := func(taken bool, cmp clientv3.Cmp, then, els []clientv3.Op) {
		t.Helper()
		resp, err := cli.Txn(ctx).If(cmp).Then(then...).Else(els...).Commit()
		if err != nil || resp.Succeeded != taken {
			t.Fatalf("txn: %v, succeeded %v, want %v", err, resp != nil && resp.Succeeded, taken)
		}
	}
	grant := func() clientv3.LeaseID {
		t.Helper()
		l, err := cli.Grant(ctx, 3600)
		if err != nil {
			t.Fatal(err)
		}
		return l.ID
	}
	revoke := func(l clientv3.LeaseID) {
		t.Helper()
		if _, err := cli.Revoke(ctx, l); err != nil {
			t.Fatal(err)
		}
	}

	// Before the log.
	put("single-pre", "0")
	put("cmp", "0")
	l1 := grant()
	put("lease1-a", "0", clientv3.WithLease(l1))
	for _, k := range []string{"pfx-0", "pfx-1"} {
		put(k, "0")
	}
	st, err := cli.Status(ctx, c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	logStart := st.RaftIndex + 1

	// In the log, before the snapshot.
	put("in-log", "0")
	l3 := grant()
	put("lease3-a", "0", clientv3.WithLease(l3))
	txn(false, clientv3.Compare(clientv3.Version(p+"single-pre"), ">", 1),
		[]clientv3.Op{clientv3.OpPut(p+"single-pre", "version-wrong")}, []clientv3.Op{clientv3.OpPut(p+"cmp-else", "version-failed")})
	single, err := cli.Get(ctx, p+"single-pre")
	if err != nil {
		t.Fatal(err)
	}
	txn(true, clientv3.Compare(clientv3.CreateRevision(p+"single-pre"), "=", single.Kvs[0].CreateRevision),
		[]clientv3.Op{clientv3.OpPut(p+"create-ok", "create-taken")}, nil)
	txn(false, clientv3.Compare(clientv3.CreateRevision(p+"single-pre"), "=", 0),
		[]clientv3.Op{clientv3.OpPut(p+"single-pre", "create-wrong")}, []clientv3.Op{clientv3.OpDelete(p + "single-pre")})
	if _, err := cli.Delete(ctx, p+"pfx-", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	revoke(l1)
	revoke(l3)
	l4 := grant()
	put("exp4-a", "0", clientv3.WithLease(l4))
	revoke(l4)
	put("cmp", "1")
	resp, err := cli.Get(ctx, "probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	mid := saveSnapshot(t, cli, "mid.db")
	// After it.
	put("after", "0")
	c.StopMember(0)
	walDir := cutCopy(t, filepath.Join(c.DataDir(0), "member", "wal"), logStart)

	w, err := OpenWALOver(ctx, walDir, openBolt(t, mid, store.BoltOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("coverage: %+v", w.Coverage())
	checkScanDeleted(t, w, p)
	listed := map[string]int64{}
	if err := w.ScanDeleted(ctx, p, func(kv *store.KeyValue, deleteRev int64) error {
		listed[kv.Key] = deleteRev
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.ScanLatest(ctx, p, false, func(kv *store.KeyValue, _ bool, _ int64) error {
		switch kv.Key {
		case p + "single-pre", p + "lease3-a", p + "exp4-a":
			t.Errorf("%s: listed live", kv.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	u := w.Unestablished(p)
	t.Logf("listed deleted %v; may be deleted %v; a hiding write may have deleted %v", listed, u.MayBeDeleted, u.MayDelete)
	for _, key := range []string{"single-pre", "lease3-a", "exp4-a"} {
		_, ok := listed[p+key]
		// Named either way: as may have been deleted, or as a key a
		// hiding write of unknown outcome may have deleted.
		named := slices.Contains(u.MayBeDeleted, p+key) || slices.Contains(u.MayDelete, p+key)
		switch {
		case ok && slices.Contains(u.MayBeDeleted, p+key):
			t.Errorf("%s: both listed deleted and named as may have been deleted", key)
		case !ok && !named:
			t.Errorf("%s: neither listed deleted nor named as may have been deleted", key)
		}
	}
	// Created inside the log: the log establishes they existed.
	for _, key := range []string{"lease3-a", "exp4-a"} {
		if _, ok := listed[p+key]; !ok {
			t.Errorf("%s: not listed deleted", key)
		}
	}
}
