package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lay writes files below root, each path as the node names it.
func lay(t *testing.T, root string, files map[string]string) {
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

// TestK3sDataDirAndArgs: data-dir moves every file; kube-apiserver-arg's
// etcd-prefix wins over k3s's default; an encryption config that the
// config does not turn on is not used, and a note says so.
func TestK3sDataDirAndArgs(t *testing.T) {
	root := t.TempDir()
	lay(t, root, map[string]string{
		"etc/rancher/k3s/config.yaml":                "data-dir: /srv/k3s\nkube-apiserver-arg: etcd-prefix=/k3s/\n",
		"srv/k3s/server/db/etcd/member/wal/0.wal":    "",
		"srv/k3s/server/tls/etcd/server-ca.crt":      "ca",
		"srv/k3s/server/tls/etcd/client.crt":         "crt",
		"srv/k3s/server/tls/etcd/client.key":         "key",
		"srv/k3s/server/cred/encryption-config.json": "{}",
		"etc/rancher/k3s/k3s.yaml":                   "kubeconfig",
	})
	f, err := Detect(root)
	if err != nil {
		t.Fatal(err)
	}
	a := f.APIServer
	got := []string{string(f.Layout), strings.Join(a.Endpoints, ","), a.Prefix, a.CAFile, a.CertFile, a.EncryptionConfig, f.Kubeconfig}
	want := []string{"k3s", "https://127.0.0.1:2379", "/k3s", root + "/srv/k3s/server/tls/etcd/server-ca.crt", root + "/srv/k3s/server/tls/etcd/client.crt", "", root + "/etc/rancher/k3s/k3s.yaml"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("k3s layout (-want +got):\n%s", diff)
	}
	if len(f.Notes) != 1 || !strings.Contains(f.Notes[0], "encryption-config.json exists, but the k3s config does not turn on secrets-encryption") {
		t.Errorf("notes: %q", f.Notes)
	}
}

// TestK3sOnKine: a k3s server without embedded etcd is reached through
// kine's socket, without certificates, with the config's etcd-prefix and
// its encryption config when secrets-encryption is on.
func TestK3sOnKine(t *testing.T) {
	root := t.TempDir()
	lay(t, root, map[string]string{
		"etc/rancher/k3s/config.yaml":                            "secrets-encryption: true\nkube-apiserver-arg: [etcd-prefix=/k3s/]\n",
		"var/lib/rancher/k3s/server/kine.sock":                   "",
		"var/lib/rancher/k3s/server/db/state.db":                 "",
		"var/lib/rancher/k3s/server/cred/encryption-config.json": "{}",
	})
	f, err := Detect(root)
	if err != nil {
		t.Fatal(err)
	}
	a := f.APIServer
	got := []string{string(f.Layout), strings.Join(a.Endpoints, ","), a.Prefix, a.CAFile, a.CertFile, a.KeyFile, a.EncryptionConfig}
	want := []string{"k3s", "unix://" + root + "/var/lib/rancher/k3s/server/kine.sock", "/k3s", "", "", "", root + "/var/lib/rancher/k3s/server/cred/encryption-config.json"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("k3s on kine (-want +got):\n%s", diff)
	}
	// Without the socket k3s is not running: the database is named.
	if err := os.Remove(filepath.Join(root, "var/lib/rancher/k3s/server/kine.sock")); err != nil {
		t.Fatal(err)
	}
	if _, err := Detect(root); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "--db "+root+"/var/lib/rancher/k3s/server/db/state.db") {
		t.Errorf("k3s on kine, not running: %v", err)
	}
}

