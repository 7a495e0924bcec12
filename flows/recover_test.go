package flows

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestRecoverSource: the revision recover reads, and the hint of each way
// of finding none, against a real etcd.
func TestRecoverSource(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	const key = "/registry/configmaps/demo/web"
	c.Put(t, key, []byte("v1"))
	c.Put(t, key, []byte("v2"))
	if _, err := c.Client(t).Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := Open(ctx, session.Options{Endpoints: c.Endpoints(), Prefix: "/registry"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	from, err := s.RecoverSource(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(from.KV.Value) != "v2" || from.DeletedAt <= from.KV.ModRevision {
		t.Errorf("recovers %q (revision %d, deleted at %d), want v2 before its deletion", from.KV.Value, from.KV.ModRevision, from.DeletedAt)
	}
	for _, tc := range []struct {
		key  string
		rev  int64
		hint string
	}{
		{"/registry/configmaps/demo/never", 0, "recover from an older snapshot"},
		{key, from.DeletedAt, "`etcdpvc history` lists the revisions held"},
	} {
		_, err := s.RecoverSource(ctx, tc.key, tc.rev)
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("RecoverSource(%s, %d): error %v, want not found", tc.key, tc.rev, err)
		}
		if h := Hint(err); !strings.Contains(h, tc.hint) {
			t.Errorf("RecoverSource(%s, %d): hint %q, want one with %q", tc.key, tc.rev, h, tc.hint)
		}
	}
}
