package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/schema"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// Benchmark db: ETCDPVC_BENCH_DB names an etcd db or snapshot file to use;
// without it a db of benchKeys keys × benchRounds revisions is generated
// once with a real etcd and cached in $XDG_CACHE_HOME/etcdpvc-bench (or
// os.TempDir()/etcdpvc-bench).
const (
	benchKeys    = 10000
	benchRounds  = 5 // create, 3 updates, then delete every 10th key and update the rest
	benchWriters = 16
	benchGetKey  = "/registry/pods/ns-07/pod-05007"
)

var benchDBOnce struct {
	sync.Once
	path string
	err  error
}

func benchDB(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("ETCDPVC_BENCH_DB"); p != "" {
		return p
	}
	benchDBOnce.Do(func() {
		dir := os.Getenv("XDG_CACHE_HOME")
		if dir == "" {
			dir = os.TempDir()
		}
		dir = filepath.Join(dir, "etcdpvc-bench")
		path := filepath.Join(dir, fmt.Sprintf("v1-%dx%d.db", benchKeys, benchRounds))
		benchDBOnce.path = path
		if _, err := os.Stat(path); err == nil {
			return
		}
		benchDBOnce.err = generateBenchDB(b, dir, path)
	})
	if benchDBOnce.err != nil {
		b.Fatalf("generate benchmark db: %v", benchDBOnce.err)
	}
	return benchDBOnce.path
}

// generateBenchDB writes the benchmark history with a real etcd and copies
// its stopped member's db to path (through a temporary file and a rename).
func generateBenchDB(b *testing.B, dir, path string) error {
	start := time.Now()
	c := etcdtest.Start(b, etcdtest.Options{Members: 1})
	cli := c.Client(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	key := func(i int) string { return fmt.Sprintf("/registry/pods/ns-%02d/pod-%05d", i%100, i) }
	value := func(r *rand.Rand, round int) string {
		v := make([]byte, 800+r.IntN(800))
		copy(v, "k8s\x00\n\x09\n\x02v1\x12\x03Pod")
		for i := 16; i < len(v); i++ {
			v[i] = byte('a' + r.IntN(26))
		}
		v[len(v)-1] = byte('0' + round)
		return string(v)
	}
	for round := range benchRounds {
		var wg sync.WaitGroup
		errs := make(chan error, benchWriters)
		for w := range benchWriters {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for i := w; i < benchKeys; i += benchWriters {
					var err error
					if round == benchRounds-1 && i%10 == 0 {
						_, err = cli.Delete(ctx, key(i))
					} else {
						_, err = cli.Put(ctx, key(i), value(r, round), clientv3.WithPrevKV())
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
	}
	c.Stop()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	src, err := os.Open(filepath.Join(c.DataDir(0), "member", "snap", "db"))
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(dir, ".tmp-*.db")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	b.Logf("generated %s (%d revisions) in %v", path, benchKeys*benchRounds, time.Since(start).Round(time.Millisecond))
	return os.Rename(tmp.Name(), path)
}

// benchFile opens the benchmark db and counts its revisions and the bytes
// of its key bucket.
func benchFile(b *testing.B) (*Bolt, int64, int64) {
	b.Helper()
	path := benchDB(b)
	db, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	var revs, size int64
	if err := db.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(schema.Key.Name()).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			revs++
			size += int64(len(k) + len(v))
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return db, revs, size
}

// reportScan reports revisions/s. (Callers set the bytes per op, the key
// bucket's keys and values, for MB/s.)
func reportScan(b *testing.B, revs int64) {
	b.ReportMetric(float64(revs)*float64(b.N)/b.Elapsed().Seconds(), "revisions/s")
}

// BenchmarkBoltCursorBaseline is the floor: a bare bbolt cursor over the
// key bucket, touching every key and value byte once.
func BenchmarkBoltCursorBaseline(b *testing.B) {
	db, revs, size := benchFile(b)
	b.SetBytes(size)
	var sink byte
	for b.Loop() {
		if err := db.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(schema.Key.Name()).Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if len(v) > 0 {
					sink ^= v[0]
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	reportScan(b, revs)
	_ = sink
}

func BenchmarkBoltScanLatest(b *testing.B) {
	db, revs, size := benchFile(b)
	b.SetBytes(size)
	ctx := context.Background()
	for b.Loop() {
		n := 0
		if err := db.ScanLatest(ctx, "", false, func(*KeyValue, bool, int64) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			b.Fatal("no keys")
		}
	}
	reportScan(b, revs)
}

// BenchmarkBoltListMapAll is what `ls -A --db` reads: every key's
// newest value, in key order, values not copied.
func BenchmarkBoltListMapAll(b *testing.B) {
	db, revs, size := benchFile(b)
	b.SetBytes(size)
	ctx := context.Background()
	for b.Loop() {
		n := 0
		if _, err := ListMap(ctx, db, "", ListOptions{}, 0, func(*KeyValue) (int, error) { return 1, nil }, func(k int) error { n += k; return nil }); err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			b.Fatal("no keys")
		}
	}
	reportScan(b, revs)
}

func BenchmarkBoltListPrefix(b *testing.B) {
	db, revs, size := benchFile(b)
	b.SetBytes(size)
	ctx := context.Background()
	for b.Loop() {
		if _, err := db.List(ctx, "/registry/pods/ns-07/", ListOptions{}, func(*KeyValue) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	reportScan(b, revs)
}

func BenchmarkBoltScanRevisions(b *testing.B) {
	db, revs, size := benchFile(b)
	b.SetBytes(size)
	ctx := context.Background()
	for b.Loop() {
		if err := db.ScanRevisions(ctx, "", func(Event) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	reportScan(b, revs)
}

func BenchmarkBoltGetOneKey(b *testing.B) {
	db, revs, size := benchFile(b)
	b.SetBytes(size)
	ctx := context.Background()
	// On an ETCDPVC_BENCH_DB file, ETCDPVC_BENCH_KEY names the key; a
	// missing key costs the same full pass.
	key, custom := benchGetKey, os.Getenv("ETCDPVC_BENCH_DB") != ""
	if k := os.Getenv("ETCDPVC_BENCH_KEY"); k != "" {
		key = k
	}
	for b.Loop() {
		if _, err := db.Get(ctx, key, 0); err != nil && !(custom && errors.Is(err, ErrNotFound)) {
			b.Fatal(err)
		}
	}
	reportScan(b, revs)
}

func BenchmarkBoltOpen(b *testing.B) {
	path := benchDB(b)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for b.Loop() {
		db, err := OpenBolt(path, BoltOptions{})
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}
