package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/etcdpvc/etcdpvc/store"
)

const snapCorpus = "../fixtures/corpus/etcd-snapshot.db"

// snapFileSum returns the sha256 of a file's contents and its mtime.
func snapFileSum(t *testing.T, path string) (string, time.Time) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), fi.ModTime()
}

// snapKeepsInput fails the test if path changes before the test ends.
func snapKeepsInput(t *testing.T, path string) {
	t.Helper()
	sum, mtime := snapFileSum(t, path)
	t.Cleanup(func() {
		if s, m := snapFileSum(t, path); s != sum || !m.Equal(mtime) {
			t.Errorf("%s was modified: sha256 %s → %s, mtime %v → %v", path, sum, s, mtime, m)
		}
	})
}

// snapCopyOf copies the corpus snapshot to a temp dir (so tests may lock it).
func snapCopyOf(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "in.db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSnapshotCopyEdit(t *testing.T) {
	ctx := context.Background()
	in := snapCorpus
	snapKeepsInput(t, in)
	out := filepath.Join(t.TempDir(), "out.db")

	src, err := store.OpenBolt(in, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srcMeta := src.Meta()
	src.Close()

	c, err := store.OpenSnapshotCopy(in, out, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const key = "/registry/persistentvolumeclaims/demo/www-web-0"
	before, err := c.Get(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	newValue := append(bytes.Clone(before.Value), 0) // any bytes: the store does not interpret values

	// A stale expectation writes nothing.
	if _, err := c.CompareAndSwap(ctx, key, before.ModRevision-1, newValue, before.Lease); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CAS with a stale revision: %v, want a conflict", err)
	}
	// A create of an existing key is a conflict too.
	var ce *store.ConflictError
	if _, err := c.CompareAndSwap(ctx, key, 0, newValue, 0); !errors.As(err, &ce) || ce.Current != before.ModRevision {
		t.Fatalf("create of an existing key: %v, want a conflict at %d", err, before.ModRevision)
	}

	rev, err := c.CompareAndSwap(ctx, key, before.ModRevision, newValue, before.Lease)
	if err != nil {
		t.Fatal(err)
	}
	if want := srcMeta.Revision + 1; rev != want {
		t.Errorf("new revision %d, want %d (current revision %d + 1)", rev, want, srcMeta.Revision)
	}
	after, err := c.Get(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := store.KeyValue{Key: key, Value: newValue, CreateRevision: before.CreateRevision, ModRevision: rev, Version: before.Version + 1, Lease: before.Lease}
	if after.Key != want.Key || !bytes.Equal(after.Value, want.Value) || after.CreateRevision != want.CreateRevision ||
		after.ModRevision != want.ModRevision || after.Version != want.Version || after.Lease != want.Lease {
		t.Errorf("after the edit: %+v, want %+v", *after, want)
	}
	// The old revision is still there.
	old, err := c.Get(ctx, key, before.ModRevision)
	if err != nil || !bytes.Equal(old.Value, before.Value) {
		t.Errorf("old revision: %v, %v", old, err)
	}

	// A create: new incarnation, version 1.
	const newKey = "/registry/configmaps/demo/recovered"
	rev2, err := c.CompareAndSwap(ctx, newKey, 0, []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if rev2 != rev+1 {
		t.Errorf("second write at %d, want %d", rev2, rev+1)
	}
	kv, err := c.Get(ctx, newKey, 0)
	if err != nil || kv.CreateRevision != rev2 || kv.Version != 1 || kv.ModRevision != rev2 {
		t.Errorf("created key: %+v, %v", kv, err)
	}
	if c.Writes() != 2 {
		t.Errorf("Writes() = %d", c.Writes())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c.Written().SHA256 == "" {
		t.Error("no trailer after Close")
	}

	// The result is a snapshot whose trailer verifies, with the edits.
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size()%512 != 32 {
		t.Errorf("output size %d is not a snapshot's (32 over a multiple of 512)", fi.Size())
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("output mode %o, want 600", fi.Mode().Perm())
	}
	r, err := store.OpenBolt(out, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Snapshot().Verified || r.Snapshot().SHA256 != c.Written().SHA256 {
		t.Errorf("output trailer: %+v, want verified %s", r.Snapshot(), c.Written().SHA256)
	}
	// The file's own sha256, as Close computed it and as the read does.
	whole, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(whole); hex.EncodeToString(sum[:]) != c.Written().FileSHA256 || r.Snapshot().FileSHA256 != c.Written().FileSHA256 {
		t.Errorf("file sha256 %x; Close said %s, the read %s", sum, c.Written().FileSHA256, r.Snapshot().FileSHA256)
	}
	if m := r.Meta(); m.Revision != rev2 {
		t.Errorf("output revision %d, want %d", m.Revision, rev2)
	}
	got, err := r.Get(ctx, key, 0)
	if err != nil || !bytes.Equal(got.Value, newValue) || got.ModRevision != rev {
		t.Errorf("output %s: %+v, %v", key, got, err)
	}
	var n int
	if _, err := r.History(ctx, key, func(store.Event) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	srcN := 0
	src, err = store.OpenBolt(in, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.History(ctx, key, func(store.Event) error { srcN++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != srcN+1 {
		t.Errorf("history in the output has %d revisions, want the input's %d + 1", n, srcN)
	}
	if _, err := src.Get(ctx, newKey, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the input has the created key: %v", err)
	}
}

func TestSnapshotCopyCreateThenEdit(t *testing.T) {
	// A create starts an incarnation at version 1; an edit of it keeps its
	// create revision. (Re-creating a deleted key: TestSnapshotCopyRestore.)
	ctx := context.Background()
	in := snapCopyOf(t, snapCorpus)
	out := filepath.Join(t.TempDir(), "out.db")
	c, err := store.OpenSnapshotCopy(in, out, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const key = "/registry/configmaps/demo/snap-test"
	if _, err := c.CompareAndSwap(ctx, key, 0, []byte("a"), 0); err != nil {
		t.Fatal(err)
	}
	kv, _ := c.Get(ctx, key, 0)
	if _, err := c.CompareAndSwap(ctx, key, 0, []byte("b"), 0); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second create: %v, want a conflict", err)
	}
	rev, err := c.CompareAndSwap(ctx, key, kv.ModRevision, []byte("b"), 0)
	if err != nil {
		t.Fatal(err)
	}
	kv2, _ := c.Get(ctx, key, 0)
	if kv2.Version != 2 || kv2.CreateRevision != kv.ModRevision || kv2.ModRevision != rev {
		t.Errorf("edit after create: %+v", kv2)
	}
}

func TestSnapshotCopyNoWriteRemovesOutput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.db")
	c, err := store.OpenSnapshotCopy(snapCorpus, out, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("copy not made: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an unedited copy was left behind: %v", err)
	}
}

func TestSnapshotCopyLeaseMustExist(t *testing.T) {
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "out.db")
	c, err := store.OpenSnapshotCopy(snapCorpus, out, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CompareAndSwap(ctx, "/registry/configmaps/demo/x", 0, []byte("v"), 0x7fffabcd); !errors.Is(err, store.ErrLeaseNotFound) {
		t.Errorf("put with an unknown lease: %v, want ErrLeaseNotFound", err)
	}
	if c.Writes() != 0 {
		t.Errorf("a failed write counted")
	}
}

func TestSnapshotCopyRefusals(t *testing.T) {
	dir := t.TempDir()
	in := snapCopyOf(t, snapCorpus)
	snapKeepsInput(t, in)

	t.Run("output exists", func(t *testing.T) {
		out := filepath.Join(dir, "exists.db")
		if err := os.WriteFile(out, []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := store.OpenSnapshotCopy(in, out, store.BoltOptions{})
		if !errors.Is(err, store.ErrOutputExists) {
			t.Fatalf("err = %v, want ErrOutputExists", err)
		}
		if b, _ := os.ReadFile(out); string(b) != "keep me" {
			t.Errorf("existing output overwritten")
		}
	})
	t.Run("output is the input", func(t *testing.T) {
		if _, err := store.OpenSnapshotCopy(in, in, store.BoltOptions{}); !errors.Is(err, store.ErrOutputExists) {
			t.Fatalf("err = %v, want ErrOutputExists", err)
		}
	})
	t.Run("output in a member dir", func(t *testing.T) {
		for _, d := range []string{"data", "data2"} {
			for _, sub := range []string{"wal", "snap"} {
				if err := os.MkdirAll(filepath.Join(dir, d, "member", sub), 0o700); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, p := range []string{
			filepath.Join(dir, "data", "member", "snap", "db"),
			filepath.Join(dir, "data2", "member", "new.db"),
		} {
			if _, err := store.OpenSnapshotCopy(in, p, store.BoltOptions{}); !errors.Is(err, store.ErrMemberDir) {
				t.Errorf("%s: err = %v, want ErrMemberDir", p, err)
			}
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s written", p)
			}
		}
	})
	t.Run("input locked by a running etcd", func(t *testing.T) {
		locked := snapCopyOf(t, snapCorpus)
		db, err := bolt.Open(locked, 0o600, &bolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		out := filepath.Join(dir, "locked-out.db")
		start := time.Now()
		_, err = store.OpenSnapshotCopy(locked, out, store.BoltOptions{LockTimeout: 200 * time.Millisecond})
		if !errors.Is(err, store.ErrLocked) {
			t.Fatalf("err = %v, want ErrLocked", err)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("took %v to fail", d)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("output written from a locked db")
		}
	})
	t.Run("damaged snapshot", func(t *testing.T) {
		b, _ := os.ReadFile(in)
		b[len(b)-1] ^= 0xff
		bad := filepath.Join(dir, "bad.db")
		if err := os.WriteFile(bad, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "bad-out.db")
		if _, err := store.OpenSnapshotCopy(bad, out, store.BoltOptions{}); !errors.Is(err, store.ErrHashMismatch) {
			t.Fatalf("err = %v, want ErrHashMismatch", err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("output written from a damaged snapshot")
		}
	})
}

func TestSnapshotCopyFromMemberDB(t *testing.T) {
	// A db without a trailer (a stopped member's) gets one: the output is
	// always a snapshot file.
	ctx := context.Background()
	b, err := os.ReadFile(snapCorpus)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(in, b[:len(b)-32], 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.db")
	c, err := store.OpenSnapshotCopy(in, out, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompareAndSwap(ctx, "/registry/configmaps/demo/new", 0, []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := store.OpenBolt(out, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Snapshot().Verified {
		t.Errorf("output of a member db has no verified trailer: %+v", r.Snapshot())
	}
	if !strings.HasPrefix(r.Snapshot().SHA256, c.Written().SHA256[:8]) {
		t.Errorf("trailer %s, Close said %s", r.Snapshot().SHA256, c.Written().SHA256)
	}
}

// TestSnapshotCopyPartial: a copy marked as holding only part of a change
// is closed without the sha256 trailer, so that it is not taken for a
// finished snapshot; a finished one has it.
func TestSnapshotCopyPartial(t *testing.T) {
	ctx := context.Background()
	for _, partial := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "out.db")
		c, err := store.OpenSnapshotCopy(snapCorpus, out, store.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CompareAndSwap(ctx, "/registry/configmaps/demo/partial", 0, []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
		if partial {
			c.MarkPartial()
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := store.OpenBolt(out, store.BoltOptions{})
		if err != nil {
			t.Fatalf("partial %v: the copy does not open: %v", partial, err)
		}
		snap := b.Snapshot()
		b.Close()
		if snap.IsSnapshot == partial {
			t.Errorf("partial %v: copy has a verified trailer %v", partial, snap.IsSnapshot)
		}
	}
}
