package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// layNode writes files below root, each path as the node names it.
func layNode(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNodeLayouts lays out, below a test root, the files of each
// control-plane distribution etcdpvc's --node knows, naming a real etcd
// and a real kube-apiserver with encryption at rest, and runs from a
// shell with no ETCDCTL_* variable and no --endpoints: doctor, ls -A
// --terminating, an undelete verified through the apiserver the layout's
// kubeconfig names, and the printed undo. This harness's etcd speaks
// plain HTTP, so the layouts' certificate files are the harness's PEM
// files, present as the layout needs them but not used to connect; the
// CLI's scripts (node_layouts.txtar) cover TLS with client certificates.
func TestNodeLayouts(t *testing.T) {
	enc := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(enc, []byte(encryptionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "node", ClusterOptions{EncryptionConfig: enc})
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
	ca, _ := os.ReadFile(c.pki.caCert)
	crt, _ := os.ReadFile(c.pki.serverCert)
	key, _ := os.ReadFile(c.pki.serverKey)
	manifest := func(flags ...string) string {
		return "spec:\n  containers:\n  - name: kube-apiserver\n    command:\n    - kube-apiserver\n    - --etcd-servers=" + c.EtcdURL + "\n    - " + strings.Join(flags, "\n    - ") + "\n"
	}
	rev := "etc/kubernetes/static-pod-resources/kube-apiserver-pod-4/"
	layouts := map[string]map[string]string{
		"kubeadm": {
			"etc/kubernetes/manifests/kube-apiserver.yaml": manifest("--etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt", "--etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt",
				"--etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key", "--encryption-provider-config=/etc/kubernetes/enc/enc.yaml"),
			"etc/kubernetes/pki/etcd/ca.crt": string(ca), "etc/kubernetes/pki/apiserver-etcd-client.crt": string(crt), "etc/kubernetes/pki/apiserver-etcd-client.key": string(key),
			"etc/kubernetes/enc/enc.yaml": encryptionConfig, "etc/kubernetes/admin.conf": kubeconfig,
		},
		"rke2": {
			"var/lib/rancher/rke2/agent/pod-manifests/kube-apiserver.yaml": manifest("--etcd-cafile=/var/lib/rancher/rke2/server/tls/etcd/server-ca.crt",
				"--etcd-certfile=/var/lib/rancher/rke2/server/tls/etcd/client.crt", "--etcd-keyfile=/var/lib/rancher/rke2/server/tls/etcd/client.key",
				"--encryption-provider-config=/var/lib/rancher/rke2/server/cred/encryption-config.json"),
			"var/lib/rancher/rke2/server/tls/etcd/server-ca.crt": string(ca), "var/lib/rancher/rke2/server/tls/etcd/client.crt": string(crt), "var/lib/rancher/rke2/server/tls/etcd/client.key": string(key),
			"var/lib/rancher/rke2/server/cred/encryption-config.json": encryptionConfig, "etc/rancher/rke2/rke2.yaml": kubeconfig,
		},
		"k3s": {
			"etc/rancher/k3s/config.yaml":                       "secrets-encryption: true\nkube-apiserver-arg:\n- etcd-servers=" + c.EtcdURL + "\n",
			"var/lib/rancher/k3s/server/db/etcd/name":           "node-1",
			"var/lib/rancher/k3s/server/tls/etcd/server-ca.crt": string(ca), "var/lib/rancher/k3s/server/tls/etcd/client.crt": string(crt), "var/lib/rancher/k3s/server/tls/etcd/client.key": string(key),
			"var/lib/rancher/k3s/server/cred/encryption-config.json": encryptionConfig, "etc/rancher/k3s/k3s.yaml": kubeconfig,
		},
		"openshift": {
			"etc/kubernetes/manifests/kube-apiserver-pod.yaml": "spec:\n  volumes:\n  - name: resource-dir\n    hostPath: {path: /etc/kubernetes/static-pod-resources/kube-apiserver-pod-4}\n",
			rev + "configmaps/config/config.yaml": "apiServerArguments:\n  etcd-servers: [" + c.EtcdURL + "]\n  etcd-prefix: [registry]\n" +
				"  etcd-cafile: [/etc/kubernetes/static-pod-resources/configmaps/etcd-serving-ca/ca-bundle.crt]\n" +
				"  etcd-certfile: [/etc/kubernetes/static-pod-resources/secrets/etcd-client/tls.crt]\n" +
				"  etcd-keyfile: [/etc/kubernetes/static-pod-resources/secrets/etcd-client/tls.key]\n" +
				"  encryption-provider-config: [/etc/kubernetes/static-pod-resources/secrets/encryption-config/encryption-config]\n",
			rev + "configmaps/etcd-serving-ca/ca-bundle.crt": string(ca), rev + "secrets/etcd-client/tls.crt": string(crt), rev + "secrets/etcd-client/tls.key": string(key),
			rev + "secrets/encryption-config/encryption-config":                                                      encryptionConfig,
			"etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/node-kubeconfigs/localhost.kubeconfig": kubeconfig,
		},
	}
	for _, layout := range []string{"kubeadm", "rke2", "k3s", "openshift"} {
		t.Run(layout, func(t *testing.T) {
			root := t.TempDir()
			layNode(t, root, layouts[layout])
			ns, name := "node-"+layout, "data-"+layout
			c.EnsureNamespace(t, ns)
			terminatingPVC(t, c, ns, name)
			stored := c.etcdGet(t, "/registry/persistentvolumeclaims/"+ns+"/"+name)
			if !strings.HasPrefix(string(stored.Value), secretboxPrefix) {
				t.Fatalf("the PVC is not stored encrypted: %q", storedPrefix(stored.Value))
			}

			r := runEtcdpvc(t, nil, "--node", root, "doctor")
			if r.code != 0 {
				t.Errorf("doctor --node failed:\n%s", r)
			}
			for _, want := range []string{"OK    node          " + layout + " node below " + root + ": etcd " + c.EtcdURL + ", prefix /registry, encryption config " + root,
				"OK    node          kubeconfig: " + root, "answers for this cluster; writes will be verified"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("doctor --node lacks %q:\n%s", want, r)
				}
			}
			r = runEtcdpvc(t, nil, "--node", root, "ls", "-A", "--terminating")
			if r.code != 0 || !strings.Contains(r.stdout, name) {
				t.Fatalf("ls -A --terminating --node:\n%s", r)
			}
			r = runEtcdpvc(t, nil, "--node", root, "undelete", "pvc", name, "-n", ns, "--yes", "--verify=always", "--backup-dir", t.TempDir())
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
			args := append(strings.Fields(strings.TrimSpace(undo)), "--yes", "--backup-dir", t.TempDir())
			if r := runEtcdpvc(t, nil, args...); r.code != 0 {
				t.Fatalf("the printed undo:\n%s", r)
			}
			got, err = c.Client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil || got.DeletionTimestamp == nil {
				t.Fatalf("after the undo the apiserver serves %v, %v: want the PVC Terminating again", got, err)
			}
		})
	}
}
