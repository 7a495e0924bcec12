package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	etcdwal "go.etcd.io/etcd/server/v3/storage/wal"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// saveSnapshot writes cli's etcdctl-style snapshot (with its sha256
// trailer) to a new file.
func saveSnapshot(t *testing.T, cli *clientv3.Client, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	rc, err := cli.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// pitTraffic writes what a kube-apiserver and an operator write: creates,
// updates and deletes by compare (one that fails), blind puts, a put that
// keeps its value (IgnoreValue) and one that keeps its lease
// (IgnoreLease), a transaction of several puts (sub revisions), leases
// granted, used and revoked (a revoke deleting keys in one revision), a
// range delete, and a physical compaction. round names the keys.
func pitTraffic(t *testing.T, cli *clientv3.Client, round string) {
	t.Helper()
	ctx := context.Background()
	ns := "/registry/configmaps/" + round + "/"
	revs := map[string]int64{}
	pad := string(bytes.Repeat([]byte("x"), 4096)) // several wal segments a round
	kw := func(name string, value string, del bool) {
		t.Helper()
		key := ns + name
		if !del {
			value += pad
		}
		rev, ok := kubeWrite(t, cli, key, revs[key], []byte(value), del)
		if !ok {
			t.Fatalf("%s: compare on %d failed", key, revs[key])
		}
		revs[key] = rev
		if del {
			revs[key] = 0
		}
	}
	for i := range 30 {
		kw(fmt.Sprint("cm-", i), fmt.Sprint("v1-", i), false)
	}
	for i := range 10 {
		kw(fmt.Sprint("cm-", i), fmt.Sprint("v2-", i), false)
	}
	if _, ok := kubeWrite(t, cli, ns+"cm-0", 1, []byte("stale"), false); ok {
		t.Fatal("a stale compare held")
	}
	for i := 20; i < 25; i++ {
		kw(fmt.Sprint("cm-", i), "", true)
	}
	lease, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	short, err := cli.Grant(ctx, 600)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/registry/events/%s/ev-%d", round, i), "event", clientv3.WithLease(short.ID)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, "/registry/masterleases/"+round, "10.0.0.1", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/registry/masterleases/"+round, "", clientv3.WithIgnoreValue()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/registry/masterleases/"+round, "10.0.0.2", clientv3.WithIgnoreLease()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Txn(ctx).Then(
		clientv3.OpPut("/registry/ranges/serviceips-"+round, "range"),
		clientv3.OpPut("/registry/ranges/servicenodeports-"+round, "ports"),
		clientv3.OpDelete(ns+"cm-25"),
	).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, short.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, ns+"cm-1", clientv3.WithRange(ns+"cm-2")); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Put(ctx, "/registry/compact_rev_key", round)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision-20, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	for i := 26; i < 30; i++ {
		kw(fmt.Sprint("cm-", i), fmt.Sprint("v3-", i), false)
	}
}

