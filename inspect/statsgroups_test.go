package inspect

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

func TestParseGroupBy(t *testing.T) {
	for in, want := range map[string]GroupBy{
		"resource":           {Resource: true},
		"namespace":          {Namespace: true},
		"resource,namespace": {Resource: true, Namespace: true},
		"namespace,resource": {Resource: true, Namespace: true},
		"ns":                 {Namespace: true},
	} {
		got, err := ParseGroupBy(in)
		if err != nil || got != want {
			t.Errorf("ParseGroupBy(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "resourc", "resource,", "namespace,kind"} {
		if _, err := ParseGroupBy(in); err == nil {
			t.Errorf("ParseGroupBy(%q): no error", in)
		}
	}
}

// groupCount is what a --by group counts, for comparison.
type groupCount struct {
	Objects, Bytes, Revisions, Tombstones, Deleted, HistoryBytes int64
}

// TestBoltStatsByNamespace counts the corpus snapshot (made by a real
// etcd) by namespace and by resource and namespace, and compares each
// group with a count made here from every revision the file holds; the
// totals are the known ones of the file.
func TestBoltStatsByNamespace(t *testing.T) {
	ctx := context.Background()
	b := openCorpusSnapshot(t, filepath.Join(corpusDir, "etcd-snapshot.db"))

	// The count made here: each key's revisions, its newest state.
	want := map[GroupBy]map[groupKey]*groupCount{{Namespace: true}: {}, {Resource: true, Namespace: true}: {}}
	type last struct {
		size    int64
		deleted bool
	}
	newest := map[string]last{}
	add := func(key string, fn func(c *groupCount)) {
		ns := ""
		if _, n, _, ok := resource.ParseKey("/registry/", key); ok {
			ns = n
		}
		for by, m := range want {
			k := groupKey{namespace: ns}
			if by.Resource {
				k.resource = GroupOf("/registry/", key)
			}
			if m[k] == nil {
				m[k] = &groupCount{}
			}
			fn(m[k])
		}
	}
	if err := b.ScanRevisions(ctx, "/registry/", func(ev store.Event) error {
		add(ev.KV.Key, func(c *groupCount) {
			c.Revisions++
			if ev.Deleted {
				c.Tombstones++
			} else {
				c.HistoryBytes += int64(len(ev.KV.Value))
			}
		})
		newest[ev.KV.Key] = last{int64(len(ev.KV.Value)), ev.Deleted}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for key, l := range newest {
		add(key, func(c *groupCount) {
			if l.deleted {
				c.Deleted++
				return
			}
			c.Objects++
			c.Bytes += l.size
		})
	}

	for by, m := range want {
		rep, err := BoltStats(ctx, b, StatsOptions{Prefix: "/registry/", Top: 3, By: by})
		if err != nil {
			t.Fatal(err)
		}
		got := map[groupKey]*groupCount{}
		for _, g := range rep.Groups {
			if g.Namespace == nil || (g.Resource != nil) != by.Resource {
				t.Fatalf("by %+v: group %+v lacks its keys", by, g)
			}
			k := groupKey{namespace: *g.Namespace}
			if g.Resource != nil {
				k.resource = *g.Resource
			}
			got[k] = &groupCount{g.Objects, g.Bytes, *g.Revisions, *g.Tombstones, *g.Deleted, *g.HistoryBytes}
		}
		if diff := cmp.Diff(m, got, cmp.AllowUnexported(groupKey{})); diff != "" {
			t.Errorf("by %+v: groups differ from the count made here (-want +got):\n%s", by, diff)
		}
		if by.Resource {
			continue
		}
		// The known counts of the file.
		for ns, c := range map[string]groupCount{
			"":            {Objects: 184, Revisions: 206, Tombstones: 1},
			"demo":        {Objects: 16, Revisions: 24},
			"kube-system": {Objects: 15, Revisions: 21, Tombstones: 1},
		} {
			g := got[groupKey{namespace: ns}]
			if g == nil || g.Objects != c.Objects || g.Revisions != c.Revisions || g.Tombstones != c.Tombstones {
				t.Errorf("namespace %q: %+v, want %d objects, %d revisions, %d tombstones", ns, g, c.Objects, c.Revisions, c.Tombstones)
			}
		}
		if rep.By[0] != "namespace" || len(rep.By) != 1 {
			t.Errorf("by %v", rep.By)
		}
	}
}

// TestBoltStatsHotKeysAndLeases: the corpus snapshot's keys with the most
// revisions, the manager of their last write, and its leases (three held,
// two with a key) with their granted TTLs.
func TestBoltStatsHotKeysAndLeases(t *testing.T) {
	ctx := context.Background()
	b := openCorpusSnapshot(t, filepath.Join(corpusDir, "etcd-snapshot.db"))
	enc := loadEncryption(t, filepath.Join(corpusDir, "encryption", "encryption-config.yaml"))
	open := func(ctx context.Context, kv store.KeyValue) (map[string]any, error) {
		cur, err := (kubevalue.Codec{Enc: enc, Prefix: "/registry"}).Open(ctx, kv)
		if err != nil {
			return nil, err
		}
		return cur.Obj.Content, nil
	}
	rep, err := BoltStats(ctx, b, StatsOptions{Prefix: "/registry/", Top: 4, Dec: enc, Open: open})
	if err != nil {
		t.Fatal(err)
	}
	hk := rep.HotKeys
	if hk == nil || hk.Revisions != 254 || hk.KeysChanged != 218 || hk.ToRevision != 255 || hk.Counted != "revisions held" {
		t.Fatalf("hot keys %+v, want 254 revisions of 218 keys to revision 255", hk)
	}
	type row struct {
		Key             string
		Revisions, Last int64
		Manager         string
	}
	var got []row
	for _, k := range hk.Keys {
		m := k.ManagerUnknown
		if k.LastWrite != nil {
			m = k.LastWrite.String()
		}
		got = append(got, row{k.Key, k.Revisions, k.LastRevision, m})
	}
	wantRows := []row{
		{"/registry/leases/kube-system/apiserver-wlv32tlttr4jl3gtroqexyxapa", 7, 247, "kube-apiserver"},
		{"/registry/peerserverleases/apiserver-wlv32tlttr4jl3gtroqexyxapa", 7, 248, "not an object"},
		{"/registry/persistentvolumeclaims/demo/www-web-0", 4, 254, "kubectl-create"},
		{"/registry/persistentvolumeclaims/demo/www-web-1", 4, 255, "managers dated the same second: kubectl-patch, kubectl-patch (status)"},
	}
	if diff := cmp.Diff(wantRows, got); diff != "" {
		t.Errorf("hot keys (-want +got):\n%s", diff)
	}

	// From a revision on: only the revisions above it.
	rep, err = BoltStats(ctx, b, StatsOptions{Prefix: "/registry/", Top: 1, Since: 250})
	if err != nil {
		t.Fatal(err)
	}
	if hk := rep.HotKeys; hk.Revisions != 6 || hk.Since != 250 || len(hk.Keys) != 1 || hk.Keys[0].ManagerUnknown != "values not read" {
		t.Errorf("since 250: %+v, want the 6 revisions 250 to 255", hk)
	}
	if _, err := BoltStats(ctx, b, StatsOptions{Prefix: "/registry/", Since: 256}); err == nil {
		t.Errorf("since 256, past the file's revision: no error")
	}

	ls := rep.Leases
	if ls.Held == nil || *ls.Held != 3 || *ls.WithoutKeys != 1 || ls.Named != 2 || ls.LeasedKeys != 2 || *ls.NotHeld != 0 || ls.Source != "the db's lease bucket" {
		t.Fatalf("leases %+v", ls)
	}
	// --top 1: the lease with most keys, ties by ID.
	if len(ls.Top) != 1 || ls.Top[0].ID != "531ca229e0696357" || *ls.Top[0].TTL != 3660 || ls.Top[0].RemainingTTL != nil ||
		!cmp.Equal(ls.Top[0].Resources, []NamedCount{{"events", 1}}) {
		t.Errorf("top lease %+v", ls.Top)
	}
}

func TestNewestManager(t *testing.T) {
	content := map[string]any{"metadata": map[string]any{"managedFields": []any{
		map[string]any{"manager": "kubectl-create", "operation": "Update", "time": "2026-01-01T00:00:00Z"},
		map[string]any{"manager": "kubelet", "operation": "Update", "subresource": "status", "time": "2026-01-02T00:00:00Z"},
		map[string]any{"manager": "kubectl", "operation": "Apply", "time": "2026-01-01T12:00:00Z"},
	}}}
	got, why := NewestManager(content)
	want := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	if got == nil || got.String() != "kubelet (status)" || !got.Time.Equal(want) || why != "" {
		t.Errorf("NewestManager = %+v (%q), want kubelet (status) at %v", got, why, want)
	}
	if got, why := NewestManager(map[string]any{"metadata": map[string]any{}}); got != nil || why != "no managedFields" {
		t.Errorf("no managedFields: %+v, %q", got, why)
	}
	tied := map[string]any{"metadata": map[string]any{"managedFields": []any{
		map[string]any{"manager": "kubectl-patch", "operation": "Update", "time": "2026-01-02T00:00:00Z"},
		map[string]any{"manager": "kube-controller-manager", "operation": "Update", "time": "2026-01-02T00:00:00Z"},
	}}}
	if got, why := NewestManager(tied); got != nil || why != "managers dated the same second: kube-controller-manager, kubectl-patch" {
		t.Errorf("a tie: %+v, %q", got, why)
	}
}

func TestCheckSince(t *testing.T) {
	for _, tc := range []struct {
		since, compact, rev int64
		want, hint          string
		compacted           bool
	}{
		{0, 10, 20, "", "", false},
		{11, 10, 20, "", "", false},
		{20, 10, 20, "", "", false},
		{10, 10, 20, "--since 10: revision 10 is compacted: the oldest revision etcd holds is 11", "give a --since from 11 to 20; older revisions are in a snapshot or member db taken before the compaction (--db FILE)", true},
		{21, 10, 20, "--since 21: etcd is at revision 20", "give a --since at or below 20", false},
	} {
		err := checkSince(tc.since, tc.compact, tc.rev, "etcd")
		if tc.want == "" {
			if err != nil {
				t.Errorf("since %d: %v", tc.since, err)
			}
			continue
		}
		var se *SinceError
		if !errors.As(err, &se) {
			t.Errorf("since %d: %v, want a *SinceError", tc.since, err)
			continue
		}
		if err.Error() != tc.want || se.Hint() != tc.hint || errors.Is(err, store.ErrCompacted) != tc.compacted {
			t.Errorf("since %d: %v (hint %q), want %q (hint %q), compacted %v", tc.since, err, se.Hint(), tc.want, tc.hint, tc.compacted)
		}
	}
}
