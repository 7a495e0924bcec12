package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	etcdwal "go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// purgeCopy copies a wal directory as etcd's purge after a raft snapshot
// leaves it: without the segments whose entries all precede index from
// (every segment before the last one starting at or below it).
func purgeCopy(t *testing.T, walDir string, from uint64) (dir string, dropped int) {
	t.Helper()
	dir = copyDir(t, walDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".wal") {
			segs = append(segs, e.Name())
		}
	}
	sort.Strings(segs)
	keep := 0
	for i, name := range segs {
		var seq, index uint64
		if _, err := fmt.Sscanf(name, "%016x-%016x.wal", &seq, &index); err != nil {
			t.Fatalf("segment name %s: %v", name, err)
		}
		if index <= from {
			keep = i
		}
	}
	for _, name := range segs[:keep] {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, keep
}

// cutCopy writes a copy of a wal directory that starts exactly at raft
// index from, as a member's log is after etcd snapshotted at from-1 and
// purged: etcd's own wal package reads the log and writes the copy (a
// snapshot record at from-1, the entries from from on, the last hard
// state).
func cutCopy(t *testing.T, src string, from uint64) string {
	t.Helper()
	lg := zap.NewNop()
	r, err := etcdwal.OpenForRead(lg, src, &walpb.Snapshot{Index: new(uint64), Term: new(uint64)})
	if err != nil {
		t.Fatal(err)
	}
	meta, hs, ents, err := r.ReadAll()
	r.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read %s: %v", src, err)
	}
	i := 0
	for i < len(ents) && ents[i].GetIndex() < from {
		i++
	}
	if i == 0 || i == len(ents) {
		t.Fatalf("cut at %d: the log holds entries %d to %d", from, ents[0].GetIndex(), ents[len(ents)-1].GetIndex())
	}
	dst := filepath.Join(t.TempDir(), "wal")
	w, err := etcdwal.Create(lg, dst, meta)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	index, term := ents[i-1].GetIndex(), ents[i-1].GetTerm()
	if err := w.SaveSnapshot(&walpb.Snapshot{Index: &index, Term: &term, ConfState: &raftpb.ConfState{}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Save(hs, ents[i:]); err != nil {
		t.Fatal(err)
	}
	return dst
}

// dropSegmentsFrom removes from a wal directory copy every segment
// starting at or below index (the log then resumes after it).
func dropSegmentsFrom(t *testing.T, dir string, index uint64) {
	t.Helper()
	dropSegments(t, dir, func(start uint64) bool { return start <= index })
}

// dropSegments removes from a wal directory copy every segment whose first
// index drop says.
func dropSegments(t *testing.T, dir string, drop func(start uint64) bool) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		var seq, start uint64
		if _, err := fmt.Sscanf(e.Name(), "%016x-%016x.wal", &seq, &start); err == nil && drop(start) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestWALOverDB starts the replay from a db: a real member snapshots
// often and its log is purged up to a snapshot of its db taken before a
// PersistentVolumeClaim and a Secret were updated and deleted; then etcd
// compacts and defragments. The snapshot and the log together give every
// key as the live etcd holds it, and the deleted objects' last values with
// their revisions.
func TestWALOverDB(t *testing.T) {
	defer func(n int64) { etcdwal.SegmentSizeBytes = n }(etcdwal.SegmentSizeBytes)
	etcdwal.SegmentSizeBytes = 64 << 10 // many segments, so the purge drops some

	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{SnapshotCount: 50, InProcess: true})
	cli := c.Client(t)

	pvcKey := "/registry/persistentvolumeclaims/demo/www-web-0"
	secretKey := "/registry/secrets/demo/web-secret"
	pending := readCorpus(t, "plain/persistentvolumeclaims__demo__www-web-0__pending.bin")
	terminating := readCorpus(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	secret1 := readCorpus(t, "encrypted/secrets__demo__web-secret__aescbc.bin")
	secret2 := readCorpus(t, "encrypted/secrets__demo__web-secret-enc__aescbc.bin")
	filler := bytes.Repeat([]byte("x"), 1024)
	fill := func(prefix string, n int, lease clientv3.LeaseID) {
		for i := range n {
			if _, err := cli.Put(ctx, fmt.Sprintf("/registry/events/demo/%s-%d", prefix, i), string(filler), clientv3.WithLease(lease)); err != nil {
				t.Fatal(err)
			}
		}
	}

	want := map[string][]wantRev{}
	write := func(key string, expect int64, value []byte, del bool) int64 {
		rev, ok := kubeWrite(t, cli, key, expect, value, del)
		if !ok {
			t.Fatalf("%s: compare on revision %d failed", key, expect)
		}
		want[key] = append(want[key], wantRev{rev: rev, value: value, deleted: del})
		return rev
	}
	lease, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	r := write(pvcKey, 0, pending, false)
	s := write(secretKey, 0, secret1, false)
	fill("before", 200, lease.ID)
	fill("kept", 20, 0)

	// A snapshot of the member's db, taken before the incident.
	snapPath := filepath.Join(t.TempDir(), "snap.db")
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(snapPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	f.Close()
	early := copyDir(t, filepath.Join(c.DataDir(0), "member", "wal"))

	// The incident: updates, a failed compare-and-swap, a lease revoked
	// (its keys deleted), the objects deleted, history compacted away.
	r = write(pvcKey, r, terminating, false)
	if _, ok := kubeWrite(t, cli, pvcKey, r-1, pending, false); ok {
		t.Fatal("a stale compare-and-swap succeeded")
	}
	s = write(secretKey, s, secret2, false)
	fill("after", 200, 0)
	if _, err := cli.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	write(pvcKey, r, nil, true)
	last := write(secretKey, s, nil, true)
	if _, err := cli.Compact(ctx, last, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Defragment(ctx, c.Endpoints()[0]); err != nil {
		t.Fatal(err)
	}
	live := map[string]*store.KeyValue{}
	resp, err := cli.Get(ctx, "/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		live[string(kv.Key)] = &store.KeyValue{Key: string(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease}
	}
	c.StopMember(0)

	base, err := store.OpenBolt(snapPath, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	ci := base.Meta().ConsistentIndex
	walDir, dropped := purgeCopy(t, filepath.Join(c.DataDir(0), "member", "wal"), ci+1)
	if dropped == 0 {
		t.Fatal("the purge dropped no segment: the test does not start after a raft snapshot")
	}
	alone, err := OpenWALOver(ctx, walDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if alone.Coverage().RevisionsStop == "" {
		t.Fatal("the purged log alone derives revisions")
	}
	// Alone, it holds the writes but establishes neither outcome nor
	// revision, and says so rather than answer "nothing".
	if un := alone.Unsettled(pvcKey, 0); len(un) != 3 {
		t.Errorf("the log alone: %d unsettled writes of the pvc, want 3: %+v", len(un), un)
	}
	if _, _, err := alone.GetAtIndex(ctx, pvcKey, alone.Coverage().LastIndex); !errors.Is(err, ErrUndetermined) {
		t.Errorf("the log alone, get at its last index: %v, want ErrUndetermined", err)
	}
	if err := alone.ScanLatest(ctx, "/registry/", true, func(*store.KeyValue, bool, int64) error { return nil }); !errors.Is(err, ErrUndetermined) {
		t.Errorf("the log alone, scan latest: %v, want ErrUndetermined", err)
	}

	w, err := OpenWALOver(ctx, walDir, base)
	if err != nil {
		t.Fatal(err)
	}
	cov := w.Coverage()
	t.Logf("coverage: entries %d-%d, db consistent index %d (revision %d), %d entries in the db, revisions %d-%d, %d segments",
		cov.FirstIndex, cov.LastIndex, cov.ConsistentIndex, cov.DBRevision, cov.InDB, cov.FirstRevision, cov.LastRevision, len(cov.Segments))
	if cov.RevisionsStop != "" {
		t.Fatalf("revisions stop: %s", cov.RevisionsStop)
	}
	if cov.FirstIndex <= 1 || cov.FirstIndex > ci+1 || cov.ConsistentIndex != ci {
		t.Fatalf("coverage %+v, db consistent index %d", cov, ci)
	}
	info, err := w.Info(ctx)
	if err != nil || info.Revision != last {
		t.Fatalf("info %+v, %v: want revision %d", info, err, last)
	}

	// Every key as the live etcd holds it.
	got := map[string]*store.KeyValue{}
	if _, err := w.List(ctx, "", store.ListOptions{}, func(kv *store.KeyValue) error {
		got[kv.Key] = kv
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(live) {
		t.Errorf("joined source lists %d keys, live etcd %d", len(got), len(live))
	}
	for k, l := range live {
		g := got[k]
		if g == nil || !bytes.Equal(g.Value, l.Value) || g.CreateRevision != l.CreateRevision || g.ModRevision != l.ModRevision || g.Version != l.Version || g.Lease != l.Lease {
			t.Errorf("%s: joined %+v, live %+v", k, g, l)
		}
	}

	// The deleted objects: their history, last values and revisions.
	for key, revs := range want {
		var evs []store.Event
		if _, err := w.History(ctx, key, func(e store.Event) error {
			evs = append(evs, e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(evs) != len(revs) {
			t.Fatalf("%s: history has %d events, want %d: %+v", key, len(evs), len(revs), evs)
		}
		for i, e := range evs {
			if e.KV.ModRevision != revs[i].rev || e.Deleted != revs[i].deleted || !bytes.Equal(e.KV.Value, revs[i].value) {
				t.Errorf("%s event %d: revision %d deleted %v, want revision %d deleted %v", key, i, e.KV.ModRevision, e.Deleted, revs[i].rev, revs[i].deleted)
			}
		}
		prev := revs[len(revs)-2]
		if kv, err := w.Get(ctx, key, prev.rev); err != nil || !bytes.Equal(kv.Value, prev.value) {
			t.Errorf("%s at revision %d: %v", key, prev.rev, err)
		}
		if _, err := w.Get(ctx, key, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s now: %v, want not found", key, err)
		}
	}
	deleted := map[string]int64{}
	checkScanDeleted(t, w, "/registry/")
	if err := w.ScanLatest(ctx, "/registry/", true, func(kv *store.KeyValue, del bool, delRev int64) error {
		if del {
			deleted[kv.Key] = delRev
			if key := kv.Key; key == pvcKey && !bytes.Equal(kv.Value, terminating) || key == secretKey && !bytes.Equal(kv.Value, secret2) {
				t.Errorf("%s: last value before the deletion is not the last one written", key)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if deleted[pvcKey] != want[pvcKey][2].rev || deleted[secretKey] != last || len(deleted) != 2+200 {
		t.Errorf("deleted: %d keys, pvc at %d, secret at %d", len(deleted), deleted[pvcKey], deleted[secretKey])
	}
	var outcomes []string
	if err := w.KeyWrites(ctx, pvcKey, false, func(kw KeyWrite) error {
		outcomes = append(outcomes, fmt.Sprintf("%v@%d", kw.Entry.Outcome, kw.Event.KV.ModRevision))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if w := fmt.Sprintf("[applied@%d not applied@0 applied@%d]", want[pvcKey][1].rev, want[pvcKey][2].rev); fmt.Sprint(outcomes) != w {
		t.Errorf("pvc writes in the log: %v, want %s", outcomes, w)
	}

	// The db is newer than a log copied before it was taken.
	cur, err := store.OpenBolt(filepath.Join(c.DataDir(0), "member", "snap", "db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	if _, err := OpenWALOver(ctx, early, cur); !errors.Is(err, ErrDBNewer) {
		t.Errorf("db newer than the log: %v", err)
	} else {
		t.Log(err)
	}
	checkReplay(t, walDir, base, cur, len(live))

	// A log resuming after the entry that follows the db's.
	dropSegmentsFrom(t, walDir, ci+1)
	if _, err := OpenWALOver(ctx, walDir, base); !errors.Is(err, ErrLogGap) {
		t.Errorf("log resuming after the db: %v", err)
	} else {
		t.Log(err)
	}
}

// checkReplay opens the log over base, an older snapshot, checked by cur,
// the member's current db holding liveKeys keys: the check agrees; it
// refuses the two dbs swapped, and a copy of cur with one value the replay
// wrote edited.
func checkReplay(t *testing.T, walDir string, base, cur *store.Bolt, liveKeys int) {
	t.Helper()
	ctx := context.Background()
	open := func(base, check *store.Bolt) (*WAL, error) {
		l, err := walfile.Open(walDir)
		if err != nil {
			t.Fatal(err)
		}
		return OpenLogChecked(ctx, l, base, check)
	}
	w, err := open(base, cur)
	if err != nil {
		t.Fatal(err)
	}
	c := w.Coverage().Check
	if c == nil || c.NotChecked != "" || c.Keys != liveKeys || c.Values == 0 || c.ConsistentIndex != cur.Meta().ConsistentIndex || c.DB != cur.Path() {
		t.Fatalf("check: %+v, want the db %s, %d keys agreeing and values compared", c, cur.Path(), liveKeys)
	}

	if _, err := open(cur, base); !errors.Is(err, ErrCheckOrder) {
		t.Errorf("dbs swapped: %v, want ErrCheckOrder", err)
	}

	// An edited copy of the current db: one value the replay wrote is
	// changed in place, every revision kept.
	edited := filepath.Join(t.TempDir(), "edited.db")
	data, err := os.ReadFile(cur.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(edited, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(edited, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := ""
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		cur := b.Cursor()
		for k, v := cur.Last(); k != nil; k, v = cur.Prev() {
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				return err
			}
			if !strings.Contains(string(kv.Key), "/after-") || len(kv.Value) == 0 {
				continue
			}
			kv.Value = append([]byte("edited "), kv.Value...)
			out, err := proto.Marshal(&kv)
			if err != nil {
				return err
			}
			changed = string(kv.Key)
			return b.Put(append([]byte(nil), k...), out)
		}
		return errors.New("no value written after the snapshot")
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	ed, err := store.OpenBolt(edited, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ed.Close()
	_, err = open(base, ed)
	if !errors.Is(err, ErrCheckFailed) || !strings.Contains(err.Error(), changed) {
		t.Errorf("edited current db: %v, want ErrCheckFailed naming %s", err, changed)
	} else {
		t.Log(err)
	}
}

// checkScanDeleted checks that a.ScanDeleted(prefix), which reads no live
// key's value, reports what ScanLatest with includeDeleted reports
// deleted: the same keys, in the same order, with the same values and
// revisions.
func checkScanDeleted(t *testing.T, a store.Archive, prefix string) {
	t.Helper()
	ctx := context.Background()
	type deleted struct {
		KV        *store.KeyValue
		DeleteRev int64
	}
	var want, got []deleted
	if err := a.ScanLatest(ctx, prefix, true, func(kv *store.KeyValue, del bool, delRev int64) error {
		if del {
			want = append(want, deleted{kv, delRev})
		}
		return nil
	}); err != nil {
		t.Fatalf("ScanLatest(%q): %v", prefix, err)
	}
	if err := a.ScanDeleted(ctx, prefix, func(kv *store.KeyValue, delRev int64) error {
		got = append(got, deleted{kv, delRev})
		return nil
	}); err != nil {
		t.Fatalf("ScanDeleted(%q): %v", prefix, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ScanDeleted(%q) differs from ScanLatest's deleted keys (-ScanLatest +ScanDeleted):\n%s", prefix, diff)
	}
}
