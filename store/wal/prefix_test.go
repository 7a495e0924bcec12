package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	etcdwal "go.etcd.io/etcd/server/v3/storage/wal"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// prefixScene is what writePrefixScene wrote, the way kube-apiserver
// does, into a real member that snapshots often and whose log is then
// purged.
type prefixScene struct {
	db, wal        string
	pvcKey, secKey string
	want           map[string][]wantRev
	live           map[string]*store.KeyValue
	logStart       uint64
	revokeRev      int64
	// early are the keys written between the log's start and the early
	// revoke (sceneOptions.earlyRevoke); earlyGone is one more, deleted
	// without a compare after the revoke.
	early     []string
	earlyGone string
}

// sceneOptions vary the scene.
type sceneOptions struct {
	// earlyRevoke: right at the log's start, events are created that no
	// later compare names, then a lease granted before the log is
	// revoked (as etcd's lessor does all day with Events' leases).
	earlyRevoke bool
	// earlyBlind: those events are then overwritten by puts without a
	// compare, so that neither a compare nor the compacted db holds the
	// revisions they had.
	earlyBlind bool
	// earlyDelete: the log starts exactly with an etcdctl del of an
	// event from before the log, whose outcome (and so the revision
	// before the log) nothing establishes.
	earlyDelete bool
}

