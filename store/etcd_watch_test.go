package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// TestEtcdWatch follows a prefix on a real etcd: from a past revision it
// replays what etcd holds, with the values before each change, then
// reports the changes made while it runs (Live), and stops at Until; a
// start that is compacted away is refused naming the oldest revision
// held; Ctrl-C (a canceled context) ends a watch without an error.
func TestEtcdWatch(t *testing.T) {
	t.Parallel()
	_, e := etcdStart(t, etcdtest.Options{})
	ctx := context.Background()
	const prefix = "/registry/configmaps/w/"
	cli := e.Client()
	put := func(k, v string) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, k, v)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	r1 := put(prefix+"a", "a1")
	put("/registry/configmaps/wz/outside", "x")
	r2 := put(prefix+"a", "a2")
	if _, err := cli.Delete(ctx, prefix+"a"); err != nil {
		t.Fatal(err)
	}

	type got struct {
		key, value, prev string
		rev              int64
		deleted, live    bool
	}
	var mu sync.Mutex
	var events []got
	started := make(chan int64, 1)
	done := make(chan error, 1)
	until := r2 + 4 // the delete, then three writes made while watching
	go func() {
		done <- e.Watch(ctx, prefix, WatchOptions{Prefix: true, From: r1, Until: until, Started: func(rev int64) { started <- rev }}, func(ev WatchEvent) error {
			g := got{key: ev.KV.Key, value: string(ev.KV.Value), rev: ev.KV.ModRevision, deleted: ev.Deleted, live: ev.Live}
			if ev.Prev != nil {
				g.prev = string(ev.Prev.Value)
			}
			mu.Lock()
			events = append(events, g)
			mu.Unlock()
			return nil
		})
	}()
	startRev := <-started
	if startRev != r2+1 {
		t.Fatalf("watch started at revision %d, want %d", startRev, r2+1)
	}
	put(prefix+"b", "b1")
	put("/registry/configmaps/wz/outside", "y") // not under the prefix
	put(prefix+"b", "b2")
	put(prefix+"c", "c1") // revision until+1: not reported
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the watch did not stop at Until")
	}
	want := []got{
		{key: prefix + "a", value: "a1", rev: r1},
		{key: prefix + "a", value: "a2", prev: "a1", rev: r2},
		{key: prefix + "a", prev: "a2", rev: r2 + 1, deleted: true},
		{key: prefix + "b", value: "b1", rev: r2 + 2, live: true},
		{key: prefix + "b", value: "b2", prev: "b1", rev: r2 + 4, live: true},
	}
	if len(events) != len(want) {
		t.Fatalf("events %+v, want %+v", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, events[i], want[i])
		}
	}

	// NoPrev leaves the values before out.
	var prevs int
	if err := e.Watch(ctx, prefix, WatchOptions{Prefix: true, From: r1, Until: r2, NoPrev: true}, func(ev WatchEvent) error {
		if ev.Prev != nil {
			prevs++
		}
		return nil
	}); err != nil || prevs != 0 {
		t.Fatalf("NoPrev: %d values before, %v", prevs, err)
	}

	// A canceled context ends a watch that follows, without an error.
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	if err := e.Watch(cctx, prefix, WatchOptions{Prefix: true}, func(WatchEvent) error { return nil }); err != nil {
		t.Fatalf("canceled watch: %v", err)
	}

	// A start compacted away is refused, naming the oldest revision held.
	rev := put(prefix+"d", "d1")
	if _, err := cli.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	err := e.Watch(ctx, prefix, WatchOptions{Prefix: true, From: r1}, func(WatchEvent) error {
		t.Fatal("an event from a compacted start")
		return nil
	})
	if !errors.Is(err, ErrCompacted) || !strings.Contains(err.Error(), "the oldest revision etcd holds is") {
		t.Fatalf("watch from a compacted revision: %v", err)
	}

	// A routed store refuses a watch that spans its etcds, and watches a
	// route's prefix in the route's store.
	rs, err := NewRouted(e, []Route{{Prefix: "/registry/events/", Store: e}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Watch(ctx, "/registry/", WatchOptions{Prefix: true}, nil); !errors.Is(err, ErrSpansStores) {
		t.Fatalf("spanning watch: %v", err)
	}
	n := 0
	if err := rs.Watch(ctx, prefix, WatchOptions{Prefix: true, From: rev, Until: rev}, func(WatchEvent) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("routed watch: %d events, %v", n, err)
	}
}
