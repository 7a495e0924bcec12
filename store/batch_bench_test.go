package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// benchValues are n values of about the size of a small stored object.
func benchValues(prefix string, n int) []KeyValue {
	kvs := make([]KeyValue, n)
	val := make([]byte, 1200)
	for i := range kvs {
		kvs[i] = KeyValue{Key: fmt.Sprintf("%s/obj-%05d", prefix, i), Value: val}
	}
	return kvs
}

// BenchmarkCreate10k compares creating 10,000 values with one clientv3 Put
// each (as `etcdctl put` does) and with CreateBatch in transactions of
// MaxTxnOps keys.
func BenchmarkCreate10k(b *testing.B) {
	c := etcdtest.Start(b, etcdtest.Options{})
	s, err := OpenEtcd(context.Background(), EtcdConfig{Endpoints: c.Endpoints()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	b.Run("put-one-by-one", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, kv := range benchValues(fmt.Sprintf("/bench/put/%d", i), 10000) {
				if _, err := s.Client().Put(ctx, kv.Key, string(kv.Value)); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("create-batch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			kvs := benchValues(fmt.Sprintf("/bench/batch/%d", i), 10000)
			for start := 0; start < len(kvs); start += MaxTxnOps {
				end := min(start+MaxTxnOps, len(kvs))
				if _, err := s.CreateBatch(ctx, kvs[start:end]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
