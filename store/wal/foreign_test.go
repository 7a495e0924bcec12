package wal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
)

// memberDB copies a stopped member's db and rewrites its members bucket so
// that it lists member id instead of its own: the db of another cluster
// built on the same node with the same name, peer URL and cluster token,
// whose member id is the same.
func memberDB(t *testing.T, src string, id uint64) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(dst, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		mb := tx.Bucket([]byte("members"))
		if mb == nil {
			return fmt.Errorf("%s: no members bucket", src)
		}
		var k, v []byte
		if err := mb.ForEach(func(key, val []byte) error {
			k, v = append([]byte(nil), key...), append([]byte(nil), val...)
			return nil
		}); err != nil {
			return err
		}
		if err := mb.Delete(k); err != nil {
			return err
		}
		return mb.Put([]byte(strconv.FormatUint(id, 16)), v)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestWALOverForeignDB replays a member's log over the db of another
// cluster whose member id is the same: the keys' histories disagree, and
// no answer may rest on that db.
func TestWALOverForeignDB(t *testing.T) {
	ctx := context.Background()
	pvcKey := "/registry/persistentvolumeclaims/demo/www-web-0"
	pending := readCorpus(t, "plain/persistentvolumeclaims__demo__www-web-0__pending.bin")
	terminating := readCorpus(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")

	// Cluster B, the other one: the same claim, created later and
	// written differently.
	b := etcdtest.Start(t, etcdtest.Options{InProcess: true})
	bc := b.Client(t)
	for i := range 5 {
		if _, err := bc.Put(ctx, fmt.Sprintf("/registry/configmaps/other/cm-%d", i), "b"); err != nil {
			t.Fatal(err)
		}
	}
	kubeWrite(t, bc, pvcKey, 0, terminating, false)
	b.StopMember(0)

	// Cluster A, whose log it is.
	a := etcdtest.Start(t, etcdtest.Options{InProcess: true})
	ac := a.Client(t)
	r, _ := kubeWrite(t, ac, pvcKey, 0, pending, false)
	for i := range 20 {
		if _, err := ac.Put(ctx, fmt.Sprintf("/registry/configmaps/demo/cm-%d", i), "a"); err != nil {
			t.Fatal(err)
		}
	}
	r, _ = kubeWrite(t, ac, pvcKey, r, terminating, false)
	kubeWrite(t, ac, pvcKey, r, nil, true)
	resp, err := ac.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Members[0].ID
	a.StopMember(0)

	foreign, err := store.OpenBolt(memberDB(t, filepath.Join(b.DataDir(0), "member", "snap", "db"), id), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	// The log starts at raft index 1 (solved exactly), and purged after
	// the claim's creation (worked out back from the db): both refused.
	walDir := filepath.Join(a.DataDir(0), "member", "wal")
	for _, dir := range []string{walDir, cutCopy(t, walDir, foreign.Meta().ConsistentIndex-3)} {
		w, err := OpenWALOver(ctx, dir, foreign)
		if !errors.Is(err, ErrOtherCluster) {
			var cov WALCoverage
			if w != nil {
				cov = w.Coverage()
			}
			t.Fatalf("the log over another cluster's db with the member's id: %v, want ErrOtherCluster; coverage: %+v", err, cov)
		}
		t.Log(err)
	}
}
