package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
)

// TestEtcdListCompacted pages through a range while etcd is compacted at
// its newest revision after every page (from the callback, so that every
// page but the first meets a compaction of the revision the read was at):
// with OnCompacted the read continues at the newer revision and hands
// over every key exactly once, keys written ahead of it included; without
// it, or pinned to a revision, it stops with a *CompactedError saying how
// far it got. Both ways of reading a page are tried.
func TestEtcdListCompacted(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name  string
		unary bool
	}{{"stream", false}, {"unary-range", true}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			testListCompacted(t, mode.unary)
		})
	}
}

func testListCompacted(t *testing.T, unary bool) {
	c, e := etcdStart(t, etcdtest.Options{})
	e.noStream.Store(unary)
	ctx := context.Background()
	const (
		n      = 345
		page   = 20
		prefix = "/registry/configmaps/compacted/"
	)
	cli := e.Client()
	var want []string
	var ops []clientv3.Op
	for j := range n {
		k := fmt.Sprintf("%sk%05d", prefix, j)
		want = append(want, k)
		ops = append(ops, clientv3.OpPut(k, strconv.Itoa(j)))
		if len(ops) == 100 || j == n-1 {
			if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
	}
	c.Put(t, "/registry/configmaps/compactedz/x", []byte("outside"))

	// compactAfterPage writes a key ahead of the read (it is listed: the
	// read continues at a later revision) and one behind it (it is not),
	// then compacts at the newest revision, which is past the one the read
	// is at.
	var compactRevs []int64
	compactAfterPage := func(t *testing.T, kv *KeyValue, i int) {
		ahead := fmt.Sprintf("%s-new", kv.Key)
		if i+1 < n {
			ahead = fmt.Sprintf("%sk%05d-new", prefix, i+page+page/2)
		}
		resp, err := cli.Put(ctx, ahead, "new")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Put(ctx, prefix+"a-behind-"+strconv.Itoa(i), "behind"); err != nil {
			t.Fatal(err)
		}
		rev := resp.Header.Revision + 1
		if _, err := cli.Compact(ctx, rev); err != nil {
			t.Fatalf("compact at %d: %v", rev, err)
		}
		compactRevs = append(compactRevs, rev)
	}

	var span Span
	var got []string
	seen := map[string]bool{}
	first, err := e.List(ctx, prefix, ListOptions{PageSize: page, OnCompacted: span.Record}, func(kv *KeyValue) error {
		got = append(got, kv.Key)
		if seen[kv.Key] {
			return fmt.Errorf("%s handed over twice", kv.Key)
		}
		seen[kv.Key] = true
		if len(got)%page == 0 {
			compactAfterPage(t, kv, len(got)-1)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("List across compactions: %v", err)
	}
	// Every original key once, and the keys written ahead of the read.
	for _, k := range got {
		if !slices.Contains(want, k) && !(len(k) > 4 && k[len(k)-4:] == "-new") {
			t.Errorf("listed %s, written behind the read", k)
		}
	}
	var originals []string
	for _, k := range got {
		if slices.Contains(want, k) {
			originals = append(originals, k)
		}
	}
	if diff := cmp.Diff(want, originals); diff != "" {
		t.Errorf("keys listed (-want +got):\n%s", diff)
	}
	if !slices.IsSorted(got) {
		t.Errorf("keys not in order")
	}
	if len(got) == len(originals) {
		t.Errorf("no key written ahead of the read was listed")
	}
	if len(compactRevs) < 3 {
		t.Fatalf("only %d compactions", len(compactRevs))
	}
	// Each compaction is met once the next page is read (a stream may
	// have sent the page it was in before; the last one may come after
	// the last page).
	if span.From != first || span.Compactions < len(compactRevs)-2 || span.Compactions > len(compactRevs) {
		t.Errorf("span %+v (List returned %d): want from %d, %d compactions or up to two fewer", span, first, first, len(compactRevs))
	}
	if !slices.Contains(compactRevs, span.To) {
		t.Errorf("span ends at %d, not at a compact revision %v", span.To, compactRevs)
	}
	t.Logf("%d keys listed, %d compactions made, span %+v", len(got), len(compactRevs), span)
	if !span.Spans() || span.Note() == "" {
		t.Errorf("span %+v: Spans %v, Note %q", span, span.Spans(), span.Note())
	}

	// Without OnCompacted, and at a pinned revision even with it, the
	// read keeps to one revision: the first compaction stops it, and the
	// error says how far it got.
	for _, tc := range []struct {
		name string
		opts ListOptions
	}{
		{"latest", ListOptions{PageSize: page}},
		{"pinned", ListOptions{PageSize: page, Revision: -1, OnCompacted: func(from, to int64) {
			t.Errorf("pinned read moved from revision %d to %d", from, to)
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.Revision == -1 { // the newest: not compacted yet
				head, err := cli.Get(ctx, "x")
				if err != nil {
					t.Fatal(err)
				}
				tc.opts.Revision = head.Header.Revision
			}
			read, last := 0, ""
			_, err := e.List(ctx, prefix, tc.opts, func(kv *KeyValue) error {
				read++
				last = kv.Key
				if read%page == 0 {
					compactAfterPage(t, kv, read-1)
				}
				return nil
			})
			var ce *CompactedError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCompacted) {
				t.Fatalf("List = %v, want a *CompactedError", err)
			}
			if ce.Read != page || read != page || ce.Revision == 0 || ce.Last != last {
				t.Errorf("CompactedError %+v after %d keys", ce, read)
			}
		})
	}

	// A pinned revision already compacted fails before reading anything.
	_, err = e.List(ctx, prefix, ListOptions{Revision: first}, func(*KeyValue) error {
		t.Error("key handed over from a compacted revision")
		return nil
	})
	var ce *CompactedError
	if !errors.Is(err, ErrCompacted) || errors.As(err, &ce) {
		t.Errorf("List at compacted revision %d = %v, want ErrCompacted and no *CompactedError", first, err)
	}
}
