package demo

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/fixtures"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestStart: the demo's etcd holds every object byte for byte, the
// encryption config is beside it, and the steps name its endpoint's
// backup directory; the restore step needs the one backup.
func TestStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Global) != 5 || c.Global[0] != "--endpoints" || !strings.HasPrefix(c.Global[1], "http://127.0.0.1:") || c.Global[3] != c.EncryptionConfig || c.Global[4] != "--verify=never" {
		t.Errorf("Global = %q", c.Global)
	}
	want, err := fs.ReadFile(fixtures.Corpus, "corpus/encryption/encryption-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(c.EncryptionConfig); err != nil || !bytes.Equal(got, want) {
		t.Errorf("encryption config: %v, %d bytes, want %d", err, len(got), len(want))
	}
	st, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: []string{c.Global[1]}, DialTimeout: Timeout, CommandTimeout: Timeout, Consistency: "l"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, o := range Objects {
		want, err := fs.ReadFile(fixtures.Corpus, path.Join("corpus", o.File))
		if err != nil {
			t.Fatal(err)
		}
		kv, err := st.Get(ctx, o.Key, 0)
		if err != nil {
			t.Errorf("%s: %v", o.Key, err)
			continue
		}
		if !bytes.Equal(kv.Value, want) || kv.Version != 1 {
			t.Errorf("%s: version %d, %d bytes; want version 1, the corpus's %d bytes", o.Key, kv.Version, len(kv.Value), len(want))
		}
	}
	if err := Load(ctx, []string{c.Global[1]}); err == nil || !strings.Contains(err.Error(), "load /registry/namespaces/demo") {
		t.Errorf("Load over loaded objects: %v, want a refused create of the first", err)
	}
	if steps := c.Steps(); len(steps) != 7 || !strings.Contains(strings.Join(steps[5].Args, " "), "--yes --backup-dir "+c.Backups) {
		t.Errorf("Steps = %q", steps)
	}
	if !strings.Contains(c.Intro(), "--backup-dir "+c.Backups+".") {
		t.Errorf("Intro does not name the backup directory:\n%s", c.Intro())
	}
	if _, err := c.RestoreStep(); err == nil {
		t.Errorf("RestoreStep without a backup: no error")
	}
	if err := os.MkdirAll(c.Backups, 0o700); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(c.Backups, "b.json")
	if err := os.WriteFile(backup, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := c.RestoreStep(); err != nil || st.Args[1] != backup {
		t.Errorf("RestoreStep = %q, %v", st.Args, err)
	}
}