// boltItems is every bucket's items of a bbolt file, by bucket name.
func boltItems(t *testing.T, path string) map[string]map[string][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]map[string][]byte{}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			m := map[string][]byte{}
			out[string(name)] = m
			return b.ForEach(func(k, v []byte) error {
				m[string(k)] = bytes.Clone(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// comparePIT fails t unless the snapshot file got holds what etcd's own
// snapshot want does: the same buckets, each with the same items byte for
// byte (membership aside: the members' attributes may have been
// published since base), and the same HashKV.
func comparePIT(t *testing.T, got, want string) {
	t.Helper()
	g, w := boltItems(t, got), boltItems(t, want)
	for name, wb := range w {
		gb, ok := g[name]
		if !ok {
			t.Errorf("bucket %q: missing", name)
			continue
		}
		n := 0
		for k, wv := range wb {
			if gv, ok := gb[k]; !ok {
				t.Errorf("bucket %q: item %x missing (etcd: %x)", name, k, wv)
				n++
			} else if !bytes.Equal(gv, wv) {
				t.Errorf("bucket %q: item %x = %x, etcd %x", name, k, gv, wv)
				n++
			}
			if n > 10 {
				t.Fatalf("bucket %q: too many differences", name)
			}
		}
		for k := range gb {
			if _, ok := wb[k]; !ok {
				t.Errorf("bucket %q: item %x etcd does not hold", name, k)
			}
		}
	}
	for name := range g {
		if _, ok := w[name]; !ok {
			t.Errorf("bucket %q: etcd's snapshot has none", name)
		}
	}
	ctx := context.Background()
	hash := func(path string) store.HashKV {
		b, err := store.OpenBolt(path, store.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		h, err := b.HashKV(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if gh, wh := hash(got), hash(want); gh != wh {
		t.Errorf("HashKV %+v, etcd's snapshot %+v", gh, wh)
	}
}

// writePIT writes the point in time at index from base and the log in
// dirs, and returns its path.
func writePIT(t *testing.T, basePath string, dirs []string, index uint64) (string, *PointInTime) {
	t.Helper()
	ctx := context.Background()
	base := openBolt(t, basePath, store.BoltOptions{})
	l, err := walfile.OpenMerged(dirs)
	if err != nil {
		t.Fatal(err)
	}
	w, err := OpenLogChecked(ctx, l, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	p, err := w.PointInTime(ctx, index)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "pit.db")
	if _, err := store.WritePointInTime(ctx, base, out, p.Snapshot(), store.BoltOptions{}); err != nil {
		t.Fatal(err)
	}
	return out, p
}

// TestPointInTimeIsEtcdsSnapshot takes etcd's own snapshot T at raft
// index N between an older snapshot A and a disaster, and writes the
// point in time at N from A and the member's log: it holds T's keyspace
// byte for byte (every revision, version, lease, the compaction, the raft
// position) and T's HashKV. --before-delete and --before-revision find N
// back from the disaster.
func TestPointInTimeIsEtcdsSnapshot(t *testing.T) {
	defer func(n int64) { etcdwal.SegmentSizeBytes = n }(etcdwal.SegmentSizeBytes)
	etcdwal.SegmentSizeBytes = 64 << 10

	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{InProcess: true})
	cli := c.Client(t)
	pitTraffic(t, cli, "before")
	for i := range 20 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/registry/configmaps/prod/app-%d", i), "prod"); err != nil {
			t.Fatal(err)
		}
	}
	a := saveSnapshot(t, cli, "a.db")
	pitTraffic(t, cli, "between")
	tsnap := saveSnapshot(t, cli, "t.db")
	tb := openBolt(t, tsnap, store.BoltOptions{})
	n, trev := tb.Meta().ConsistentIndex, tb.Meta().Revision
	tb.Close()
	// The disaster, and the cluster going on.
	del, err := cli.Delete(ctx, "/registry/configmaps/prod/", clientv3.WithPrefix())
	if err != nil || del.Deleted != 20 {
		t.Fatalf("the disaster: %v, %+v", err, del)
	}
	pitTraffic(t, cli, "after")
	c.StopMember(0)
	walDir := copyDir(t, filepath.Join(c.DataDir(0), "member", "wal"))

	out, p := writePIT(t, a, []string{walDir}, n)
	if p.Revision != trev {
		t.Errorf("point in time at %d: revision %d, etcd's snapshot %d", n, p.Revision, trev)
	}
	comparePIT(t, out, tsnap)

	base := openBolt(t, a, store.BoltOptions{})
	l, err := walfile.OpenMerged([]string{walDir})
	if err != nil {
		t.Fatal(err)
	}
	w, err := OpenLogChecked(ctx, l, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got, e, err := w.IndexBeforeDelete("/registry/configmaps/prod/")
	if err != nil || got != n || e.Revision != del.Header.Revision {
		t.Errorf("IndexBeforeDelete = %d (%+v), %v; want %d (etcd's snapshot, before revision %d)", got, e, err, n, del.Header.Revision)
	}
	if got, err := w.IndexBeforeRevision(del.Header.Revision); err != nil || got != n {
		t.Errorf("IndexBeforeRevision(%d) = %d, %v; want %d", del.Header.Revision, got, err, n)
	}
	if _, err := w.IndexBeforeRevision(del.Header.Revision + 100000); !errors.Is(err, ErrNoPointInTime) {
		t.Errorf("IndexBeforeRevision past the log: %v, want ErrNoPointInTime", err)
	}
	if _, err := w.PointInTime(ctx, base.Meta().ConsistentIndex-1); !errors.Is(err, ErrBeforeBase) {
		t.Errorf("PointInTime before the db: %v, want ErrBeforeBase", err)
	}
	if _, err := w.PointInTime(ctx, w.Coverage().LastIndex+1); !errors.Is(err, ErrUndetermined) {
		t.Errorf("PointInTime past the log: %v, want ErrUndetermined", err)
	}

	// At the db's own index: the db as it is.
	same, _ := writePIT(t, a, []string{walDir}, base.Meta().ConsistentIndex)
	comparePIT(t, same, a)

	// A log purged past A's consistent index is refused: the entries
	// between are in neither.
	purged, dropped := purgeCopy(t, walDir, base.Meta().ConsistentIndex+200)
	if dropped == 0 {
		t.Fatal("the purge dropped nothing")
	}
	l2, err := walfile.OpenMerged([]string{purged})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLogChecked(ctx, l2, base, nil); !errors.Is(err, ErrLogGap) {
		t.Errorf("a log purged past the db's consistent index: %v, want ErrLogGap", err)
	}
}

// TestPointInTimeMergedMembers writes the point in time from two members'
// logs that each miss part of the span: one purged past the older
// snapshot's consistent index, the other ending before the point. Merged,
// they cover it, and the result is etcd's own snapshot.
func TestPointInTimeMergedMembers(t *testing.T) {
	defer func(n int64) { etcdwal.SegmentSizeBytes = n }(etcdwal.SegmentSizeBytes)
	etcdwal.SegmentSizeBytes = 64 << 10

	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{Members: 3, InProcess: true})
	cli := c.Client(t)
	pitTraffic(t, cli, "before")
	a := saveSnapshot(t, cli, "a.db")
	ab := openBolt(t, a, store.BoltOptions{})
	aci := ab.Meta().ConsistentIndex
	ab.Close()
	pitTraffic(t, cli, "between")
	pitTraffic(t, cli, "between2")
	tsnap := saveSnapshot(t, cli, "t.db")
	tb := openBolt(t, tsnap, store.BoltOptions{})
	n := tb.Meta().ConsistentIndex
	tb.Close()
	pitTraffic(t, cli, "after")
	for i := range 3 {
		c.StopMember(i)
	}
	late, dropped := purgeCopy(t, filepath.Join(c.DataDir(1), "member", "wal"), aci+60)
	if dropped == 0 {
		t.Fatal("the purge dropped nothing")
	}
	early := copyDir(t, filepath.Join(c.DataDir(2), "member", "wal"))
	dropSegmentsAfter(t, early, aci+60)
	// Neither alone.
	for _, dir := range []string{late, early} {
		base := openBolt(t, a, store.BoltOptions{})
		l, err := walfile.OpenMerged([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		w, err := OpenLogChecked(ctx, l, base, nil)
		if err == nil {
			_, err = w.PointInTime(ctx, n)
			w.Close()
		}
		if !errors.Is(err, ErrLogGap) && !errors.Is(err, ErrUndetermined) {
			t.Errorf("one member's log alone: %v, want ErrLogGap (it starts after the db's) or ErrUndetermined (it ends before the point)", err)
		}
	}
	out, _ := writePIT(t, a, []string{late, early}, n)
	comparePIT(t, out, tsnap)
}

// dropSegmentsAfter removes from a wal directory copy every segment
// starting after index (the log then ends a segment or less after it).
func dropSegmentsAfter(t *testing.T, dir string, index uint64) {
	t.Helper()
	dropSegments(t, dir, func(start uint64) bool { return start > index })
}

func TestRequestDeletes(t *testing.T) {
	del := func(k, e string) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{DeleteRange: &pb.DeleteRangeRequest{Key: []byte(k), RangeEnd: []byte(e)}}
	}
	txn := &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("/registry/pods/a/b")}}}}}}}}}}
	for _, tc := range []struct {
		req  *pb.InternalRaftRequest
		key  string
		want bool
	}{
		{del("/registry/pods/a/b", ""), "/registry/pods/a/b", true},
		{del("/registry/pods/a/b", ""), "/registry/pods/a/bc", false},
		{del("/registry/pods/a/b", ""), "/registry/pods/a/", true},
		{del("/registry/pods/a/", "/registry/pods/a0"), "/registry/pods/a/x", true},
		{del("/registry/pods/a/", "/registry/pods/a0"), "/registry/pods/", true},
		{del("/registry/pods/b/", "/registry/pods/b0"), "/registry/pods/a/", false},
		{del("/registry/pods/a/x", "\x00"), "/registry/pods/a/", true},
		{del("/registry/pods/b", "\x00"), "/registry/pods/a/", false},
		{del("/registry/pods/a/c", "/registry/pods/a/d"), "/registry/pods/a/b", false},
		{del("/registry/pods/a/a", "/registry/pods/a/c"), "/registry/pods/a/b", true},
		{txn, "/registry/pods/a/b", true},
		{txn, "/registry/pods/a/c", false},
	} {
		if got := requestDeletes(tc.req, tc.key); got != tc.want {
			t.Errorf("requestDeletes(%v, %q) = %v, want %v", tc.req, tc.key, got, tc.want)
		}
	}
}
