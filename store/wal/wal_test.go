package wal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	etcdwal "go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/walfile"
)

// kubeWrite writes the way kube-apiserver does: one transaction, If
// ModRevision(key)==expect Then Put (or Delete) Else Get. It returns the
// response revision and whether the compare held.
func kubeWrite(t *testing.T, cli *clientv3.Client, key string, expect int64, value []byte, del bool) (int64, bool) {
	t.Helper()
	then := clientv3.OpPut(key, string(value))
	if del {
		then = clientv3.OpDelete(key)
	}
	resp, err := cli.Txn(context.Background()).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expect)).
		Then(then).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		t.Fatalf("txn %s: %v", key, err)
	}
	return resp.Header.Revision, resp.Succeeded
}

func readCorpus(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "corpus", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// copyDir copies a directory's regular files (a wal directory) to a new
// temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // a preallocated segment renamed while copying
		}
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		out.Close()
	}
	return dst
}

// dirHash hashes every file of a directory, names and contents.
func dirHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(e.Name()))
		h.Write(b)
	}
	return string(h.Sum(nil))
}

type wantRev struct {
	rev     int64
	value   []byte
	deleted bool
}

// TestWALRecoversDeletedObjects writes a PersistentVolumeClaim (created,
// updated twice to Terminating, deleted), an encrypted Secret (created,
// updated twice, deleted) and a failed compare-and-swap the way
// kube-apiserver does, then compacts and defragments: the live store holds
// nothing of them, and the write-ahead log, copied while etcd runs and read
// in place after it stops, gives back every revision with its value.
func TestWALRecoversDeletedObjects(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)

	pvcKey := "/registry/persistentvolumeclaims/demo/www-web-0"
	secretKey := "/registry/secrets/demo/web-secret"
	pending := readCorpus(t, "plain/persistentvolumeclaims__demo__www-web-0__pending.bin")
	terminating := readCorpus(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	secret1 := readCorpus(t, "encrypted/secrets__demo__web-secret__aescbc.bin")
	secret2 := readCorpus(t, "encrypted/secrets__demo__web-secret-enc__aescbc.bin")

	want := map[string][]wantRev{}
	write := func(key string, expect int64, value []byte, del bool) int64 {
		rev, ok := kubeWrite(t, cli, key, expect, value, del)
		if !ok {
			t.Fatalf("%s: compare on revision %d failed", key, expect)
		}
		want[key] = append(want[key], wantRev{rev: rev, value: value, deleted: del})
		return rev
	}
	r := write(pvcKey, 0, pending, false)
	s := write(secretKey, 0, secret1, false)
	r = write(pvcKey, r, terminating, false)
	// A conflicting update: the compare names a stale revision.
	if _, ok := kubeWrite(t, cli, pvcKey, r-1, pending, false); ok {
		t.Fatal("stale compare-and-swap succeeded")
	}
	s = write(secretKey, s, secret2, false)
	r = write(pvcKey, r, terminating, false)
	s = write(secretKey, s, secret1, false)
	lastPVC := write(pvcKey, r, nil, true)
	lastSecret := write(secretKey, s, nil, true)
	_ = lastSecret
	// Later traffic, so that the log records the deletions committed.
	for i := range 5 {
		c.Put(t, "/registry/configmaps/demo/later-"+string(rune('a'+i)), []byte("x"))
	}
	head, err := cli.Get(ctx, "/registry/configmaps/demo/later-e")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, head.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Defragment(ctx, c.Endpoints()[0]); err != nil {
		t.Fatal(err)
	}
	// The live store has no trace of them.
	for _, k := range []string{pvcKey, secretKey} {
		got, err := cli.Get(ctx, k)
		if err != nil || len(got.Kvs) != 0 {
			t.Fatalf("live get %s: %v, %d keys", k, err, len(got.Kvs))
		}
		if _, err := cli.Get(ctx, k, clientv3.WithRev(lastPVC-1)); err == nil {
			t.Fatalf("live get %s at %d: not compacted", k, lastPVC-1)
		}
	}
	for i := range 3 {
		c.Put(t, "/registry/configmaps/demo/after-compact-"+string(rune('a'+i)), []byte("y"))
	}

	walDir := filepath.Join(c.DataDir(0), "member", "wal")
	running := copyDir(t, walDir)
	c.StopMember(0)
	before := dirHash(t, walDir)

	enc, err := encryption.Load(ctx, filepath.Join("..", "..", "fixtures", "corpus", "encryption", "encryption-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()

	for _, tc := range []struct{ name, dir string }{
		{"copied while running", running},
		{"data dir after stop", c.DataDir(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := OpenWALOver(ctx, tc.dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cov := w.Coverage()
			if cov.FirstIndex != 1 || cov.RevisionsStop != "" || cov.LastRevision < lastSecret {
				t.Fatalf("coverage %+v", cov)
			}
			if cov.Counts["txn"] < 9 || cov.Counts["compaction"] != 1 {
				t.Errorf("counts %v", cov.Counts)
			}
			for key, revs := range want {
				var got []wantRev
				if _, err := w.History(ctx, key, func(ev store.Event) error {
					got = append(got, wantRev{rev: ev.KV.ModRevision, value: ev.KV.Value, deleted: ev.Deleted})
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if len(got) != len(revs) {
					t.Fatalf("%s: history %d revisions, want %d", key, len(got), len(revs))
				}
				for i := range revs {
					if got[i].rev != revs[i].rev || got[i].deleted != revs[i].deleted || !bytes.Equal(got[i].value, revs[i].value) {
						t.Errorf("%s revision %d: got rev %d deleted %v (%d bytes), want rev %d deleted %v (%d bytes)",
							key, i, got[i].rev, got[i].deleted, len(got[i].value), revs[i].rev, revs[i].deleted, len(revs[i].value))
					}
				}
				if _, err := w.Get(ctx, key, 0); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("get %s latest: %v, want not found", key, err)
				}
				last := revs[len(revs)-2]
				kv, err := w.Get(ctx, key, revs[len(revs)-1].rev-1)
				if err != nil || !bytes.Equal(kv.Value, last.value) || kv.ModRevision != last.rev || kv.Version != int64(len(revs)-1) {
					t.Errorf("get %s before deletion: %+v, %v", key, kv, err)
				}
			}
			// Deleted keys with their last value.
			var deleted []string
			checkScanDeleted(t, w, "/registry/")
			err = w.ScanLatest(ctx, "/registry/", true, func(kv *store.KeyValue, del bool, delRev int64) error {
				if !del {
					return nil
				}
				deleted = append(deleted, kv.Key)
				if kv.Key == pvcKey && (!bytes.Equal(kv.Value, terminating) || delRev != lastPVC) {
					t.Errorf("deleted pvc: %d bytes, deleted at %d", len(kv.Value), delRev)
				}
				if kv.Key == secretKey {
					plain, err := enc.Decrypt(ctx, schema.GroupResource{Resource: "secrets"}, secretKey, kv.Value)
					if err != nil || !bytes.Contains(plain, []byte("web-secret")) {
						t.Errorf("decrypt the deleted secret's last value: %v", err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(deleted, ",") != pvcKey+","+secretKey {
				t.Errorf("deleted keys %v", deleted)
			}
			// The failed compare-and-swap is in the log, not applied.
			var outcomes []string
			if err := w.KeyWrites(ctx, pvcKey, false, func(kw KeyWrite) error {
				outcomes = append(outcomes, kw.Entry.Outcome.String())
				if kw.Entry.Index == 0 || kw.Entry.Term == 0 {
					t.Errorf("write without index/term: %+v", kw.Entry)
				}
				if kw.Entry.Outcome != OutcomeApplied && kw.Event.KV.ModRevision != 0 {
					t.Errorf("unapplied write with a revision: %+v", kw)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(outcomes, ","); got != "applied,applied,not applied,applied,applied" {
				t.Errorf("pvc outcomes %s", got)
			}
			// Get by raft index: the entry of the last write before deletion.
			var delIndex uint64
			_ = w.KeyWrites(ctx, pvcKey, false, func(kw KeyWrite) error {
				if kw.Event.Deleted {
					delIndex = kw.Entry.Index
				}
				return nil
			})
			kv, e, err := w.GetAtIndex(ctx, pvcKey, delIndex-1)
			if err != nil || !bytes.Equal(kv.Value, terminating) || e.Index >= delIndex {
				t.Errorf("get at index %d: %v, %+v", delIndex-1, err, e)
			}
			if _, _, err := w.GetAtIndex(ctx, pvcKey, delIndex); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("get at deletion index: %v", err)
			}
		})
	}
	if dirHash(t, walDir) != before {
		t.Error("reading the log changed its directory")
	}
}

// TestWALStartsAfterSnapshot: a log that does not start at raft index 1
// establishes no revision, and says so instead of inventing one.
func TestWALStartsAfterSnapshot(t *testing.T) {
	// Tested through the replay: entries from index 5 on, a plain put and
	// a kube-apiserver transaction.
	r := newReplay(func(int32) ([]byte, error) { return nil, nil })
	r.lose(5, "the log starts at raft index 5")
	r.apply(mustEntry(t, 5, putReq("/a", "1")), walfile.Pos{})
	r.apply(mustEntry(t, 6, txnReq("/a", 3, "2")), walfile.Pos{})
	if r.entry(0).Outcome != OutcomeApplied || r.entry(0).Revision != 0 {
		t.Errorf("plain put: %+v", r.entry(0))
	}
	if r.entry(1).Outcome != OutcomeUnknown || len(r.applied) != 0 {
		t.Errorf("txn: %+v, %d applied", r.entry(1), len(r.applied))
	}
}

func mustEntry(t *testing.T, index uint64, req *pb.InternalRaftRequest) walfile.Entry {
	t.Helper()
	data, err := proto.Marshal(&raftpb.Entry{Index: proto.Uint64(index), Term: proto.Uint64(2), Type: raftpb.EntryNormal.Enum(), Data: mustMarshal(t, req)})
	if err != nil {
		t.Fatal(err)
	}
	e, err := walfile.DecodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func putReq(key, value string) *pb.InternalRaftRequest {
	return &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte(key), Value: []byte(value)}}
}

func leasePutReq(key, value string, lease int64) *pb.InternalRaftRequest {
	return &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte(key), Value: []byte(value), Lease: lease}}
}

// txnReq is kube-apiserver's update (a put) or delete (value "").
func txnReq(key string, expect int64, value string) *pb.InternalRaftRequest {
	then := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte(value)}}}
	if value == "" {
		then = &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(key)}}}
	}
	return &pb.InternalRaftRequest{Txn: &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte(key), Target: pb.Compare_MOD, Result: pb.Compare_EQUAL,
			TargetUnion: &pb.Compare_ModRevision{ModRevision: expect}}},
		Success: []*pb.RequestOp{then},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(key)}}}},
	}}
}

