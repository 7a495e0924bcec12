package inspect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

func TestResourceNames(t *testing.T) {
	names := ResourceNames()
	for _, want := range []string{"persistentvolumeclaims", "pvc", "pv", "namespaces", "ns", "pods"} {
		if !slices.Contains(names, want) {
			t.Errorf("ResourceNames() lacks %q", want)
		}
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("ResourceNames() is not sorted and unique: %v", names)
	}
	// Every name resolves, and to the resource it was listed for.
	for _, n := range names {
		if _, err := resource.Lookup(n); err != nil {
			t.Errorf("ResourceNames() offers %q, which does not resolve: %v", n, err)
		}
	}
}

func TestCompleteNames(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{})
	for _, k := range []string{
		"/registry/persistentvolumeclaims/default/data-0",
		"/registry/persistentvolumeclaims/default/logs-0",
		"/registry/persistentvolumeclaims/demo/data-1",
		"/registry/persistentvolumeclaims/demo/www-0",
		"/registry/persistentvolumes/pv-a",
		"/registry/persistentvolumes/pv-b",
		"/registry/namespaces/default",
		"/registry/namespaces/demo",
		"/other/persistentvolumeclaims/default/elsewhere",
	} {
		c.Put(t, k, []byte("x"))
	}
	s, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	for _, tc := range []struct {
		name    string
		q       NameQuery
		want    []string
		wantErr error
	}{
		{"default namespace", NameQuery{Resource: "pvc"}, []string{"data-0", "logs-0"}, nil},
		{"namespace given", NameQuery{Resource: "persistentvolumeclaims", Namespace: "demo"}, []string{"data-1", "www-0"}, nil},
		{"all namespaces", NameQuery{Resource: "pvc", AllNamespaces: true}, []string{"data-0", "logs-0", "data-1", "www-0"}, nil},
		{"typed", NameQuery{Resource: "pvc", AllNamespaces: true, Typed: "data"}, []string{"data-0", "data-1"}, nil},
		{"bounded", NameQuery{Resource: "pvc", AllNamespaces: true, Max: 3}, []string{"data-0", "logs-0", "data-1"}, nil},
		{"cluster-scoped ignores namespace", NameQuery{Resource: "pv", Namespace: "demo"}, []string{"pv-a", "pv-b"}, nil},
		{"namespaces", NameQuery{Resource: "ns", Typed: "de"}, []string{"default", "demo"}, nil},
		{"no match", NameQuery{Resource: "pvc", Typed: "zzz"}, nil, nil},
		{"other prefix", NameQuery{Prefix: "/other", Resource: "pvc"}, []string{"elsewhere"}, nil},
		{"unknown resource", NameQuery{Resource: "pvcz"}, nil, resource.ErrUnknownResource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			if q.Prefix == "" {
				q.Prefix = "/registry"
			}
			got, err := CompleteNames(ctx, s, resource.Resolver{}, q)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		typed string
		max   int
		want  []string
	}{
		{"", 0, []string{"default/data-0", "default/logs-0", "demo/data-1", "demo/www-0"}},
		{"de", 0, []string{"default/data-0", "default/logs-0", "demo/data-1", "demo/www-0"}},
		{"demo/", 0, []string{"demo/data-1", "demo/www-0"}},
		{"demo/w", 0, []string{"demo/www-0"}},
		{"default/", 1, []string{"default/data-0"}},
		{"nope/", 0, nil},
	} {
		got, err := CompleteClaims(ctx, s, "/registry", tc.typed, tc.max)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("CompleteClaims(%q, %d) = %v, want %v", tc.typed, tc.max, got, tc.want)
		}
	}
}

func TestCompleteNamesUnreachable(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.Options{})
	s, err := store.OpenEtcd(ctx, store.EtcdConfig{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got, err := CompleteNames(ctx, s, resource.Resolver{}, NameQuery{Prefix: "/registry", Resource: "pvc"}); err == nil {
		t.Errorf("CompleteNames on a closed store = %v, nil; want an error", got)
	}
	if got, err := CompleteClaims(ctx, s, "/registry", "", 0); err == nil {
		t.Errorf("CompleteClaims on a closed store = %v, nil; want an error", got)
	}
}

func TestCompleteBackups(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{
		"20261130T010000Z-a.json",
		"20261130T020000Z-b.json",
		".20261130T030000Z-hidden.json",
		"notes.txt",
	} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	newest := []string{"20261130T020000Z-b.json", "20261130T010000Z-a.json"}
	join := func(prefix string) []string {
		out := make([]string, len(newest))
		for i, n := range newest {
			out[i] = prefix + n
		}
		return out
	}
	for _, tc := range []struct {
		name, dir, typed string
		want             []string
		wantErr          bool
	}{
		{"the backup directory", dir, "", join(dir + "/"), false},
		{"the directory typed", "/nonexistent", dir + "/2026", join(dir + "/"), false},
		{"a missing directory", filepath.Join(dir, "missing"), "", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CompleteBackups(tc.dir, tc.typed)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