// writePrefixScene writes the scene: objects created before the log's
// start, updated, conflicted and deleted after it; events attached to a
// lease granted before the log and revoked in it; the apiserver's own
// lease renewed every few writes; compactions as its compactor sends
// them. It returns the member's current db, the purged log and what was
// written.
func writePrefixScene(t *testing.T, o sceneOptions) prefixScene {
	t.Helper()
	defer func(n int64) { etcdwal.SegmentSizeBytes = n }(etcdwal.SegmentSizeBytes)
	etcdwal.SegmentSizeBytes = 64 << 10
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{SnapshotCount: 50, InProcess: true})
	cli := c.Client(t)
	sc := prefixScene{pvcKey: "/registry/persistentvolumeclaims/demo/www-web-0", secKey: "/registry/secrets/demo/web-secret", want: map[string][]wantRev{}}
	pending := readCorpus(t, "plain/persistentvolumeclaims__demo__www-web-0__pending.bin")
	terminating := readCorpus(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	secret1 := readCorpus(t, "encrypted/secrets__demo__web-secret__aescbc.bin")
	secret2 := readCorpus(t, "encrypted/secrets__demo__web-secret-enc__aescbc.bin")
	filler := bytes.Repeat([]byte("x"), 1024)

	write := func(key string, expect int64, value []byte, del bool) int64 {
		rev, ok := kubeWrite(t, cli, key, expect, value, del)
		if !ok {
			t.Fatalf("%s: compare on revision %d failed", key, expect)
		}
		sc.want[key] = append(sc.want[key], wantRev{rev: rev, value: value, deleted: del})
		return rev
	}
	// The apiserver's own lease, renewed through a compare on its revision.
	renewKey := "/registry/leases/kube-system/apiserver-a"
	var renewRev int64
	renewN := 0
	renew := func() {
		renewN++
		r, ok := kubeWrite(t, cli, renewKey, renewRev, []byte("renew-"+strconv.Itoa(renewN)), false)
		if !ok {
			t.Fatal("renew failed")
		}
		renewRev = r
	}
	// The apiserver's compactor: If Version(compact_rev_key)==t Then Put(rev) Else Get; then Compact.
	compactKey := "compact_rev_key"
	var compactT, compactPrev int64
	compactor := func() {
		resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Version(compactKey), "=", compactT)).
			Then(clientv3.OpPut(compactKey, strconv.FormatInt(compactPrev, 10))).Else(clientv3.OpGet(compactKey)).Commit()
		if err != nil || !resp.Succeeded {
			t.Fatalf("compactor txn: %v %v", err, resp)
		}
		compactT++
		if compactPrev != 0 {
			if _, err := cli.Compact(ctx, compactPrev); err != nil {
				t.Fatal(err)
			}
		}
		compactPrev = resp.Header.Revision
	}
	events := func(prefix string, n int, lease clientv3.LeaseID) {
		for i := range n {
			key := fmt.Sprintf("/registry/events/demo/%s-%d", prefix, i)
			if _, ok := kubeWrite(t, cli, key, 0, filler, false); !ok {
				t.Fatal("event create failed")
			}
			if lease != 0 {
				if _, err := cli.Put(ctx, key, string(filler), clientv3.WithLease(lease)); err != nil {
					t.Fatal(err)
				}
			}
			if i%10 == 0 {
				renew()
			}
		}
	}

	old, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	// A second lease from before the log, with events attached to it.
	old2, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	compactor()
	pvc := write(sc.pvcKey, 0, pending, false)
	sec := write(sc.secKey, 0, secret1, false)
	events("old", 60, old.ID)
	if o.earlyRevoke {
		events("old2", 5, old2.ID)
	}
	compactor()
	events("filler", 150, 0)
	st, err := cli.Status(ctx, c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	sc.logStart = st.RaftIndex

	// After the log's start. Other objects' traffic first, as on a real
	// cluster: an Event the db still holds at its revision. Without it,
	// when the log starts just before the claim's update, the world in
	// which that update lost to a write just before the log (a conflict)
	// fits the db as well, and the claim's history is rightly not
	// established (see challenge). (The early revoke's scene keeps its
	// first writes unanchored: their stretch is the one left unknown.)
	if o.earlyDelete {
		if _, err := cli.Delete(ctx, "/registry/events/demo/old-5"); err != nil {
			t.Fatal(err)
		}
	}
	if !o.earlyRevoke {
		if _, ok := kubeWrite(t, cli, "/registry/events/demo/after-start", 0, filler, false); !ok {
			t.Fatal("event create failed")
		}
	}
	if o.earlyRevoke {
		for i := range 3 {
			key := fmt.Sprintf("/registry/events/demo/early-%d", i)
			if _, ok := kubeWrite(t, cli, key, 0, filler, false); !ok {
				t.Fatal("event create failed")
			}
			sc.early = append(sc.early, key)
		}
		sc.earlyGone = "/registry/events/demo/early-gone"
		if _, ok := kubeWrite(t, cli, sc.earlyGone, 0, filler, false); !ok {
			t.Fatal("event create failed")
		}
		if _, err := cli.Revoke(ctx, old2.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Delete(ctx, sc.earlyGone); err != nil {
			t.Fatal(err)
		}
		if o.earlyBlind {
			for _, key := range sc.early {
				if _, err := cli.Put(ctx, key, "blind"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	renew()
	created := pvc
	pvc = write(sc.pvcKey, pvc, terminating, false)
	// A writer that read the claim before that update: it names the
	// revision the claim had then, and loses.
	if _, ok := kubeWrite(t, cli, sc.pvcKey, created, pending, false); ok {
		t.Fatal("a stale compare-and-swap succeeded")
	}
	renew()
	sec = write(sc.secKey, sec, secret2, false)
	renew()
	// An operator's etcdctl del of an event from before the log: no
	// compare says whether it existed.
	if _, err := cli.Delete(ctx, "/registry/events/demo/old-3"); err != nil {
		t.Fatal(err)
	}
	renew()
	renew()
	rv, err := cli.Revoke(ctx, old.ID)
	if err != nil {
		t.Fatal(err)
	}
	sc.revokeRev = rv.Header.Revision
	renew()
	renew()
	newer, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	events("new", 20, newer.ID)
	compactor()
	write(sc.pvcKey, pvc, nil, true)
	renew()
	write(sc.secKey, sec, nil, true)
	renew()
	compactor()
	renew()
	compactor() // compacts past the deletions
	renew()
	if _, err := cli.Defragment(ctx, c.Endpoints()[0]); err != nil {
		t.Fatal(err)
	}
	sc.live = map[string]*store.KeyValue{}
	resp, err := cli.Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		sc.live[string(kv.Key)] = &store.KeyValue{Key: string(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease}
	}
	c.StopMember(0)
	sc.db = copyFile(t, filepath.Join(c.DataDir(0), "member", "snap", "db"))
	var dropped int
	sc.wal, dropped = purgeCopy(t, filepath.Join(c.DataDir(0), "member", "wal"), sc.logStart)
	if o.earlyDelete {
		// The delete is the log's first entry.
		sc.logStart++
	}
	if o.earlyRevoke || o.earlyDelete {
		// Exactly at the log's start, a few entries before the revoke.
		sc.wal = cutCopy(t, filepath.Join(c.DataDir(0), "member", "wal"), sc.logStart)
	}
	if dropped == 0 {
		t.Fatal("the purge dropped no segment: the log starts at raft index 1")
	}
	return sc
}

// TestWALOverCurrentDB: the member's current db, taken after the
// deletions and compacted past them, with its log that starts after a
// raft snapshot. The log's entries the db already holds are worked out
// back from it: the deleted objects' writes get their outcomes and
// revisions, the last values before the deletions come back, and the
// conflicting write is not applied.
func TestWALOverCurrentDB(t *testing.T) {
	ctx := context.Background()
	sc := writePrefixScene(t, sceneOptions{})
	base := openBolt(t, sc.db, store.BoltOptions{})
	w, err := OpenWALOver(ctx, sc.wal, base)
	if err != nil {
		t.Fatal(err)
	}
	cov := w.Coverage()
	t.Logf("coverage: %+v", cov)
	if cov.PrefixUnresolved != "" {
		t.Fatalf("prefix not resolved: %s", cov.PrefixUnresolved)
	}
	if cov.FirstIndex <= 1 || cov.FirstIndex > sc.logStart || cov.InDB == 0 {
		t.Fatalf("coverage %+v (log start %d)", cov, sc.logStart)
	}
	if k := base.CompactRevision(); k < sc.want[sc.pvcKey][2].rev {
		t.Fatalf("the db is compacted at %d, before the deletion", k)
	}

	for key, revs := range sc.want {
		evs, info := historyOf(t, w, key)
		if info.CompactRevision != base.CompactRevision() || info.LogStart != cov.PrefixRevision {
			t.Errorf("history of %s: compaction revision %d, log start %d; want the db's compaction %d, the revision before the log %d", key, info.CompactRevision, info.LogStart, base.CompactRevision(), cov.PrefixRevision)
		}
		// The create is before the log: the update and the delete are
		// given back, as far as settle establishes them (the deletion
		// at least), each as it was.
		want := revs[1:]
		if len(evs) == 0 || len(evs) > len(want) {
			t.Fatalf("%s: history has %d events, want 1 to %d: %+v", key, len(evs), len(want), evs)
		}
		for i, e := range evs {
			if w := want[len(want)-len(evs)+i]; e.KV.ModRevision != w.rev || e.Deleted != w.deleted || !bytes.Equal(e.KV.Value, w.value) {
				t.Errorf("%s event %d: revision %d deleted %v, want revision %d deleted %v", key, i, e.KV.ModRevision, e.Deleted, w.rev, w.deleted)
			}
			// Created before the log and deleted in it: its create
			// revision and version are in neither.
			if !e.Deleted && (e.KV.CreateRevision != 0 || e.KV.Version != 0) {
				t.Errorf("%s event %d: created %d version %d, want both unknown (0)", key, i, e.KV.CreateRevision, e.KV.Version)
			}
		}
		// The compacted revision reads from the log.
		if kv, err := w.Get(ctx, key, want[0].rev); err != nil && !errors.Is(err, ErrUndetermined) || err == nil && !bytes.Equal(kv.Value, want[0].value) {
			t.Errorf("%s at compacted revision %d: %v", key, want[0].rev, err)
		}
		if _, err := w.Get(ctx, key, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s now: %v, want not found", key, err)
		}
	}
	var outcomes []string
	if err := w.KeyWrites(ctx, sc.pvcKey, false, func(kw KeyWrite) error {
		outcomes = append(outcomes, fmt.Sprintf("%v@%d", kw.Entry.Outcome, kw.Event.KV.ModRevision))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	truth := []string{fmt.Sprintf("applied@%d", sc.want[sc.pvcKey][1].rev), "not applied@0", fmt.Sprintf("applied@%d", sc.want[sc.pvcKey][2].rev)}
	if len(outcomes) != len(truth) {
		t.Errorf("pvc writes in the log: %v, want %v", outcomes, truth)
	}
	for i := range min(len(outcomes), len(truth)) {
		if outcomes[i] != truth[i] && outcomes[i] != "unknown@0" {
			t.Errorf("pvc write %d in the log: %s, true %s", i, outcomes[i], truth[i])
		}
	}

	// The revoke of a lease granted before the log, whose keys were all
	// attached before it: its revision is fixed by the compares after it.
	var revokes []WALEntry
	if err := w.Entries(func(e WALEntry) error {
		if e.Kind == walfile.KindLeaseRevoke {
			revokes = append(revokes, e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(revokes) != 1 || revokes[0].Outcome != OutcomeUnknown && (revokes[0].Outcome != OutcomeApplied || revokes[0].Revision != sc.revokeRev) {
		t.Errorf("revokes %+v, want one applied at revision %d", revokes, sc.revokeRev)
	}
	// An event the revoke deleted that the log never names: before the
	// revoke, whether it existed is not established (not "not found");
	// from the revoke on, it is absent.
	oldEvent := "/registry/events/demo/old-5"
	if _, err := w.Get(ctx, oldEvent, sc.revokeRev-1); !errors.Is(err, ErrUndetermined) {
		t.Errorf("%s at revision %d, before the revoke: %v, want undetermined", oldEvent, sc.revokeRev-1, err)
	}
	if _, err := w.Get(ctx, oldEvent, sc.revokeRev); !errors.Is(err, store.ErrNotFound) && !errors.Is(err, ErrUndetermined) {
		t.Errorf("%s at revision %d, the revoke's: %v, want not found", oldEvent, sc.revokeRev, err)
	}

	deleted := map[string]*store.KeyValue{}
	checkScanDeleted(t, w, "/registry/")
	if err := w.ScanLatest(ctx, "/registry/", true, func(kv *store.KeyValue, del bool, delRev int64) error {
		if del {
			deleted[kv.Key] = kv
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for key, revs := range sc.want {
		if kv := deleted[key]; kv != nil && kv.Value != nil && !bytes.Equal(kv.Value, revs[1].value) {
			t.Errorf("%s: listed deleted with another value than its last", key)
		}
	}
	got := map[string]*store.KeyValue{}
	if _, err := w.List(ctx, "", store.ListOptions{}, func(kv *store.KeyValue) error {
		got[kv.Key] = kv
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for k, l := range sc.live {
		g := got[k]
		if g == nil || !bytes.Equal(g.Value, l.Value) || g.ModRevision != l.ModRevision || g.Version != l.Version {
			t.Errorf("%s: joined %+v, live %+v", k, g, l)
		}
	}
	// Revisions in order, each once, over the db and the log.
	var last int64
	seen := map[string]bool{}
	if err := w.ScanRevisions(ctx, "/registry/", func(e store.Event) error {
		if e.KV.ModRevision < last {
			t.Errorf("scan revisions: %d after %d", e.KV.ModRevision, last)
		}
		last = e.KV.ModRevision
		id := fmt.Sprintf("%s@%d", e.KV.Key, e.KV.ModRevision)
		if seen[id] {
			t.Errorf("scan revisions: %s twice", id)
		}
		seen[id] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for key, revs := range sc.want {
		r := revs[len(revs)-1]
		if !seen[fmt.Sprintf("%s@%d", key, r.rev)] {
			t.Errorf("scan revisions: %s@%d (its deletion) missing", key, r.rev)
		}
	}
}

// tamperValue rewrites, in a copy of a db, the value of key's newest
// revision.
func tamperValue(t *testing.T, path, key string, value []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		var lastK, lastV []byte
		if err := b.ForEach(func(k, v []byte) error {
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				return err
			}
			if string(kv.Key) == key {
				lastK, lastV = append([]byte(nil), k...), append([]byte(nil), v...)
			}
			return nil
		}); err != nil {
			return err
		}
		if lastK == nil {
			return fmt.Errorf("%s not in the db", key)
		}
		var kv mvccpb.KeyValue
		if err := proto.Unmarshal(lastV, &kv); err != nil {
			return err
		}
		kv.Value = value
		v, err := proto.Marshal(&kv)
		if err != nil {
			return err
		}
		return b.Put(lastK, v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWALOverDBThatDisagrees: when the log's entries the db holds do not
// lead to the db (here a value changed in the db behind etcd's back), no
// outcome or revision of them is claimed: they are listed as unknown,
// with the first disagreement, and recovering from them is refused.
func TestWALOverDBThatDisagrees(t *testing.T) {
	ctx := context.Background()
	sc := writePrefixScene(t, sceneOptions{})
	tamperValue(t, sc.db, "/registry/leases/kube-system/apiserver-a", []byte("forged"))
	base := openBolt(t, sc.db, store.BoltOptions{})
	w, err := OpenWALOver(ctx, sc.wal, base)
	if err != nil {
		t.Fatal(err)
	}
	cov := w.Coverage()
	if !strings.Contains(cov.PrefixUnresolved, "apiserver-a") {
		t.Fatalf("prefix: %q, want the forged key named", cov.PrefixUnresolved)
	}
	t.Logf("coverage: %+v", cov)
	if evs, _ := historyOf(t, w, sc.pvcKey); len(evs) != 0 {
		t.Errorf("history from an unresolved prefix: %+v", evs)
	}
	un := w.Unsettled(sc.pvcKey, 0)
	if len(un) != 3 {
		t.Fatalf("unsettled writes of the pvc: %d, want 3", len(un))
	}
	for _, e := range un {
		if e.Outcome != OutcomeUnknown || e.Revision != 0 || !strings.Contains(e.Reason, "not established") {
			t.Errorf("entry %+v", e)
		}
	}
	// The db compacted the revision; the log's entries hold it, not
	// established: not "compacted", which says nothing holds it.
	if _, err := w.Get(ctx, sc.pvcKey, sc.want[sc.pvcKey][1].rev); !errors.Is(err, ErrUndetermined) {
		t.Errorf("get at a compacted revision: %v, want undetermined", err)
	}
	if _, _, err := w.GetAtIndex(ctx, sc.pvcKey, cov.FirstIndex+1); !errors.Is(err, ErrUndetermined) {
		t.Errorf("get at an index the db holds: %v, want undetermined", err)
	}
}

// TestWALOverAnotherClustersDB: a db whose members do not include the
// log's member is refused before anything is read from the log.
func TestWALOverAnotherClustersDB(t *testing.T) {
	ctx := context.Background()
	sc := writePrefixScene(t, sceneOptions{})
	other := etcdtest.Start(t, etcdtest.Options{InProcess: true})
	other.Put(t, "/registry/configmaps/demo/x", []byte("x"))
	other.StopMember(0)
	db := openBolt(t, copyFile(t, filepath.Join(other.DataDir(0), "member", "snap", "db")), store.BoltOptions{})
	if _, err := OpenWALOver(ctx, sc.wal, db); !errors.Is(err, ErrOtherCluster) {
		t.Fatalf("open over another cluster's db: %v, want ErrOtherCluster", err)
	} else {
		t.Log(err)
	}
	// The member's own db passes.
	w, err := OpenWALOver(ctx, sc.wal, openBolt(t, sc.db, store.BoltOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if cov := w.Coverage(); cov.Member == 0 || cov.Cluster == 0 {
		t.Errorf("coverage without the member's ids: %+v", cov)
	}
}

// TestWALOverDBEarlyRevoke: a revoke of a lease granted before the log
// sits a few entries after the log's start, and no compare names the
// revisions of the writes before it (a member's real log, where Events'
// leases expire all day). The db anchors those writes when it still holds
// them; when it does not (they were overwritten, and compacted), only
// their own revisions are unknown: every other write of the log keeps its
// outcome and revision, and the deleted objects come back.
func TestWALOverDBEarlyRevoke(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    sceneOptions
	}{
		{"the db holds the early writes", sceneOptions{earlyRevoke: true}},
		{"the early writes are overwritten and compacted", sceneOptions{earlyRevoke: true, earlyBlind: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			sc := writePrefixScene(t, tc.o)
			base := openBolt(t, sc.db, store.BoltOptions{})
			w, err := OpenWALOver(ctx, sc.wal, base)
			if err != nil {
				t.Fatal(err)
			}
			cov := w.Coverage()
			t.Logf("coverage: %+v", cov)
			if cov.PrefixUnresolved != "" {
				t.Fatalf("prefix not resolved: %s", cov.PrefixUnresolved)
			}
			var revoke WALEntry
			if err := w.Entries(func(e WALEntry) error {
				if e.Kind == walfile.KindLeaseRevoke && revoke.Index == 0 {
					revoke = e
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if revoke.Index == 0 || revoke.Index > cov.FirstIndex+8 {
				t.Fatalf("the first revoke is entry %d, the log starts at %d: not the scene", revoke.Index, cov.FirstIndex)
			}
			// Settle's proofs leave the revoke, and the writes around it
			// that only counting would place, not established: what is
			// claimed must be so.
			if tc.o.earlyBlind {
				for _, key := range sc.early {
					var got []string
					if err := w.KeyWrites(ctx, key, false, func(kw KeyWrite) error {
						got = append(got, fmt.Sprintf("%v@%d", kw.Entry.Outcome, kw.Event.KV.ModRevision))
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					if len(got) != 2 || !strings.HasPrefix(got[0], "applied@") && got[0] != "unknown@0" || !strings.HasPrefix(got[1], "applied@") && got[1] != "unknown@0" {
						t.Errorf("%s: writes %v, want the create and the put, applied or not established", key, got)
					}
				}
			}
			for key, revs := range sc.want {
				evs, _ := historyOf(t, w, key)
				want := revs[1:]
				if len(evs) == 0 || len(evs) > len(want) {
					t.Fatalf("%s: history has %d events, want 1 to %d: %+v", key, len(evs), len(want), evs)
				}
				for i, e := range evs {
					if w := want[len(want)-len(evs)+i]; e.KV.ModRevision != w.rev || e.Deleted != w.deleted || !bytes.Equal(e.KV.Value, w.value) {
						t.Errorf("%s event %d: revision %d deleted %v, want revision %d deleted %v", key, i, e.KV.ModRevision, e.Deleted, w.rev, w.deleted)
					}
				}
			}
			deleted := map[string]*store.KeyValue{}
			checkScanDeleted(t, w, "/registry/")
			if err := w.ScanLatest(ctx, "/registry/", true, func(kv *store.KeyValue, del bool, delRev int64) error {
				if del {
					deleted[kv.Key] = kv
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for key, revs := range sc.want {
				if kv := deleted[key]; kv != nil && kv.Value != nil && !bytes.Equal(kv.Value, revs[1].value) {
					t.Errorf("%s: listed deleted with another value than its last", key)
				}
			}
			// Created before the revoke, deleted after it by a delete
			// without a compare: listed deleted with its value and
			// revision.
			if gone := deleted[sc.earlyGone]; gone == nil {
				t.Errorf("%s: not listed deleted", sc.earlyGone)
			}
			// The latest state is the db's.
			for k, l := range sc.live {
				kv, err := w.Get(ctx, k, 0)
				if err != nil || !bytes.Equal(kv.Value, l.Value) || kv.ModRevision != l.ModRevision {
					t.Errorf("%s now: %+v, %v; live %+v", k, kv, err, l)
				}
			}
		})
	}
}

// TestWALGetBelowCompactionUnsettledStart: the log's first entry is an
// etcdctl del of an event from before the log, so the revision before
// the log is not established. A read at a revision the db compacted is
// answered from the log where it establishes the key there (the claim's
// and the secret's values, written after that entry), not established
// where the revision may be before the log or the key's state there is
// not known, and "compacted" only below every revision the log's
// entries may have made. (It said "compacted" for all.)
func TestWALGetBelowCompactionUnsettledStart(t *testing.T) {
	ctx := context.Background()
	sc := writePrefixScene(t, sceneOptions{earlyDelete: true})
	base := openBolt(t, sc.db, store.BoltOptions{})
	w, err := OpenWALOver(ctx, sc.wal, base)
	if err != nil {
		t.Fatal(err)
	}
	cov := w.Coverage()
	if cov.PrefixUnresolved != "" {
		t.Fatalf("prefix unresolved: %s", cov.PrefixUnresolved)
	}
	t.Logf("revision before the log %d, between %d and %d; db compacted at %d", cov.PrefixRevision, w.prefixLowest, w.prefixFloor, base.CompactRevision())
	if cov.PrefixRevision != 0 {
		t.Fatalf("the revision before the log is established (%d): the scene does not test what it is for", cov.PrefixRevision)
	}
	answered := 0
	for _, key := range []string{sc.pvcKey, sc.secKey} {
		for _, want := range sc.want[key] {
			if want.rev > base.CompactRevision() {
				continue
			}
			kv, err := w.Get(ctx, key, want.rev)
			switch {
			case err == nil && !want.deleted && bytes.Equal(kv.Value, want.value) && kv.ModRevision == want.rev:
				answered++
			case errors.Is(err, store.ErrNotFound) && want.deleted:
				answered++
			case errors.Is(err, ErrUndetermined):
			case errors.Is(err, store.ErrCompacted) && want.rev < w.prefixLowest:
			default:
				t.Errorf("get %s at %d: %v (%v), want the value of revision %d (deleted %v), not established, or compacted below %d", key, want.rev, err, kv, want.rev, want.deleted, w.prefixLowest)
			}
		}
	}
	if answered == 0 {
		t.Errorf("no read below the db's compaction answered from the log")
	}
	t.Logf("answered %d", answered)
	// The history's compaction revision is the db's, never the
	// revision before the log (here not established: it said 0).
	if _, info := historyOf(t, w, sc.pvcKey); info.CompactRevision != base.CompactRevision() || info.LogStart != 0 {
		t.Errorf("history: compaction revision %d, log start %d; want the db's compaction %d and no log start", info.CompactRevision, info.LogStart, base.CompactRevision())
	}
}