// TestWALReplay checks the key-state model against etcd's apply rules.
func TestWALReplay(t *testing.T) {
	type step struct {
		req     *pb.InternalRaftRequest
		outcome Outcome
		rev     int64
	}
	del := func(key, end string) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{DeleteRange: &pb.DeleteRangeRequest{Key: []byte(key), RangeEnd: []byte(end)}}
	}
	grant := func(id int64) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{ID: id, TTL: 60}}
	}
	revoke := func(id int64) *pb.InternalRaftRequest {
		return &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: id}}
	}
	keepValue := &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("/a"), IgnoreValue: true}}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"create update delete", []step{
			{txnReq("/a", 0, "1"), OutcomeApplied, 2},
			{txnReq("/a", 2, "2"), OutcomeApplied, 3},
			{txnReq("/a", 2, "3"), OutcomeNotApplied, 0},
			{txnReq("/a", 3, ""), OutcomeApplied, 4},
			{txnReq("/a", 3, ""), OutcomeNotApplied, 0},
		}},
		{"create conflicts with an existing key", []step{
			{putReq("/a", "1"), OutcomeApplied, 2},
			{txnReq("/a", 0, "2"), OutcomeNotApplied, 0},
		}},
		{"delete of nothing takes no revision", []step{
			{del("/a", ""), OutcomeApplied, 0},
			{putReq("/a", "1"), OutcomeApplied, 2},
			{del("/", "0"), OutcomeApplied, 3},
		}},
		{"leases", []step{
			{leasePutReq("/a", "1", 7), OutcomeNotApplied, 0},
			{grant(7), OutcomeApplied, 0},
			{leasePutReq("/a", "1", 7), OutcomeApplied, 2},
			{leasePutReq("/b", "1", 7), OutcomeApplied, 3},
			{revoke(7), OutcomeApplied, 4},
			{revoke(7), OutcomeNotApplied, 0},
			{txnReq("/a", 0, "2"), OutcomeApplied, 5},
		}},
		{"put keeping the value needs the key", []step{
			{keepValue, OutcomeNotApplied, 0},
			{putReq("/a", "1"), OutcomeApplied, 2},
			{keepValue, OutcomeApplied, 3},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReplay(func(int32) ([]byte, error) { return nil, nil })
			for i, s := range tc.steps {
				r.apply(mustEntry(t, uint64(i+1), s.req), walfile.Pos{})
				got := r.entry(int32(len(r.entries) - 1))
				if got.Outcome != s.outcome || got.Revision != s.rev {
					t.Errorf("step %d: %v revision %d (%s), want %v revision %d", i, got.Outcome, got.Revision, got.Reason, s.outcome, s.rev)
				}
			}
			if !r.known {
				t.Errorf("revisions lost: %s", r.stopWhy)
			}
		})
	}
}

