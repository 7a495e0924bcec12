package wal

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestWALRecreatedIncarnations writes an object as kube-apiserver does
// (created, updated, deleted, created again with a compare on mod
// revision 0), then compacts. Read from the log alone and from the log
// purged to start after the first create (another key's write first, or
// the update first), over the member's db: the key
// is live (its second incarnation), and the first is a past incarnation,
// ended by the deletion and followed by the second.
func TestWALRecreatedIncarnations(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{InProcess: true})
	cli := c.Client(t)
	const key = "/registry/configmaps/demo/twice"
	obj := func(uid, mode string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"twice","namespace":"demo","uid":"` + uid + `"},"data":{"mode":"` + mode + `"}}`)
	}
	const uid1, uid2 = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	write := func(expect int64, value []byte, del bool) int64 {
		rev, ok := kubeWrite(t, cli, key, expect, value, del)
		if !ok {
			t.Fatalf("compare on revision %d failed", expect)
		}
		return rev
	}
	created := write(0, obj(uid1, "first"), false)
	st, err := cli.Status(ctx, c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	afterCreate := st.RaftIndex + 1
	// Another object's write, kept: a member's log holds others' writes
	// before the ones followed, and the db their values.
	if _, ok := kubeWrite(t, cli, "/registry/secrets/demo/kept", 0, []byte(`{"kind":"Secret"}`), false); !ok {
		t.Fatal("create the kept key")
	}
	if st, err = cli.Status(ctx, c.Endpoints()[0]); err != nil {
		t.Fatal(err)
	}
	atUpdate := st.RaftIndex + 1
	updated := write(created, obj(uid1, "second"), false)
	deleted := write(updated, nil, true)
	again := write(0, obj(uid2, "third"), false)
	if _, err := cli.Compact(ctx, again, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	c.StopMember(0)
	walDir := filepath.Join(c.DataDir(0), "member", "wal")
	db, err := store.OpenBolt(filepath.Join(c.DataDir(0), "member", "snap", "db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	alone, err := OpenWALOver(ctx, walDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	over, err := OpenWALOver(ctx, cutCopy(t, walDir, afterCreate), db)
	if err != nil {
		t.Fatal(err)
	}
	first, err := OpenWALOver(ctx, cutCopy(t, walDir, atUpdate), db)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		w    *WAL
		// exact: the log establishes the first incarnation's last state:
		// the log alone does, and a purged one over the db where a write
		// the db holds comes before the update; not one that starts with
		// the update, whose compare names the key's state before the log
		// (it may have been stale, and the revision before the log one
		// higher: see challenge).
		exact bool
	}{{"log alone", alone, true}, {"purged log over the db", over, true}, {"purged log starting with the update, over the db", first, false}} {
		t.Run(tc.name, func(t *testing.T) {
			var latest []string
			checkScanDeleted(t, tc.w, "/registry/configmaps/")
			err := tc.w.ScanLatest(ctx, "/registry/configmaps/", true, func(kv *store.KeyValue, del bool, delRev int64) error {
				if kv.Key == key && (del || kv.ModRevision != again || !bytes.Contains(kv.Value, []byte(uid2))) {
					t.Errorf("scan latest: deleted %v (at %d), revision %d, value %s; want live at revision %d, uid %s", del, delRev, kv.ModRevision, kv.Value, again, uid2)
				}
				latest = append(latest, kv.Key)
				return nil
			})
			if err != nil || len(latest) != 1 {
				t.Fatalf("scan latest: %v, keys %v; want the one key", err, latest)
			}
			var past []PastIncarnation
			if err := tc.w.PastIncarnations(ctx, "/registry/configmaps/", func(p PastIncarnation) error {
				past = append(past, p)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !tc.exact && len(past) == 0 {
				// The update and the deletion may both have been stale
				// (the first incarnation deleted before the log, at the
				// revisions they name): the deletion is not established,
				// and said to be.
				if u := tc.w.Unestablished("/registry/configmaps/"); u.Hiding == 0 {
					t.Errorf("no past incarnation, and unestablished %+v hides none", u)
				}
				return
			}
			if len(past) != 1 {
				t.Fatalf("past incarnations: %+v, want one", past)
			}
			p := past[0]
			if p.KV.Key != key || p.DeleteRevision != deleted || p.RecreateRevision != again && (tc.w == alone || p.RecreateRevision != -1) || p.DeleteIndex == 0 {
				t.Errorf("past incarnation %+v: want key %s deleted at %d, created again at %d", p, key, deleted, again)
			}
			switch {
			case p.KV.ModRevision != 0 && (p.KV.ModRevision != updated || !bytes.Contains(p.KV.Value, []byte(`"second"`))):
				t.Errorf("past incarnation's state: revision %d, value %s; want revision %d, mode second", p.KV.ModRevision, p.KV.Value, updated)
			case tc.exact && p.KV.ModRevision == 0:
				t.Errorf("past incarnation's state not read: %+v", p)
			}
			if u := tc.w.Unestablished("/registry/configmaps/"); u.Hiding != 0 {
				t.Errorf("unestablished %+v: the db establishes the key's state, nothing hides a deletion", u)
			}
		})
	}
}
