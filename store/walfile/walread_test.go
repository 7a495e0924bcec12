package walfile

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// smallSegments makes the in-process etcd cut 64 KiB segments, so that a
// test log spans several.
func smallSegments(t testing.TB) {
	old := wal.SegmentSizeBytes
	wal.SegmentSizeBytes = 64 << 10
	t.Cleanup(func() { wal.SegmentSizeBytes = old })
}

// makeLog writes n kube-apiserver-like updates of 1 KiB values to a real
// etcd, stops it and returns its wal directory.
func makeLog(t testing.TB, n int) string {
	t.Helper()
	smallSegments(t)
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	value := strings.Repeat("v", 1024)
	revs := map[string]int64{}
	for i := range n {
		key := fmt.Sprintf("/registry/configmaps/demo/cm-%d", i%10)
		resp, err := cli.Txn(context.Background()).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", revs[key])).
			Then(clientv3.OpPut(key, value)).Else(clientv3.OpGet(key)).Commit()
		if err != nil {
			t.Fatal(err)
		}
		revs[key] = resp.Header.Revision
	}
	c.StopMember(0)
	return filepath.Join(c.DataDir(0), "member", "wal")
}

func copyFiles(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // a preallocated segment renamed while copying
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func positions(t *testing.T, l *Log) []Pos {
	t.Helper()
	var ps []Pos
	tail, err := l.Scan(func(_ *walpb.Record, p Pos) error { ps = append(ps, p); return nil })
	if err != nil || tail != nil {
		t.Fatalf("scan: %v, tail %v", err, tail)
	}
	return ps
}

// TestScanTornTail cuts the last segment at random byte offsets: the scan
// stops cleanly at the last whole record and says where.
func TestScanTornTail(t *testing.T) {
	dir := makeLog(t, 300)
	l, err := Open(filepath.Dir(filepath.Dir(dir))) // the data dir
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Segments) < 3 {
		t.Fatalf("want several segments, got %d", len(l.Segments))
	}
	all := positions(t, l)
	lastSeg := int32(len(l.Segments) - 1)
	var starts []int64
	for _, p := range all {
		if p.Segment == lastSeg {
			starts = append(starts, p.Offset)
		}
	}
	if len(starts) < 3 {
		t.Fatalf("last segment holds %d records", len(starts))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		cut := rng.Int64N(starts[len(starts)-1]-starts[0]) + starts[0] + 1
		if rng.IntN(8) == 0 {
			cut = starts[1+rng.IntN(len(starts)-2)] // a record boundary
		}
		cp := copyFiles(t, dir)
		if err := os.Truncate(filepath.Join(cp, l.Segments[lastSeg].Name), cut); err != nil {
			t.Fatal(err)
		}
		cl, err := Open(cp)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		tail, err := cl.Scan(func(*walpb.Record, Pos) error { n++; return nil })
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		// Records wholly before the cut are read; the one it cuts is not.
		wantN, wantTail := len(all)-len(starts), int64(-1)
		for i, s := range starts {
			if s > cut || s == cut {
				if s == cut {
					wantTail = -1
				}
				break
			}
			if i+1 < len(starts) && starts[i+1] <= cut {
				wantN++
				continue
			}
			wantTail = s
		}
		if n != wantN {
			t.Errorf("cut at %d: %d records read, want %d", cut, n, wantN)
		}
		switch {
		case wantTail < 0 && tail != nil:
			t.Errorf("cut at record boundary %d: tail %v", cut, tail)
		case wantTail >= 0 && (tail == nil || tail.Offset != wantTail || tail.Segment != l.Segments[lastSeg].Name):
			t.Errorf("cut at %d: tail %v, want offset %d", cut, tail, wantTail)
		}
	}
}

// TestScanCRCMismatch: a damaged record in the middle of the log is an
// error naming the segment and offset, not a short log.
func TestScanCRCMismatch(t *testing.T) {
	dir := makeLog(t, 200)
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	all := positions(t, l)
	for _, seg := range []int32{0, int32(len(l.Segments) - 1)} {
		cp := copyFiles(t, dir)
		path := filepath.Join(cp, l.Segments[seg].Name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The fifth record of the segment longer than 512 bytes (an entry).
		var target Pos
		var size int64
		n := 0
		for _, p := range all {
			if p.Segment != seg {
				continue
			}
			if size = int64(binary.LittleEndian.Uint64(b[p.Offset:]) &^ (0xff << 56)); size > 512 {
				if n++; n == 5 {
					target = p
					break
				}
			}
		}
		if n != 5 {
			t.Fatalf("segment %d: %d long records", seg, n)
		}
		b[target.Offset+8+size/2] ^= 0x55 // inside the record
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cl, err := Open(cp)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.Scan(func(*walpb.Record, Pos) error { return nil })
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), l.Segments[seg].Name) ||
			!strings.Contains(err.Error(), fmt.Sprintf("offset %d", target.Offset)) {
			t.Errorf("segment %d: %v", seg, err)
		}
	}
}