// TestWALReplayStopsOnUnmodelledRules: an alarm or authentication changes
// which writes etcd refuses; the replay stops deriving revisions there
// instead of guessing, and the writes after it are unknown.
func TestWALReplayStopsOnUnmodelledRules(t *testing.T) {
	for _, req := range []*pb.InternalRaftRequest{
		{Alarm: &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, Alarm: pb.AlarmType_NOSPACE}},
		{AuthEnable: &pb.AuthEnableRequest{}},
	} {
		r := newReplay(func(int32) ([]byte, error) { return nil, nil })
		r.apply(mustEntry(t, 1, putReq("/a", "1")), walfile.Pos{})
		r.apply(mustEntry(t, 2, req), walfile.Pos{})
		r.apply(mustEntry(t, 3, txnReq("/a", 2, "2")), walfile.Pos{})
		if r.known || r.stopAt != 2 || r.entry(1).Outcome != OutcomeSkipped {
			t.Errorf("%v: known %v, stop at %d (%s)", req, r.known, r.stopAt, r.stopWhy)
		}
		if e := r.entry(2); e.Outcome != OutcomeUnknown || e.Revision != 0 || len(r.applied) != 1 {
			t.Errorf("%v: write after it: %+v", req, e)
		}
	}
}

// TestWALWithoutItsStart: a log whose first segments are gone (purged
// after a raft snapshot) establishes no revision; the writes it holds are
// still listed, with their values, index and term, as unknown.
func TestWALWithoutItsStart(t *testing.T) {
	old := etcdwal.SegmentSizeBytes
	etcdwal.SegmentSizeBytes = 64 << 10
	t.Cleanup(func() { etcdwal.SegmentSizeBytes = old })
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{InProcess: true})
	cli := c.Client(t)
	key := "/registry/persistentvolumeclaims/demo/www-web-0"
	filler := bytes.Repeat([]byte("f"), 2048)
	var rev int64
	for range 100 {
		rev, _ = kubeWrite(t, cli, "/registry/configmaps/demo/filler", rev, filler, false)
	}
	terminating := readCorpus(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	r, _ := kubeWrite(t, cli, key, 0, terminating, false)
	kubeWrite(t, cli, key, r, nil, true)
	c.Put(t, "/registry/configmaps/demo/later", []byte("x"))
	c.StopMember(0)

	dir := copyDir(t, filepath.Join(c.DataDir(0), "member", "wal"))
	names, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
	if len(names) < 3 {
		t.Fatalf("%d segments", len(names))
	}
	if err := os.Remove(names[0]); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWALOver(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cov := w.Coverage()
	if cov.FirstIndex <= 1 || cov.RevisionsStop == "" || cov.LastRevision != 0 {
		t.Fatalf("coverage %+v", cov)
	}
	if _, err := w.Get(ctx, key, 0); !errors.Is(err, ErrUndetermined) {
		t.Errorf("get: %v, want undetermined", err)
	}
	if _, _, err := w.GetAtIndex(ctx, key, cov.LastIndex); !errors.Is(err, ErrUndetermined) {
		t.Errorf("get at index: %v, want undetermined", err)
	}
	var got []KeyWrite
	if err := w.KeyWrites(ctx, key, true, func(kw KeyWrite) error { got = append(got, kw); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !bytes.Equal(got[0].Event.KV.Value, terminating) || !got[1].Event.Deleted {
		t.Fatalf("writes %+v", got)
	}
	for _, kw := range got {
		if kw.Entry.Outcome != OutcomeUnknown || kw.Event.KV.ModRevision != 0 || kw.Entry.Index == 0 || kw.Entry.Reason == "" {
			t.Errorf("write %+v", kw.Entry)
		}
	}
}
