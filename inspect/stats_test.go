package inspect

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/wal"
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
	rep, err := BoltStats(context.Background(), b, StatsOptions{Prefix: "/registry/", Top: 1})
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
	rep, err := BoltStats(context.Background(), b, StatsOptions{Prefix: "/registry/", Top: 5})
	if !errors.Is(err, store.ErrCorrupt) || rep == nil || rep.Incomplete == "" {
		t.Fatalf("BoltStats: report %v, error %v; want an incomplete report and ErrCorrupt", rep, err)
	}
}

// TestStatsEncryptionAudit counts the corpus snapshot's objects by the
// provider and key they are stored under (aescbc, aesgcm and secretbox
// key1, and plain values), and marks as stale those not under their
// resource's write provider; without a config staleness is unknown.
func TestStatsEncryptionAudit(t *testing.T) {
	ctx := context.Background()
	b := openCorpusSnapshot(t, filepath.Join(corpusDir, "etcd-snapshot.db"))
	enc, err := encryption.Load(ctx, filepath.Join(corpusDir, "encryption", "encryption-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	write := func(gr schema.GroupResource) string { return enc.Providers(gr)[0] }
	type row struct {
		provider string
		objects  int64
		stale    bool
	}
	tests := []struct {
		resource, write string
		stale           int64
		storage         []row
	}{
		{"secrets", "aescbc/key1", 0, []row{{"aescbc/key1", 2, false}}},
		{"configmaps", "aesgcm/key1", 2, []row{{"aesgcm/key1", 2, false}, {"identity", 2, true}}},
		{"persistentvolumeclaims", "secretbox/key1", 0, []row{{"secretbox/key1", 3, false}}},
		{"pods", "identity", 0, []row{{"identity", 1, false}}},
	}
	for _, live := range []bool{false, true} {
		var rep *StatsReport
		if live {
			rep, err = LiveStats(ctx, b, StatsOptions{Prefix: "/registry/", PageSize: 500, Write: write, Dec: enc})
		} else {
			rep, err = BoltStats(ctx, b, StatsOptions{Prefix: "/registry/", Write: write, Dec: enc})
		}
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*ResourceStats{}
		for _, r := range rep.Resources {
			byName[r.Resource] = r
		}
		for _, tc := range tests {
			r := byName[tc.resource]
			if r == nil {
				t.Fatalf("no %s in %v", tc.resource, rep.Resources)
			}
			var got []row
			for _, c := range r.Storage {
				got = append(got, row{c.Provider, c.Objects, c.Stale})
			}
			if r.WriteProvider != tc.write || r.Stale == nil || *r.Stale != tc.stale || !reflect.DeepEqual(got, tc.storage) {
				t.Errorf("live %v: %s: write %q stale %v storage %v, want %q %d %v", live, tc.resource, r.WriteProvider, r.Stale, got, tc.write, tc.stale, tc.storage)
			}
		}
	}
	rep, err := BoltStats(ctx, b, StatsOptions{Prefix: "/registry/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Resources {
		if r.Stale != nil || r.WriteProvider != "" {
			t.Errorf("no config: %s: write %q stale %v", r.Resource, r.WriteProvider, r.Stale)
		}
		if r.Resource == "configmaps" && len(r.Storage) != 2 {
			t.Errorf("no config: configmaps storage %v", r.Storage)
		}
	}
}

func TestFromWAL(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cov        wal.WALCoverage
		incomplete string
		note       string
	}{
		{"the log alone, complete", wal.WALCoverage{Dir: "w", FirstRevision: 2, LastRevision: 9}, "", "the log alone"},
		{"over a db, complete", wal.WALCoverage{Dir: "w", DB: "snap.db", LastRevision: 9}, "", "the log replayed over db snap.db"},
		{"revisions stop", wal.WALCoverage{Dir: "w", FirstRevision: 2, LastRevision: 7, RevisionsStop: "entry 12 enables authentication"},
			"the log establishes the keyspace up to revision 7 only: its later writes are not counted (entry 12 enables authentication)", "the log alone"},
		{"no revision", wal.WALCoverage{Dir: "w", RevisionsStop: "the log starts at raft index 5"},
			"the log establishes no revision: its writes are not counted (the log starts at raft index 5)", "the log alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &StatsReport{Snapshot: "not a file (live etcd)", Notes: []string{"live etcd: ..."}}
			FromWAL(rep, tc.cov)
			if rep.Incomplete != tc.incomplete {
				t.Errorf("Incomplete %q, want %q", rep.Incomplete, tc.incomplete)
			}
			if rep.Snapshot != "not a file (write-ahead log w)" {
				t.Errorf("Snapshot %q", rep.Snapshot)
			}
			if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], tc.note) || strings.Contains(rep.Notes[0], "live etcd") {
				t.Errorf("Notes %q, want one naming %q and not live etcd", rep.Notes, tc.note)
			}
		})
	}
}

