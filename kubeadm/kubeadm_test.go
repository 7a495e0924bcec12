package kubeadm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    image: registry.k8s.io/kube-apiserver:v1.37.2
    command:
    - kube-apiserver
    - --advertise-address=10.0.0.1
    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt
    - --etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt
    - --etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key
    - --etcd-servers=https://127.0.0.1:2379,https://127.0.0.2:2379
    - --etcd-prefix=/custom/
    - --encryption-provider-config
    - /etc/kubernetes/enc/config.yaml
`

func TestRead(t *testing.T) {
	dir := t.TempDir()
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
		CAFile:           "/etc/kubernetes/pki/etcd/ca.crt",
		CertFile:         "/etc/kubernetes/pki/apiserver-etcd-client.crt",
		KeyFile:          "/etc/kubernetes/pki/apiserver-etcd-client.key",
		Prefix:           "/custom",
		EncryptionConfig: "/etc/kubernetes/enc/config.yaml",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          error
	}{
		{"missing", "", ErrNoManifest},
		{"no etcd servers", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: kube-apiserver\n    command: [kube-apiserver]\n", nil},
		{"not yaml", "{{{", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.content != "" {
				if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Read(dir)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
