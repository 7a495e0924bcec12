package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nobody is the user the non-root runs are made as.
const nobody = 65534

// nodeLayout is one distribution's files below a node's root: each path
// as the node names it, and the etcd client certificate and key among
// them.
type nodeLayout struct {
	files     map[string]string
	cert, key string
}

// layNode writes the layout's files below root: directories 0755 and
// files 0644 as a node has them, but the client key keyMode (0600 on a
// real node: root's only).
func layNode(t *testing.T, root string, l nodeLayout, keyMode os.FileMode) {
	t.Helper()
	for p, body := range l.files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if p == l.key {
			mode = keyMode
		}
		if err := os.WriteFile(full, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
}

// nodeLayouts are the files of each control-plane distribution etcdpvc's
// --node knows, naming c's etcd, its etcd CA and client certificate, its
// encryption config and a kubeconfig of its apiserver: where kubeadm,
// RKE2, k3s and OpenShift put them (see package node for the sources).
func nodeLayouts(t *testing.T, c *Cluster) map[string]nodeLayout {
	t.Helper()
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: %q, certificate-authority-data: %s}
contexts:
- name: e2e
  context: {cluster: e2e, user: admin}
current-context: e2e
users:
- name: admin
  user: {token: %q}
`, c.APIServerURL, base64.StdEncoding.EncodeToString(c.pki.caPEM), c.token)
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ca, crt, key := read(c.pki.caCert), read(c.pki.etcdClientCert), read(c.pki.etcdClientKey)
	manifest := func(flags ...string) string {
		return "spec:\n  containers:\n  - name: kube-apiserver\n    command:\n    - kube-apiserver\n    - --etcd-servers=" + c.EtcdURL + "\n    - " + strings.Join(flags, "\n    - ") + "\n"
	}
	rev := "etc/kubernetes/static-pod-resources/kube-apiserver-pod-4/"
	return map[string]nodeLayout{
		"kubeadm": {files: map[string]string{
			"etc/kubernetes/manifests/kube-apiserver.yaml": manifest("--etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt", "--etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt",
				"--etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key", "--encryption-provider-config=/etc/kubernetes/enc/enc.yaml"),
			"etc/kubernetes/pki/etcd/ca.crt": ca, "etc/kubernetes/pki/apiserver-etcd-client.crt": crt, "etc/kubernetes/pki/apiserver-etcd-client.key": key,
			"etc/kubernetes/enc/enc.yaml": encryptionConfig, "etc/kubernetes/admin.conf": kubeconfig,
		}, cert: "etc/kubernetes/pki/apiserver-etcd-client.crt", key: "etc/kubernetes/pki/apiserver-etcd-client.key"},
		"rke2": {files: map[string]string{
			"var/lib/rancher/rke2/agent/pod-manifests/kube-apiserver.yaml": manifest("--etcd-cafile=/var/lib/rancher/rke2/server/tls/etcd/server-ca.crt",
				"--etcd-certfile=/var/lib/rancher/rke2/server/tls/etcd/client.crt", "--etcd-keyfile=/var/lib/rancher/rke2/server/tls/etcd/client.key",
				"--encryption-provider-config=/var/lib/rancher/rke2/server/cred/encryption-config.json"),
			"var/lib/rancher/rke2/server/tls/etcd/server-ca.crt": ca, "var/lib/rancher/rke2/server/tls/etcd/client.crt": crt, "var/lib/rancher/rke2/server/tls/etcd/client.key": key,
			"var/lib/rancher/rke2/server/cred/encryption-config.json": encryptionConfig, "etc/rancher/rke2/rke2.yaml": kubeconfig,
		}, cert: "var/lib/rancher/rke2/server/tls/etcd/client.crt", key: "var/lib/rancher/rke2/server/tls/etcd/client.key"},
		// k3s's own etcd listens on https://127.0.0.1:2379; this one's
		// port is given as the config's kube-apiserver-arg.
		"k3s": {files: map[string]string{
			"etc/rancher/k3s/config.yaml":                       "secrets-encryption: true\nkube-apiserver-arg:\n- etcd-servers=" + c.EtcdURL + "\n",
			"var/lib/rancher/k3s/server/db/etcd/name":           "node-1",
			"var/lib/rancher/k3s/server/tls/etcd/server-ca.crt": ca, "var/lib/rancher/k3s/server/tls/etcd/client.crt": crt, "var/lib/rancher/k3s/server/tls/etcd/client.key": key,
			"var/lib/rancher/k3s/server/cred/encryption-config.json": encryptionConfig, "etc/rancher/k3s/k3s.yaml": kubeconfig,
		}, cert: "var/lib/rancher/k3s/server/tls/etcd/client.crt", key: "var/lib/rancher/k3s/server/tls/etcd/client.key"},
		"openshift": {files: map[string]string{
			"etc/kubernetes/manifests/kube-apiserver-pod.yaml": "spec:\n  volumes:\n  - name: resource-dir\n    hostPath: {path: /etc/kubernetes/static-pod-resources/kube-apiserver-pod-4}\n",
			rev + "configmaps/config/config.yaml": "apiServerArguments:\n  etcd-servers: [" + c.EtcdURL + "]\n  etcd-prefix: [registry]\n" +
				"  etcd-cafile: [/etc/kubernetes/static-pod-resources/configmaps/etcd-serving-ca/ca-bundle.crt]\n" +
				"  etcd-certfile: [/etc/kubernetes/static-pod-resources/secrets/etcd-client/tls.crt]\n" +
				"  etcd-keyfile: [/etc/kubernetes/static-pod-resources/secrets/etcd-client/tls.key]\n" +
				"  encryption-provider-config: [/etc/kubernetes/static-pod-resources/secrets/encryption-config/encryption-config]\n",
			rev + "configmaps/etcd-serving-ca/ca-bundle.crt": ca, rev + "secrets/etcd-client/tls.crt": crt, rev + "secrets/etcd-client/tls.key": key,
			rev + "secrets/encryption-config/encryption-config":                                                      encryptionConfig,
			"etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/node-kubeconfigs/localhost.kubeconfig": kubeconfig,
		}, cert: rev + "secrets/etcd-client/tls.crt", key: rev + "secrets/etcd-client/tls.key"},
	}
}

// asNobody runs the etcdpvc binary bin as the user nobody, in the
// directory dir it cannot write, with $HOME there too.
func asNobody(t *testing.T, bin, dir string, args ...string) result {
	t.Helper()
	return runEtcdpvcCmd(t, bin, func(cmd *exec.Cmd) {
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}, []string{"HOME=" + dir}, args...)
}

// nobodyDirs makes a directory outside the test's private temp dirs that
// nobody can read: a copy of the etcdpvc binary it can run, a working
// directory it cannot write and the base for the layouts it reads.
func nobodyDirs(t *testing.T) (base, bin, cwd string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("runs etcdpvc as another user: needs root")
	}
	base, err := os.MkdirTemp("", "etcdpvc-e2e-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(suite.etcdpvc)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(base, "etcdpvc")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cwd = filepath.Join(base, "cwd")
	if err := os.Mkdir(cwd, 0o555); err != nil {
		t.Fatal(err)
	}
	return base, bin, cwd
}

// TestNodeLayouts lays out, below a test root, the files of each
// control-plane distribution etcdpvc's --node knows, naming a real etcd
// that serves TLS and requires a client certificate, and a real
// kube-apiserver with encryption at rest; then it runs from a shell with
// no ETCDCTL_* variable and no connection flag: doctor, ls -A
// --terminating, an undelete verified through the apiserver the layout's
// kubeconfig names, and the printed undo. Then the same as the user
// nobody, in a working directory it cannot write, from a copy of the
// layout it can read: the reads work, the undelete without a writable
// backup directory is refused with nothing written, and with one it
// works. On the layout as a node has it, the client key root's only,
// nobody is refused with the key named.
func TestNodeLayouts(t *testing.T) {
	enc := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(enc, []byte(encryptionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "node", ClusterOptions{EncryptionConfig: enc, EtcdTLS: true})
	if !strings.HasPrefix(c.EtcdURL, "https://") {
		t.Fatalf("etcd serves %s, want TLS", c.EtcdURL)
	}
	layouts := nodeLayouts(t, c)
	base, bin, cwd := nobodyDirs(t)

	// undeleteAndUndo undeletes ns/name with run and --node root, checks
	// it through the apiserver, runs the printed undo and checks that too.
	undeleteAndUndo := func(t *testing.T, run func(args ...string) result, root, ns, name string, args ...string) {
		t.Helper()
		r := run(append([]string{"--node", root, "undelete", "pvc", name, "-n", ns, "--yes", "--verify=always"}, args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "written: ") {
			t.Fatalf("undelete --node:\n%s", r)
		}
		got, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp != nil {
			t.Fatalf("the apiserver serves %v, %v: want the PVC not Terminating", got, err)
		}
		if v := c.etcdGet(t, "/registry/persistentvolumeclaims/"+ns+"/"+name).Value; !strings.HasPrefix(string(v), secretboxPrefix) {
			t.Errorf("undelete stored %q, want it encrypted with secretbox", storedPrefix(v))
		}
		// The printed undo, as printed.
		_, undo, ok := strings.Cut(r.stdout, "undo with: etcdpvc ")
		if !ok {
			t.Fatalf("no undo line:\n%s", r)
		}
		if r := run(append(strings.Fields(strings.TrimSpace(undo)), append([]string{"--yes"}, args...)...)...); r.code != 0 {
			t.Fatalf("the printed undo:\n%s", r)
		}
		got, err = c.Client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil {
			t.Fatalf("after the undo the apiserver serves %v, %v: want the PVC Terminating again", got, err)
		}
	}
	// reads runs doctor and ls -A --terminating.
	reads := func(t *testing.T, run func(args ...string) result, layout, root, name string) {
		t.Helper()
		r := run("--node", root, "doctor")
		if r.code != 0 {
			t.Errorf("doctor --node failed:\n%s", r)
		}
		for _, want := range []string{"OK    node          " + layout + " node below " + root + ": etcd " + c.EtcdURL + ", prefix /registry, encryption config " + root,
			"OK    node          kubeconfig: " + root, "answers for this cluster; writes will be verified"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("doctor --node lacks %q:\n%s", want, r)
			}
		}
		r = run("--node", root, "ls", "-A", "--terminating")
		if r.code != 0 || !strings.Contains(r.stdout, name) {
			t.Fatalf("ls -A --terminating --node:\n%s", r)
		}
	}

	for _, layout := range []string{"kubeadm", "rke2", "k3s", "openshift"} {
		t.Run(layout, func(t *testing.T) {
			l := layouts[layout]
			ns, name := "node-"+layout, "data-"+layout
			key := "/registry/persistentvolumeclaims/" + ns + "/" + name
			c.EnsureNamespace(t, ns)
			terminatingPVC(t, c, ns, name)
			if stored := c.etcdGet(t, key); !strings.HasPrefix(string(stored.Value), secretboxPrefix) {
				t.Fatalf("the PVC is not stored encrypted: %q", storedPrefix(stored.Value))
			}

			// As root, on the layout as a node has it.
			root := t.TempDir()
			layNode(t, root, l, 0o600)
			asRoot := func(args ...string) result { return runEtcdpvc(t, nil, args...) }
			reads(t, asRoot, layout, root, name)
			undeleteAndUndo(t, asRoot, root, ns, name, "--backup-dir", t.TempDir())

			// As nobody, on a copy it can read.
			readable := filepath.Join(base, layout)
			layNode(t, readable, l, 0o644)
			run := func(args ...string) result { return asNobody(t, bin, cwd, args...) }
			reads(t, run, layout, readable, name)
			before := c.etcdGet(t, key).ModRevision
			r := run("--node", readable, "undelete", "pvc", name, "-n", ns, "--yes")
			if r.code == 0 || !strings.Contains(r.stderr, "--backup-dir") || !strings.Contains(r.stderr, "nothing was sent") {
				t.Errorf("undelete as nobody without a writable backup directory:\n%s", r)
			}
			if after := c.etcdGet(t, key).ModRevision; after != before {
				t.Fatalf("the refused undelete wrote: mod revision %d, was %d", after, before)
			}
			backups := filepath.Join(base, layout+"-backups")
			if err := os.Mkdir(backups, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(backups, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			undeleteAndUndo(t, run, readable, ns, name, "--backup-dir", backups)

			// As nobody, on the layout as a node has it: the key is root's.
			private := filepath.Join(base, layout+"-node")
			layNode(t, private, l, 0o600)
			r = run("--node", private, "ls", "-A")
			if r.code == 0 || !strings.Contains(r.stderr, filepath.Join(private, l.key)) || !strings.Contains(r.stderr, "run etcdpvc as root") {
				t.Errorf("ls as nobody with the client key root's only: want it refused, naming the key and root:\n%s", r)
			}
		})
	}

	t.Run("broken", func(t *testing.T) {
		// A client certificate missing: named, for each layout.
		for _, layout := range []string{"kubeadm", "rke2", "k3s", "openshift"} {
			l := layouts[layout]
			root := t.TempDir()
			layNode(t, root, l, 0o600)
			missing := filepath.Join(root, l.cert)
			if err := os.Remove(missing); err != nil {
				t.Fatal(err)
			}
			r := runEtcdpvc(t, nil, "--node", root, "ls", "-A")
			if r.code == 0 || !strings.Contains(r.stderr, "etcd client certificate "+missing) {
				t.Errorf("%s without its client certificate: want it named:\n%s", layout, r)
			}
		}
		// Two layouts below one root: both named.
		root := t.TempDir()
		layNode(t, root, layouts["kubeadm"], 0o600)
		layNode(t, root, layouts["rke2"], 0o600)
		r := runEtcdpvc(t, nil, "--node", root, "doctor")
		for _, want := range []string{"kubeadm (" + filepath.Join(root, "etc/kubernetes/manifests/kube-apiserver.yaml") + ")",
			"rke2 (" + filepath.Join(root, "var/lib/rancher/rke2/agent/pod-manifests/kube-apiserver.yaml") + ")"} {
			if r.code == 0 || !strings.Contains(r.stdout, want) {
				t.Errorf("two layouts: want %q named:\n%s", want, r)
			}
		}
		// A client certificate of another CA: etcd refuses it, so the
		// layout's certificates are what connects.
		root = t.TempDir()
		layNode(t, root, layouts["kubeadm"], 0o600)
		other, err := newPKI(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for p, src := range map[string]string{layouts["kubeadm"].cert: other.etcdClientCert, layouts["kubeadm"].key: other.etcdClientKey} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, p), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if r := runEtcdpvc(t, nil, "--node", root, "ls", "-A"); r.code == 0 {
			t.Errorf("a client certificate etcd's CA did not sign was accepted:\n%s", r)
		}
	})
}
