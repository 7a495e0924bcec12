package surgery

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// undeleteOnce undeletes the PVC at pvcKey through the write path and
// returns the backup.
func undeleteOnce(t *testing.T, c Planner, s *store.Etcd, dir string) *Backup {
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
		b := undeleteOnce(t, Planner{}, s, dir)
		p, err := Planner{}.PlanRestore(ctx, s, b, false)
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
		again, err := Planner{}.PlanRestore(ctx, s, b, false)
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
		b := undeleteOnce(t, Planner{}, s, dir)
		// Someone (a controller) labels the object after our write.
		kv := get(t, s, pvcKey)
		changed := mustEditMeta(t, kv.Value, codec.MetaEdit{SetLabels: map[string]string{"touched": "yes"}})
		if _, err := s.CompareAndSwap(ctx, pvcKey, kv.ModRevision, changed, 0); err != nil {
			t.Fatal(err)
		}
		_, err := Planner{}.PlanRestore(ctx, s, b, false)
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
		p, err := Planner{}.PlanRestore(ctx, s, b, true)
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
		b := undeleteOnce(t, Planner{}, s, dir)
		if _, err := cli.Delete(ctx, pvcKey); err != nil {
			t.Fatal(err)
		}
		p, err := Planner{}.PlanRestore(ctx, s, b, false)
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
		dp, err := (Planner{}).PlanRestore(ctx, s, nb, false)
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
	b := undeleteOnce(t, Planner{}, s, dir)
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
	c := Planner{Codec: kubevalue.Codec{Enc: enc}}
	_, s := startEtcd(t)
	orig, err := os.ReadFile(filepath.Join("..", "fixtures", "corpus", "encrypted", "persistentvolumeclaims__demo__www-web-0__terminating__secretbox.bin"))
	if err != nil {
		t.Fatal(err)
	}
	create(t, s, pvcKey, orig)

	if _, err := (Planner{}).MakePlan(ctx, s, pvcKey, Undelete{}); !errors.Is(err, codec.ErrEncrypted) {
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
		codec   Planner
		want    []string
		notWant []string
	}{
		{Planner{}, []string{"-  password: '<redacted: 12 bytes>'", "+  password: '<redacted: 3 bytes, changed>'", "   username: '<redacted: 5 bytes>'"}, []string{"czNjcjN0", "bmV3"}},
		{Planner{Codec: kubevalue.Codec{ShowSecrets: true}}, []string{"-  password: czNjcjN0LXBsYWlu", "+  password: bmV3"}, nil},
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
		// The description lands in the backup and the audit log: never a value.
		if want := "merge patch of data.password (values not shown: Secret)"; p.Description != want {
			t.Errorf("ShowSecrets %v: description %q, want %q", tc.codec.ShowSecrets, p.Description, want)
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
	p, err := Planner{}.PlanRecover(ctx, s, *old)
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
	// Recovered already: the key holds what the recover would create,
	// nothing to do; anything else there is never replaced.
	if p, err := (Planner{}).PlanRecover(ctx, s, *old); err != nil || !p.NoOp || !strings.Contains(p.NoOpReason, "recovered before") {
		t.Fatalf("recover over the key it recovered: %+v, %v; want nothing to do", p, err)
	}
	if _, err := (Planner{}).PlanRecover(ctx, s, store.KeyValue{Key: old.Key, Value: pvcWithLabel(t, orig), ModRevision: old.ModRevision}); !errors.Is(err, ErrExists) {
		t.Fatalf("recover over an existing key: %v, want ErrExists", err)
	}
	// A create planned while the key was absent conflicts if it appears.
	if _, err := cl.Client(t).Delete(ctx, pvcKey); err != nil {
		t.Fatal(err)
	}
	p, err = Planner{}.PlanRecover(ctx, s, *old)
	if err != nil {
		t.Fatal(err)
	}
	create(t, s, pvcKey, orig)
	if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("create over a key that appeared: %v, want ErrConflict", err)
	}
}

// liveSource is the Source a write through s records.
func liveSource(t *testing.T, s *store.Etcd) *Source {
	t.Helper()
	id, err := s.ClusterID(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return &Source{ClusterID: FormatClusterID(id), Endpoints: s.Endpoints()}
}

// TestRestoreOtherCluster refuses a backup taken from another etcd cluster,
// naming both cluster IDs and the recorded endpoints, unless forced.
func TestRestoreOtherCluster(t *testing.T) {
	ctx := testCtx(t)
	_, a := startEtcd(t)
	_, b := startEtcd(t)
	orig := corpus(t, pvcFile)
	create(t, a, pvcKey, orig)
	create(t, b, pvcKey, orig)
	dir := t.TempDir()
	p, err := Planner{}.MakePlan(ctx, a, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	src := liveSource(t, a)
	res, err := Apply(ctx, a, p, ApplyOptions{BackupDir: dir, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	bk, err := ReadBackup(res.BackupPath)
	if err != nil {
		t.Fatal(err)
	}
	if bk.ClusterID() != src.ClusterID || bk.ClusterID() == "" {
		t.Fatalf("backup records cluster %q, want %q", bk.ClusterID(), src.ClusterID)
	}
	other := liveSource(t, b).ClusterID
	if other == src.ClusterID {
		t.Fatal("the two test clusters have the same ID")
	}
	// Cluster b holds the same bytes etcdpvc's write produced on a.
	kv := get(t, b, pvcKey)
	if _, err := b.CompareAndSwap(ctx, pvcKey, kv.ModRevision, get(t, a, pvcKey).Value, 0); err != nil {
		t.Fatal(err)
	}
	_, err = Planner{}.PlanRestore(ctx, b, bk, false)
	var oc *OtherClusterError
	if !errors.Is(err, ErrOtherCluster) || !errors.As(err, &oc) {
		t.Fatalf("restore into another cluster: %v, want ErrOtherCluster", err)
	}
	for _, want := range []string{src.ClusterID, other, a.Endpoints()[0], b.Endpoints()[0]} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	fp, err := Planner{}.PlanRestore(ctx, b, bk, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(fp.Warnings, "\n"), "restoring anyway, as forced") {
		t.Errorf("forced restore into another cluster does not warn: %q", fp.Warnings)
	}
	// Into its own cluster: no cluster warning.
	own, err := Planner{}.PlanRestore(ctx, a, bk, false)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(own.Warnings, "\n"); strings.Contains(w, "cluster") {
		t.Errorf("restore into its own cluster warns: %q", own.Warnings)
	}
}

// rewriteBackup rewrites a backup file's JSON with edit, and, when redigest
// is set, recomputes its digest as a careful forger would.
func rewriteBackup(t *testing.T, path string, edit func(b *Backup), redigest bool) string {
	t.Helper()
	b, err := ReadBackup(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(b)
	if redigest {
		b.Digest = backupDigest(b)
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "forged.json")
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestForgedBackup refuses backups whose key or lease were edited, reads a
// version-1 backup with a warning, and refuses a value that is not the
// object its key names, even with a digest recomputed.
func TestForgedBackup(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	create(t, s, pvcKey, corpus(t, pvcFile))
	b := undeleteOnce(t, Planner{}, s, t.TempDir())
	if b.Version != 3 || b.Digest == "" || CheckOperationID(b.OperationID) != nil {
		t.Fatalf("new backup: version %d digest %q operation %q", b.Version, b.Digest, b.OperationID)
	}
	for name, edit := range map[string]func(*Backup){
		"key":       func(b *Backup) { b.Key = "/registry/secrets/demo/ghost" },
		"lease":     func(b *Backup) { b.Lease = 7587888 },
		"revision":  func(b *Backup) { b.ModRevision++ },
		"absent":    func(b *Backup) { b.Absent, b.Value, b.SHA256 = true, nil, digest(nil) },
		"cluster":   func(b *Backup) { b.Source = &Source{ClusterID: "1234"} },
		"operation": func(b *Backup) { b.OperationID = "20200101T000000Z-00000000" },
	} {
		t.Run(name, func(t *testing.T) {
			path := rewriteBackup(t, b.Path, edit, false)
			if _, err := ReadBackup(path); !errors.Is(err, ErrBadBackup) || !strings.Contains(err.Error(), "digest does not match") {
				t.Fatalf("ReadBackup(edited %s) = %v, want ErrBadBackup", name, err)
			}
		})
	}
	t.Run("version 2", func(t *testing.T) {
		// Written before operation ids: still read, and restored.
		path := rewriteBackup(t, b.Path, func(b *Backup) { b.Version, b.OperationID = 2, "" }, true)
		v2, err := ReadBackup(path)
		if err != nil {
			t.Fatal(err)
		}
		if v2.OperationID != "" || len(v2.Warnings) != 0 {
			t.Fatalf("version 2: operation %q warnings %q", v2.OperationID, v2.Warnings)
		}
		if _, err := (Planner{}).PlanRestore(ctx, s, v2, false); err != nil {
			t.Fatal(err)
		}
		withOp := rewriteBackup(t, b.Path, func(b *Backup) { b.Version = 2 }, true)
		if _, err := ReadBackup(withOp); !errors.Is(err, ErrBadBackup) {
			t.Fatalf("version 2 with an operation id: %v, want ErrBadBackup", err)
		}
	})
	t.Run("version 1", func(t *testing.T) {
		path := rewriteBackup(t, b.Path, func(b *Backup) { b.Version, b.Source, b.Digest, b.OperationID = 1, nil, "", "" }, false)
		v1, err := ReadBackup(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(v1.Warnings) != 1 || !strings.Contains(v1.Warnings[0], "not covered by a digest") {
			t.Fatalf("warnings: %q", v1.Warnings)
		}
		p, err := Planner{}.PlanRestore(ctx, s, v1, false)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(p.Warnings, "\n"), "version-1 backup") {
			t.Errorf("plan warnings: %q", p.Warnings)
		}
	})
	t.Run("key names another object", func(t *testing.T) {
		ghost := "/registry/secrets/demo/ghost"
		path := rewriteBackup(t, b.Path, func(b *Backup) { b.Key = ghost }, true)
		fb, err := ReadBackup(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, force := range []bool{false, true} {
			_, err := Planner{}.PlanRestore(ctx, s, fb, force)
			if !errors.Is(err, ErrKeyMismatch) {
				t.Fatalf("force %v: %v, want ErrKeyMismatch", force, err)
			}
			for _, want := range []string{"persistentvolumeclaim www-web-0 in namespace demo", "secret ghost in namespace demo"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		}
		if _, err := s.Get(ctx, ghost, 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("ghost key: %v", err)
		}
	})
}

// TestKeyMismatchEdit refuses to edit a value stored under another
// object's key unless AllowKeyMismatch, which warns.
func TestKeyMismatchEdit(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	ghost := "/registry/secrets/demo/ghost"
	create(t, s, ghost, corpus(t, pvcFile))
	_, err := Planner{}.MakePlan(ctx, s, ghost, Undelete{})
	if !errors.Is(err, ErrKeyMismatch) || !strings.Contains(err.Error(), "holds persistentvolumeclaim www-web-0 in namespace demo, but the key names secret ghost in namespace demo") {
		t.Fatalf("undelete of a mismatched key: %v", err)
	}
	p, err := Planner{AllowKeyMismatch: true}.MakePlan(ctx, s, ghost, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) == 0 || !strings.Contains(p.Warnings[0], "writing it anyway, as forced") {
		t.Errorf("warnings: %q", p.Warnings)
	}
	// A recover of that revision is refused too.
	kv := get(t, s, ghost)
	if _, err := (Planner{}).PlanRecover(ctx, s, store.KeyValue{Key: "/registry/secrets/demo/ghost2", Value: kv.Value, ModRevision: kv.ModRevision}); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("recover: %v, want ErrKeyMismatch", err)
	}
}

// TestRestoreReseals restores a backup taken on a cluster without
// encryption into one that encrypts Secrets: with the config the value is
// sealed with the first provider; without it, refused.
func TestRestoreReseals(t *testing.T) {
	ctx := testCtx(t)
	enc, err := encryption.Load(ctx, filepath.Join("..", "fixtures", "corpus", "encryption", "encryption-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(enc.Close)
	_, s := startEtcd(t)
	plain := corpus(t, secFile)
	create(t, s, secKey, plain)
	dir := t.TempDir()
	p, err := Planner{}.MakePlan(ctx, s, secKey, Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"x": "y"}}})
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
	// The cluster turns encryption on: the Secret is rewritten encrypted.
	sealed, err := os.ReadFile(filepath.Join("..", "fixtures", "corpus", "encrypted", "secrets__demo__web-secret__aescbc.bin"))
	if err != nil {
		t.Fatal(err)
	}
	kv := get(t, s, secKey)
	if _, err := s.CompareAndSwap(ctx, secKey, kv.ModRevision, sealed, 0); err != nil {
		t.Fatal(err)
	}

	for _, force := range []bool{false, true} {
		if _, err := (Planner{}).PlanRestore(ctx, s, b, force); !errors.Is(err, ErrPlaintextIntoEncrypted) {
			t.Fatalf("force %v, no config: %v, want ErrPlaintextIntoEncrypted", force, err)
		}
	}
	c := Planner{Codec: kubevalue.Codec{Enc: enc}}
	rp, err := c.PlanRestore(ctx, s, b, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(rp.NewStored, []byte("k8s:enc:aescbc:v1:key1:")) {
		t.Fatalf("restore writes %q…, want aescbc", rp.NewStored[:24])
	}
	if !strings.Contains(strings.Join(rp.Warnings, "\n"), "sealed with it") {
		t.Errorf("warnings: %q", rp.Warnings)
	}
	if _, err := Apply(ctx, s, rp, ApplyOptions{BackupDir: dir}); err != nil {
		t.Fatal(err)
	}
	cur, err := c.Load(ctx, s, secKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Encrypted == nil || !bytes.Equal(cur.Plain, plain) {
		t.Fatalf("restored: encrypted %v, plaintext equal %v", cur.Encrypted != nil, bytes.Equal(cur.Plain, plain))
	}
}

// TestRestoreOverUndecodable replaces, only when forced, a value damaged
// the classic way (etcdctl get --print-value-only | etcdctl put adds a
// newline), showing a raw diff.
func TestRestoreOverUndecodable(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	orig := corpus(t, pvcFile)
	create(t, s, pvcKey, orig)
	dir := t.TempDir()
	b := undeleteOnce(t, Planner{}, s, dir)
	kv := get(t, s, pvcKey)
	damaged := append(append([]byte(nil), kv.Value...), '\n')
	if _, err := s.CompareAndSwap(ctx, pvcKey, kv.ModRevision, damaged, 0); err != nil {
		t.Fatal(err)
	}
	_, err := Planner{}.PlanRestore(ctx, s, b, false)
	var ce *ChangedError
	if !errors.As(err, &ce) || ce.Undecodable == nil {
		t.Fatalf("restore over a damaged value: %v, want a ChangedError with the decode error", err)
	}
	if !strings.Contains(ce.Diff, "raw bytes") || !strings.Contains(ce.Diff, `\n"`) {
		t.Errorf("raw diff:\n%s", ce.Diff)
	}
	p, err := Planner{}.PlanRestore(ctx, s, b, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, pvcKey).Value; !bytes.Equal(got, orig) {
		t.Fatal("forced restore: bytes differ from the original")
	}
}

// TestRestoreOfCreate undoes a recover with a compare-and-delete, refuses
// when the created key changed since, and restores the delete's backup.
func TestRestoreOfCreate(t *testing.T) {
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
	dir := t.TempDir()
	recoverOnce := func() *Backup {
		p, err := Planner{}.PlanRecover(ctx, s, *old)
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

	b := recoverOnce()
	created := get(t, s, pvcKey)
	p, err := Planner{}.PlanRestore(ctx, s, b, false)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Delete || p.Expect != created.ModRevision || !strings.Contains(p.Diff, "-  name: www-web-0") {
		t.Fatalf("plan: delete %v expect %d diff:\n%s", p.Delete, p.Expect, p.Diff)
	}
	res, err := Apply(ctx, s, p, ApplyOptions{BackupDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, pvcKey, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the restore the key is %v, want deleted", err)
	}
	again, err := Planner{}.PlanRestore(ctx, s, b, false)
	if err != nil || !again.NoOp {
		t.Fatalf("second restore: %v, NoOp %v", err, again != nil && again.NoOp)
	}
	// The delete made a backup; restoring it creates the key again.
	db, err := ReadBackup(res.BackupPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(db.Value, created.Value) || db.Absent {
		t.Fatal("the delete's backup does not hold the deleted value")
	}
	rp, err := Planner{}.PlanRestore(ctx, s, db, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, s, rp, ApplyOptions{BackupDir: dir}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, pvcKey).Value; !bytes.Equal(got, created.Value) {
		t.Fatal("restoring the delete's backup did not bring the value back")
	}
	if _, err := cl.Client(t).Delete(ctx, pvcKey); err != nil {
		t.Fatal(err)
	}

	// Changed after the create: refused with the diff, unless forced.
	b = recoverOnce()
	kv := get(t, s, pvcKey)
	changed := mustEditMeta(t, kv.Value, codec.MetaEdit{SetLabels: map[string]string{"touched": "yes"}})
	if _, err := s.CompareAndSwap(ctx, pvcKey, kv.ModRevision, changed, 0); err != nil {
		t.Fatal(err)
	}
	_, err = Planner{}.PlanRestore(ctx, s, b, false)
	var ce *ChangedError
	if !errors.As(err, &ce) || !strings.Contains(ce.Diff, "touched") {
		t.Fatalf("restore of a changed create: %v", err)
	}
	if got := get(t, s, pvcKey).Value; !bytes.Equal(got, changed) {
		t.Fatal("refused restore wrote")
	}
	fp, err := Planner{}.PlanRestore(ctx, s, b, true)
	if err != nil || !fp.Delete {
		t.Fatalf("forced: %v", err)
	}
}

// TestBackupDirNotAnAttackSurface refuses an audit.log planted as a
// symbolic link (nothing written, the link's target untouched), refuses
// to read a backup through a link, makes paths absolute and warns about a
// world-writable directory.
func TestBackupDirNotAnAttackSurface(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	orig := corpus(t, pvcFile)
	create(t, s, pvcKey, orig)
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, AuditLogName)); err != nil {
		t.Fatal(err)
	}
	p, err := Planner{}.MakePlan(ctx, s, pvcKey, Undelete{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(ctx, s, p, ApplyOptions{BackupDir: dir})
	if err == nil || !strings.Contains(err.Error(), "is a symbolic link") || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("Apply with a symlinked audit.log: %v", err)
	}
	if got := get(t, s, pvcKey).Value; !bytes.Equal(got, orig) {
		t.Fatal("the key was written")
	}
	if data, _ := os.ReadFile(target); string(data) != "precious\n" {
		t.Fatalf("the link's target was written: %q", data)
	}
	if err := appendAudits(filepath.Join(dir, AuditLogName), []AuditRecord{{Key: "x"}}); err == nil {
		t.Fatal("appendAudit wrote through a symbolic link")
	}

	// A relative directory gives absolute paths.
	rel := t.TempDir()
	t.Chdir(rel)
	res, err := Apply(ctx, s, p, ApplyOptions{BackupDir: "backups"})
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(res.BackupPath) || !filepath.IsAbs(res.AuditLog) {
		t.Fatalf("paths: %s %s", res.BackupPath, res.AuditLog)
	}
	link := filepath.Join(rel, "link.json")
	if err := os.Symlink(res.BackupPath, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBackup(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("ReadBackup through a link: %v", err)
	}
	b, err := ReadBackup("backups/" + filepath.Base(res.BackupPath))
	if err != nil || !filepath.IsAbs(b.Path) {
		t.Fatalf("ReadBackup(relative): %v %q", err, b.Path)
	}

	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if w := CheckBackupDir(open); len(w) != 1 || !strings.Contains(w[0], "writable by its group or by everyone") {
		t.Errorf("CheckBackupDir(0777) = %q", w)
	}
	if w := CheckBackupDir(dir); len(w) != 0 {
		t.Errorf("CheckBackupDir(0700) = %q", w)
	}
}

// TestRawDiff shows where two undecodable values differ, and never a
// Secret's bytes unless asked.
func TestRawDiff(t *testing.T) {
	old := []byte("k8s\x00value-with-a-password\n")
	newValue := []byte("k8s\x00value-with-a-password")
	why := errors.New("does not decode")
	d := Planner{}.rawDiff(pvcKey, "persistentvolumeclaims", old, 7, newValue, "backup", why)
	for _, want := range []string{"raw bytes: does not decode", "26 bytes", "25 bytes", "differ from byte 25", `-"k8s\x00value-with-a-password\n"`, `+"k8s\x00value-with-a-password"`} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	d = Planner{}.rawDiff(secKey, "secrets", old, 7, newValue, "backup", why)
	if strings.Contains(d, "password") || !strings.Contains(d, "--show-secrets") {
		t.Errorf("a Secret's raw diff shows its bytes:\n%s", d)
	}
	d = Planner{Codec: kubevalue.Codec{ShowSecrets: true}}.rawDiff(secKey, "secrets", old, 7, newValue, "backup", why)
	if !strings.Contains(d, "password") {
		t.Errorf("--show-secrets hides the bytes:\n%s", d)
	}
}

// pvcWithLabel returns stored with a label added at the wire level: the
// same object, another value.
func pvcWithLabel(t testing.TB, stored []byte) []byte {
	t.Helper()
	out, err := codec.EditMeta(stored, codec.MetaEdit{SetLabels: map[string]string{"edited": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
