package kubeadm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHostRoot(t *testing.T) {
	for _, tc := range []struct{ dir, want string }{
		{"/etc/kubernetes/manifests", ""},
		{"/etc/kubernetes/manifests/", ""},
		{"/host/etc/kubernetes/manifests", "/host"},
		{"/host/etc/kubernetes/manifests/", "/host"},
		{"/mnt/node-1/etc/kubernetes/manifests", "/mnt/node-1"},
		{"/srv/manifests", ""},
		{"manifests", ""},
		{"host/etc/kubernetes/manifests", ""},
	} {
		if got := HostRoot(tc.dir); got != tc.want {
			t.Errorf("HostRoot(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
}

// TestReadBelowHostRoot reads a manifest as a `kubectl debug node` pod sees
// it, under /host: every file it names is looked for below the same root.
func TestReadBelowHostRoot(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc", "kubernetes", "manifests")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := &APIServer{
		Manifest:         filepath.Join(dir, ManifestName),
		Endpoints:        []string{"https://127.0.0.1:2379", "https://127.0.0.2:2379"},
		CAFile:           filepath.Join(root, "etc/kubernetes/pki/etcd/ca.crt"),
		CertFile:         filepath.Join(root, "etc/kubernetes/pki/apiserver-etcd-client.crt"),
		KeyFile:          filepath.Join(root, "etc/kubernetes/pki/apiserver-etcd-client.key"),
		Prefix:           "/custom",
		EncryptionConfig: filepath.Join(root, "etc/kubernetes/enc/config.yaml"),
		HostRoot:         root,
		ServersOverrides: []Override{
			{Group: "", Resource: "events", Servers: []string{"https://10.0.0.5:2379", "https://10.0.0.6:2379"}},
			{Group: "coordination.k8s.io", Resource: "leases", Servers: []string{"https://10.0.0.7:2379"}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read below a host root (-want +got):\n%s", diff)
	}
}
