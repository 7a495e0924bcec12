package verify

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/etcdpvc/etcdpvc/internal/regular"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	touch := func(p string) string {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flag := touch("flag.conf")
	envA, envB := touch("a.conf"), touch("b.conf")
	missing := filepath.Join(root, "missing.conf")
	admin := touch("node/etc/kubernetes/admin.conf")
	manifests := filepath.Join(root, "node/etc/kubernetes/manifests")
	superOnly := touch("super/etc/kubernetes/super-admin.conf")
	superManifests := filepath.Join(root, "super/etc/kubernetes/manifests")
	host := touch("host/etc/kubernetes/admin.conf")
	hostRoot := filepath.Join(root, "host")
	_ = host
	emptyManifests := filepath.Join(root, "empty/etc/kubernetes/manifests")

	tests := []struct {
		name    string
		o       FindOptions
		want    Kubeconfig
		wantErr error // nil: no error; else errors.Is
		anyErr  bool
	}{
		{name: "flag wins", o: FindOptions{Flag: flag, Env: envA, Kubeadm: true, ManifestsDir: manifests},
			want: Kubeconfig{Paths: []string{flag}, Source: "--kubeconfig"}},
		{name: "flag missing is an error", o: FindOptions{Flag: missing, Env: envA}, anyErr: true},
		{name: "kubeadm admin.conf wins over env", o: FindOptions{Env: envA, Kubeadm: true, ManifestsDir: manifests},
			want: Kubeconfig{Paths: []string{admin}, Source: "--kubeadm", HostRoot: filepath.Join(root, "node")}},
		{name: "kubeadm super-admin.conf", o: FindOptions{Kubeadm: true, ManifestsDir: superManifests},
			want: Kubeconfig{Paths: []string{superOnly}, Source: "--kubeadm", HostRoot: filepath.Join(root, "super")}},
		{name: "kubeadm below a host root", o: FindOptions{Kubeadm: true, ManifestsDir: hostRoot + "/etc/kubernetes/manifests"},
			want: Kubeconfig{Paths: []string{filepath.Join(hostRoot, "etc/kubernetes/admin.conf")}, Source: "--kubeadm", HostRoot: hostRoot}},
		{name: "kubeadm without admin kubeconfig falls back to env", o: FindOptions{Env: envA, Kubeadm: true, ManifestsDir: emptyManifests},
			want: Kubeconfig{Paths: []string{envA}, Source: "$KUBECONFIG"}},
		{name: "env list skips missing files", o: FindOptions{Env: envA + string(filepath.ListSeparator) + missing + string(filepath.ListSeparator) + envB},
			want: Kubeconfig{Paths: []string{envA, envB}, Source: "$KUBECONFIG"}},
		{name: "env only missing", o: FindOptions{Env: missing}, wantErr: ErrNoKubeconfig},
		{name: "nothing", o: FindOptions{}, wantErr: ErrNoKubeconfig},
		{name: "kubeadm nothing", o: FindOptions{Kubeadm: true, ManifestsDir: emptyManifests}, wantErr: ErrNoKubeconfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Find(tc.o)
			switch {
			case tc.anyErr || tc.wantErr != nil:
				if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
					t.Fatalf("Find = %+v, %v; want error %v", got, err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("Find: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Find (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRESTConfigHostRoot loads a kubeconfig read below a host root: its
// absolute file paths are taken below the root.
func TestRESTConfigHostRoot(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc/kubernetes")
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: k
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: /etc/kubernetes/pki/ca.crt}
users:
- name: a
  user: {client-certificate: /etc/kubernetes/pki/admin.crt, client-key: /etc/kubernetes/pki/admin.key}
contexts:
- name: k
  context: {cluster: k, user: a}
current-context: k
`
	for _, f := range []string{"ca.crt", "admin.crt", "admin.key"} {
		if err := os.WriteFile(filepath.Join(dir, "pki", f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "admin.conf")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := Kubeconfig{Paths: []string{p}, Source: "--kubeadm", HostRoot: root}.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := [3]string{filepath.Join(root, "etc/kubernetes/pki/ca.crt"), filepath.Join(root, "etc/kubernetes/pki/admin.crt"), filepath.Join(root, "etc/kubernetes/pki/admin.key")}
	got := [3]string{rc.CAFile, rc.CertFile, rc.KeyFile}
	if got != want || rc.Host != "https://127.0.0.1:6443" {
		t.Errorf("RESTConfig: host %s, files %v; want %v", rc.Host, got, want)
	}
}

// TestKubeconfigFIFO: a kubeconfig that is a FIFO is refused at once, not
// opened for a writer that never comes.
func TestKubeconfigFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "kubeconfig")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Kubeconfig{Paths: []string{fifo}}.RESTConfig()
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, regular.ErrNotRegular) {
			t.Errorf("a FIFO kubeconfig: %v, want ErrNotRegular", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("loading a FIFO kubeconfig hangs")
	}
}
