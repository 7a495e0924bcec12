package inspect

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// benchDB is the db file ETCDPVC_BENCH_DB names (make bench-data writes
// them under ~/.cache/etcdpvc-bench), or the corpus snapshot.
func benchDB() string {
	if path := os.Getenv("ETCDPVC_BENCH_DB"); path != "" {
		return path
	}
	return filepath.Join(corpusDir, "etcd-snapshot.db")
}

// BenchmarkDumpFile dumps benchDB as `dump -A` does, to profile the
// decoding: ETCDPVC_BENCH_DB=~/.cache/etcdpvc-bench/bench-200000.db go test
// ./inspect -run '^$' -bench DumpFile -benchtime 1x -cpuprofile cpu.out.
func BenchmarkDumpFile(b *testing.B) {
	src, err := store.OpenBolt(benchDB(), store.BoltOptions{SkipHashCheck: true})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	match := func(key string) (resource.Resource, string, string, bool, bool) {
		r, ns, name, parsed := resource.ParseKey(kubevalue.DefaultPrefix, key)
		return r, ns, name, parsed, true
	}
	for b.Loop() {
		res, err := Dump(context.Background(), src, io.Discard, DumpOptions{Prefix: kubevalue.DefaultPrefix + "/", Match: match})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Records), "records")
	}
}

// BenchmarkListFile reads what BenchmarkDumpFile dumps, decoding nothing:
// the floor of a dump.
func BenchmarkListFile(b *testing.B) {
	src, err := store.OpenBolt(benchDB(), store.BoltOptions{SkipHashCheck: true})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	for b.Loop() {
		n := 0
		if _, err := src.List(context.Background(), kubevalue.DefaultPrefix+"/", store.ListOptions{}, func(*store.KeyValue) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "records")
	}
}
