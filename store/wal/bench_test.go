package wal

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/etcdpvc/etcdpvc/internal/embedetcd"
	"github.com/etcdpvc/etcdpvc/store"
)

// benchWALSegments is how many full 64 MB segments the benchmark log holds.
const benchWALSegments = 5

var benchWALOnce struct {
	sync.Once
	dir string
	err error
}

// benchWAL returns a member data directory whose log holds
// benchWALSegments full segments of kube-apiserver writes, generated once
// with a real etcd under ${XDG_CACHE_HOME:-~/.cache}/etcdpvc-bench
// (ETCDPVC_BENCH_WAL overrides).
func benchWAL(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("ETCDPVC_BENCH_WAL"); p != "" {
		return p
	}
	benchWALOnce.Do(func() {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir := filepath.Join(base, "etcdpvc-bench", fmt.Sprintf("wal-v2-%dx64MB", benchWALSegments))
		benchWALOnce.dir = dir
		if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
			return
		}
		os.RemoveAll(dir)
		benchWALOnce.err = generateBenchWAL(dir)
	})
	if benchWALOnce.err != nil {
		b.Fatalf("generate the benchmark log: %v", benchWALOnce.err)
	}
	return benchWALOnce.dir
}

// generateBenchWAL runs a real etcd in dir (keeping every segment) and
// writes the corpus objects, varied, through kube-apiserver's transactions
// (create, then updates, some deletions; a failed compare retried from the
// revision it read, as kube-apiserver does) until the log holds
// benchWALSegments full segments.
func generateBenchWAL(dir string) error {
	var values [][]byte
	bins, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "corpus", "plain", "*.bin"))
	for _, p := range bins {
		v, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		values = append(values, v)
	}
	if len(values) == 0 {
		return fmt.Errorf("no corpus values")
	}
	// Objects of a real cluster are larger than the corpus's minimal ones
	// (managedFields, status, annotations): half the writes carry 4 to 8
	// KiB, the corpus value repeated.
	for _, v := range values[:len(values):len(values)] {
		big := v
		for len(big) < 4096 {
			big = append(big[:len(big):len(big)], v...)
		}
		values = append(values, big)
	}
	ports, err := embedetcd.FreePorts(2)
	if err != nil {
		return err
	}
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg := embed.NewConfig()
	cfg.Name = "bench"
	cfg.Dir = dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.Logger, cfg.LogLevel = "zap", "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true
	cfg.EnableGRPCGateway = false
	cfg.MaxWalFiles = 0 // keep every segment
	cfg.QuotaBackendBytes = 8 << 30
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	var closeOnce sync.Once
	stop := func() { closeOnce.Do(e.Close) }
	defer stop()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		return fmt.Errorf("etcd not ready")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client.String()}})
	if err != nil {
		return err
	}
	defer cli.Close()
	walDir := filepath.Join(dir, "member", "wal")
	full := func() bool {
		names, _ := filepath.Glob(filepath.Join(walDir, "*.wal"))
		return len(names) > benchWALSegments
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			revs := map[string]int64{}
			for i := 0; ; i++ {
				if i%256 == 0 && full() {
					return
				}
				key := fmt.Sprintf("/registry/%s/ns-%02d/obj-%d-%05d", []string{"pods", "configmaps", "persistentvolumeclaims", "leases", "events"}[i%5], i%40, w, i%4000)
				then := clientv3.OpPut(key, string(values[(i+w)%len(values)]))
				del := i%10 == 9 && revs[key] != 0
				if del {
					then = clientv3.OpDelete(key)
				}
				resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", revs[key])).
					Then(then).Else(clientv3.OpGet(key)).Commit()
				if err != nil {
					errs <- err
					return
				}
				switch {
				case !resp.Succeeded:
					// As kube-apiserver retries: from the key's
					// revision the failed transaction read.
					revs[key] = 0
					if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
						revs[key] = kvs[0].ModRevision
					}
				case del:
					revs[key] = 0
				default:
					revs[key] = resp.Header.Revision
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	stop()
	return os.WriteFile(filepath.Join(dir, "complete"), nil, 0o600)
}

// BenchmarkOpenWAL reads and replays the whole benchmark log (five full
// 64 MB segments). It reports the log's size, the live heap the opened log
// holds (its index: no value is kept) and the process's peak RSS.
func BenchmarkOpenWAL(b *testing.B) {
	dir := benchWAL(b)
	var size int64
	names, _ := filepath.Glob(filepath.Join(dir, "member", "wal", "*.wal"))
	for _, n := range names {
		if st, err := os.Stat(n); err == nil {
			size += st.Size()
		}
	}
	b.SetBytes(size)
	b.ResetTimer()
	var w *WAL
	for range b.N {
		var err error
		if w, err = OpenWALOver(context.Background(), dir, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cov := w.Coverage()
	reportMemory(b)
	b.ReportMetric(float64(len(cov.Segments)), "segments")
	b.ReportMetric(float64(cov.LastIndex), "entries")
	b.ReportMetric(float64(cov.LastRevision), "revisions")
	if cov.RevisionsStop != "" || !strings.HasSuffix(names[0], "0000000000000000-0000000000000000.wal") {
		b.Fatalf("benchmark log: %+v", cov)
	}
	runtime.KeepAlive(w)
}

// BenchmarkOpenWALOverDB reads the benchmark log over the member's db
// (whose consistent index is at the log's end): every entry is one the db
// holds, worked out back from it and checked against it. "purged" reads
// the log without its first segment (as after a raft snapshot): the state
// before it comes from the compares.
func BenchmarkOpenWALOverDB(b *testing.B) {
	dir := benchWAL(b)
	walDir := filepath.Join(dir, "member", "wal")
	names, _ := filepath.Glob(filepath.Join(walDir, "*.wal"))
	purged := b.TempDir()
	for _, n := range names[1:] {
		if err := os.Link(n, filepath.Join(purged, filepath.Base(n))); err != nil {
			b.Skipf("link the log's segments: %v", err)
		}
	}
	for _, bc := range []struct{ name, wal string }{{"exact", walDir}, {"purged", purged}} {
		b.Run(bc.name, func(b *testing.B) {
			base, err := store.OpenBolt(filepath.Join(dir, "member", "snap", "db"), store.BoltOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer base.Close()
			var w *WAL
			for range b.N {
				if w, err = OpenWALOver(context.Background(), bc.wal, base); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cov := w.Coverage()
			if cov.PrefixUnresolved != "" || cov.InDB == 0 {
				b.Fatalf("prefix not worked out: %+v", cov)
			}
			reportMemory(b)
			b.ReportMetric(float64(cov.InDB), "entries-in-db")
			runtime.KeepAlive(w)
		})
	}
}

// reportMemory reports the live heap held after a GC (what the opened
// log keeps), the most heap obtained from the system, and the process's
// peak RSS (with a db, its memory-mapped file counts).
func reportMemory(b *testing.B) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "MB-heap-held")
	b.ReportMetric(float64(ms.HeapSys)/(1<<20), "MB-heap-sys")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "MB-maxrss")
	}
}
