package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	etcdwal "go.etcd.io/etcd/server/v3/storage/wal"
	"google.golang.org/protobuf/proto"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/walread"
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
	if o.earlyRevoke {
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
	for _, l := range cov.Lines() {
		t.Log(l)
	}
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
		evs, _ := historyOf(t, w, key)
		// The create is before the log: the update and the delete are
		// given back.
		want := revs[1:]
		if len(evs) != len(want) {
			t.Fatalf("%s: history has %d events, want %d: %+v", key, len(evs), len(want), evs)
		}
		for i, e := range evs {
			if e.KV.ModRevision != want[i].rev || e.Deleted != want[i].deleted || !bytes.Equal(e.KV.Value, want[i].value) {
				t.Errorf("%s event %d: revision %d deleted %v, want revision %d deleted %v", key, i, e.KV.ModRevision, e.Deleted, want[i].rev, want[i].deleted)
			}
			// Created before the log and deleted in it: its create
			// revision and version are in neither.
			if !e.Deleted && (e.KV.CreateRevision != 0 || e.KV.Version != 0) {
				t.Errorf("%s event %d: created %d version %d, want both unknown (0)", key, i, e.KV.CreateRevision, e.KV.Version)
			}
		}
		// The compacted revision reads from the log.
		if kv, err := w.Get(ctx, key, want[0].rev); err != nil || !bytes.Equal(kv.Value, want[0].value) {
			t.Errorf("%s at compacted revision %d: %v", key, want[0].rev, err)
		}
		if _, err := w.Get(ctx, key, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s now: %v, want not found", key, err)
		}
		if un := w.Unsettled(key, 0); len(un) != 0 {
			t.Errorf("%s: unsettled writes %+v", key, un)
		}
	}
	var outcomes []string
	if err := w.KeyWrites(ctx, sc.pvcKey, false, func(kw KeyWrite) error {
		outcomes = append(outcomes, fmt.Sprintf("%v@%d", kw.Entry.Outcome, kw.Event.KV.ModRevision))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("[applied@%d not applied@0 applied@%d]", sc.want[sc.pvcKey][1].rev, sc.want[sc.pvcKey][2].rev); fmt.Sprint(outcomes) != want {
		t.Errorf("pvc writes in the log: %v, want %s", outcomes, want)
	}

	// The revoke of a lease granted before the log, whose keys were all
	// attached before it: its revision is fixed by the compares after it.
	var revokes []WALEntry
	if err := w.Entries(func(e WALEntry) error {
		if e.Kind == walread.KindLeaseRevoke {
			revokes = append(revokes, e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(revokes) != 1 || revokes[0].Outcome != OutcomeApplied || revokes[0].Revision != sc.revokeRev {
		t.Errorf("revokes %+v, want one applied at revision %d", revokes, sc.revokeRev)
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
		if kv := deleted[key]; kv == nil || !bytes.Equal(kv.Value, revs[1].value) {
			t.Errorf("%s: not listed deleted with its last value", key)
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
		for _, r := range revs[1:] {
			if !seen[fmt.Sprintf("%s@%d", key, r.rev)] {
				t.Errorf("scan revisions: %s@%d missing", key, r.rev)
			}
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
	t.Log(cov.Lines())
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
	if _, err := w.Get(ctx, sc.pvcKey, sc.want[sc.pvcKey][1].rev); !errors.Is(err, store.ErrCompacted) {
		t.Errorf("get at a compacted revision: %v, want compacted", err)
	}
	if _, _, err := w.GetAtIndex(ctx, sc.pvcKey, cov.FirstIndex+1); !errors.Is(err, ErrUndetermined) {
		t.Errorf("get at an index the db holds: %v, want undetermined", err)
	}
}

// TestPrefixSolver works synthetic prefixes out (before the check against
// a db): the revision before the log fixed by the first compare that names
// a revision of the log, a stale first compare passed over on a later try,
// a revoke of a lease granted before the log fixed by the compares around
// it, and what is refused.
func TestPrefixSolver(t *testing.T) {
	grant := func(id int64) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{ID: id, TTL: 60}}
	}
	revoke := func(id int64) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: id}}
	}
	nested := &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{}}}}}}
	tests := []struct {
		name  string
		reqs  []*pb.InternalRaftRequest
		dbRev int64
		// veto: the entries whose compares may not pin.
		veto []int32
		// want: each entry's revision (0: none or not established), or
		// the failure; ambiguous: the entries whose outcome is left
		// unknown.
		want      []int64
		ambiguous []bool
		fail      string
	}{{
		name: "a chain fixes the start",
		// /a existed at revision 7 before the log; /b is created in it.
		reqs:  []*pb.InternalRaftRequest{txnReq("/a", 7, "1"), txnReq("/b", 0, "1"), txnReq("/a", 11, "2"), txnReq("/a", 13, "")},
		dbRev: 14,
		want:  []int64{11, 12, 13, 14},
	}, {
		name: "a conflicting write is not applied",
		reqs: []*pb.InternalRaftRequest{txnReq("/a", 7, "1"), txnReq("/a", 7, "2"), txnReq("/a", 11, "3")},
		// The second compares the revision before the first: it lost.
		dbRev: 12,
		want:  []int64{11, 0, 12},
	}, {
		name: "a stale first compare pins the start wrong",
		// /c was at revision 10 before the log (X = 19). The first
		// write read a stale revision 3 and lost; the second applied
		// at 20, the third at 21. Taking 3 as /c's state, the second
		// compare pins X at 9.
		reqs:  []*pb.InternalRaftRequest{txnReq("/c", 3, "1"), txnReq("/c", 10, "2"), txnReq("/c", 20, "3")},
		dbRev: 21,
		fail:  "do not lead to the db's revision",
	}, {
		name: "the same, the stale compare passed over: which write applied is not claimed",
		reqs: []*pb.InternalRaftRequest{txnReq("/c", 3, "1"), txnReq("/c", 10, "2"), txnReq("/c", 20, "3")},
		// The third compare pins X at 19; the two first writes name
		// two revisions before it: one of them applied at 20, the
		// log does not tell which.
		dbRev:     21,
		veto:      []int32{1},
		want:      []int64{0, 0, 21},
		ambiguous: []bool{true, true, false},
	}, {
		name: "a revoke of a lease from before the log made a revision",
		reqs: []*pb.InternalRaftRequest{txnReq("/r", 5, "1"), txnReq("/r", 30, "2"),
			revoke(9),
			txnReq("/s", 6, "1"), txnReq("/s", 33, "2")},
		dbRev: 34,
		want:  []int64{30, 31, 32, 33, 34},
	}, {
		name: "a revoke of a lease from before the log made none",
		reqs: []*pb.InternalRaftRequest{txnReq("/r", 5, "1"), txnReq("/r", 30, "2"),
			revoke(9),
			txnReq("/s", 6, "1"), txnReq("/s", 32, "2")},
		dbRev: 33,
		want:  []int64{30, 31, 0, 32, 33},
	}, {
		name: "nothing fixes the revision before an uncertain revoke: only the writes before it are unknown",
		reqs: []*pb.InternalRaftRequest{putReq("/p", "1"), revoke(9), txnReq("/s", 6, "1"), txnReq("/s", 40, "2")},
		// /p's put made revision 37 or 38: nothing tells which.
		dbRev: 41,
		want:  []int64{0, 0, 40, 41},
	}, {
		name: "a delete without a compare of a key from before the log (etcdctl del)",
		reqs: []*pb.InternalRaftRequest{txnReq("/a", 5, "1"), txnReq("/a", 11, "2"),
			{DeleteRange: &pb.DeleteRangeRequest{Key: []byte("/p")}},
			txnReq("/b", 0, "1"), txnReq("/b", 14, "2")},
		dbRev: 15,
		want:  []int64{11, 12, 13, 14, 15},
	}, {
		name:  "the same, with nothing to fix the revision before it: whether it deleted /p is unknown, the put is at 9",
		reqs:  []*pb.InternalRaftRequest{{DeleteRange: &pb.DeleteRangeRequest{Key: []byte("/p")}}, putReq("/c", "1")},
		dbRev: 9,
		want:  []int64{0, 9},
	}, {
		name:  "a lease granted in the log: its revoke deletes its keys",
		reqs:  []*pb.InternalRaftRequest{txnReq("/a", 4, "1"), grant(5), leasePutReq("/e", "x", 5), txnReq("/a", 10, "2"), revoke(5)},
		dbRev: 13,
		want:  []int64{10, 0, 11, 12, 13},
	}, {
		name: "a compare names a revision no write of the key made",
		// Revisions count right, but /b's last compare names /a's
		// revision: not what a writer that read /b sends.
		reqs:  []*pb.InternalRaftRequest{txnReq("/a", 5, "1"), txnReq("/a", 11, "2"), txnReq("/b", 0, "1"), txnReq("/b", 11, "2")},
		dbRev: 13,
		fail:  "entry 103 compares /b with revision 11, which no write of it made",
	}, {
		name:  "a nested transaction is not modelled",
		reqs:  []*pb.InternalRaftRequest{txnReq("/a", 4, "1"), nested},
		dbRev: 5,
		fail:  "entry 101: a nested transaction: not modelled",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keys := newPxKeys()
			var entries []pxEntry
			for i, req := range tc.reqs {
				entries = append(entries, compactEntry(mustEntry(t, uint64(100+i), req), walread.Pos{}, keys))
			}
			veto := map[int32]bool{}
			for _, e := range tc.veto {
				veto[e] = true
			}
			p := newPxSolver(entries, keys, false, nil, veto, nil)
			p.run()
			if p.fail == "" {
				p.solve(tc.dbRev)
			}
			if p.fail == "" {
				p.checkRefs()
			}
			if p.fail == "" {
				p.markAmbiguous()
			}
			if tc.fail != "" {
				if !strings.Contains(p.fail, tc.fail) {
					t.Fatalf("failure %q, want %q", p.fail, tc.fail)
				}
				return
			}
			if p.fail != "" {
				t.Fatalf("failed: %s", p.fail)
			}
			var got []int64
			var amb []bool
			for _, o := range p.out {
				amb = append(amb, o.ambiguous != "")
				switch {
				case o.ambiguous != "":
					got = append(got, 0)
				case o.rel != 0:
					got = append(got, p.relAbs(o.rel))
				case o.seg != 0:
					rev, _ := p.revokeRev(o.seg)
					got = append(got, rev)
				default:
					got = append(got, 0)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("revisions %v, want %v", got, tc.want)
			}
			if tc.ambiguous == nil {
				tc.ambiguous = make([]bool, len(got))
			}
			if fmt.Sprint(amb) != fmt.Sprint(tc.ambiguous) {
				t.Errorf("outcomes left unknown %v, want %v", amb, tc.ambiguous)
			}
		})
	}
}

