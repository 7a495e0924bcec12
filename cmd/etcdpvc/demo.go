package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/fixtures"
	"github.com/etcdpvc/etcdpvc/internal/embedetcd"
	"github.com/etcdpvc/etcdpvc/store"
)

func demoCommand() command {
	return command{
		name:  "demo",
		usage: "a first run: real stored objects in a throwaway etcd, and the commands that fix them",
		desc: "demo starts an etcd server inside the process (temporary directory, free ports on\n" +
			"127.0.0.1), loads into it the bytes a real kube-apiserver v1.37 stored for a small\n" +
			"StatefulSet (a namespace, a Bound claim and its volume, a claim stuck Terminating and its\n" +
			"volume, a pod, an encrypted Secret), then runs the real commands against it one by one,\n" +
			"printing each command line before its output: ls, get, undelete --dry-run, undelete --yes,\n" +
			"history and restore. Nothing outside the temporary directory is read or written, and\n" +
			"everything is removed at the end. It needs nothing installed.",
		examples: `go run ./cmd/etcdpvc demo
etcdpvc demo`,
		args:      none,
		noGlobals: true,
		action: func(c *cli.Context, e *env, in *input) error {
			return runDemo(e)
		},
	}
}

// demoObjects are the corpus values the demo loads, by etcd key.
var demoObjects = []struct{ key, file string }{
	{"/registry/namespaces/demo", "plain/namespaces__-__demo.bin"},
	{"/registry/statefulsets/demo/web", "plain/statefulsets__demo__web.bin"},
	{"/registry/pods/demo/web-0", "plain/pods__demo__web-0.bin"},
	{"/registry/persistentvolumeclaims/demo/www-web-0", "encrypted/persistentvolumeclaims__demo__www-web-0__terminating__secretbox.bin"},
	{"/registry/persistentvolumes/pv-www-web-0", "plain/persistentvolumes__-__pv-www-web-0.bin"},
	{"/registry/persistentvolumeclaims/demo/www-web-1", "encrypted/persistentvolumeclaims__demo__www-web-1__bound__secretbox.bin"},
	{"/registry/persistentvolumes/pv-www-web-1", "plain/persistentvolumes__-__pv-www-web-1__bound.bin"},
	{"/registry/secrets/demo/web-secret", "encrypted/secrets__demo__web-secret__aescbc.bin"},
}

// demoStep is one command of the demo, with why it is run.
type demoStep struct {
	why  string
	args []string
}

func runDemo(e *env) error {
	dir, err := os.MkdirTemp("", "etcdpvc-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(e.stdout, "Starting a throwaway etcd in %s ...\n", dir)
	srv, err := embedetcd.Start(e.ctx, embedetcd.Options{Dir: dir})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer srv.Close()
	endpoint := srv.Endpoints()[0]

	encConfig := filepath.Join(dir, "encryption-config.yaml")
	b, err := fs.ReadFile(fixtures.Corpus, "corpus/encryption/encryption-config.yaml")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.WriteFile(encConfig, b, 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := loadDemo(e, srv.Endpoints()); err != nil {
		return err
	}
	backups := filepath.Join(dir, "backups")
	global := []string{"--endpoints", endpoint, "--encryption-config", encConfig}

	fmt.Fprintf(e.stdout, `
It holds the bytes a real kube-apiserver v1.37 stored in etcd for a StatefulSet "web" in
namespace "demo": claim www-web-1, Bound to volume pv-www-web-1; claim www-web-0, deleted
but stuck Terminating (its kubernetes.io/pvc-protection finalizer holds it), with volume
pv-www-web-0; pod web-0; Secret web-secret. Claims and Secrets are encrypted at rest, with
the demo's test keys in %s
(removed with the throwaway etcd).

Each command below is the real one, run by the same code as against a cluster, with
  %s
(on a control-plane node, --kubeadm finds the endpoints, certificates and encryption config)
and, for writes, --backup-dir %s.
`, encConfig, strings.Join(global, " "), backups)

	steps := []demoStep{
		{"What is stuck? Objects with a deletionTimestamp, in every namespace:", []string{"ls", "-A", "--terminating"}},
		{"Claims with their volumes, and the pods that still use them:", []string{"ls", "pvc", "-A", "-o", "wide"}},
		{"The claim as stored (decrypted): deletionTimestamp set, a finalizer holds it:", []string{"get", "pvc", "www-web-0", "-n", "demo"}},
		{"A Secret, decrypted with the encryption config; its values stay redacted unless --show-secrets:", []string{"get", "secret", "web-secret", "-n", "demo"}},
		{"What undelete would change; nothing is written:", []string{"undelete", "pvc", "www-web-0", "-n", "demo", "--dry-run"}},
		{"Write it: a durable backup first, then a compare-and-swap on the key's revision:", []string{"undelete", "pvc", "www-web-0", "-n", "demo", "--yes", "--backup-dir", backups}},
		{"Every revision of the key that etcd still holds:", []string{"history", "pvc", "www-web-0", "-n", "demo"}},
	}
	for i, st := range steps {
		if err := demoRun(e, i+1, st, global); err != nil {
			return err
		}
	}
	files, err := filepath.Glob(filepath.Join(backups, "*.json"))
	if err != nil || len(files) != 1 {
		return fmt.Errorf("demo: want the one backup undelete wrote in %s, found %d (%v)", backups, len(files), err)
	}
	restore := demoStep{"Undo it: the backup's original bytes go back, byte for byte (restore backs up first too):",
		[]string{"restore", files[0], "--yes", "--backup-dir", backups}}
	if err := demoRun(e, len(steps)+1, restore, global); err != nil {
		return err
	}
	fmt.Fprint(e.stdout, `
That is the whole loop: find, read, diff, write with a backup, check the history, undo.
The throwaway etcd and its files are removed now. Next: README.md ("Which runbook do I
need?"), docs/cli.md, and 'etcdpvc COMMAND --help'.
`)
	return nil
}

// loadDemo writes the demo's objects, each as a create.
func loadDemo(e *env, endpoints []string) error {
	st, err := store.OpenEtcd(e.ctx, store.EtcdConfig{Endpoints: endpoints, DialTimeout: defaultDemoTimeout, CommandTimeout: defaultDemoTimeout, Consistency: "l"})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer st.Close()
	for _, o := range demoObjects {
		v, err := fs.ReadFile(fixtures.Corpus, path.Join("corpus", o.file))
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		if _, err := st.CompareAndSwap(e.ctx, o.key, 0, v, 0); err != nil {
			return fmt.Errorf("demo: load %s: %w", o.key, err)
		}
	}
	return nil
}

// defaultDemoTimeout bounds each request to the demo's own etcd.
const defaultDemoTimeout = 10 * time.Second

// demoRun prints a step and runs it through run, the program's one entry
// point.
func demoRun(e *env, n int, st demoStep, global []string) error {
	fmt.Fprintf(e.stdout, "\n# %d. %s\n$ etcdpvc %s\n", n, st.why, strings.Join(st.args, " "))
	args := append(append([]string{}, global...), st.args...)
	if code := run(e.ctx, args, strings.NewReader(""), e.stdout, e.stderr); code != exitOK {
		return fmt.Errorf("demo: step %d, `etcdpvc %s`, failed with exit status %d", n, strings.Join(st.args, " "), code)
	}
	return nil
}
