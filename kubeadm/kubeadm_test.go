package kubeadm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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
    - --etcd-servers-overrides=/events#https://10.0.0.5:2379;https://10.0.0.6:2379,coordination.k8s.io/leases#https://10.0.0.7:2379
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
		ServersOverrides: []Override{
			{Resource: "events", Servers: []string{"https://10.0.0.5:2379", "https://10.0.0.6:2379"}},
			{Group: "coordination.k8s.io", Resource: "leases", Servers: []string{"https://10.0.0.7:2379"}},
		},
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

func TestParseServersOverrides(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []Override
		wantErr string
	}{
		{in: ""},
		{in: "/events#https://10.0.0.5:2379", want: []Override{{Resource: "events", Servers: []string{"https://10.0.0.5:2379"}}}},
		{in: "apps/deployments#http://a:2379;http://b:2379, /events#http://c:2379", want: []Override{
			{Group: "apps", Resource: "deployments", Servers: []string{"http://a:2379", "http://b:2379"}},
			{Resource: "events", Servers: []string{"http://c:2379"}},
		}},
		{in: "events#http://a:2379", wantErr: "want group/resource before '#'"},
		{in: "/events", wantErr: "want group/resource#servers"},
		{in: "/events#", wantErr: "no servers"},
		{in: "/#http://a:2379", wantErr: "want group/resource"},
		{in: "/events#http://a:2379,/events#http://b:2379", wantErr: "overridden twice"},
	} {
		got, err := ParseServersOverrides(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseServersOverrides(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseServersOverrides(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseServersOverrides(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestParseEtcd(t *testing.T) {
	manifest := []byte(`apiVersion: v1
kind: Pod
spec:
  containers:
  - name: etcd
    command:
    - etcd
    - --name=cp-1
    - --data-dir=/var/lib/etcd
    - --quota-backend-bytes
    - "8589934592"
`)
	m, err := ParseEtcd("etcd.yaml", manifest)
	if err != nil {
		t.Fatal(err)
	}
	if m.QuotaBackendBytes != 8<<30 || m.DataDir != "/var/lib/etcd" || m.Name != "cp-1" {
		t.Errorf("ParseEtcd: quota %d, data dir %q, name %q; want 8Gi, /var/lib/etcd, cp-1", m.QuotaBackendBytes, m.DataDir, m.Name)
	}
	if _, err := ParseEtcd("etcd.yaml", []byte("spec:\n  containers:\n  - name: etcd\n    command: [etcd, --quota-backend-bytes=8G]\n")); err == nil {
		t.Error("ParseEtcd accepted --quota-backend-bytes=8G")
	}
	if _, err := ReadEtcd(t.TempDir()); !errors.Is(err, ErrNoEtcdManifest) {
		t.Errorf("ReadEtcd of an empty directory: %v; want ErrNoEtcdManifest", err)
	}
}