// FuzzPrefixSolver works out prefixes made of kube-apiserver's writes
// drawn from the input (three keys, compares on small revisions, leases
// granted, used and revoked, compactions): it must never panic, and a
// prefix it solves has revisions that rise with the log.
func FuzzPrefixSolver(f *testing.F) {
	f.Add([]byte{0, 7, 1, 0, 2, 11, 3, 13}, int64(14))
	f.Add([]byte{0, 5, 0, 30, 5, 9, 1, 6, 1, 33}, int64(34))
	f.Add([]byte{4, 5, 6, 5, 0, 4, 5, 5, 7, 9}, int64(13))
	f.Fuzz(func(t *testing.T, data []byte, dbRev int64) {
		keys := newPxKeys()
		var entries []pxEntry
		for i := 0; i+1 < len(data) && len(entries) < 64; i += 2 {
			op, arg := data[i], int64(data[i+1])
			key := fmt.Sprintf("/k%d", op%3)
			var req *pb.InternalRaftRequest
			switch op % 8 {
			case 0, 1, 2:
				req = txnReq(key, arg, "v"+strconv.Itoa(i))
			case 3:
				req = txnReq(key, arg, "") // a delete
			case 4:
				req = &pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{ID: arg%4 + 1, TTL: 60}}
			case 5:
				req = leasePutReq(key, "e", arg%4+1)
			case 6:
				req = &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: arg%4 + 1}}
			case 7:
				req = &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: arg}}
			}
			entries = append(entries, compactEntry(mustEntry(t, uint64(100+len(entries)), req), walread.Pos{}, keys))
		}
		for _, exact := range []bool{false, true} {
			p := newPxSolver(entries, keys, exact, nil, nil, nil)
			p.run()
			if p.fail == "" {
				p.solve(dbRev)
			}
			if p.fail == "" {
				p.checkRefs()
			}
			if p.fail == "" {
				p.markAmbiguous()
			}
			if p.fail != "" {
				continue
			}
			last := p.relAbs(0)
			for i, o := range p.out {
				var rev int64
				switch {
				case o.rel != 0:
					rev = p.relAbs(o.rel)
				case o.seg != 0:
					rev, _ = p.revokeRev(o.seg)
				}
				if rev == 0 {
					continue
				}
				if rev <= last {
					t.Fatalf("entry %d: revision %d after %d", i, rev, last)
				}
				last = rev
			}
			pinned := true
			for _, sg := range p.segs {
				pinned = pinned && sg.pinned
			}
			if last > dbRev || pinned && last != dbRev {
				t.Fatalf("solved to revision %d, the db's is %d", last, dbRev)
			}
		}
	})
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
			for _, l := range cov.Lines() {
				t.Log(l)
			}
			if cov.PrefixUnresolved != "" {
				t.Fatalf("prefix not resolved: %s", cov.PrefixUnresolved)
			}
			var revoke WALEntry
			if err := w.Entries(func(e WALEntry) error {
				if e.Kind == walread.KindLeaseRevoke && revoke.Index == 0 {
					revoke = e
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if revoke.Index == 0 || revoke.Index > cov.FirstIndex+8 {
				t.Fatalf("the first revoke is entry %d, the log starts at %d: not the scene", revoke.Index, cov.FirstIndex)
			}
			if !tc.o.earlyBlind {
				if len(cov.PrefixUnknown) != 0 || cov.PrefixRevision == 0 {
					t.Fatalf("not anchored: before %d, unknown %+v", cov.PrefixRevision, cov.PrefixUnknown)
				}
			} else {
				// Besides, a write an early compare's other world (it
				// failed: see challenge) gives another revision.
				challenged := slices.DeleteFunc(slices.Clone(cov.PrefixUnknown[min(1, len(cov.PrefixUnknown)):]), func(s WALStretch) bool {
					return strings.Contains(s.Reason, "may have failed (a stale read)")
				})
				if len(cov.PrefixUnknown) == 0 || len(challenged) != 0 || cov.PrefixUnknown[0].FromIndex != cov.FirstIndex || cov.PrefixUnknown[0].ToIndex != revoke.Index-1 {
					t.Fatalf("unknown stretches %+v, want entries %d to %d", cov.PrefixUnknown, cov.FirstIndex, revoke.Index-1)
				}
				// The early events' creates applied, at revisions not
				// established, or (a create's compare may have failed:
				// see challenge) with their outcome not established; the
				// puts after them are placed.
				for _, key := range sc.early {
					var got []string
					if err := w.KeyWrites(ctx, key, false, func(kw KeyWrite) error {
						got = append(got, fmt.Sprintf("%v@%d", kw.Entry.Outcome, kw.Event.KV.ModRevision))
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					if len(got) != 2 || got[0] != "applied@0" && got[0] != "unknown@0" || !strings.HasPrefix(got[1], "applied@") || got[1] == "applied@0" {
						t.Errorf("%s: writes %v, want the create applied at an unknown revision, the put placed", key, got)
					}
				}
			}
			for key, revs := range sc.want {
				evs, _ := historyOf(t, w, key)
				want := revs[1:]
				if len(evs) != len(want) {
					t.Fatalf("%s: history has %d events, want %d: %+v", key, len(evs), len(want), evs)
				}
				for i, e := range evs {
					if e.KV.ModRevision != want[i].rev || e.Deleted != want[i].deleted || !bytes.Equal(e.KV.Value, want[i].value) {
						t.Errorf("%s event %d: revision %d deleted %v, want revision %d deleted %v", key, i, e.KV.ModRevision, e.Deleted, want[i].rev, want[i].deleted)
					}
				}
				if un := w.Unsettled(key, 0); len(un) != 0 {
					t.Errorf("%s: unsettled writes %+v", key, un)
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
				if kv := deleted[key]; kv == nil || !bytes.Equal(kv.Value, revs[1].value) {
					t.Errorf("%s: not listed deleted with its last value", key)
				}
			}
			// Created before the revoke, deleted after it by a delete
			// without a compare: listed deleted with its value, whose
			// revision only the db could fix.
			gone := deleted[sc.earlyGone]
			if tc.o.earlyBlind && gone != nil && len(gone.Value) == 0 && gone.ModRevision == 0 {
				// Its create's compare may have failed (see challenge):
				// listed deleted, its last value not established, and
				// said to be.
				if u := w.Unestablished("/registry/events/"); u.Unknown == 0 {
					t.Errorf("%s: listed deleted as %+v, and unestablished %+v says nothing is unknown", sc.earlyGone, gone, u)
				}
			} else if gone == nil || len(gone.Value) == 0 || tc.o.earlyBlind != (gone.ModRevision == 0) {
				t.Errorf("%s: listed deleted as %+v, want its value, with its revision unknown only when nothing anchors it", sc.earlyGone, gone)
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
