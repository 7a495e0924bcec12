// Package demo is the setting of `etcdpvc demo`: a throwaway etcd
// (internal/embedetcd) loaded with the bytes a real kube-apiserver v1.37
// stored for a small StatefulSet (fixtures.Corpus), the encryption config
// that decrypts them, and the commands the tour runs against it, each with
// why. The CLI runs the steps through its own entry point and prints them.
package demo

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/etcdpvc/etcdpvc/fixtures"
	"github.com/etcdpvc/etcdpvc/internal/embedetcd"
	"github.com/etcdpvc/etcdpvc/store"
)

// Objects are the corpus values the demo loads, by etcd key.
var Objects = []struct{ Key, File string }{
	{"/registry/namespaces/demo", "plain/namespaces__-__demo.bin"},
	{"/registry/statefulsets/demo/web", "plain/statefulsets__demo__web.bin"},
	{"/registry/pods/demo/web-0", "plain/pods__demo__web-0.bin"},
	{"/registry/persistentvolumeclaims/demo/www-web-0", "encrypted/persistentvolumeclaims__demo__www-web-0__terminating__secretbox.bin"},
	{"/registry/persistentvolumes/pv-www-web-0", "plain/persistentvolumes__-__pv-www-web-0.bin"},
	{"/registry/persistentvolumeclaims/demo/www-web-1", "encrypted/persistentvolumeclaims__demo__www-web-1__bound__secretbox.bin"},
	{"/registry/persistentvolumes/pv-www-web-1", "plain/persistentvolumes__-__pv-www-web-1__bound.bin"},
	{"/registry/secrets/demo/web-secret", "encrypted/secrets__demo__web-secret__aescbc.bin"},
}

// Timeout bounds each request to the demo's own etcd.
const Timeout = 10 * time.Second

// Step is one command of the demo, with why it is run.
type Step struct {
	Why  string
	Args []string
}

// Cluster is the demo's running etcd and the files beside it.
type Cluster struct {
	srv *embedetcd.Server
	// EncryptionConfig is the config that decrypts the encrypted values.
	EncryptionConfig string
	// Backups is the --backup-dir of the writes.
	Backups string
	// Global are the global flags of every step: the endpoint, the
	// encryption config, and --verify=never (no apiserver serves the
	// demo's etcd, so none is asked: a $KUBECONFIG of another cluster
	// would answer for it).
	Global []string
}

// Start starts the etcd in dir (which the caller removes), writes the
// encryption config there and loads Objects.
func Start(ctx context.Context, dir string) (*Cluster, error) {
	srv, err := embedetcd.Start(ctx, embedetcd.Options{Dir: dir})
	if err != nil {
		return nil, err
	}
	c := &Cluster{srv: srv, EncryptionConfig: filepath.Join(dir, "encryption-config.yaml"), Backups: filepath.Join(dir, "backups")}
	c.Global = []string{"--endpoints", srv.Endpoints()[0], "--encryption-config", c.EncryptionConfig, "--verify=never"}
	b, err := fs.ReadFile(fixtures.Corpus, "corpus/encryption/encryption-config.yaml")
	if err == nil {
		err = os.WriteFile(c.EncryptionConfig, b, 0o600)
	}
	if err == nil {
		err = Load(ctx, srv.Endpoints())
	}
	if err != nil {
		srv.Close()
		return nil, err
	}
	return c, nil
}

// Close stops the etcd.
func (c *Cluster) Close() { c.srv.Close() }

// Load writes Objects into the etcd at endpoints, each as a create.
func Load(ctx context.Context, endpoints []string) error {
	st, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: endpoints, DialTimeout: Timeout, CommandTimeout: Timeout, Consistency: "l"})
	if err != nil {
		return err
	}
	defer st.Close()
	for _, o := range Objects {
		v, err := fs.ReadFile(fixtures.Corpus, path.Join("corpus", o.File))
		if err != nil {
			return err
		}
		if _, err := st.CompareAndSwap(ctx, o.Key, 0, v, 0); err != nil {
			return fmt.Errorf("load %s: %w", o.Key, err)
		}
	}
	return nil
}

// Intro says what the etcd holds and how the steps are run.
func (c *Cluster) Intro() string {
	return fmt.Sprintf(`
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
No apiserver serves this etcd, so writes are not verified with one (--verify=never): your
$KUBECONFIG, if set, names another cluster and is not used. Against a real cluster the
apiserver checks every write before and after it (--verify=auto, the default).
`, c.EncryptionConfig, strings.Join(c.Global, " "), c.Backups)
}

// Steps are the tour's commands up to the write and its history.
func (c *Cluster) Steps() []Step {
	return []Step{
		{"What is stuck? Objects with a deletionTimestamp, in every namespace:", []string{"ls", "-A", "--terminating"}},
		{"Claims with their volumes, and the pods that still use them:", []string{"ls", "pvc", "-A", "-o", "wide"}},
		{"The claim as stored (decrypted): deletionTimestamp set, a finalizer holds it:", []string{"get", "pvc", "www-web-0", "-n", "demo"}},
		{"A Secret, decrypted with the encryption config; its values stay redacted unless --show-secrets:", []string{"get", "secret", "web-secret", "-n", "demo"}},
		{"What undelete would change; nothing is written:", []string{"undelete", "pvc", "www-web-0", "-n", "demo", "--dry-run"}},
		{"Write it: a durable backup first, then a compare-and-swap on the key's revision:", []string{"undelete", "pvc", "www-web-0", "-n", "demo", "--yes", "--backup-dir", c.Backups}},
		{"Every revision of the key that etcd still holds:", []string{"history", "pvc", "www-web-0", "-n", "demo"}},
	}
}

// RestoreStep is the last step: restore of the one backup the undelete
// step wrote.
func (c *Cluster) RestoreStep() (Step, error) {
	files, err := filepath.Glob(filepath.Join(c.Backups, "*.json"))
	if err != nil || len(files) != 1 {
		return Step{}, fmt.Errorf("want the one backup undelete wrote in %s, found %d (%v)", c.Backups, len(files), err)
	}
	return Step{"Undo it: the backup's original bytes go back, byte for byte (restore backs up first too):",
		[]string{"restore", files[0], "--yes", "--backup-dir", c.Backups}}, nil
}

// Outro ends the tour.
const Outro = `
That is the whole loop: find, read, diff, write with a backup, check the history, undo.
The throwaway etcd and its files are removed now. Next: README.md ("Which runbook do I
need?"), docs/cli.md, and 'etcdpvc COMMAND --help'.
`
