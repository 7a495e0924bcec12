package surgery

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/store"
)

// undeleteOnce undeletes the PVC at pvcKey through the write path and
// returns the backup.
func undeleteOnce(t *testing.T, c Codec, s *store.Etcd, dir string) *Backup {
	t.Helper()
	ctx := testCtx(t)
	p, err := c.MakePlan(ctx, s, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadBackup(res.BackupPath)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestore undoes an undelete byte for byte, refuses to overwrite a
// later change unless forced, and recreates a key deleted since.
func TestRestore(t *testing.T) {
	ctx := testCtx(t)
	cl, s := startEtcd(t)
	cli := cl.Client(t)
	orig := corpus(t, pvcFile)

	t.Run("after our write", func(t *testing.T) {
		dir := t.TempDir()
		create(t, s, pvcKey, orig)
		b := undeleteOnce(t, Codec{}, s, dir)
		p, err := Codec{}.PlanRestore(ctx, s, b, false)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.Diff, "+  deletionTimestamp:") {
			t.Errorf("diff:\n%s", p.Diff)
		}
		if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir}); err != nil {
			t.Fatal(err)
		}
		if got := get(t, s, pvcKey).Value; !bytes.Equal(got, orig) {
			t.Fatal("restored bytes differ from the original")
		}
		// The restore made its own backup; restoring again is a no-op.
		if n := len(backups(t, dir)); n != 2 {
			t.Errorf("%d backups, want 2", n)
		}
		again, err := Codec{}.PlanRestore(ctx, s, b, false)
		if err != nil || !again.NoOp {
			t.Fatalf("second restore: %v, NoOp %v", err, again != nil && again.NoOp)
		}
		if _, err := cli.Delete(ctx, pvcKey); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("after a third-party change", func(t *testing.T) {
		dir := t.TempDir()
		create(t, s, pvcKey, orig)
		b := undeleteOnce(t, Codec{}, s, dir)
		// Someone (a controller) labels the object after our write.
		kv := get(t, s, pvcKey)
		changed := mustEditMeta(t, kv.Value, codec.MetaEdit{SetLabels: map[string]string{"touched": "yes"}})
		if _, err := s.CompareAndSwap(ctx, pvcKey, kv.ModRevision, changed, 0); err != nil {
			t.Fatal(err)
		}
		_, err := Codec{}.PlanRestore(ctx, s, b, false)
		var ce *ChangedError
		if !errors.Is(err, ErrChangedSinceBackup) || !errors.As(err, &ce) {
			t.Fatalf("PlanRestore = %v, want ErrChangedSinceBackup", err)
		}
		if !strings.Contains(ce.Diff, "-    touched: \"yes\"") {
			t.Errorf("diff does not show the change:\n%s", ce.Diff)
		}
		if got := get(t, s, pvcKey).Value; !bytes.Equal(got, changed) {
			t.Fatal("refused restore wrote")
		}
		p, err := Codec{}.PlanRestore(ctx, s, b, true)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(p.Warnings, "\n"), "discards that change") {
			t.Errorf("warnings: %q", p.Warnings)
		}
		if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir}); err != nil {
			t.Fatal(err)
		}
		if got := get(t, s, pvcKey).Value; !bytes.Equal(got, orig) {
			t.Fatal("forced restore: bytes differ from the original")
		}
		if _, err := cli.Delete(ctx, pvcKey); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("after a delete", func(t *testing.T) {
		dir := t.TempDir()
		create(t, s, pvcKey, orig)
		b := undeleteOnce(t, Codec{}, s, dir)
		if _, err := cli.Delete(ctx, pvcKey); err != nil {
			t.Fatal(err)
		}
		p, err := Codec{}.PlanRestore(ctx, s, b, false)
		if err != nil {
			t.Fatal(err)
		}
		if p.Expect != 0 || p.Before != nil {
			t.Fatalf("plan: Expect %d, Before %v; want a create", p.Expect, p.Before)
		}
		res, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		kv := get(t, s, pvcKey)
		if !bytes.Equal(kv.Value, orig) || kv.Version != 1 {
			t.Fatalf("recreated key: version %d, bytes equal %v", kv.Version, bytes.Equal(kv.Value, orig))
		}
		nb, err := ReadBackup(res.BackupPath)
		if err != nil || !nb.Absent {
			t.Fatalf("backup of a create: %v %+v", err, nb)
		}
		// Restoring the backup of that create deletes the key again.
		dp, err := (Codec{}).PlanRestore(ctx, s, nb, false)
		if err != nil {
			t.Fatal(err)
		}
		if !dp.Delete || dp.Expect != kv.ModRevision {
			t.Fatalf("restore of a create: Delete %v Expect %d, want a delete at %d", dp.Delete, dp.Expect, kv.ModRevision)
		}
	})
}

// TestReadBackupChecks rejects a backup whose value does not match its
// checksum.
func TestReadBackupChecks(t *testing.T) {
	_, s := startEtcd(t)
	create(t, s, pvcKey, corpus(t, pvcFile))
	dir := t.TempDir()
	b := undeleteOnce(t, Codec{}, s, dir)
	data, err := os.ReadFile(b.Path)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(data, []byte(`"sha256": "`), []byte(`"sha256": "00`), 1)
	path := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBackup(path); !errors.Is(err, ErrBadBackup) {
		t.Fatalf("ReadBackup(corrupt) = %v, want ErrBadBackup", err)
	}
}

