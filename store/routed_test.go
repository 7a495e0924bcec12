package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// TestRouted routes /registry/events/ and /registry/leases/ to a second
// real etcd, as --etcd-servers-overrides does.
func TestRouted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, mainStore := etcdStart(t, etcdtest.Options{})
	_, other := etcdStart(t, etcdtest.Options{})
	// The main etcd holds a stale event from before the override: the
	// apiserver no longer reads it, and neither does a routed List.
	for _, k := range []string{"/registry/configmaps/demo/a", "/registry/events/demo/stale", "/registry/pods/demo/p", "/registry/secrets/demo/s"} {
		etcdCreate(t, mainStore, k, []byte("main"))
	}
	for _, k := range []string{"/registry/events/demo/e1", "/registry/events/kube-system/e2", "/registry/leases/kube-system/l"} {
		etcdCreate(t, other, k, []byte("other"))
	}
	r, err := NewRouted(mainStore, []Route{{Prefix: "/registry/leases/", Store: other}, {Prefix: "/registry/events/", Store: other}})
	if err != nil {
		t.Fatal(err)
	}

	list := func(prefix string, opts ListOptions) []string {
		t.Helper()
		var got []string
		if _, err := r.List(ctx, prefix, opts, func(kv *KeyValue) error {
			got = append(got, kv.Key+"="+string(kv.Value))
			return nil
		}); err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		return got
	}
	for _, tc := range []struct {
		prefix string
		opts   ListOptions
		want   []string
	}{
		{"/registry/", ListOptions{}, []string{
			"/registry/configmaps/demo/a=main",
			"/registry/events/demo/e1=other", "/registry/events/kube-system/e2=other",
			"/registry/leases/kube-system/l=other",
			"/registry/pods/demo/p=main", "/registry/secrets/demo/s=main",
		}},
		{"/registry/", ListOptions{PageSize: 1}, []string{
			"/registry/configmaps/demo/a=main",
			"/registry/events/demo/e1=other", "/registry/events/kube-system/e2=other",
			"/registry/leases/kube-system/l=other",
			"/registry/pods/demo/p=main", "/registry/secrets/demo/s=main",
		}},
		{"", ListOptions{}, []string{
			"/registry/configmaps/demo/a=main",
			"/registry/events/demo/e1=other", "/registry/events/kube-system/e2=other",
			"/registry/leases/kube-system/l=other",
			"/registry/pods/demo/p=main", "/registry/secrets/demo/s=main",
		}},
		{"/registry/events/", ListOptions{}, []string{"/registry/events/demo/e1=other", "/registry/events/kube-system/e2=other"}},
		{"/registry/events/demo/", ListOptions{}, []string{"/registry/events/demo/e1=other"}},
		{"/registry/pods/", ListOptions{}, []string{"/registry/pods/demo/p=main"}},
	} {
		if diff := cmp.Diff(tc.want, list(tc.prefix, tc.opts)); diff != "" {
			t.Errorf("List(%q, %+v) (-want +got):\n%s", tc.prefix, tc.opts, diff)
		}
	}

	// A listing that stops early stops in the route's store too.
	stop := errors.New("stop")
	n := 0
	_, err = r.List(ctx, "/registry/", ListOptions{}, func(kv *KeyValue) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 {
		t.Errorf("List stopped after %d keys with %v, want 2 and %v", n, err, stop)
	}

	// A revision is one etcd's: a listing spanning both is refused.
	if _, err := r.List(ctx, "/registry/", ListOptions{Revision: 3}, func(*KeyValue) error { return nil }); err == nil || !strings.Contains(err.Error(), "/registry/events/") {
		t.Errorf("List at a revision across routes = %v, want an error naming the routes", err)
	}

	// Get, CompareAndSwap and History go to the key's store.
	kv, err := r.Get(ctx, "/registry/events/demo/e1", 0)
	if err != nil || string(kv.Value) != "other" {
		t.Fatalf("Get routed key = %+v, %v", kv, err)
	}
	if _, err := r.Get(ctx, "/registry/events/demo/stale", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a key left in the main etcd = %v, want ErrNotFound", err)
	}
	if kv, err := r.Get(ctx, "/registry/pods/demo/p", 0); err != nil || string(kv.Value) != "main" {
		t.Errorf("Get main key = %+v, %v", kv, err)
	}
	ev, err := other.Get(ctx, "/registry/events/demo/e1", 0)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := r.CompareAndSwap(ctx, "/registry/events/demo/e1", ev.ModRevision, []byte("edited"), 0)
	if err != nil {
		t.Fatalf("CompareAndSwap routed key: %v", err)
	}
	if got, _ := other.Get(ctx, "/registry/events/demo/e1", 0); string(got.Value) != "edited" || got.ModRevision != rev {
		t.Errorf("the other etcd holds %+v after the routed write, want edited at %d", got, rev)
	}
	if _, err := mainStore.Get(ctx, "/registry/events/demo/e1", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("the routed write reached the main etcd: %v", err)
	}
	var hist []string
	if _, err := r.History(ctx, "/registry/events/demo/e1", func(e Event) error {
		hist = append(hist, string(e.KV.Value))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"other", "edited"}, hist); diff != "" {
		t.Errorf("History (-want +got):\n%s", diff)
	}
}

func TestNewRoutedRejects(t *testing.T) {
	t.Parallel()
	_, s := etcdStart(t, etcdtest.Options{})
	for _, tc := range []struct {
		name   string
		routes []Route
		want   string
	}{
		{"no slash", []Route{{Prefix: "/registry/events", Store: s}}, "must end in"},
		{"overlap", []Route{{Prefix: "/registry/events/", Store: s}, {Prefix: "/registry/events/demo/", Store: s}}, "overlap"},
		{"no store", []Route{{Prefix: "/registry/events/"}}, "no store"},
	} {
		if _, err := NewRouted(s, tc.routes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewRouted = %v, want %q", tc.name, err, tc.want)
		}
	}
}
