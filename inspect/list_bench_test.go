package inspect

import (
	"context"
	"testing"

	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// BenchmarkRead times Read, what ls does to each key, on values a real
// apiserver wrote: a Pod (the largest common kind) and a
// PersistentVolumeClaim.
func BenchmarkRead(b *testing.B) {
	for _, tc := range []struct{ res, file, key string }{
		{"pods", "plain/pods__demo__web-0.bin", "/registry/pods/demo/web-0"},
		{"pvc", "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin", "/registry/persistentvolumeclaims/demo/www-web-0"},
	} {
		r, err := resource.Lookup(tc.res)
		if err != nil {
			b.Fatal(err)
		}
		kv := &store.KeyValue{Key: tc.key, Value: corpus(b, tc.file), ModRevision: 7}
		b.Run(tc.res, func(b *testing.B) {
			b.SetBytes(int64(len(kv.Value)))
			for b.Loop() {
				if it, _ := Read(context.Background(), nil, r, "demo", "x", kv, 0); it.Summary == nil {
					b.Fatal(it.Unread)
				}
			}
		})
	}
}
