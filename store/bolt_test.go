package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

const (
	corpusSnapshot = "../fixtures/corpus/etcd-snapshot.db"
	corpusKeys     = "../fixtures/corpus/etcd-keys.txt"
	auger2017DB    = "../fixtures/peer/auger-2017/boltdb/db"
	auger2017Keys  = "../fixtures/peer/auger-2017/boltdb/keys.txt"
)

// fingerprint identifies a file's contents and modification time.
type fingerprint struct {
	SHA256 string
	Size   int64
	MTime  time.Time
}

func fingerprintOf(t *testing.T, path string) fingerprint {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return fingerprint{SHA256: hex.EncodeToString(sum[:]), Size: fi.Size(), MTime: fi.ModTime()}
}

// assertUnmodified checks, when the test ends, that path is byte for byte
// and mtime for mtime what it is now.
func assertUnmodified(t *testing.T, path string) {
	t.Helper()
	before := fingerprintOf(t, path)
	t.Cleanup(func() {
		if diff := cmp.Diff(before, fingerprintOf(t, path)); diff != "" {
			t.Errorf("%s was modified (-before +after):\n%s", path, diff)
		}
	})
}

func openBolt(t *testing.T, path string, opts BoltOptions) *Bolt {
	t.Helper()
	b, err := OpenBolt(path, opts)
	if err != nil {
		t.Fatalf("OpenBolt(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func listAllOnce(t *testing.T, r Reader, prefix string, opts ListOptions) ([]*KeyValue, int64) {
	t.Helper()
	var kvs []*KeyValue
	rev, err := r.List(context.Background(), prefix, opts, func(kv *KeyValue) error {
		kvs = append(kvs, kv)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q, %+v): %v", prefix, opts, err)
	}
	return kvs, rev
}

func listAll(t *testing.T, r Reader, prefix string, opts ListOptions) ([]*KeyValue, int64) {
	t.Helper()
	kvs, rev := listAllOnce(t, r, prefix, opts)
	if _, ok := r.(*Bolt); ok {
		// So must step 1 of the scan split over 3 goroutines.
		scanWorkersForTest = 3
		split, srev := listAllOnce(t, r, prefix, opts)
		scanWorkersForTest = 0
		if diff := cmp.Diff(kvs, split); diff != "" || srev != rev {
			t.Errorf("List(%q, %+v) on 3 goroutines differs (revision %d, not %d) (-1 +3):\n%s", prefix, opts, srev, rev, diff)
		}
	}
	// ListMap must hand out the same, kv valid during each mapFn call.
	for _, workers := range []int{1, 3} {
		var mapped []*KeyValue
		batchLen := parallelBatchLen
		parallelBatchLen = 5 // many batches even on small files
		prev, err := ListMap(context.Background(), r, prefix, opts, workers, func(kv *KeyValue) (*KeyValue, error) {
			c := *kv
			c.Value = bytes.Clone(kv.Value)
			return &c, nil
		}, func(kv *KeyValue) error {
			mapped = append(mapped, kv)
			return nil
		})
		parallelBatchLen = batchLen
		if err != nil {
			t.Fatalf("ListMap(%q, %+v, %d workers): %v", prefix, opts, workers, err)
		}
		if diff := cmp.Diff(kvs, mapped); diff != "" || prev != rev {
			t.Errorf("ListMap(%q, %+v, %d workers) differs from List (revision %d, List's %d) (-List +ListMap):\n%s", prefix, opts, workers, prev, rev, diff)
		}
	}
	return kvs, rev
}

// TestLatestIndex checks scanLatest's hash table across many growths: the
// same key always finds its entry, distinct keys never share one.
func TestLatestIndex(t *testing.T) {
	x := newLatestIndex(maphash.MakeSeed())
	defer x.free()
	const n = 100_000
	key := func(i int) []byte { return fmt.Appendf(nil, "/registry/pods/ns-%d/pod-%d", i%97, i) }
	for round := range 3 {
		for i := range n {
			e := x.get(key(i))
			if round == 0 {
				if e.liveMain != 0 {
					t.Fatalf("new key %d: entry in use (%q)", i, e.key)
				}
				e.liveMain = int64(i + 1)
			}
			if e.liveMain != int64(i+1) || e.key != string(key(i)) {
				t.Fatalf("round %d, key %d: got entry %q (%d)", round, i, e.key, e.liveMain)
			}
		}
	}
	if x.n != n {
		t.Fatalf("%d entries, want %d", x.n, n)
	}
	order := x.sorted()
	if len(order) != n {
		t.Fatalf("sorted: %d entries, want %d", len(order), n)
	}
	for i := 1; i < len(order); i++ {
		if a, b := order[i-1].key, order[i].key; a >= b {
			t.Fatalf("sorted: %q before %q", a, b)
		}
	}
}

func keysOf(kvs []*KeyValue) []string {
	var keys []string
	for _, kv := range kvs {
		keys = append(keys, kv.Key)
	}
	return keys
}

func historyOf(t *testing.T, r Reader, key string) ([]Event, HistoryInfo) {
	t.Helper()
	var evs []Event
	info, err := r.History(context.Background(), key, func(ev Event) error {
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		t.Fatalf("History(%q): %v", key, err)
	}
	return evs, info
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// corpusValue is one .bin file of fixtures/corpus with its .meta.txt.
type corpusValue struct {
	file           string
	key            string
	modRevision    int64
	createRevision int64
	version        int64
	lease          int64
	sha256         string
	value          []byte
}

func corpusValues(t *testing.T) []corpusValue {
	t.Helper()
	metas, err := filepath.Glob("../fixtures/corpus/*/*.meta.txt")
	if err != nil || len(metas) == 0 {
		t.Fatalf("no corpus meta files: %v", err)
	}
	var out []corpusValue
	for _, m := range metas {
		fields := map[string]string{}
		for _, l := range readLines(t, m) {
			if k, v, ok := strings.Cut(l, "="); ok {
				fields[k] = v
			}
		}
		num := func(name string) int64 {
			n, err := strconv.ParseInt(fields[name], 10, 64)
			if err != nil {
				t.Fatalf("%s: %s: %v", m, name, err)
			}
			return n
		}
		bin := strings.TrimSuffix(m, ".meta.txt") + ".bin"
		value, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		cv := corpusValue{
			file: bin, key: fields["key"], sha256: fields["value_sha256"], value: value,
			modRevision: num("mod_revision"), createRevision: num("create_revision"),
			version: num("version"), lease: num("lease"),
		}
		if got := sha256Hex(value); got != cv.sha256 {
			t.Fatalf("%s: sha256 %s, meta says %s", bin, got, cv.sha256)
		}
		out = append(out, cv)
	}
	return out
}

func TestBoltCorpusSnapshot(t *testing.T) {
	assertUnmodified(t, corpusSnapshot)
	var warnings []string
	b := openBolt(t, corpusSnapshot, BoltOptions{Warn: func(msg string) { warnings = append(warnings, msg) }})
	ctx := context.Background()
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}

	t.Run("snapshot trailer", func(t *testing.T) {
		data, err := os.ReadFile(corpusSnapshot)
		if err != nil {
			t.Fatal(err)
		}
		whole := sha256.Sum256(data)
		want := SnapshotInfo{
			IsSnapshot: true,
			SHA256:     hex.EncodeToString(data[len(data)-32:]),
			FileSHA256: hex.EncodeToString(whole[:]), // sha256sum's
			Verified:   true,
			Size:       int64(len(data)),
		}
		if diff := cmp.Diff(want, b.Snapshot()); diff != "" {
			t.Errorf("Snapshot() (-want +got):\n%s", diff)
		}
	})

	t.Run("info", func(t *testing.T) {
		info, err := b.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := Info{Description: corpusSnapshot, Revision: 255}
		if diff := cmp.Diff(want, info); diff != "" {
			t.Errorf("Info (-want +got):\n%s", diff)
		}
		if m := b.Meta(); m.StorageVersion != "3.7.0" || m.Term == 0 || m.ConsistentIndex == 0 || m.PageSize != 4096 {
			t.Errorf("Meta() = %+v", m)
		}
	})

	t.Run("list every key", func(t *testing.T) {
		want := readLines(t, corpusKeys)
		sort.Strings(want)
		kvs, rev := listAll(t, b, "", ListOptions{})
		if rev != 255 {
			t.Errorf("List revision = %d, want 255", rev)
		}
		if diff := cmp.Diff(want, keysOf(kvs)); diff != "" {
			t.Errorf("List keys (-etcd-keys.txt +got):\n%s", diff)
		}
		if len(kvs) != 218 {
			t.Errorf("List: %d keys, want 218", len(kvs))
		}
		keysOnly, _ := listAll(t, b, "", ListOptions{KeysOnly: true})
		for i, kv := range keysOnly {
			if kv.Value != nil {
				t.Fatalf("KeysOnly: %s has a value", kv.Key)
			}
			full := *kvs[i]
			full.Value = nil
			if diff := cmp.Diff(&full, kv); diff != "" {
				t.Fatalf("KeysOnly %s (-want +got):\n%s", kv.Key, diff)
			}
		}
	})

	t.Run("get every key", func(t *testing.T) {
		latest, _ := listAll(t, b, "", ListOptions{})
		byKey := map[string]*KeyValue{}
		for _, kv := range latest {
			byKey[kv.Key] = kv
		}
		for _, key := range readLines(t, corpusKeys) {
			want := byKey[key]
			got, err := b.Get(ctx, key, 0)
			if err != nil {
				t.Fatalf("Get(%s): %v", key, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Get(%s) differs from List (-list +get):\n%s", key, diff)
			}
			if got.ModRevision < got.CreateRevision || got.ModRevision > 255 || got.Version < 1 {
				t.Errorf("Get(%s) = revisions %d/%d version %d", key, got.CreateRevision, got.ModRevision, got.Version)
			}
		}
		if _, err := b.Get(ctx, "/registry/pods/demo/no-such-pod", 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of a missing key: %v, want ErrNotFound", err)
		}
	})

	t.Run("values match the corpus files", func(t *testing.T) {
		latest := 0
		for _, cv := range corpusValues(t) {
			want := &KeyValue{Key: cv.key, Value: cv.value, CreateRevision: cv.createRevision, ModRevision: cv.modRevision, Version: cv.version, Lease: cv.lease}
			// The newest value, when the file captured it.
			got, err := b.Get(ctx, cv.key, 0)
			if err != nil {
				t.Fatalf("%s: Get: %v", cv.file, err)
			}
			if got.ModRevision == cv.modRevision {
				latest++
				if sha256Hex(got.Value) != cv.sha256 {
					t.Errorf("%s: Get value sha256 %s, want %s", cv.file, sha256Hex(got.Value), cv.sha256)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: Get (-want +got):\n%s", cv.file, diff)
				}
			}
			// Every captured value, read at its own revision.
			got, err = b.Get(ctx, cv.key, cv.modRevision)
			if err != nil {
				t.Fatalf("%s: Get at %d: %v", cv.file, cv.modRevision, err)
			}
			if sha256Hex(got.Value) != cv.sha256 {
				t.Errorf("%s: Get at %d: value sha256 %s, want %s", cv.file, cv.modRevision, sha256Hex(got.Value), cv.sha256)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: Get at %d (-want +got):\n%s", cv.file, cv.modRevision, diff)
			}
		}
		if latest < 10 {
			t.Errorf("only %d corpus files hold a key's newest value", latest)
		}
	})

	t.Run("pvc history", func(t *testing.T) {
		const pvc = "/registry/persistentvolumeclaims/demo/www-web-0"
		pending := corpusFile(t, "plain/persistentvolumeclaims__demo__www-web-0__pending.bin")
		terminating := corpusFile(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
		encrypted := corpusFile(t, "encrypted/persistentvolumeclaims__demo__www-web-0__terminating__secretbox.bin")
		evs, info := historyOf(t, b, pvc)
		if info != (HistoryInfo{CompactRevision: 0, Revision: 255}) {
			t.Errorf("HistoryInfo = %+v", info)
		}
		type rev struct {
			Mod, Create, Version int64
			Deleted              bool
		}
		var got []rev
		byRev := map[int64][]byte{}
		for _, ev := range evs {
			got = append(got, rev{ev.KV.ModRevision, ev.KV.CreateRevision, ev.KV.Version, ev.Deleted})
			byRev[ev.KV.ModRevision] = ev.KV.Value
			if ev.KV.Key != pvc {
				t.Errorf("event for %s", ev.KV.Key)
			}
		}
		if len(got) != 4 || got[0] != (rev{212, 212, 1, false}) || got[3] != (rev{254, 212, 4, false}) {
			t.Errorf("history = %+v, want 4 revisions from 212 (version 1) to 254 (version 4)", got)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Mod <= got[i-1].Mod || got[i].Version != got[i-1].Version+1 {
				t.Errorf("history out of order at %d: %+v", i, got)
			}
		}
		for r, want := range map[int64][]byte{212: pending, 214: terminating, 254: encrypted} {
			if !bytes.Equal(byRev[r], want) {
				t.Errorf("history value at %d differs from the corpus file", r)
			}
		}
		// The newest revision wins: Terminating (encrypted), not Pending.
		kv, err := b.Get(ctx, pvc, 0)
		if err != nil || !bytes.Equal(kv.Value, encrypted) {
			t.Errorf("Get(%s) = %v, %v; want the encrypted Terminating value", pvc, kv, err)
		}
		kvs, _ := listAll(t, b, "/registry/persistentvolumeclaims/demo/", ListOptions{Revision: 214})
		if len(kvs) != 1 || kvs[0].Key != pvc || !bytes.Equal(kvs[0].Value, terminating) {
			t.Errorf("List at 214 = %v, want www-web-0 Terminating alone", keysOf(kvs))
		}
	})

	t.Run("prefix rule", func(t *testing.T) {
		for _, tt := range []struct {
			prefix string
			want   []string
		}{
			{"/registry/persistentvolumeclaims/demo/", []string{
				"/registry/persistentvolumeclaims/demo/www-web-0",
				"/registry/persistentvolumeclaims/demo/www-web-1",
				"/registry/persistentvolumeclaims/demo/www-web-2",
			}},
			{"/registry/persistentvolumeclaims/dem/", nil},
		} {
			kvs, _ := listAll(t, b, tt.prefix, ListOptions{})
			var sawLatest []string
			if err := b.ScanLatest(ctx, tt.prefix, true, func(kv *KeyValue, _ bool, _ int64) error {
				sawLatest = append(sawLatest, kv.Key)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, keysOf(kvs)); diff != "" {
				t.Errorf("List(%q) (-want +got):\n%s", tt.prefix, diff)
			}
			if diff := cmp.Diff(tt.want, sawLatest); diff != "" {
				t.Errorf("ScanLatest(%q) (-want +got):\n%s", tt.prefix, diff)
			}
		}
		// Without its trailing "/" a prefix is rejected, whole key or not.
		for _, prefix := range []string{
			"/registry/persistentvolumeclaims/demo/www-web-1",
			"/registry/persistentvolumeclaims/demo/www-web-",
			"/registry/persistentvolumeclaims/demo",
		} {
			none := func() error { t.Errorf("callback for %q", prefix); return nil }
			if _, err := b.List(ctx, prefix, ListOptions{}, func(*KeyValue) error { return none() }); err == nil || !strings.Contains(err.Error(), `must end in "/"`) {
				t.Errorf("List(%q): %v, want the prefix rejected", prefix, err)
			}
			if err := b.ScanLatest(ctx, prefix, true, func(*KeyValue, bool, int64) error { return none() }); err == nil {
				t.Errorf("ScanLatest(%q): no error", prefix)
			}
			if err := b.ScanRevisions(ctx, prefix, func(Event) error { return none() }); err == nil {
				t.Errorf("ScanRevisions(%q): no error", prefix)
			}
		}
	})

	t.Run("scans", func(t *testing.T) {
		var n int
		var prev int64
		deletedNow := map[string]bool{}
		if err := b.ScanRevisions(ctx, "", func(ev Event) error {
			n++
			deletedNow[ev.KV.Key] = ev.Deleted
			if ev.KV.ModRevision < prev {
				return fmt.Errorf("revision %d after %d", ev.KV.ModRevision, prev)
			}
			prev = ev.KV.ModRevision
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != 254 || prev != 255 {
			t.Errorf("ScanRevisions: %d revisions up to %d, want 254 up to 255", n, prev)
		}
		list, _ := listAll(t, b, "", ListOptions{})
		var latest []*KeyValue
		var tombstoned int
		if err := b.ScanLatest(ctx, "", true, func(kv *KeyValue, del bool, delRev int64) error {
			if del {
				tombstoned++
				if delRev <= kv.ModRevision {
					t.Errorf("%s deleted at %d, before its last value %d", kv.Key, delRev, kv.ModRevision)
				}
				return nil
			}
			latest = append(latest, kv)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(list, latest); diff != "" {
			t.Errorf("ScanLatest live keys differ from List (-list +scan):\n%s", diff)
		}
		deleted := 0
		for _, d := range deletedNow {
			if d {
				deleted++
			}
		}
		if tombstoned != deleted {
			t.Errorf("ScanLatest: %d deleted keys, ScanRevisions: %d", tombstoned, deleted)
		}
		stop := errors.New("stop")
		calls := 0
		err := b.ScanRevisions(ctx, "", func(Event) error { calls++; return stop })
		if !errors.Is(err, stop) || calls != 1 {
			t.Errorf("ScanRevisions with a failing callback: %v after %d calls", err, calls)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := b.List(cctx, "", ListOptions{}, func(*KeyValue) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Errorf("List with a canceled context: %v", err)
		}
	})

	t.Run("revision bounds", func(t *testing.T) {
		if _, err := b.Get(ctx, "/registry/namespaces/demo", 256); err == nil {
			t.Error("Get at a future revision: no error")
		}
		if _, err := b.Get(ctx, "/registry/namespaces/demo", 210); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get before the namespace existed: %v, want ErrNotFound", err)
		}
	})
}

func corpusFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../fixtures/corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// copyFile copies src into t.TempDir() and returns the copy's path.
func copyFile(t *testing.T, src string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestBoltSnapshotHashMismatch(t *testing.T) {
	path := copyFile(t, corpusSnapshot)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	b, err := OpenBolt(path, BoltOptions{})
	if err == nil {
		b.Close()
		t.Fatal("OpenBolt of a snapshot with a wrong trailer: no error")
	}
	var hm *HashMismatchError
	if !errors.Is(err, ErrHashMismatch) || !errors.As(err, &hm) {
		t.Fatalf("OpenBolt: %v, want ErrHashMismatch", err)
	}
	if hm.Trailer != hex.EncodeToString(data[len(data)-32:]) || hm.Computed == hm.Trailer {
		t.Errorf("HashMismatchError = %+v", hm)
	}
	if !strings.Contains(err.Error(), "skip the hash check") {
		t.Errorf("error %q carries no hint", err)
	}

	var warnings []string
	b = openBolt(t, path, BoltOptions{SkipHashCheck: true, Warn: func(msg string) { warnings = append(warnings, msg) }})
	if len(warnings) != 1 || !strings.Contains(warnings[0], "not verified") {
		t.Errorf("warnings = %q, want one about the skipped check", warnings)
	}
	if s := b.Snapshot(); !s.IsSnapshot || s.Verified {
		t.Errorf("Snapshot() = %+v", s)
	}
	if kvs, _ := listAll(t, b, "", ListOptions{}); len(kvs) != 218 {
		t.Errorf("List: %d keys, want 218", len(kvs))
	}
}

func TestBoltAuger2017(t *testing.T) {
	assertUnmodified(t, auger2017DB)
	b := openBolt(t, auger2017DB, BoltOptions{})
	ctx := context.Background()
	if s := b.Snapshot(); s.IsSnapshot || s.Verified || s.SHA256 != "" {
		t.Errorf("Snapshot() = %+v, want a raw db", s)
	}
	want := readLines(t, auger2017Keys)
	sort.Strings(want)
	kvs, rev := listAll(t, b, "", ListOptions{})
	if diff := cmp.Diff(want, keysOf(kvs)); diff != "" {
		t.Errorf("List keys (-keys.txt +got):\n%s", diff)
	}
	// The file was compacted at 241828 after its newest write (232274): the
	// current revision is the compaction revision, as etcd restores it.
	m := b.Meta()
	if m.CompactRevision != 241828 || m.ScheduledCompactRevision != 241828 || m.Revision != 241828 || rev != 241828 {
		t.Errorf("Meta() = %+v, List revision %d; want all 241828", m, rev)
	}
	if m.Term != 0 || m.StorageVersion != "" {
		t.Errorf("Meta() = %+v: a 2017 file has no term or storage version", m)
	}
	for _, kv := range kvs {
		if kv.ModRevision > 232274 || kv.Version < 1 || len(kv.Value) == 0 {
			t.Errorf("%s: %+v", kv.Key, kv)
		}
	}
	pod, err := b.Get(ctx, "/registry/pods/default/pi-dqtsw", 0)
	if err != nil || !bytes.HasPrefix(pod.Value, []byte("k8s\x00")) {
		t.Errorf("Get pod = %v, %v", pod, err)
	}
	if _, err := b.Get(ctx, "/registry/pods/default/pi-dqtsw", 100); !errors.Is(err, ErrCompacted) {
		t.Errorf("Get below the compaction: %v, want ErrCompacted", err)
	}
	if _, err := b.List(ctx, "/registry/", ListOptions{Revision: 241827}, func(*KeyValue) error { return nil }); !errors.Is(err, ErrCompacted) {
		t.Errorf("List below the compaction: %v, want ErrCompacted", err)
	}
	if got, _ := listAll(t, b, "/registry/", ListOptions{Revision: 241828}); len(got) != 3 {
		t.Errorf("List at the compaction revision: %v", keysOf(got))
	}
	evs, info := historyOf(t, b, "/registry/jobs/default/pi")
	if len(evs) != 1 || info.CompactRevision != 241828 {
		t.Errorf("History = %+v, %+v", evs, info)
	}
}

// kvFromClient converts what clientv3 returns.
func kvFromClient(kv *mvccpb.KeyValue) *KeyValue {
	out := &KeyValue{
		Key: string(kv.Key), CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision,
		Version: kv.Version, Lease: kv.Lease,
	}
	if len(kv.Value) > 0 {
		out.Value = kv.Value
	}
	return out
}

// TestBoltEtcd writes a history with a real etcd, checks that its locked db
// cannot be opened, then stops it and compares what the file says with what
// etcd said.
func TestBoltEtcd(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Members: 1})
	cli := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	put := func(key, value string, opts ...clientv3.OpOption) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, key, value, opts...)
		if err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		return resp.Header.Revision
	}
	del := func(key string) int64 {
		t.Helper()
		resp, err := cli.Delete(ctx, key)
		if err != nil || resp.Deleted != 1 {
			t.Fatalf("delete %s: %v (%d deleted)", key, err, resp.Deleted)
		}
		return resp.Header.Revision
	}

	put("/t/d", "d1")   // never changes: compaction keeps it
	put("/t/e", "e1")   // deleted before the compaction: gone
	del("/t/e")         //
	put("/t/a", "a1")   // updated across the compaction
	put("/t/a", "a2")   //
	put("/t/b", "b1")   // deleted and re-created after the compaction
	put("/t/c", "c1")   // deleted for good after the compaction
	put("/t2/x", "x1")  // outside the prefix /t/
	put("/t", "prefix") // the prefix without its slash
	compactRev := put("/t/f", "f1")
	if _, err := cli.Compact(ctx, compactRev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	put("/t/a", "a3")
	del("/t/b")
	bRecreated := put("/t/b", "b2")
	put("/t/b", "b3")
	cLast := put("/t/c", "c2")
	cDeleted := del("/t/c")
	lease, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	put("/t/l", "leased", clientv3.WithLease(lease.ID))
	txn, err := cli.Txn(ctx).Then(
		clientv3.OpPut("/t/tx1", "one"),
		clientv3.OpPut("/t/tx2", "two"),
		clientv3.OpPut("/t/f", ""),
	).Commit()
	if err != nil {
		t.Fatal(err)
	}
	lastRev := txn.Header.Revision

	// What etcd says, at every revision since the compaction.
	wantList := map[int64][]*KeyValue{}
	for rev := compactRev; rev <= lastRev; rev++ {
		resp, err := cli.Get(ctx, "/t/", clientv3.WithPrefix(), clientv3.WithRev(rev))
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			wantList[rev] = append(wantList[rev], kvFromClient(kv))
		}
	}
	if _, err := cli.Get(ctx, "/t/", clientv3.WithPrefix(), clientv3.WithRev(compactRev-1)); err == nil {
		t.Fatal("etcd served a compacted revision")
	}
	var wantEvents []Event
	wctx, wcancel := context.WithCancel(ctx)
	for wr := range cli.Watch(wctx, "/t/", clientv3.WithPrefix(), clientv3.WithRev(compactRev+1)) {
		if err := wr.Err(); err != nil {
			t.Fatal(err)
		}
		for _, ev := range wr.Events {
			wantEvents = append(wantEvents, Event{KV: *kvFromClient(ev.Kv), Deleted: ev.Type == clientv3.EventTypeDelete})
		}
		if n := len(wantEvents); n > 0 && wantEvents[n-1].KV.ModRevision >= lastRev {
			wcancel()
		}
	}
	wcancel()
	if len(wantEvents) != 10 {
		t.Fatalf("watch saw %d events after the compaction, want 10: %+v", len(wantEvents), wantEvents)
	}

	dbPath := filepath.Join(c.DataDir(0), "member", "snap", "db")
	t.Run("locked", func(t *testing.T) {
		const timeout = 500 * time.Millisecond
		start := time.Now()
		b, err := OpenBolt(dbPath, BoltOptions{LockTimeout: timeout})
		elapsed := time.Since(start)
		if err == nil {
			b.Close()
			t.Fatal("OpenBolt of a running etcd's db: no error")
		}
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("OpenBolt: %v, want ErrLocked", err)
		}
		if !strings.Contains(err.Error(), "db is locked by a running etcd: copy it with `etcdctl snapshot save` or use the live endpoints") {
			t.Errorf("error %q lacks the hint", err)
		}
		// Not a timing assertion: a hang would be many times this.
		if elapsed > timeout+10*time.Second {
			t.Errorf("OpenBolt took %v with LockTimeout %v", elapsed, timeout)
		}
	})

	c.Stop()
	assertUnmodified(t, dbPath)
	b := openBolt(t, dbPath, BoltOptions{})

	t.Run("info", func(t *testing.T) {
		info, err := b.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Revision != lastRev || info.CompactRevision != compactRev {
			t.Errorf("Info = %+v, want revision %d compacted at %d", info, lastRev, compactRev)
		}
		if s := b.Snapshot(); s.IsSnapshot {
			t.Errorf("Snapshot() = %+v for a member db", s)
		}
	})

	t.Run("list at every revision", func(t *testing.T) {
		for rev := compactRev; rev <= lastRev; rev++ {
			got, at := listAll(t, b, "/t/", ListOptions{Revision: rev})
			if at != rev {
				t.Errorf("List at %d read at %d", rev, at)
			}
			if diff := cmp.Diff(wantList[rev], got); diff != "" {
				t.Errorf("List at %d (-etcd +file):\n%s", rev, diff)
			}
		}
		got, at := listAll(t, b, "/t/", ListOptions{})
		if diff := cmp.Diff(wantList[lastRev], got); diff != "" || at != lastRev {
			t.Errorf("List at latest (read at %d) (-etcd +file):\n%s", at, diff)
		}
		if _, err := b.List(ctx, "/t/", ListOptions{Revision: compactRev - 1}, func(*KeyValue) error { return nil }); !errors.Is(err, ErrCompacted) {
			t.Errorf("List below the compaction: %v, want ErrCompacted", err)
		}
	})

	t.Run("get at every revision", func(t *testing.T) {
		keys := []string{"/t/a", "/t/b", "/t/c", "/t/d", "/t/e", "/t/f", "/t/l", "/t/tx1", "/t/tx2"}
		for rev := compactRev; rev <= lastRev; rev++ {
			for _, key := range keys {
				var want *KeyValue
				for _, kv := range wantList[rev] {
					if kv.Key == key {
						want = kv
					}
				}
				got, err := b.Get(ctx, key, rev)
				if want == nil {
					if !errors.Is(err, ErrNotFound) {
						t.Errorf("Get(%s, %d) = %+v, %v; want ErrNotFound", key, rev, got, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("Get(%s, %d): %v", key, rev, err)
					continue
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Get(%s, %d) (-etcd +file):\n%s", key, rev, diff)
				}
			}
		}
		for _, key := range []string{"/t2/x", "/t"} {
			if kv, err := b.Get(ctx, key, 0); err != nil || kv.Key != key {
				t.Errorf("Get(%s) = %+v, %v", key, kv, err)
			}
		}
	})

	t.Run("recreated key", func(t *testing.T) {
		kv, err := b.Get(ctx, "/t/b", 0)
		if err != nil {
			t.Fatal(err)
		}
		if kv.CreateRevision != bRecreated || kv.Version != 2 || string(kv.Value) != "b3" {
			t.Errorf("Get(/t/b) = %+v, want the second incarnation (created %d, version 2)", kv, bRecreated)
		}
		evs, info := historyOf(t, b, "/t/b")
		type step struct {
			Value   string
			Create  int64
			Version int64
			Deleted bool
		}
		var got []step
		for _, ev := range evs {
			got = append(got, step{string(ev.KV.Value), ev.KV.CreateRevision, ev.KV.Version, ev.Deleted})
		}
		want := []step{
			{"b1", evs[0].KV.ModRevision, 1, false},
			{"", 0, 0, true},
			{"b2", bRecreated, 1, false},
			{"b3", bRecreated, 2, false},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("History(/t/b) (-want +got):\n%s", diff)
		}
		if info.CompactRevision != compactRev || info.Revision != lastRev {
			t.Errorf("HistoryInfo = %+v", info)
		}
	})

	t.Run("history matches the watch", func(t *testing.T) {
		var got []Event
		if err := b.ScanRevisions(ctx, "/t/", func(ev Event) error {
			if ev.KV.ModRevision > compactRev {
				got = append(got, ev)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantEvents, got); diff != "" {
			t.Errorf("ScanRevisions after the compaction (-watch +file):\n%s", diff)
		}
		// At or below the compaction, the file holds exactly each live
		// key's newest revision.
		var kept []*KeyValue
		if err := b.ScanRevisions(ctx, "/t/", func(ev Event) error {
			if ev.KV.ModRevision <= compactRev {
				kv := ev.KV
				kept = append(kept, &kv)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(wantList[compactRev])
		slices.SortFunc(want, func(a, b *KeyValue) int { return int(a.ModRevision - b.ModRevision) })
		if diff := cmp.Diff(want, kept); diff != "" {
			t.Errorf("revisions kept by the compaction (-etcd +file):\n%s", diff)
		}
		for _, key := range []string{"/t/a", "/t/c", "/t/f"} {
			evs, _ := historyOf(t, b, key)
			var wantKey []Event
			if len(evs) > 0 && evs[0].KV.ModRevision <= compactRev {
				wantKey = append(wantKey, evs[0])
			}
			for _, ev := range wantEvents {
				if ev.KV.Key == key {
					wantKey = append(wantKey, ev)
				}
			}
			if diff := cmp.Diff(wantKey, evs); diff != "" {
				t.Errorf("History(%s) (-watch +file):\n%s", key, diff)
			}
		}
	})

	// Step 1 of the scan on 1, 2 and 4 goroutines gives the same.
	latestWithDeleted := func(t *testing.T) {
		type entry struct {
			KV        *KeyValue
			Deleted   bool
			DeleteRev int64
		}
		var got []entry
		checkScanDeleted(t, b, "/t/")
		if err := b.ScanLatest(ctx, "/t/", true, func(kv *KeyValue, deleted bool, deleteRev int64) error {
			got = append(got, entry{kv, deleted, deleteRev})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var want []entry
		for _, kv := range wantList[lastRev] {
			want = append(want, entry{KV: kv})
		}
		// /t/c: its last live value and its delete; /t/e went with the
		// compaction.
		var cKV *KeyValue
		for _, kv := range wantList[cLast] {
			if kv.Key == "/t/c" {
				cKV = kv
			}
		}
		want = append(want, entry{KV: cKV, Deleted: true, DeleteRev: cDeleted})
		slices.SortFunc(want, func(a, b entry) int { return strings.Compare(a.KV.Key, b.KV.Key) })
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ScanLatest(/t/, includeDeleted) (-want +got):\n%s", diff)
		}
		var live []string
		if err := b.ScanLatest(ctx, "/t/", false, func(kv *KeyValue, deleted bool, _ int64) error {
			if deleted {
				t.Errorf("%s reported deleted without includeDeleted", kv.Key)
			}
			live = append(live, kv.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(keysOf(wantList[lastRev]), live); diff != "" {
			t.Errorf("ScanLatest(/t/) live keys (-want +got):\n%s", diff)
		}
	}
	t.Run("latest with deleted keys", func(t *testing.T) {
		t.Cleanup(func() { scanWorkersForTest = 0 })
		for _, workers := range []int{1, 2, 4} {
			scanWorkersForTest = workers
			latestWithDeleted(t)
		}
	})

	t.Run("lease", func(t *testing.T) {
		kv, err := b.Get(ctx, "/t/l", 0)
		if err != nil || kv.Lease != int64(lease.ID) {
			t.Errorf("Get(/t/l) = %+v, %v; want lease %x", kv, err, lease.ID)
		}
	})
}

func TestBoltDamagedFiles(t *testing.T) {
	snapshot, err := os.ReadFile(corpusSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	raw := snapshot[:len(snapshot)-32]
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(i*7919 + i>>8)
	}
	zeroedPages := slices.Clone(raw)
	clear(zeroedPages[2*4096 : 6*4096])

	tests := []struct {
		name    string
		data    []byte
		opts    BoltOptions
		wantErr error // nil: may open, reads must not panic
	}{
		{"empty", nil, BoltOptions{}, ErrCorrupt},
		{"tiny", []byte("not a db"), BoltOptions{}, ErrCorrupt},
		{"garbage", garbage, BoltOptions{}, ErrCorrupt},
		{"zeros", make([]byte, 32<<10), BoltOptions{}, ErrCorrupt},
		{"first page only", raw[:4096], BoltOptions{}, ErrCorrupt},
		{"meta pages only", raw[:8192], BoltOptions{}, ErrCorrupt},
		{"half", raw[:len(raw)/2], BoltOptions{}, ErrCorrupt},
		{"one page short", raw[:len(raw)-4096], BoltOptions{}, ErrCorrupt},
		{"one byte short", snapshot[:len(snapshot)-1], BoltOptions{}, nil}, // bbolt data complete, trailer broken: a warning
		{"trailer cut to a sector", snapshot[:len(snapshot)-512], BoltOptions{}, ErrCorrupt},
		{"trailer stripped", raw, BoltOptions{}, nil},
		{"zeroed pages", zeroedPages, BoltOptions{}, nil},
		{"zeroed pages with trailer", append(slices.Clone(zeroedPages), snapshot[len(raw):]...), BoltOptions{SkipHashCheck: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db")
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			b, err := OpenBolt(path, tt.opts)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("OpenBolt: %v, want %v", err, tt.wantErr)
				}
				if b != nil {
					t.Error("OpenBolt returned a *Bolt with an error")
				}
				return
			}
			if err != nil {
				t.Logf("OpenBolt: %v", err)
				return
			}
			defer b.Close()
			exercise(t, b)
		})
	}
}

// TestBoltFlippedBytes opens copies of the snapshot with single bytes
// damaged throughout the file. Reads may fail or return damaged data, but
// must not panic.
func TestBoltFlippedBytes(t *testing.T) {
	snapshot, err := os.ReadFile(corpusSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opened, failed := 0, 0
	for off := 17; off < len(snapshot)-32; off += 1231 {
		data := slices.Clone(snapshot)
		data[off] ^= 0x5a
		path := filepath.Join(dir, "db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := OpenBolt(path, BoltOptions{SkipHashCheck: true})
		if err != nil {
			failed++
			continue
		}
		opened++
		exercise(t, b)
		b.Close()
	}
	t.Logf("%d damaged copies opened, %d refused", opened, failed)
}

// exercise runs every read; it fails the test only on a panic (which would
// crash it) or an error that is not a clean one.
func exercise(t *testing.T, b *Bolt) {
	t.Helper()
	ctx := context.Background()
	check := func(op string, err error) {
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: unexpected error: %v", op, err)
		}
	}
	_, err := b.List(ctx, "", ListOptions{}, func(*KeyValue) error { return nil })
	check("List", err)
	_, err = b.Get(ctx, "/registry/persistentvolumeclaims/demo/www-web-0", 0)
	check("Get", err)
	_, err = b.History(ctx, "/registry/persistentvolumeclaims/demo/www-web-0", func(Event) error { return nil })
	check("History", err)
	check("ScanRevisions", b.ScanRevisions(ctx, "", func(Event) error { return nil }))
	check("ScanLatest", b.ScanLatest(ctx, "", true, func(*KeyValue, bool, int64) error { return nil }))
	_, err = ListMap(ctx, b, "", ListOptions{}, 2, func(kv *KeyValue) (int, error) { return len(kv.Value), nil }, func(int) error { return nil })
	check("ListMap", err)
	scanWorkersForTest = 3
	_, err = b.List(ctx, "", ListOptions{}, func(*KeyValue) error { return nil })
	scanWorkersForTest = 0
	check("List on 3 goroutines", err)
}

func TestBoltCallbackPanicPropagates(t *testing.T) {
	b := openBolt(t, corpusSnapshot, BoltOptions{})
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recovered %v, want the callback's panic", r)
		}
	}()
	_ = b.ScanRevisions(context.Background(), "", func(Event) error { panic("boom") })
	t.Error("no panic")
}

// TestBoltListMap checks ListMap's order and its handling of
// errors and panics, with batches smaller than the file.
func TestBoltListMap(t *testing.T) {
	b := openBolt(t, corpusSnapshot, BoltOptions{})
	ctx := context.Background()
	batchLen := parallelBatchLen
	parallelBatchLen = 3
	t.Cleanup(func() { parallelBatchLen = batchLen })
	all, _ := listAll(t, b, "", ListOptions{KeysOnly: true})
	keys := keysOf(all)
	if len(keys) < 50 {
		t.Fatalf("corpus: %d keys", len(keys))
	}
	mapKey := func(kv *KeyValue) (string, error) { return kv.Key, nil }
	for _, workers := range []int{1, 2, 8} {
		t.Run(fmt.Sprint(workers, " workers"), func(t *testing.T) {
			for _, failAt := range []int{0, 1, 2, 3, 40, len(keys) - 1} {
				// mapFn fails at keys[failAt]: the keys before it are
				// emitted, in order, and its error returned.
				boom := errors.New("boom")
				var got []string
				_, err := ListMap(ctx, b, "", ListOptions{}, workers, func(kv *KeyValue) (string, error) {
					if kv.Key == keys[failAt] {
						return "", boom
					}
					return kv.Key, nil
				}, func(k string) error { got = append(got, k); return nil })
				if !errors.Is(err, boom) {
					t.Errorf("mapFn fails at %d: error %v, want boom", failAt, err)
				}
				if diff := cmp.Diff(keys[:failAt], got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("mapFn fails at %d: emitted (-want +got):\n%s", failAt, diff)
				}
				// emit fails at keys[failAt]: nothing after it is emitted.
				got = nil
				_, err = ListMap(ctx, b, "", ListOptions{}, workers, mapKey, func(k string) error {
					got = append(got, k)
					if k == keys[failAt] {
						return boom
					}
					return nil
				})
				if !errors.Is(err, boom) || len(got) != failAt+1 {
					t.Errorf("emit fails at %d: error %v after %d keys, want boom after %d", failAt, err, len(got), failAt+1)
				}
			}
			for _, where := range []string{"mapFn", "emit"} {
				func() {
					defer func() {
						if r := recover(); r != "boom" {
							t.Errorf("panic in %s: recovered %v, want the callback's panic", where, r)
						}
					}()
					_, _ = ListMap(ctx, b, "", ListOptions{}, workers, func(kv *KeyValue) (string, error) {
						if where == "mapFn" && kv.Key == keys[7] {
							panic("boom")
						}
						return kv.Key, nil
					}, func(k string) error {
						if where == "emit" && k == keys[7] {
							panic("boom")
						}
						return nil
					})
					t.Errorf("panic in %s: no panic", where)
				}()
			}
			cctx, cancel := context.WithCancel(ctx)
			n := 0
			_, err := ListMap(cctx, b, "", ListOptions{}, workers, mapKey, func(string) error {
				if n++; n == 5 {
					cancel()
				}
				return nil
			})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("canceled: error %v", err)
			}
		})
	}
}

func TestBoltNotWriter(t *testing.T) {
	b := openBolt(t, corpusSnapshot, BoltOptions{})
	if _, err := AsWriter(b); !errors.Is(err, ErrReadOnly) {
		t.Errorf("AsWriter: %v, want ErrReadOnly", err)
	}
}

// snapshotValues returns some raw mvccpb.KeyValue values of the corpus
// snapshot, for fuzz seeds.
func snapshotValues(t testing.TB) [][]byte {
	t.Helper()
	b, err := OpenBolt(corpusSnapshot, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var vals [][]byte
	err = b.ScanRevisions(context.Background(), "/registry/persistentvolumeclaims/", func(ev Event) error {
		m := &mvccpb.KeyValue{Key: []byte(ev.KV.Key), CreateRevision: ev.KV.CreateRevision, ModRevision: ev.KV.ModRevision, Version: ev.KV.Version, Value: ev.KV.Value, Lease: ev.KV.Lease}
		v, err := proto.Marshal(m)
		vals = append(vals, v)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// FuzzBoltDecodeKV checks the hand-written decoder against the protobuf
// library on arbitrary bytes.
func FuzzBoltDecodeKV(f *testing.F) {
	for _, v := range snapshotValues(f) {
		f.Add(v)
	}
	f.Add([]byte{0x0a, 0x01, 'k', 0x30, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0x0a, 0x80})
	f.Add([]byte("\n\x00")) // an empty key
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := decodeKV(data)
		key, kerr := kvKey(data)
		var m mvccpb.KeyValue
		perr := proto.Unmarshal(data, &m)
		if perr != nil {
			if err == nil && kerr == nil {
				// The decoder may accept what proto rejects only for
				// reasons it does not check (none known); report it.
				t.Logf("decodeKV accepted what proto rejects: %v", perr)
			}
			return
		}
		if len(m.Key) == 0 {
			if err == nil {
				t.Fatalf("decodeKV accepted a value without a key")
			}
			return
		}
		if err != nil {
			t.Fatalf("decodeKV: %v; proto accepts %v", err, &m)
		}
		got := mvccpb.KeyValue{Key: raw.key, CreateRevision: raw.create, ModRevision: raw.mod, Version: raw.version, Value: raw.value, Lease: raw.lease}
		if !bytes.Equal(got.Key, m.Key) || !bytes.Equal(got.Value, m.Value) || got.CreateRevision != m.CreateRevision ||
			got.ModRevision != m.ModRevision || got.Version != m.Version || got.Lease != m.Lease {
			t.Fatalf("decodeKV = %v, proto = %v", &got, &m)
		}
		// kvKey takes the first key field, proto the last; etcd writes one.
		if kerr != nil {
			t.Fatalf("kvKey: %v", kerr)
		}
		canon, err := proto.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		if key, err = kvKey(canon); err != nil || !bytes.Equal(key, m.Key) {
			t.Fatalf("kvKey(canonical) = %q, %v; want %q", key, err, m.Key)
		}
	})
}

// TestBoltBumpedRevisionMarker reads a db the way `etcdutl snapshot restore
// --bump-revision 1000` leaves it: an entry with an empty value at the
// bumped revision, which etcd accepts and which holds no key.
func TestBoltBumpedRevisionMarker(t *testing.T) {
	path := copyFile(t, corpusSnapshot)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	marker := bucketKey{main: 1255}
	k := make([]byte, revBytesLen)
	marker.put(k)
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(schema.Key.Name()).Put(k, []byte{})
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b := openBolt(t, path, BoltOptions{SkipHashCheck: true, Warn: func(string) {}})
	n := 0
	if _, err := b.List(context.Background(), "", ListOptions{}, func(*KeyValue) error {
		n++
		return nil
	}); err != nil {
		t.Fatalf("List: %v", err)
	}
	if n != 218 {
		t.Errorf("listed %d keys, want 218", n)
	}
	info, err := b.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Revision != 1255 {
		t.Errorf("revision = %d, want 1255 (the bumped revision)", info.Revision)
	}
	if _, err := b.Get(context.Background(), "/registry/namespaces/demo", 0); err != nil {
		t.Errorf("Get: %v", err)
	}
}

// TestBoltHashCache: a verified snapshot is not hashed again while it is
// unchanged, and any change to it voids the record.
func TestBoltHashCache(t *testing.T) {
	path := copyFile(t, corpusSnapshot)
	cache := t.TempDir()
	open := func() (*Bolt, error) {
		return OpenBolt(path, BoltOptions{HashCacheDir: cache})
	}
	b, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if s := b.Snapshot(); !s.Verified || s.VerifiedEarlier {
		t.Fatalf("first open: %+v, want verified by hashing", s)
	}
	b.Close()
	b, err = open()
	if err != nil {
		t.Fatal(err)
	}
	if s := b.Snapshot(); !s.Verified || !s.VerifiedEarlier {
		t.Fatalf("second open: %+v, want verified from the record", s)
	}
	b.Close()

	// Damage one byte of the data, keeping size and mtime: ctime changes.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if _, err := f.WriteAt([]byte{0xff}, 100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, err := open(); !errors.Is(err, ErrHashMismatch) && !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open after damage: %v, want a hash mismatch", err)
	}
}

// TestBoltHashCheckInterrupted: an open whose context is done stops the
// snapshot's hash check at once, fails, and records nothing; the check
// of VerifyTrailer likewise.
func TestBoltHashCheckInterrupted(t *testing.T) {
	path := copyFile(t, corpusSnapshot)
	cache := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := OpenBolt(path, BoltOptions{HashCacheDir: cache, Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Fatalf("open with its context done: %v, want it canceled", err)
	}
	VerifyTrailer(ctx, path, cache)
	b, err := OpenBolt(path, BoltOptions{HashCacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if s := b.Snapshot(); !s.Verified || s.VerifiedEarlier {
		t.Fatalf("open after the interrupted checks: %+v, want verified by hashing, nothing recorded", s)
	}
}
