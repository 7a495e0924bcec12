package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/store"
)

func TestBackupSource(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{})
	et, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer et.Close()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string { return filepath.Join(wd, p) }

	for _, tc := range []struct {
		name          string
		s             *Session
		wantManifests string
		wantID        bool
	}{
		{"live, relative paths made absolute", &Session{Reader: et, Options: Options{Endpoints: c.Endpoints(), CACert: "pki/ca.crt", Cert: "pki/c.crt", Key: "pki/c.key", Prefix: "/registry", EncryptionConfig: "enc.yaml"}}, "", true},
		{"kubeadm records its manifests", &Session{Reader: et, Options: Options{Endpoints: c.Endpoints(), CACert: "/etc/ca.crt", Cert: "pki/c.crt", Key: "pki/c.key", Prefix: "/registry", EncryptionConfig: "enc.yaml", Kubeadm: true, ManifestsDir: "manifests"}}, abs("manifests"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := tc.s.BackupSource(ctx)
			if err != nil {
				t.Fatal(err)
			}
			o := tc.s.Options
			if !slices.Equal(src.Endpoints, o.Endpoints) || src.Prefix != o.Prefix || src.Kubeadm != o.Kubeadm || src.ManifestsDir != tc.wantManifests {
				t.Errorf("source = %+v, want the session's endpoints, prefix and kubeadm settings", src)
			}
			for got, given := range map[string]string{src.CACert: o.CACert, src.Cert: o.Cert, src.Key: o.Key, src.EncryptionConfig: o.EncryptionConfig} {
				want := given
				if !filepath.IsAbs(given) {
					want = abs(given)
				}
				if got != want {
					t.Errorf("recorded %q for %q, want %q", got, given, want)
				}
			}
			if (src.ClusterID != "") != tc.wantID {
				t.Errorf("ClusterID = %q, want one: %v", src.ClusterID, tc.wantID)
			}
		})
	}
}
