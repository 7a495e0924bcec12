package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/pkg/v3/traceutil"
	"go.etcd.io/etcd/server/v3/lease"
	"go.etcd.io/etcd/server/v3/storage/backend"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// TestBoltHashKVMatchesEtcd writes, deletes, re-creates and compacts on a
// real etcd (a compaction at a live revision, one at a tombstone's
// revision, one with no key left, so that etcd's keep set is empty), and
// after each step compares HashKV of a snapshot with the member's own
// Maintenance.HashKV at revision 0, at the current revision, one above the
// compaction and one between: they must be equal. The member's db file,
// read after it stopped, hashes the same as its last answer.
func TestBoltHashKVMatchesEtcd(t *testing.T) {
	c, e := etcdStart(t, etcdtest.Options{})
	ctx := context.Background()
	cli := e.Client()
	ep := c.Endpoints()[0]
	put := func(k, v string) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, k, v)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	del := func(k string, opts ...clientv3.OpOption) int64 {
		t.Helper()
		resp, err := cli.Delete(ctx, k, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	compact := func(rev int64) {
		t.Helper()
		if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
			t.Fatal(err)
		}
	}
	step := 0
	// check compares the snapshot's hashes with etcd's at revs; a live
	// answer with another compaction revision (etcd's cached hash of a
	// compaction it ran) is not comparable, and must not be the only one.
	check := func(name string, revs ...int64) *Bolt {
		t.Helper()
		step++
		path := filepath.Join(t.TempDir(), fmt.Sprintf("step%d.db", step))
		rc, err := cli.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.ReadFrom(rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		f.Close()
		b, err := OpenBolt(path, BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		compared, old := 0, false
		for _, rev := range revs {
			live, err := cli.HashKV(ctx, ep, rev)
			if err != nil {
				t.Fatalf("%s: etcd hashkv at %d: %v", name, rev, err)
			}
			got, err := b.HashKV(ctx, rev)
			if err != nil {
				t.Fatalf("%s: HashKV(%d): %v", name, rev, err)
			}
			want := HashKV{Hash: live.Hash, CompactRevision: live.CompactRevision, Revision: live.HashRevision}
			if live.HashRevision == 0 {
				// etcd before v3.6 does not say which revision it
				// hashed: the one asked for, unknown for 0
				// (store.(*Etcd).HashKV).
				old, want.Revision = true, rev
			}
			if !got.Comparable(want) {
				t.Logf("%s: rev %d: etcd answers %+v (cached at its compaction), the file %+v: not comparable", name, rev, want, got)
				continue
			}
			compared++
			if got != want {
				t.Errorf("%s: HashKV(%d) = %+v, etcd says %+v", name, rev, got, want)
			}
			// The prefix every key has hashes as the whole range.
			whole, p, err := b.HashKVPrefix(ctx, rev, "/")
			if err != nil {
				t.Fatal(err)
			}
			if whole != got || p != got.Hash {
				t.Errorf("%s: HashKVPrefix(%d, \"/\") = %+v, %08x; want %+v and the same hash", name, rev, whole, p, got)
			}
		}
		switch {
		case compared == 0 && old:
			// Asked for the current revision, which is the compaction's
			// here, it answers the hash it cached then.
			t.Logf("%s: etcd before v3.6: no hash comparable in this case", name)
		case compared == 0:
			t.Fatalf("%s: no hash compared", name)
		}
		return b
	}

	for i := range 5 {
		put(fmt.Sprintf("/registry/configmaps/ns/k%d", i), fmt.Sprint("v", i))
	}
	mid := put("/registry/configmaps/ns/k1", "v1-2")
	del("/registry/configmaps/ns/k2")
	put("/registry/secrets/ns/s", "secret")
	cur := put("/registry/configmaps/ns/k2", "re-created")
	check("no compaction", 0, cur, mid, 3)

	// Compaction at a live revision; later writes.
	compact(mid)
	put("/registry/configmaps/ns/k3", "v3-2")
	del("/registry/configmaps/ns/k4")
	cur = put("/registry/configmaps/ns/k5", "v5")
	check("compacted at a put", 0, cur, mid+1, mid, cur-1)

	// Compaction at a tombstone's revision.
	tomb := del("/registry/configmaps/ns/k0")
	compact(tomb)
	check("compacted at a tombstone", 0, tomb)
	cur = put("/registry/configmaps/ns/k6", "v6")
	check("a write after the tombstone's compaction", 0, cur, tomb+1)

	// No key left at the compaction revision: etcd's keep set is empty.
	gone := del("/registry/", clientv3.WithPrefix())
	compact(gone)
	check("every key deleted", 0, gone)
	cur = put("/registry/configmaps/ns/k7", "v7")
	check("one key after", 0, cur, gone+1)
	// The one key left at the compaction revision deleted after it: no
	// key exists at the revision hashed, and etcd then hashes the put
	// the compaction kept.
	compact(cur)
	last := del("/registry/configmaps/ns/k7")
	check("no key after the compaction", 0, last)
	cur = put("/registry/configmaps/ns/k8", "v8")
	check("a key again", 0, cur, last)
	final, err := cli.HashKV(ctx, ep, 0)
	if err != nil {
		t.Fatal(err)
	}

	// The member's own db file.
	c.Stop()
	b, err := OpenBolt(filepath.Join(c.DataDir(0), "member", "snap", "db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.HashKV(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := HashKV{Hash: final.Hash, CompactRevision: final.CompactRevision, Revision: final.HashRevision}
	if want.Revision == 0 {
		want.Revision = got.Revision // etcd before v3.6 does not say; nothing was written since
	}
	if got != want {
		t.Errorf("member db: HashKV(0) = %+v, etcd said %+v", got, want)
	}
	if _, err := b.HashKV(ctx, last-2); !errors.Is(err, ErrCompacted) {
		t.Errorf("HashKV below the compaction: %v, want ErrCompacted", err)
	}
	if _, err := b.HashKV(ctx, cur+1); err == nil || !strings.Contains(err.Error(), "future") {
		t.Errorf("HashKV above the current revision: %v, want a future revision error", err)
	}
}

// TestBoltHashKVGroups checks that the per-group hashes follow the
// whole one's rules: a group holding every key hashes as the whole
// range, groups are independent, and a changed value changes only its
// group's hash.
func TestBoltHashKVGroups(t *testing.T) {
	c, e := etcdStart(t, etcdtest.Options{})
	ctx := context.Background()
	cli := e.Client()
	for _, k := range []string{"/registry/pods/a/p", "/registry/pods/b/p", "/registry/secrets/a/s"} {
		if _, err := cli.Put(ctx, k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	c.Stop()
	b, err := OpenBolt(filepath.Join(c.DataDir(0), "member", "snap", "db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	byResource := func(key []byte) string {
		parts := strings.SplitN(string(key), "/", 4)
		return parts[2]
	}
	whole, groups, err := b.HashKVGroups(ctx, 0, byResource)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || groups["pods"] == groups["secrets"] {
		t.Errorf("groups = %v, want two different hashes", groups)
	}
	all, _, err := b.HashKVGroups(ctx, 0, func([]byte) string { return "all" })
	if err != nil {
		t.Fatal(err)
	}
	if all != whole {
		t.Errorf("whole hash depends on the grouping: %+v, %+v", all, whole)
	}
	_, p, err := b.HashKVPrefix(ctx, 0, "/registry/secrets/")
	if err != nil {
		t.Fatal(err)
	}
	if p != groups["secrets"] {
		t.Errorf("HashKVPrefix(secrets) = %08x, group %08x", p, groups["secrets"])
	}
	_, none, err := b.HashKVPrefix(ctx, 0, "/nothing/")
	if err != nil {
		t.Fatal(err)
	}
	if none != hashKVSeed() {
		t.Errorf("empty prefix hash %08x, want the seed's %08x", none, hashKVSeed())
	}
}

// TestBoltHashKVMatchesMvcc runs random histories (puts, deletes,
// re-creations, compactions, at tombstones too) through etcd's own mvcc
// store over a bbolt backend, and compares HashKV of the file with etcd's
// HashByRev at every revision it holds: the store's answers (where
// comparable: not the hash it cached at a compaction), and those of a
// store restored from a copy of the file, as etcd restarted on it
// computes them. Then it alters copies as no finished compaction leaves a
// file (a key held twice below the compaction revision; a compaction
// scheduled and not finished, which etcd finishes when it starts) and
// compares with a restored store again.
func TestBoltHashKVMatchesMvcc(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(24) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			path := filepath.Join(t.TempDir(), "db")
			be := backend.NewDefaultBackend(zap.NewNop(), path)
			s := mvcc.NewStore(zap.NewNop(), be, &lease.FakeLessor{}, mvcc.StoreConfig{CompactionBatchLimit: 3})
			var compacted int64
			for range 40 + rng.IntN(40) {
				key := []byte(fmt.Sprintf("/registry/pods/ns/p%d", rng.IntN(6)))
				switch op := rng.IntN(12); {
				case op < 7:
					s.Put(key, []byte(fmt.Sprint("v", rng.IntN(1000))), lease.NoLease)
				case op < 10:
					s.DeleteRange(key, nil)
				case op == 10:
					s.DeleteRange([]byte("/registry/"), []byte("/registry0"))
				default:
					if cur := s.Rev(); cur > compacted {
						c := compacted + 1 + rng.Int64N(cur-compacted)
						ch, err := s.Compact(traceutil.TODO(), c)
						if err != nil {
							t.Fatal(err)
						}
						<-ch
						compacted = c
					}
				}
			}
			cur := s.Rev()
			want := map[int64]mvcc.KeyValueHash{}
			for rev := max(compacted, 1); rev <= cur; rev++ {
				h, _, err := s.HashStorage().HashByRev(rev)
				if err != nil {
					t.Fatal(err)
				}
				want[rev] = h
			}
			s.Close()
			be.Close()

			compare := func(name, path string, want map[int64]mvcc.KeyValueHash) {
				t.Helper()
				b, err := OpenBolt(path, BoltOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				n := 0
				for rev, w := range want {
					got, err := b.HashKV(ctx, rev)
					if err != nil {
						t.Fatalf("%s: HashKV(%d): %v", name, rev, err)
					}
					checkListHashKV(t, name, b, rev)
					if w.CompactRevision != got.CompactRevision {
						continue // the hash etcd cached at its compaction
					}
					n++
					if got != (HashKV{Hash: w.Hash, CompactRevision: w.CompactRevision, Revision: w.Revision}) {
						t.Errorf("%s: HashKV(%d) = %+v, etcd %+v", name, rev, got, w)
					}
				}
				if n == 0 {
					t.Fatalf("%s: nothing compared", name)
				}
				// Refused revisions: above the current one, below the
				// compaction.
				checkListHashKV(t, name, b, b.Meta().Revision+1)
				if c := b.compactRevision(); c > 1 {
					checkListHashKV(t, name, b, c-1)
				}
			}
			compare("store", path, want)
			compare("restored", path, restoredHashes(t, path, 0))

			// A key held twice below the compaction revision, and a
			// compaction scheduled past the finished one.
			if compacted > 1 {
				dup := copyDB(t, path)
				db, err := bolt.Open(dup, 0o600, nil)
				if err != nil {
					t.Fatal(err)
				}
				err = db.Update(func(tx *bolt.Tx) error {
					var k [revBytesLen]byte
					bucketKey{main: 1, sub: 9}.put(k[:])
					kv := &mvccpb.KeyValue{Key: []byte("/registry/pods/ns/p0"), Value: []byte("old"), CreateRevision: 1, ModRevision: 1, Version: 1}
					v, err := proto.Marshal(kv)
					if err != nil {
						return err
					}
					return tx.Bucket(schema.Key.Name()).Put(k[:], v)
				})
				db.Close()
				if err != nil {
					t.Fatal(err)
				}
				compare("key twice below the compaction", dup, restoredHashes(t, dup, 0))
			}
			if cur > compacted+1 {
				sched := copyDB(t, path)
				c := compacted + 1 + rng.Int64N(cur-compacted)
				compare(fmt.Sprintf("compaction to %d scheduled", c), sched, restoredHashes(t, sched, c))
			}
		})
	}
}

// restoredHashes restores an etcd store from a copy of the db at path (with
// scheduled, a compaction to that revision scheduled and not finished,
// which the store finishes first; it is written to the file at path too)
// and returns its hashes at every revision it holds.
func restoredHashes(t *testing.T, path string, scheduled int64) map[int64]mvcc.KeyValueHash {
	t.Helper()
	if scheduled > 0 {
		be := backend.NewDefaultBackend(zap.NewNop(), path)
		tx := be.BatchTx()
		tx.LockOutsideApply()
		mvcc.UnsafeSetScheduledCompact(tx, scheduled)
		tx.Unlock()
		be.ForceCommit()
		be.Close()
	}
	cp := copyDB(t, path)
	be := backend.NewDefaultBackend(zap.NewNop(), cp)
	defer be.Close()
	s := mvcc.NewStore(zap.NewNop(), be, &lease.FakeLessor{}, mvcc.StoreConfig{CompactionBatchLimit: 1000})
	defer s.Close()
	if scheduled > 0 {
		// The store finishes the compaction in the background.
		for {
			tx := be.ReadTx()
			tx.RLock()
			done, _ := mvcc.UnsafeReadFinishedCompact(tx)
			tx.RUnlock()
			if done == scheduled {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	out := map[int64]mvcc.KeyValueHash{}
	var compactRev int64 = 1
	if h, _, err := s.HashStorage().HashByRev(0); err == nil {
		compactRev = max(h.CompactRevision, 1)
	}
	for rev := compactRev; rev <= s.Rev(); rev++ {
		h, _, err := s.HashStorage().HashByRev(rev)
		if err != nil {
			t.Fatalf("restored HashByRev(%d): %v", rev, err)
		}
		out[rev] = h
	}
	h0, _, err := s.HashStorage().HashByRev(0)
	if err != nil {
		t.Fatal(err)
	}
	out[0] = h0
	return out
}

// copyDB copies the db at path to a new file and returns its path.
func copyDB(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return cp
}
