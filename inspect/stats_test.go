package inspect

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/etcdpvc/etcdpvc/store"
)

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{2090, "2090"},
		{10<<10 - 1, "10239"},
		{10 << 10, "10.0Ki"},
		{1536 << 10, "1536.0Ki"},
		{10 << 20, "10.0Mi"},
		{3 << 30, "3072.0Mi"},
		{12 << 30, "12.0Gi"},
		{20 << 40, "20.0Ti"},
	} {
		if got := HumanBytes(tc.n); got != tc.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestGroupOf(t *testing.T) {
	for key, want := range map[string]string{
		"/registry/persistentvolumeclaims/demo/www-web-0":      "persistentvolumeclaims",
		"/registry/services/specs/demo/nginx":                  "services",
		"/registry/masterleases/10.0.0.1":                      "(masterleases)",
		"/other/thing":                                         "(outside /registry/)",
		"/registry/e2e.example.com/widgets/demo/w1":            "widgets.e2e.example.com",
		"/registry/apiregistration.k8s.io/apiservices/v1.apps": "apiservices.apiregistration.k8s.io",
	} {
		if got := GroupOf("/registry/", key); got != want {
			t.Errorf("GroupOf(%q) = %q, want %q", key, got, want)
		}
	}
}

func openCorpusSnapshot(t *testing.T, path string) *store.Bolt {
	t.Helper()
	b, err := store.OpenBolt(path, store.BoltOptions{SkipHashCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestBoltStats(t *testing.T) {
	b := openCorpusSnapshot(t, filepath.Join(corpusDir, "etcd-snapshot.db"))
	rep, err := BoltStats(context.Background(), b, "/registry/", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Objects != 218 || *rep.Revisions != 254 || *rep.Tombstones != 2 || rep.Revision != 255 || rep.OldestRevision != 2 || rep.Incomplete != "" {
		t.Errorf("objects %d, revisions %d, tombstones %d, revision %d, oldest %d, incomplete %q; want 218, 254, 2, 255, 2, none",
			rep.Objects, *rep.Revisions, *rep.Tombstones, rep.Revision, rep.OldestRevision, rep.Incomplete)
	}
	if len(rep.Largest) != 1 || rep.Largest[0].Key != "/registry/clusterroles/system:aggregate-to-edit" || rep.Largest[0].Bytes != 2133 {
		t.Errorf("largest %+v", rep.Largest)
	}
	var pvcs *ResourceStats
	for _, r := range rep.Resources {
		if r.Resource == "persistentvolumeclaims" {
			pvcs = r
		}
	}
	if pvcs == nil || pvcs.Objects != 3 || pvcs.Bytes != 2090 || *pvcs.Revisions != 9 {
		t.Errorf("persistentvolumeclaims %+v", pvcs)
	}
}

// TestBoltStatsDamaged checks that a page that cannot be read gives the
// report of what was read, marked incomplete, and the error.
func TestBoltStatsDamaged(t *testing.T) {
	raw := corpus(t, "etcd-snapshot.db")
	copy(raw[20*4096:], bytes.Repeat([]byte{0xff}, 16))
	path := filepath.Join(t.TempDir(), "damaged.db")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	b := openCorpusSnapshot(t, path)
	rep, err := BoltStats(context.Background(), b, "/registry/", 5, nil)
	if !errors.Is(err, store.ErrCorrupt) || rep == nil || rep.Incomplete == "" {
		t.Fatalf("BoltStats: report %v, error %v; want an incomplete report and ErrCorrupt", rep, err)
	}
}
