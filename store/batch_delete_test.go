package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// TestDeleteBatch: all or nothing, on each key's mod revision: a key that
// moved or is gone deletes nothing and is named.
func TestDeleteBatch(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	s, err := OpenEtcd(context.Background(), EtcdConfig{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var kvs []KeyValue
	for i := range 4 {
		key := fmt.Sprintf("/registry/secrets/demo/s%d", i)
		resp, err := s.Client().Put(ctx, key, "x")
		if err != nil {
			t.Fatal(err)
		}
		kvs = append(kvs, KeyValue{Key: key, ModRevision: resp.Header.Revision})
	}
	// One moved, one gone: nothing deleted, both named.
	if _, err := s.Client().Put(ctx, kvs[1].Key, "y"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().Delete(ctx, kvs[2].Key); err != nil {
		t.Fatal(err)
	}
	_, err = s.DeleteBatch(ctx, kvs)
	var me *BatchMovedError
	if !errors.As(err, &me) || !errors.Is(err, ErrConflict) || len(me.Moved) != 1 || me.Moved[0].Key != kvs[1].Key || len(me.Gone) != 1 || me.Gone[0] != kvs[2].Key {
		t.Fatalf("DeleteBatch = %v, want a *BatchMovedError naming %s moved and %s gone", err, kvs[1].Key, kvs[2].Key)
	}
	for _, kv := range []KeyValue{kvs[0], kvs[3]} {
		if _, err := s.Get(ctx, kv.Key, 0); err != nil {
			t.Fatalf("%s deleted by a batch that conflicted: %v", kv.Key, err)
		}
	}
	// The keys still at their revisions: deleted in one revision.
	rev, err := s.DeleteBatch(ctx, []KeyValue{kvs[0], kvs[3]})
	if err != nil || rev == 0 {
		t.Fatalf("DeleteBatch = %d, %v", rev, err)
	}
	for _, kv := range []KeyValue{kvs[0], kvs[3]} {
		if _, err := s.Get(ctx, kv.Key, 0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s after the batch: %v, want it gone", kv.Key, err)
		}
	}
	if _, err := s.DeleteBatch(ctx, []KeyValue{{Key: kvs[1].Key}}); err == nil {
		t.Fatal("a delete batch without a revision to compare against was sent")
	}
}