// TestOpenShiftStorageConfig: a config of an older release, with
// storageConfig and no etcd-servers argument; files named as the pod
// sees them are read from the revision the manifest mounts, not another.
func TestOpenShiftStorageConfig(t *testing.T) {
	root := t.TempDir()
	rev := "etc/kubernetes/static-pod-resources/kube-apiserver-pod-12/"
	lay(t, root, map[string]string{
		"etc/kubernetes/manifests/kube-apiserver-pod.yaml":                                        "spec:\n  volumes:\n  - name: resource-dir\n    hostPath: {path: /etc/kubernetes/static-pod-resources/kube-apiserver-pod-12}\n",
		rev + "configmaps/config/config.yaml":                                                     "storageConfig:\n  urls: [https://10.0.0.1:2379, https://10.0.0.2:2379]\n  ca: /etc/kubernetes/static-pod-resources/configmaps/etcd-serving-ca/ca-bundle.crt\n  certFile: /etc/kubernetes/static-pod-resources/secrets/etcd-client/tls.crt\n  keyFile: /etc/kubernetes/static-pod-resources/secrets/etcd-client/tls.key\n  storagePrefix: kubernetes.io\n",
		rev + "configmaps/etcd-serving-ca/ca-bundle.crt":                                          "ca",
		rev + "secrets/etcd-client/tls.crt":                                                       "crt",
		rev + "secrets/etcd-client/tls.key":                                                       "key",
		"etc/kubernetes/static-pod-resources/kube-apiserver-pod-11/configmaps/config/config.yaml": "storageConfig: {urls: [https://10.9.9.9:2379]}\n",
	})
	f, err := Detect(root)
	if err != nil {
		t.Fatal(err)
	}
	a := f.APIServer
	got := []string{string(f.Layout), strings.Join(a.Endpoints, ","), a.Prefix, a.CAFile, a.KeyFile}
	want := []string{"openshift", "https://10.0.0.1:2379,https://10.0.0.2:2379", "/kubernetes.io", filepath.Join(root, rev, "configmaps/etcd-serving-ca/ca-bundle.crt"), filepath.Join(root, rev, "secrets/etcd-client/tls.key")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("openshift layout (-want +got):\n%s", diff)
	}
	if f.Kubeconfig != "" || len(f.Notes) != 1 || !strings.Contains(f.Notes[0], "no admin kubeconfig") {
		t.Errorf("kubeconfig %q, notes %q: want none, said so", f.Kubeconfig, f.Notes)
	}
}

// TestOpenShiftRevisionAmbiguous: a manifest that mounts two revisions
// names no one revision; Detect stops rather than choose.
func TestOpenShiftRevisionAmbiguous(t *testing.T) {
	root := t.TempDir()
	lay(t, root, map[string]string{
		"etc/kubernetes/manifests/kube-apiserver-pod.yaml": "spec:\n  volumes:\n  - hostPath: {path: /etc/kubernetes/static-pod-resources/kube-apiserver-pod-1}\n  - hostPath: {path: /etc/kubernetes/static-pod-resources/kube-apiserver-pod-2}\n",
	})
	_, err := Detect(root)
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver-pod.yaml: want one hostPath volume") {
		t.Errorf("Detect = %v, want the manifest named", err)
	}
}

// TestDetectFallback: with no root given, "/" is tried and then /host,
// where kubectl debug node mounts the node; a layout below the first wins,
// a broken one stops there, and when neither holds one both are named.
func TestDetectFallback(t *testing.T) {
	kubeadmNode := map[string]string{
		"etc/kubernetes/manifests/kube-apiserver.yaml": "spec:\n  containers:\n  - command:\n    - kube-apiserver\n    - --etcd-servers=https://127.0.0.1:2379\n" +
			"    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt\n    - --etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt\n    - --etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key\n",
		"etc/kubernetes/pki/etcd/ca.crt": "ca", "etc/kubernetes/pki/apiserver-etcd-client.crt": "crt", "etc/kubernetes/pki/apiserver-etcd-client.key": "key",
	}
	dir := t.TempDir()
	empty, host, node, broken := filepath.Join(dir, "empty"), filepath.Join(dir, "host"), filepath.Join(dir, "node"), filepath.Join(dir, "broken")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	lay(t, host, kubeadmNode)
	lay(t, node, kubeadmNode)
	lay(t, broken, kubeadmNode)
	if err := os.Remove(filepath.Join(broken, "etc/kubernetes/pki/apiserver-etcd-client.key")); err != nil {
		t.Fatal(err)
	}

	f, err := detectFallback(empty, host)
	if err != nil {
		t.Fatal(err)
	}
	if f.Root != host || f.APIServer.KeyFile != host+"/etc/kubernetes/pki/apiserver-etcd-client.key" {
		t.Errorf("no layout below the root: read below %s, key %s; want below %s", f.Root, f.APIServer.KeyFile, host)
	}
	if f, err := detectFallback(node, host); err != nil || f.Root != node {
		t.Errorf("a layout below the root: %v, %v; want it read there, not below the fallback", f, err)
	}
	if _, err := detectFallback(broken, host); err == nil || !strings.Contains(err.Error(), broken+"/etc/kubernetes/pki/apiserver-etcd-client.key") {
		t.Errorf("a broken layout below the root: %v; want it named, the fallback not tried", err)
	}
	missing := filepath.Join(dir, "missing")
	if _, err := detectFallback(empty, missing); !errors.Is(err, ErrNoLayout) || !strings.Contains(err.Error(), missing+", where kubectl debug node mounts the node, does not exist") {
		t.Errorf("no layout and no fallback: %v", err)
	}
	if _, err := detectFallback(empty, empty); !errors.Is(err, ErrNoLayout) || !strings.Contains(err.Error(), "below "+empty+" or "+empty+": none of") {
		t.Errorf("no layout below either: %v", err)
	}
}
