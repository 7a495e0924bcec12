package wal

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	etcdwal "go.etcd.io/etcd/server/v3/storage/wal"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// TestWALOverDBDeletePrefix: PersistentVolumeClaims created before the
// log's start, one updated in it, one created in it, then an etcdctl del
// --prefix of them all, and one of them created again; the member's
// current db under its purged log. The range delete's certain deletes (of
// the claims the log knows exist) and its revision are established; which
// of the others it deleted only when the db holds its revision: compacted
// past it, the claim whose existence there the log does not tell makes
// its outcome unknown. Nothing claimed is wrong.
func TestWALOverDBDeletePrefix(t *testing.T) {
	for _, tc := range []struct {
		name      string
		compacted bool // the db compacted past the range delete
	}{
		{"the db holds the range delete's revision", false},
		{"the db compacted the range delete's revision", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(n int64) { etcdwal.SegmentSizeBytes = n }(etcdwal.SegmentSizeBytes)
			etcdwal.SegmentSizeBytes = 64 << 10
			ctx := context.Background()
			c := etcdtest.Start(t, etcdtest.Options{SnapshotCount: 50, InProcess: true})
			cli := c.Client(t)
			pending := readCorpus(t, "plain/persistentvolumeclaims__demo__www-web-0__pending.bin")
			terminating := readCorpus(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
			filler := bytes.Repeat([]byte("x"), 1024)
			prefix := "/registry/persistentvolumeclaims/demo/"
			claim := func(i int) string { return fmt.Sprintf("%sdata-%d", prefix, i) }
			want := map[string][]wantRev{}
			write := func(key string, expect int64, value []byte, del bool) int64 {
				rev, ok := kubeWrite(t, cli, key, expect, value, del)
				if !ok {
					t.Fatalf("%s: compare on revision %d failed", key, expect)
				}
				want[key] = append(want[key], wantRev{rev: rev, value: value, deleted: del})
				return rev
			}

			// Before the log: three claims, and events enough for the
			// purge to drop segments.
			var created [3]int64
			for i := range created {
				created[i] = write(claim(i), 0, pending, false)
			}
			for i := range 150 {
				if _, ok := kubeWrite(t, cli, fmt.Sprintf("/registry/events/demo/filler-%d", i), 0, filler, false); !ok {
					t.Fatal("event create failed")
				}
			}
			st, err := cli.Status(ctx, c.Endpoints()[0])
			if err != nil {
				t.Fatal(err)
			}
			logStart := st.RaftIndex + 1

			// In the log: data-0 updated (its compare tells it exists),
			// data-3 created, data-1 and data-2 not named; the range
			// delete; data-1 created again, a config map written after.
			write(claim(0), created[0], terminating, false)
			write(claim(3), 0, pending, false)
			del, err := cli.Delete(ctx, prefix, clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			if del.Deleted != 4 {
				t.Fatalf("the range delete deleted %d keys, want 4", del.Deleted)
			}
			delRev := del.Header.Revision
			for _, i := range []int{0, 1, 2, 3} {
				want[claim(i)] = append(want[claim(i)], wantRev{rev: delRev, deleted: true})
			}
			again := write(claim(1), 0, pending, false)
			cm := "/registry/configmaps/demo/after"
			cmRev := write(cm, 0, []byte("one"), false)
			last := write(cm, cmRev, []byte("two"), false)
			compactAt := delRev - 1
			if tc.compacted {
				compactAt = again
			}
			if _, err := cli.Compact(ctx, compactAt, clientv3.WithCompactPhysical()); err != nil {
				t.Fatal(err)
			}
			c.StopMember(0)
			db := copyFile(t, filepath.Join(c.DataDir(0), "member", "snap", "db"))
			walDir, dropped := purgeCopy(t, filepath.Join(c.DataDir(0), "member", "wal"), logStart)
			if dropped == 0 {
				t.Fatal("the purge dropped no segment: the log starts at raft index 1")
			}

			w, err := OpenWALOver(ctx, walDir, openBolt(t, db, store.BoltOptions{}))
			if err != nil {
				t.Fatal(err)
			}
			cov := w.Coverage()
			t.Logf("coverage: %+v", cov)
			if cov.PrefixUnresolved != "" {
				t.Fatalf("prefix not resolved: %s", cov.PrefixUnresolved)
			}
			if cov.FirstIndex <= 1 || cov.FirstIndex > logStart || cov.ConsistentIndex < cov.LastIndex {
				t.Fatalf("coverage %+v (log start %d): not a prefix", cov, logStart)
			}
			if info, err := w.Info(ctx); err != nil || info.Revision != last {
				t.Fatalf("info %+v, %v: want revision %d", info, err, last)
			}

			// The range delete's entry.
			var ranged []WALEntry
			if err := w.Entries(func(e WALEntry) error {
				if e.Kind == walfile.KindDeleteRange {
					ranged = append(ranged, e)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(ranged) != 1 {
				t.Fatalf("range deletes %+v, want one", ranged)
			}
			e := ranged[0]
			t.Logf("the range delete: %v revision %d: %s", e.Outcome, e.Revision, e.Reason)
			switch {
			case e.Revision != 0 && e.Revision != delRev:
				t.Errorf("the range delete: claimed revision %d, true %d", e.Revision, delRev)
			case !tc.compacted && (e.Outcome != OutcomeApplied || e.Revision != delRev):
				t.Errorf("the range delete: %v at revision %d, want applied at %d", e.Outcome, e.Revision, delRev)
			case tc.compacted && e.Outcome != OutcomeUnknown:
				// Which keys it deleted is not established: the db
				// compacted its tombstones.
				t.Errorf("the range delete: %v (%s), want unknown", e.Outcome, e.Reason)
			}

			// Every write listed: what it claims is so; each key's
			// outcomes as far as they are established.
			wantWrites := map[string]string{
				claim(0): fmt.Sprintf("[applied@%d applied@%d]", want[claim(0)][1].rev, delRev),
				claim(1): fmt.Sprintf("[applied@%d applied@%d]", delRev, again),
				claim(3): fmt.Sprintf("[applied@%d applied@%d]", want[claim(3)][0].rev, delRev),
			}
			if tc.compacted {
				wantWrites = map[string]string{
					claim(0): fmt.Sprintf("[applied@%d unknown@0]", want[claim(0)][1].rev),
					claim(1): fmt.Sprintf("[unknown@0 applied@%d]", again),
					claim(3): fmt.Sprintf("[applied@%d unknown@0]", want[claim(3)][0].rev),
				}
			}
			for key, ws := range wantWrites {
				var got []string
				if err := w.KeyWrites(ctx, key, false, func(kw KeyWrite) error {
					got = append(got, fmt.Sprintf("%v@%d", kw.Entry.Outcome, kw.Event.KV.ModRevision))
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != ws {
					t.Errorf("%s: writes in the log %v, want %s", key, got, ws)
				}
			}
			for i := range 4 {
				key := claim(i)
				evs, _ := historyOf(t, w, key)
				for _, ev := range evs {
					ok := false
					for _, r := range want[key] {
						if r.rev == ev.KV.ModRevision && r.deleted == ev.Deleted && (r.deleted || bytes.Equal(r.value, ev.KV.Value)) {
							ok = true
						}
					}
					if !ok {
						t.Errorf("%s: history has revision %d (deleted %v), which no write of it made", key, ev.KV.ModRevision, ev.Deleted)
					}
				}
				// data-2, which the log never names, is the db's only.
				if i != 2 && len(evs) == 0 || !tc.compacted && (len(evs) == 0 || evs[len(evs)-1].KV.ModRevision < delRev) {
					t.Errorf("%s: history %+v, want the range delete in it", key, evs)
				}
			}
			deleted := map[string]int64{}
			checkScanDeleted(t, w, prefix)
			if err := w.ScanLatest(ctx, prefix, true, func(kv *store.KeyValue, del bool, delRev int64) error {
				if del {
					deleted[kv.Key] = delRev
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			t.Logf("listed deleted: %v", deleted)
			for key, rev := range deleted {
				// -1: deleted at a revision not established.
				if key == claim(1) || rev != -1 && rev != delRev {
					t.Errorf("%s: listed deleted at revision %d, deleted at %d", key, rev, delRev)
				}
			}
			if !tc.compacted && (deleted[claim(0)] != delRev || deleted[claim(3)] != delRev) {
				t.Errorf("deleted %v: want %s and %s at revision %d", deleted, claim(0), claim(3), delRev)
			}
			// Live at revisions the db holds, and the db compacted their
			// tombstones: deleted, at a revision not established.
			if tc.compacted && (deleted[claim(0)] != -1 || deleted[claim(3)] != -1) {
				t.Errorf("deleted %v: want %s and %s at a revision not established (-1)", deleted, claim(0), claim(3))
			}
		})
	}
}
