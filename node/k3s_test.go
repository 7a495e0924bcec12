package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestK3sOnKineSQLServer: a k3s server whose datastore-endpoint is a
// PostgreSQL or MySQL URL runs kine on it, listening on the same socket:
// it is reached there; when k3s is not running, the error names the
// --db URL, its password redacted.
func TestK3sOnKineSQLServer(t *testing.T) {
	for _, ep := range []struct{ url, redacted string }{
		{"postgres://k3s:Pg-Secret@db.example:5432/k3s", "postgres://k3s:xxxxx@db.example:5432/k3s"},
		{"mysql://k3s:My-Secret@tcp(db.example:3306)/k3s", "mysql://k3s:xxxxx@tcp(db.example:3306)/k3s"},
	} {
		root := t.TempDir()
		lay(t, root, map[string]string{
			"etc/rancher/k3s/config.yaml":          "datastore-endpoint: \"" + ep.url + "\"\n",
			"var/lib/rancher/k3s/server/kine.sock": "",
		})
		f, err := Detect(root)
		if err != nil {
			t.Fatalf("%s: %v", ep.redacted, err)
		}
		if got, want := strings.Join(f.APIServer.Endpoints, ","), "unix://"+root+"/var/lib/rancher/k3s/server/kine.sock"; got != want {
			t.Errorf("%s: endpoints %s, want %s", ep.redacted, got, want)
		}
		for _, n := range f.Notes {
			if strings.Contains(n, "Secret") {
				t.Errorf("a note shows the password: %s", n)
			}
		}
		if err := os.Remove(filepath.Join(root, "var/lib/rancher/k3s/server/kine.sock")); err != nil {
			t.Fatal(err)
		}
		_, err = Detect(root)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "--db "+ep.redacted) || strings.Contains(err.Error(), "Secret") {
			t.Errorf("k3s on %s, not running: %v", ep.redacted, err)
		}
	}
	// An external etcd is no kine.
	root := t.TempDir()
	lay(t, root, map[string]string{"etc/rancher/k3s/config.yaml": "datastore-endpoint: https://10.0.0.1:2379\n"})
	if _, err := Detect(root); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "--endpoints") {
		t.Errorf("k3s on an external etcd: %v", err)
	}
}
