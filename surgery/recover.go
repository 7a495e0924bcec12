package surgery

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// PlanRecover plans recreating a deleted object from kv, a live revision of
// its key found in etcd's history (or a db file's). The value is decrypted,
// its deletion is cleared as Undelete does, its uid is kept, and it is
// sealed with the current encryption config. The plan is a create: it
// fails (ErrExists here, a conflict in Apply) if the key exists. live is
// the store the object is recreated in; it is read to check that the key
// is absent and to collect warnings.
func (c Planner) PlanRecover(ctx context.Context, live store.Reader, kv store.KeyValue) (*Plan, error) {
	return c.planRecover(ctx, live, kv, true)
}

// PlanRecoverPreview is PlanRecover with no write target: the plan of the
// create as it would be made into a cluster where the key is absent, for a
// dry run that names no target. Whether the key exists anywhere is not
// checked; the warnings read src (the store the value comes from). Apply
// refuses nothing about it, so callers must only print it.
func (c Planner) PlanRecoverPreview(ctx context.Context, src store.Reader, kv store.KeyValue) (*Plan, error) {
	return c.planRecover(ctx, src, kv, false)
}

// SourceRevision names the revision a recovered value comes from:
// "revision 1234", or, for a value a write-ahead log establishes without
// its revision (wal.WAL), what is known of it.
func SourceRevision(kv store.KeyValue) string {
	if kv.ModRevision == 0 {
		return "a value the write-ahead log applied at a revision it does not establish (the value is established)"
	}
	return fmt.Sprintf("revision %d", kv.ModRevision)
}

func (c Planner) planRecover(ctx context.Context, live store.Reader, kv store.KeyValue, checkAbsent bool) (*Plan, error) {
	what := fmt.Sprintf("recover %s from %s", kv.Key, SourceRevision(kv))
	if len(kv.Value) == 0 {
		return nil, fmt.Errorf("%s: that revision holds no value (a deletion)", what)
	}
	var exists *store.KeyValue
	if checkAbsent {
		cur, err := live.Get(ctx, kv.Key, 0)
		switch {
		case err == nil:
			exists = cur
		case !errors.Is(err, store.ErrNotFound):
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	src, err := c.Open(ctx, kv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	newPlain, err := Undelete{}.Transform(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	after, err := verifyNew(kv.Key, src.Obj, newPlain)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := c.checkKey(kv.Key, after); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing written", what, err)
	}
	if exists != nil {
		return c.recoveredAlready(ctx, what, src, exists, newPlain)
	}
	p := &Plan{
		Key:         kv.Key,
		GR:          src.GR,
		NewPlain:    newPlain,
		Description: what,
	}
	if p.NewStored, err = c.Seal(ctx, src.GR, kv.Key, newPlain); err != nil {
		return nil, err
	}
	if p.Diff, err = c.RenderDiff(kv.Key+" (absent)", nil, 0, fmt.Sprintf("%s (recovered from %s)", kv.Key, SourceRevision(kv)), after, 0); err != nil {
		return nil, err
	}
	p.Warnings = append(p.Warnings, fmt.Sprintf("%s keeps its uid %s: objects that refer to it by uid must match (a PersistentVolume's spec.claimRef.uid, the ownerReferences of its dependents), or their controllers treat it as another object", after.GVK.Kind+" "+after.Name(), after.Meta.UID))
	if terminating(src.Obj.Meta) {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s was already being deleted (deletionTimestamp %s); the recovered object is not", SourceRevision(kv), src.Obj.Meta.DeletionTimestamp))
	}
	if kv.Lease != 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("the key was attached to lease %d; it is recreated without a lease, so etcd will not expire it", kv.Lease))
	}
	p.Warnings = append(p.Warnings, c.warnings(ctx, live, nil, after, true)...)
	return p, nil
}

// recoveredAlready is the plan of a recover whose key exists: nothing to
// do when it holds the very object the recover would create (an earlier
// recover made it), as a recovery of a set reports it exists-identical;
// otherwise ErrExists, since recover never replaces an object.
func (c Planner) recoveredAlready(ctx context.Context, what string, src *kubevalue.Current, cur *store.KeyValue, newPlain []byte) (*Plan, error) {
	if live, err := c.Open(ctx, *cur); err == nil && bytes.Equal(live.Plain, newPlain) {
		return &Plan{Key: cur.Key, GR: src.GR, Before: live, Expect: cur.ModRevision, Lease: cur.Lease, NewPlain: live.Plain, NewStored: cur.Value,
			NoOp: true, Description: what,
			NoOpReason: fmt.Sprintf("%s exists (revision %d) and is the object recover would create: recovered before", objectName(live.Obj), cur.ModRevision)}, nil
	}
	return nil, fmt.Errorf("%s: %w: the key is at revision %d; recover only recreates deleted objects", what, ErrExists, cur.ModRevision)
}
