package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// TestEtcdRangeStreamByVersion lists more than a page on whatever etcd the
// tests run against (make test-matrix runs v3.5, v3.6 and v3.7) without
// forcing a mode: an etcd before v3.7 answers RangeStream Unimplemented,
// and the listing must still be complete, through the unary fallback,
// which the store then keeps using; v3.7 keeps streaming.
func TestEtcdRangeStreamByVersion(t *testing.T) {
	t.Parallel()
	for _, opts := range []etcdtest.Options{{}, {TLS: true}} {
		t.Run(fmt.Sprintf("TLS=%v", opts.TLS), func(t *testing.T) {
			t.Parallel()
			c, e := etcdStart(t, opts)
			ctx := context.Background()
			const n = 250
			const prefix = "/registry/configmaps/versions/"
			for i := range n {
				c.Put(t, fmt.Sprintf("%sk%05d", prefix, i), []byte("v"))
			}
			var got []string
			if _, err := e.List(ctx, prefix, ListOptions{PageSize: 100}, func(kv *KeyValue) error {
				got = append(got, kv.Key)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("listed %d keys, want %d", len(got), n)
			}
			for i, k := range got {
				if want := fmt.Sprintf("%sk%05d", prefix, i); k != want {
					t.Fatalf("key %d = %s, want %s", i, k, want)
				}
			}
			v := c.ServerVersion(t)
			if want := etcdtest.VersionBelow(v, 3, 7); e.noStream.Load() != want {
				t.Errorf("etcd %s: unary fallback in use = %v, want %v", v, e.noStream.Load(), want)
			}
		})
	}
}
