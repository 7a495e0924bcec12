package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
)

// TestRestoreResumeAfterFence: an undo of three creates whose transaction
// of deletes loses its answer in a proxy is fenced (one key rewritten with
// its own bytes) and deletes nothing; the same command run again, as it
// says, takes the fence, which audit.log records, for etcdpvc's own and
// deletes all three (it was refused: "changed after etcdpvc's write").
func TestRestoreResumeAfterFence(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	proxy := etcdtest.StartProxy(t, c.ClientURL(0))
	dir := t.TempDir()
	run1 := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	objects := []struct{ file, key, resource, name string }{
		{"configmaps__demo__web-config", "/registry/configmaps/demo/web-config", "cm", "web-config"},
		{"secrets__demo__web-secret", "/registry/secrets/demo/web-secret", "secret", "web-secret"},
		{"persistentvolumeclaims__demo__www-web-1__bound", "/registry/persistentvolumeclaims/demo/www-web-1", "pvc", "www-web-1"},
	}
	var backups []string
	for _, o := range objects {
		b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "corpus", "plain", o.file+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Put(ctx, o.key, string(b)); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Delete(ctx, o.key); err != nil {
			t.Fatal(err)
		}
		before, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if code, out := run1("--endpoints", c.ClientURL(0), "recover", o.resource, o.name, "-n", "demo", "--yes", "--backup-dir", dir); code != 0 {
			t.Fatalf("recover %s: exit %d\n%s", o.name, code, out)
		}
		after, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		backups = append(backups, after[len(after)-1])
		if len(after) != len(before)+1 {
			t.Fatalf("recover %s: backups %v", o.name, after)
		}
	}

	restore := append([]string{"restore", "--yes", "--backup-dir", dir}, backups...)
	proxy.HoldTxns(1)
	code, out := run1(append([]string{"--endpoints", proxy.Endpoint()}, restore...)...)
	if code == 0 || !strings.Contains(out, "nothing of it was deleted") || !strings.Contains(out, "run the same command again") {
		t.Fatalf("restore with its answer lost: exit %d, want nothing deleted after a fence\n%s", code, out)
	}
	if errs := proxy.Release(); len(errs) != 1 {
		t.Fatalf("released %d held transactions, want 1", len(errs))
	}

	code, out = run1(append([]string{"--endpoints", c.ClientURL(0)}, restore...)...)
	if code != exitcode.OK || !strings.Contains(out, "where etcdpvc rewrote it with its own bytes") {
		t.Fatalf("the same restore run again: exit %d, want 0, the fence taken for etcdpvc's own\n%s", code, out)
	}
	for _, o := range objects {
		if resp, err := cli.Get(ctx, o.key); err != nil || len(resp.Kvs) != 0 {
			t.Errorf("%s left after the restore (%v)", o.key, err)
		}
	}
}
