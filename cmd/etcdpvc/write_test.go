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
	"github.com/etcdpvc/etcdpvc/store"
)

// TestWriteOutcomeUnknown loses every transaction of a create (recover)
// in a proxy that forwards them only later: the command cannot know
// whether the object was created, so it exits 8 naming the object and the
// backup, records the uncertain outcome in the audit log, and never says
// nothing was written. Released afterwards, the create does land.
func TestWriteOutcomeUnknown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	proxy := etcdtest.StartProxy(t, c.ClientURL(0))
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "corpus", "plain", "persistentvolumeclaims__demo__www-web-1__bound.bin"))
	if err != nil {
		t.Fatal(err)
	}
	const key = "/registry/persistentvolumeclaims/demo/www-web-1"
	if _, err := cli.Put(ctx, key, string(b)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}

	proxy.HoldTxns(100)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"--endpoints", proxy.Endpoint(), "recover", "pvc", "www-web-1", "-n", "demo", "--yes", "--backup-dir", dir},
		strings.NewReader(""), &stdout, &stderr)
	if code != exitcode.Uncertain {
		t.Fatalf("exit %d, want %d (outcome unknown)\n%s%s", code, exitcode.Uncertain, stdout.String(), stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{
		"etcdpvc: error: write persistentvolumeclaim www-web-1 in namespace demo: outcome of the write is unknown: ",
		"a create cannot be fenced off and may still land",
		"check whether it exists now (etcdpvc get); the backup " + dir + "/",
		"etcdpvc: hint: the write may or may not have been applied",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(stdout.String()+out, "nothing written") || strings.Contains(stdout.String(), "written:") {
		t.Errorf("claims an outcome:\n%s%s", stdout.String(), out)
	}
	t.Logf("stderr:\n%s", out)
	log, err := os.ReadFile(filepath.Join(dir, "audit.log"))
	if err != nil || !strings.Contains(string(log), `"key":"`+key+`"`) || !strings.Contains(string(log), `"outcome":"uncertain"`) {
		t.Errorf("audit log %q (%v) records no uncertain outcome", log, err)
	}
	proxy.HoldTxns(0)
	proxy.Release()
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("after the held transactions reach etcd, the claim is not there (%v): the outcome was open", err)
	}
}

// TestWriteTooLarge: an edit that makes a value larger than etcd accepts in
// one request is refused (exit 5) before the backup, naming the object,
// its size and the limit.
func TestWriteTooLarge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := etcdtest.Start(t, etcdtest.Options{})
	cli := c.Client(t)
	work := t.TempDir()
	doc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: demo\n  uid: 0d3c5e1a-7f7e-4b8e-9d59-3f1b8c2a9e11\ndata:\n  blob: " +
		strings.Repeat("x", store.MaxRequestBytes-4000) + "\n"
	if err := os.WriteFile(filepath.Join(work, "big.yaml"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"encode", filepath.Join(work, "big.yaml")}, strings.NewReader(""), &stdout, &stderr); code != exitcode.OK {
		t.Fatalf("encode: exit %d\n%s", code, stderr.String())
	}
	const key = "/registry/configmaps/demo/big"
	if _, err := cli.Put(ctx, key, stdout.String()); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	dir := filepath.Join(work, "backups")
	code := run(ctx, []string{"--endpoints", strings.Join(c.Endpoints(), ","), "annotate", "configmap", "big", "-n", "demo", "note=" + strings.Repeat("y", 5000), "--yes", "--backup-dir", dir},
		strings.NewReader(""), &stdout, &stderr)
	if code != exitcode.Refused {
		t.Fatalf("exit %d, want %d (refused)\n%s", code, exitcode.Refused, stderr.String())
	}
	if want := "etcdpvc: error: write configmap big in namespace demo: the new value is "; !strings.Contains(stderr.String(), want) ||
		!strings.Contains(stderr.String(), "more than etcd accepts in one request (--max-request-bytes, 1.50 MiB)") {
		t.Errorf("stderr lacks the refusal:\n%s", stderr.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a backup directory was made for a refused write: %v", err)
	}
}
