package store

import (
	"context"
	"errors"
	"testing"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// TestEtcdCompareAndDelete deletes only at the expected revision and
// reports the key's state otherwise.
func TestEtcdCompareAndDelete(t *testing.T) {
	ctx := context.Background()
	_, e := etcdStart(t, etcdtest.Options{})
	rev := etcdCreate(t, e, "/k", []byte("v1"))
	newRev, err := e.CompareAndSwap(ctx, "/k", rev, []byte("v2"), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.CompareAndDelete(ctx, "/k", rev)
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Current != newRev || string(ce.CurrentValue.Value) != "v2" {
		t.Fatalf("delete at a stale revision: %v, want a conflict at %d", err, newRev)
	}
	if _, err := e.Get(ctx, "/k", 0); err != nil {
		t.Fatalf("the conflicting delete deleted: %v", err)
	}
	delRev, err := e.CompareAndDelete(ctx, "/k", newRev)
	if err != nil || delRev <= newRev {
		t.Fatalf("delete: %d, %v", delRev, err)
	}
	if _, err := e.Get(ctx, "/k", 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the delete: %v", err)
	}
	if _, err := e.CompareAndDelete(ctx, "/k", newRev); !errors.As(err, &ce) || ce.Current != 0 {
		t.Fatalf("delete of a deleted key: %v, want a conflict with Current 0", err)
	}
	if _, err := e.CompareAndDelete(ctx, "/k", 0); err == nil {
		t.Fatal("delete without a revision was sent")
	}
}

// TestEtcdClusterID reports the same ID for every member of a cluster and
// another for another cluster.
func TestEtcdClusterID(t *testing.T) {
	ctx := context.Background()
	c, a := etcdStart(t, etcdtest.Options{Members: 3})
	_, b := etcdStart(t, etcdtest.Options{})
	idA, err := a.ClusterID(ctx)
	if err != nil || idA == 0 {
		t.Fatalf("ClusterID: %x, %v", idA, err)
	}
	member := etcdOpen(t, EtcdConfig{Endpoints: []string{c.ClientURL(2)}})
	if id, err := member.ClusterID(ctx); err != nil || id != idA {
		t.Fatalf("member 2: cluster ID %x, %v; want %x", id, err, idA)
	}
	if id, err := b.ClusterID(ctx); err != nil || id == idA {
		t.Fatalf("another cluster: %x, %v", id, err)
	}
}