// TestEncrypted undeletes a PVC encrypted at rest with secretbox: the new
// value is encrypted with the first provider under the same key, and a
// restore puts the original ciphertext back byte for byte.
func TestEncrypted(t *testing.T) {
	ctx := testCtx(t)
	enc, err := encryption.Load(ctx, filepath.Join("..", "fixtures", "corpus", "encryption", "encryption-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(enc.Close)
	c := Codec{Enc: enc}
	_, s := startEtcd(t)
	orig, err := os.ReadFile(filepath.Join("..", "fixtures", "corpus", "encrypted", "persistentvolumeclaims__demo__www-web-0__terminating__secretbox.bin"))
	if err != nil {
		t.Fatal(err)
	}
	create(t, s, pvcKey, orig)

	if _, err := (Codec{}).MakePlan(ctx, s, pvcKey, Undelete{}); !errors.Is(err, codec.ErrEncrypted) {
		t.Fatalf("without an encryption config: %v, want ErrEncrypted", err)
	}
	dir := t.TempDir()
	b := undeleteOnce(t, c, s, dir)
	if !bytes.Equal(b.Value, orig) {
		t.Fatal("backup does not hold the original ciphertext")
	}
	kv := get(t, s, pvcKey)
	if !bytes.HasPrefix(kv.Value, []byte("k8s:enc:secretbox:v1:key1:")) {
		t.Fatalf("written value is not encrypted: %q", kv.Value[:32])
	}
	cur, err := c.Load(ctx, s, pvcKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Obj.Meta.DeletionTimestamp != nil || cur.Encrypted == nil || cur.Encrypted.Provider != "secretbox" {
		t.Fatalf("after undelete: %+v", cur)
	}
	p, err := c.PlanRestore(ctx, s, b, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, pvcKey).Value; !bytes.Equal(got, orig) {
		t.Fatal("restored ciphertext differs from the original")
	}
}

// TestSecretRedacted checks that a Secret's values stay out of diffs
// unless asked for.
func TestSecretRedacted(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	create(t, s, secKey, corpus(t, secFile))
	patch := Patch{PatchMerge, []byte(`{"data":{"password":"bmV3"}}`)}
	for _, tc := range []struct {
		codec   Codec
		want    []string
		notWant []string
	}{
		{Codec{}, []string{"-  password: <redacted>", "+  password: '<redacted: changed>'", "  username: <redacted>"}, []string{"czNjcjN0", "bmV3"}},
		{Codec{ShowSecrets: true}, []string{"-  password: czNjcjN0LXBsYWlu", "+  password: bmV3"}, nil},
	} {
		p, err := tc.codec.MakePlan(ctx, s, secKey, patch)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(p.Diff, w) {
				t.Errorf("ShowSecrets %v: diff lacks %q:\n%s", tc.codec.ShowSecrets, w, p.Diff)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(p.Diff, w) {
				t.Errorf("ShowSecrets %v: diff shows %q:\n%s", tc.codec.ShowSecrets, w, p.Diff)
			}
		}
	}
}

// TestRecover recreates a deleted PVC from its history: deletion cleared,
// uid kept, create-only.
func TestRecover(t *testing.T) {
	ctx := testCtx(t)
	cl, s := startEtcd(t)
	orig := corpus(t, pvcFile)
	rev := create(t, s, pvcKey, orig)
	if _, err := cl.Client(t).Delete(ctx, pvcKey); err != nil {
		t.Fatal(err)
	}
	old, err := s.Get(ctx, pvcKey, rev)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Codec{}.PlanRecover(ctx, s, *old)
	if err != nil {
		t.Fatal(err)
	}
	if p.Expect != 0 || p.Lease != 0 || !strings.Contains(p.Diff, "+++ "+pvcKey+" (recovered from revision") {
		t.Fatalf("plan: expect %d lease %d diff:\n%s", p.Expect, p.Lease, p.Diff)
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "keeps its uid 82fa94a9-3913-4cd1-b13b-a7f7b1cbb3d2") {
		t.Errorf("warnings: %q", p.Warnings)
	}
	dir := t.TempDir()
	if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir}); err != nil {
		t.Fatal(err)
	}
	obj := decode(t, get(t, s, pvcKey).Value)
	want := decode(t, orig)
	if obj.Meta.UID != want.Meta.UID || obj.Meta.DeletionTimestamp != nil || len(obj.Meta.Finalizers) != 1 {
		t.Fatalf("recovered metadata: %+v", obj.Meta)
	}
	if _, err := (Codec{}).PlanRecover(ctx, s, *old); !errors.Is(err, ErrExists) {
		t.Fatalf("recover over an existing key: %v, want ErrExists", err)
	}
	// A create planned while the key was absent conflicts if it appears.
	if _, err := cl.Client(t).Delete(ctx, pvcKey); err != nil {
		t.Fatal(err)
	}
	p, err = Codec{}.PlanRecover(ctx, s, *old)
	if err != nil {
		t.Fatal(err)
	}
	create(t, s, pvcKey, orig)
	if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("create over a key that appeared: %v, want ErrConflict", err)
	}
}
