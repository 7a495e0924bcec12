package wal

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// compareTraffic sends transactions comparing every target etcd has
// (value, version, create, mod and lease revision, over one key and over a
// range, on keys the db holds and keys the log wrote), nested
// transactions, and a range in a transaction at the compaction revision
// (allowed) and below it (refused). Each branch writes a key of its own,
// so that the keyspace after says which branch etcd took.
func compareTraffic(t *testing.T, cli *clientv3.Client, lease clientv3.LeaseID) {
	t.Helper()
	ctx := context.Background()
	n := 0
	txn := func(cmps []clientv3.Cmp, then ...clientv3.Op) {
		t.Helper()
		n++
		tag := fmt.Sprint(n)
		then = append(then, clientv3.OpPut("/t/then-"+tag, "x"))
		if _, err := cli.Txn(ctx).If(cmps...).Then(then...).Else(clientv3.OpPut("/t/else-"+tag, "x")).Commit(); err != nil {
			// A refused transaction writes nothing; etcd's answer is the
			// snapshot's.
			t.Logf("txn %d: %v", n, err)
		}
	}
	cmp := clientv3.Compare
	// On the db's keys (their state before the log).
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/a"), "=", "one")})
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/a"), "=", "two")})
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/a"), "!=", "two")})
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/a"), ">", "a")})
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/a"), "<", "a")})
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/absent"), "=", "")})
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/absent"), "!=", "x")})
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/"), ">", "").WithPrefix()})
	txn([]clientv3.Cmp{cmp(clientv3.Version("/k/a"), "=", 2)})
	txn([]clientv3.Cmp{cmp(clientv3.Version("/k/absent"), "=", 0)})
	txn([]clientv3.Cmp{cmp(clientv3.CreateRevision("/k/b"), "<", 3)})
	txn([]clientv3.Cmp{cmp(clientv3.ModRevision("/k/"), ">", 1).WithPrefix()})
	txn([]clientv3.Cmp{cmp(clientv3.LeaseValue("/k/leased"), "=", lease)})
	txn([]clientv3.Cmp{cmp(clientv3.LeaseValue("/k/a"), "=", 0)})
	// On a key the log wrote (its value read back from the log).
	if _, err := cli.Put(ctx, "/k/a", "three"); err != nil {
		t.Fatal(err)
	}
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/a"), "=", "three")})
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/a"), "=", "one")})
	// A put that keeps the value, then a compare of it.
	if _, err := cli.Put(ctx, "/k/b", "", clientv3.WithIgnoreValue()); err != nil {
		t.Fatal(err)
	}
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/b"), "=", "b")})
	// Nested: every compare is evaluated against the state before the
	// outer transaction, not after its earlier operations.
	n++
	if _, err := cli.Txn(ctx).If(cmp(clientv3.Value("/k/a"), "=", "three")).Then(
		clientv3.OpPut("/k/a", "four"),
		clientv3.OpTxn([]clientv3.Cmp{cmp(clientv3.Value("/k/a"), "=", "three")},
			[]clientv3.Op{clientv3.OpPut("/t/nested-then", "x")},
			[]clientv3.Op{clientv3.OpPut("/t/nested-else", "x")}),
		clientv3.OpTxn([]clientv3.Cmp{cmp(clientv3.Version("/k/c"), "=", 0)},
			[]clientv3.Op{clientv3.OpPut("/t/nested2-then", "x")},
			[]clientv3.Op{clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut("/t/nested2-deep", "x")}, nil)}),
	).Commit(); err != nil {
		t.Fatal(err)
	}
	// A range at the compaction revision is readable; below it is not.
	resp, err := cli.Put(ctx, "/k/compact", "x")
	if err != nil {
		t.Fatal(err)
	}
	c := resp.Header.Revision
	if _, err := cli.Compact(ctx, c, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Txn(ctx).Then(clientv3.OpGet("/k/a", clientv3.WithRev(c)), clientv3.OpPut("/t/range-at-compaction", "x")).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Txn(ctx).Then(clientv3.OpGet("/k/a", clientv3.WithRev(c-1)), clientv3.OpPut("/t/range-below-compaction", "x")).Commit(); err == nil {
		t.Fatal("a range below the compaction revision in a transaction was not refused")
	}
	txn([]clientv3.Cmp{cmp(clientv3.Value("/k/a"), "=", "four")})
}

// TestPointInTimeCompares replays, over an older snapshot, transactions
// comparing every target (a value compare read the value through the WAL
// before the replay had finished: a nil dereference), and the point in
// time after them is etcd's own snapshot, byte for byte.
func TestPointInTimeCompares(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{InProcess: true})
	cli := c.Client(t)
	if _, err := cli.Put(ctx, "/k/a", "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/k/b", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/k/a", "one"); err != nil {
		t.Fatal(err)
	}
	l, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/k/leased", "l", clientv3.WithLease(l.ID)); err != nil {
		t.Fatal(err)
	}
	a := saveSnapshot(t, cli, "a.db")
	compareTraffic(t, cli, l.ID)
	tsnap := saveSnapshot(t, cli, "t.db")
	tb := openBolt(t, tsnap, store.BoltOptions{})
	n := tb.Meta().ConsistentIndex
	c.StopMember(0)
	walDir := copyDir(t, filepath.Join(c.DataDir(0), "member", "wal"))

	out, _ := writePIT(t, a, []string{walDir}, n)
	comparePIT(t, out, tsnap)

	// The same log read over the older snapshot as a store: the keys the
	// transactions wrote, as etcd has them.
	base := openBolt(t, a, store.BoltOptions{})
	lg, err := walfile.OpenMerged([]string{walDir})
	if err != nil {
		t.Fatal(err)
	}
	w, err := OpenLogChecked(ctx, lg, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, key := range []string{"/k/a", "/t/then-1", "/t/else-2", "/t/nested-then", "/t/nested2-then", "/t/range-at-compaction"} {
		want, err := tb.Get(ctx, key, 0)
		if err != nil {
			t.Fatalf("etcd's snapshot: %s: %v", key, err)
		}
		got, err := w.Get(ctx, key, 0)
		if err != nil {
			t.Errorf("Get %s: %v", key, err)
			continue
		}
		if string(got.Value) != string(want.Value) || got.ModRevision != want.ModRevision || got.Version != want.Version {
			t.Errorf("Get %s = %q@%d v%d, etcd %q@%d v%d", key, got.Value, got.ModRevision, got.Version, want.Value, want.ModRevision, want.Version)
		}
	}
}