// TestScanWhileWriting copies the log while etcd writes to it: the copy
// reads to its last whole record without error.
func TestScanWhileWriting(t *testing.T) {
	smallSegments(t)
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	dir := filepath.Join(c.DataDir(0), "member", "wal")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var written atomic.Int64
	go func() {
		defer wg.Done()
		value := strings.Repeat("w", 3000)
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := cli.Put(ctx, fmt.Sprintf("/registry/configmaps/demo/w-%d", i%50), value); err == nil {
				written.Add(1)
			}
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	for i := range 10 {
		for written.Load() < int64(30*(i+1)) {
			time.Sleep(time.Millisecond)
		}
		cp := copyFiles(t, dir)
		l, err := Open(cp)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		tail, err := l.Scan(func(rec *walpb.Record, _ Pos) error {
			if rec.GetType() == EntryType {
				if _, err := DecodeEntry(rec.GetData()); err != nil {
					return err
				}
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatalf("copy of a log being written: %v", err)
		}
		if n == 0 {
			t.Fatal("no record read")
		}
		t.Logf("%d segments, %d records, tail %v", len(l.Segments), n, tail)
	}
}

var updateSeeds = flag.Bool("update", false, "rewrite the fuzz seeds in testdata/fuzz/FuzzDecodeEntry from a real etcd's log")

const seedDir = "testdata/fuzz/FuzzDecodeEntry"

// TestFuzzSeeds checks the fuzz seeds, real entries of every kind the
// decoder models; with -update it writes them again from a real etcd.
func TestFuzzSeeds(t *testing.T) {
	if *updateSeeds {
		writeSeeds(t)
	}
	files, err := filepath.Glob(filepath.Join(seedDir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no seeds in %s: %v", seedDir, err)
	}
	kinds := map[Kind]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data, err := parseSeed(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		e, err := DecodeEntry(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		kinds[e.Kind] = true
	}
	for _, k := range []Kind{KindPut, KindDeleteRange, KindTxn, KindLeaseGrant, KindLeaseRevoke, KindCompaction, KindConfChange, KindEmpty, KindOther} {
		if !kinds[k] {
			t.Errorf("no seed of kind %v", k)
		}
	}
}

// parseSeed reads a one-value go test fuzz v1 file.
func parseSeed(b []byte) ([]byte, error) {
	s := strings.TrimSpace(string(b))
	head, body, ok := strings.Cut(s, "\n")
	if !ok || head != "go test fuzz v1" || !strings.HasPrefix(body, "[]byte(") || !strings.HasSuffix(body, ")") {
		return nil, fmt.Errorf("not a go test fuzz v1 []byte seed")
	}
	v, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(body, "[]byte("), ")"))
	return []byte(v), err
}

func writeSeeds(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	ctx := context.Background()
	key := "/registry/persistentvolumeclaims/demo/www-web-0"
	pvc, err := os.ReadFile(filepath.Join("..", "fixtures", "corpus", "plain", "persistentvolumeclaims__demo__www-web-0__terminating.bin"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(pvc))).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", resp.Header.Revision)).
		Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key)).Commit(); err != nil {
		t.Fatal(err)
	}
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/registry/events/demo/e1", "event", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, "/registry/configmaps/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	put, err := cli.Put(ctx, "/registry/configmaps/demo/c", "v")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, put.Header.Revision); err != nil {
		t.Fatal(err)
	}
	c.StopMember(0)
	l, err := Open(c.DataDir(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(seedDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(seedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	if _, err := l.Scan(func(rec *walpb.Record, _ Pos) error {
		if rec.GetType() != EntryType {
			return nil
		}
		e, err := DecodeEntry(rec.GetData())
		if err != nil {
			return err
		}
		name := e.Kind.String()
		if e.Other != "" {
			name += "-" + e.Other
		}
		if seen[name]++; seen[name] > 2 {
			return nil
		}
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", rec.GetData())
		return os.WriteFile(filepath.Join(seedDir, fmt.Sprintf("%s-%d", name, seen[name])), []byte(body), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodeEntry feeds the entry decoder real entries (the seeds in
// testdata/fuzz/FuzzDecodeEntry), mutated: it must return an entry or an
// error, never panic.
func FuzzDecodeEntry(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEntry(data)
		if err == nil && e.Request == nil && (e.Kind == KindPut || e.Kind == KindTxn || e.Kind == KindDeleteRange) {
			t.Fatalf("%v entry without a request", e.Kind)
		}
	})
}