// TestStatsStoredVersions: stats counts each resource's objects by the
// apiVersion they are stored at, read from the value (decrypted with the
// config), marks a version a release removed, and counts the values it
// could not read by why.
func TestStatsStoredVersions(t *testing.T) {
	ctx := context.Background()
	b := openCorpusSnapshot(t, filepath.Join(corpusDir, "etcd-snapshot.db"))
	enc := loadEncryption(t, filepath.Join(corpusDir, "encryption", "encryption-config.yaml"))
	for _, live := range []bool{false, true} {
		o := StatsOptions{Prefix: "/registry/", PageSize: 100, Dec: enc}
		var rep *StatsReport
		var err error
		if live {
			rep, err = LiveStats(ctx, b, o)
		} else {
			rep, err = BoltStats(ctx, b, o)
		}
		if err != nil {
			t.Fatal(err)
		}
		if rep.NotRead != 0 {
			t.Fatalf("live %v: %d values not read with the config: %+v", live, rep.NotRead, rep.Unread)
		}
		var objects int64
		for _, r := range rep.Resources {
			for _, v := range r.StoredVersions {
				objects += v.Objects
				if v.RemovedIn != "" {
					t.Errorf("live %v: %s at %s marked removed in %s", live, r.Resource, v.APIVersion, v.RemovedIn)
				}
			}
			want := map[string]string{"persistentvolumeclaims": "v1 PersistentVolumeClaim", "secrets": "v1 Secret", "deployments": "apps/v1 Deployment", "flowschemas": "flowcontrol.apiserver.k8s.io/v1 FlowSchema"}[r.Resource]
			if want != "" && (len(r.StoredVersions) != 1 || r.StoredVersions[0].APIVersion+" "+r.StoredVersions[0].Kind != want) {
				t.Errorf("live %v: %s stored as %+v, want %s", live, r.Resource, r.StoredVersions, want)
			}
		}
		if keys := countObjectKeys(t, b); objects != keys {
			t.Errorf("live %v: %d objects have a stored version, want every object key's %d", live, objects, keys)
		}
	}

	// Without the config the encrypted values are not read: counted, by
	// provider and key.
	rep, err := BoltStats(ctx, b, StatsOptions{Prefix: "/registry/"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.NotRead != 7 || rep.Unread.Encrypted != 7 {
		t.Fatalf("no config: %d not read (%+v), want the 7 encrypted values", rep.NotRead, rep.Unread)
	}
	var buf bytes.Buffer
	if err := rep.Write(&buf, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"STORED VERSIONS\n", "the versions of 7 values are unknown (UNREADABLE)", "UNREADABLE\n", "secrets                  2         Encrypted (aescbc/key1): no key"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, buf.String())
		}
	}
}

// countObjectKeys counts the keys of b that name an object.
func countObjectKeys(t *testing.T, b *store.Bolt) int64 {
	var n int64
	if _, err := b.List(context.Background(), "/registry/", store.ListOptions{}, func(kv *store.KeyValue) error {
		if _, _, _, ok := resource.ParseKey("/registry", kv.Key); ok {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}
