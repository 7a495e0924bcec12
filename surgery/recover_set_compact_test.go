package surgery

import (
	"context"
	"errors"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// compactingSource is a live etcd whose first List compacts it at its
// newest revision once the first key has been handed over: the read
// meets a compaction of its revision at a set point.
type compactingSource struct {
	*store.Etcd
	lists int
}

func (s *compactingSource) List(ctx context.Context, prefix string, opts store.ListOptions, fn func(*store.KeyValue) error) (int64, error) {
	s.lists++
	if s.lists > 1 {
		return s.Etcd.List(ctx, prefix, opts, fn)
	}
	compacted := false
	return s.Etcd.List(ctx, prefix, opts, func(kv *store.KeyValue) error {
		if !compacted {
			compacted = true
			resp, err := s.Client().Put(ctx, "/compact-point", "x")
			if err == nil {
				_, err = s.Client().Compact(ctx, resp.Header.Revision)
			}
			if err != nil {
				return err
			}
		}
		return fn(kv)
	})
}

// TestRecoverSetSourceCompacted: a plan of the source's latest state that
// a compaction cuts is read again whole, every object planned once, at the
// newer revision; a plan of a revision named is refused (a
// *store.CompactedError), not made of two states.
func TestRecoverSetSourceCompacted(t *testing.T) {
	_, s := startEtcd(t)
	ctx := testCtx(t)
	obj, err := codec.Decode(corpus(t, "configmaps__demo__web-config"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 700 // more than a page
	var ops []clientv3.Op
	for i := range n {
		obj.Meta.Name = fmt.Sprintf("cm-%04d", i)
		v, err := codec.EncodeTyped(obj.Typed, codec.FormatProtobuf)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, clientv3.OpPut("/registry/configmaps/demo/"+obj.Meta.Name, string(v)))
		if len(ops) == 100 {
			if _, err := s.Client().Txn(ctx).Then(ops...).Commit(); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
	}
	cm, err := resource.Lookup("configmaps")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}

	src := &compactingSource{Etcd: s}
	plan, err := Planner{}.PlanRecoverSet(ctx, src, s, RecoverSetOptions{Resource: &cm, InNamespace: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, it := range plan.Items {
		seen[it.Key]++
	}
	if src.lists < 2 || len(plan.Items) != n || len(seen) != n || plan.SourceRevision <= info.Revision {
		t.Errorf("%d lists, %d items of %d keys, source revision %d (before the compaction: %d); want the source read again, %d keys once each, at the newer revision",
			src.lists, len(plan.Items), len(seen), plan.SourceRevision, info.Revision, n)
	}

	info, err = s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src = &compactingSource{Etcd: s}
	_, err = Planner{}.PlanRecoverSet(ctx, src, s, RecoverSetOptions{Resource: &cm, InNamespace: "demo", Rev: info.Revision})
	var ce *store.CompactedError
	if !errors.As(err, &ce) || ce.Revision != info.Revision || src.lists != 1 {
		t.Errorf("plan at revision %d: %v after %d lists, want a *store.CompactedError and no second read", info.Revision, err, src.lists)
	}
}
