package surgery

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// Deleting what the apiserver cannot.
//
// A value the apiserver cannot decrypt (a lost or rotated key, a KMS
// plugin gone) or decode (bit flips, a truncated write, a version it no
// longer serves) breaks every LIST of its resource, and `kubectl delete`
// cannot remove it: the apiserver must read an object to delete it
// (Kubernetes only added an unsafe way in v1.32, behind a feature gate).
// PlanDelete plans the delete of such a key in etcd, as every write: a
// durable backup of the stored bytes, a compare-and-delete on the mod
// revision it read, an audit line; `restore BACKUP` puts the bytes back.

var (
	// ErrReadable means a delete was asked for an object the apiserver can
	// read, and so delete itself (running its finalizers and admission);
	// nothing was written. The error is a *ReadableError.
	ErrReadable = errors.New("the object is readable: the apiserver can delete it")
	// ErrNotObjectKey means a delete was given a key that names no single
	// object (a prefix, or a key outside the apiserver's layout); nothing
	// was written.
	ErrNotObjectKey = errors.New("not the key of one object")
	// ErrReadabilityUnknown means a delete was asked for a value of which
	// it cannot be told here whether the apiserver reads it: encrypted at
	// rest with no encryption config given, under a KMS provider whose
	// plugin did not answer, or in a format this build does not read
	// (CBOR). Nothing was written. The error is an
	// *UnknownReadabilityError.
	ErrReadabilityUnknown = errors.New("whether the apiserver can read it is not known")
)

// UnknownReadabilityError refuses to delete a value whose readability by
// the apiserver is unknown. It matches ErrReadabilityUnknown and its
// cause.
type UnknownReadabilityError struct {
	Object string
	// Cause is why the value was not read here.
	Cause error
}

func (e *UnknownReadabilityError) Error() string {
	return fmt.Sprintf("delete %s: %v (%v); nothing written", e.Object, ErrReadabilityUnknown, e.Cause)
}

// Unwrap returns ErrReadabilityUnknown and the cause.
func (e *UnknownReadabilityError) Unwrap() []error {
	return []error{ErrReadabilityUnknown, e.Cause}
}

// Hint says what to do.
func (e *UnknownReadabilityError) Hint() string {
	if errors.Is(e.Cause, codec.ErrUnsupported) {
		return "the value is in a storage format this build does not read (CBOR, which an apiserver with CBOR storage writes), which says nothing of the apiserver's: ask it (`kubectl get`); --force deletes the value anyway"
	}
	if errors.Is(e.Cause, encryption.ErrPluginFailed) {
		return "the KMS plugin did not answer here, which says nothing of the apiserver's: check the plugin (the apiserver's own LIST tells whether it reads the value); if the key is gone for good, --force deletes the value anyway"
	}
	return "give the apiserver's EncryptionConfiguration (--encryption-config, or --kubeadm on a control-plane node): a value it cannot decrypt is then deleted; --force deletes it anyway"
}

// unreadableKnown reports whether err, why a value was not read here,
// establishes that the apiserver cannot read it either: a decoding error,
// a key the encryption config does not hold or that does not decrypt it,
// another kind under the key. Not so without an encryption config, when a
// KMS plugin did not answer, or for a storage format this build does not
// read (CBOR, which an apiserver with CBOR storage enabled writes).
func unreadableKnown(err error) bool {
	return !errors.Is(err, codec.ErrEncrypted) && !errors.Is(err, encryption.ErrNoConfig) &&
		!errors.Is(err, encryption.ErrPluginFailed) && !errors.Is(err, codec.ErrUnsupported)
}

// ReadableError refuses to delete an object the apiserver can read. It
// matches ErrReadable.
type ReadableError struct {
	// Object names it as kubectl does; Kubectl is the kubectl command
	// that deletes it.
	Object, Kubectl string
}

func (e *ReadableError) Error() string {
	return fmt.Sprintf("delete %s: %v; nothing written", e.Object, ErrReadable)
}

// Unwrap returns ErrReadable.
func (e *ReadableError) Unwrap() error { return ErrReadable }

// Hint says what to do.
func (e *ReadableError) Hint() string {
	return fmt.Sprintf("delete it through the apiserver (`%s`), which runs its finalizers and admission; --force deletes it from etcd here anyway", e.Kubectl)
}

// PlanDelete plans deleting key from etcd. The plan is a compare-and-delete
// on the mod revision read, its Diff what goes: for a value that cannot be
// read, its size, sha256 and why it cannot be read (a Secret's bytes are
// never shown without ShowSecrets); for an object that can, its YAML.
// Deleting an object the apiserver can read is refused (*ReadableError)
// unless force, and so is a value of which it cannot be told here whether
// the apiserver reads it (*UnknownReadabilityError: encrypted with no
// encryption config given, a KMS plugin that did not answer). A key under
// a resource's storage path that names no single object
// (resource.BadKey), which every LIST of the resource fails on, is
// unreadable whatever its value; any other key that names no object (a
// prefix, the apiserver's own keys) is refused (ErrNotObjectKey); a key
// that does not exist is store.ErrNotFound.
func (c Planner) PlanDelete(ctx context.Context, r store.Reader, key string, force bool) (*Plan, error) {
	res, ns, name, ok := resource.ParseKey(c.StorePrefix(), key)
	if !ok {
		bad := false
		if res, ns, bad = resource.BadKey(c.StorePrefix(), key); !bad {
			return nil, fmt.Errorf("delete %s: %w under the prefix %s (delete takes one object: RESOURCE NAME, or the whole key of one object with --etcd-key); nothing written", key, ErrNotObjectKey, c.StorePrefix())
		}
	}
	kv, err := r.Get(ctx, key, 0)
	if err != nil {
		if !ok {
			return nil, fmt.Errorf("delete %s: %w", key, err)
		}
		return nil, fmt.Errorf("delete %s: %w", kubectlName(res.Singular, ns, name), err)
	}
	return c.planDelete(ctx, *kv, res, ns, name, force)
}

// Unreadable judges kv by the rule delete follows: why the apiserver
// cannot read it (nil: it can, or kv is no object's key and under no
// resource's storage path), and whether that is known here (false:
// encrypted with no encryption config given, a KMS plugin that did not
// answer, a CBOR value; see ErrReadabilityUnknown).
func (c Planner) Unreadable(ctx context.Context, kv store.KeyValue) (why error, known bool) {
	_, _, _, ok := resource.ParseKey(c.StorePrefix(), kv.Key)
	_, _, bad := resource.BadKey(c.StorePrefix(), kv.Key)
	if !ok && !bad {
		return nil, true
	}
	if _, err := c.Check(ctx, kv); err != nil {
		return err, unreadableKnown(err)
	}
	return nil, true
}

// planDelete plans deleting kv, read at the latest revision, the object
// name of resource res in namespace ns (name "": a key under res's
// storage path that names no single object).
func (c Planner) planDelete(ctx context.Context, kv store.KeyValue, res resource.Resource, ns, name string, force bool) (*Plan, error) {
	key := kv.Key
	gr := res.GroupResource()
	kind := res.Singular
	if kind == "" {
		kind = res.String() // a custom resource: widgets.example.com
	}
	object := kubectlName(kind, ns, name)
	if name == "" {
		object = key
	}
	p := &Plan{Key: key, GR: gr, Delete: true, Expect: kv.ModRevision, Lease: kv.Lease}
	_, why := c.Check(ctx, kv)
	var cur *kubevalue.Current
	var err error
	if why == nil {
		// A key naming no object: the apiserver lists what it holds,
		// but no delete through the API reaches it.
		if !force && name != "" {
			return nil, &ReadableError{Object: object, Kubectl: kubectlDelete(res, ns, name)}
		}
		// The apiserver reads it; this build may still not decode it
		// for display (a value stored base64-wrapped, JSON without
		// its kind).
		cur, err = c.Open(ctx, kv)
		if err != nil {
			p.Before = &kubevalue.Current{KV: kv, GR: gr}
			p.Diff = c.rawDiff(key, gr.Resource, kv.Value, kv.ModRevision, nil, key+" (deleted)", err)
			p.Description = fmt.Sprintf("delete %s (readable, --force)", object)
		}
	}

	switch {
	case why != nil:
		known := unreadableKnown(why)
		if !known && !force {
			return nil, &UnknownReadabilityError{Object: object, Cause: why}
		}
		// The reason stays out of the description (the backup records
		// it): only the diff, which redacts a Secret's bytes, says it.
		p.Before = &kubevalue.Current{KV: kv, GR: gr}
		p.Diff = c.rawDiff(key, gr.Resource, kv.Value, kv.ModRevision, nil, key+" (deleted)", why)
		p.Description = fmt.Sprintf("delete %s, whose stored value cannot be read", object)
		if !known {
			p.Description = fmt.Sprintf("delete %s, whose stored value was not read here (--force)", object)
		}
	case cur != nil:
		p.Before = cur
		if p.Diff, err = c.RenderDiff(fmt.Sprintf("%s (revision %d)", key, kv.ModRevision), cur.Obj, kv.ModRevision, key+" (deleted)", nil, 0); err != nil {
			return nil, err
		}
		p.Description = fmt.Sprintf("delete %s (readable, --force)", object)
	}
	if name == "" && why == nil {
		p.Description = fmt.Sprintf("delete %s, which names no single object of %s", object, res)
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s names no single object of %s: the apiserver lists what it holds, but no delete through the API reaches it", key, res))
	}
	if why == nil && name != "" {
		p.Warnings = append(p.Warnings, fmt.Sprintf("delete removes %s from etcd directly: no finalizers run, admission is skipped, and nothing it owns is garbage-collected until the garbage collector notices", object))
	}
	if kv.Lease != 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s is attached to lease %x; restoring its backup creates it without that lease", object, kv.Lease))
	}
	return p, nil
}

// UnreadableScan is what PlanDeleteUnreadable read: the plans, one per
// value the apiserver cannot read, and what the scan covered.
type UnreadableScan struct {
	// Plans delete each value found that the apiserver cannot read, in
	// key order.
	Plans []*Plan
	// Read counts the object keys read in the scope, readable or not,
	// and the keys under a resource's storage path that name no object;
	// Skipped the keys in it under no resource's path (the apiserver's
	// own, such as ranges), which are never deleted.
	Read, Skipped int
	// Unknown are the values in the scope of which it cannot be told here
	// whether the apiserver reads them (ErrReadabilityUnknown): not
	// deleted, unless the apiserver is asked first (Unjudged).
	Unknown []*UnknownReadabilityError
	// Unjudged plans the delete of each of Unknown, in the same order,
	// for a caller that has the apiserver judge them before the write
	// (--verify=always): its answer, not this tool's, decides.
	Unjudged []*Plan
	// Span is the revisions the scan was read at (a compaction while it
	// ran moves it on: store.ListOptions.OnCompacted).
	Span store.Span
	// Revision is the revision the scan started at.
	Revision int64
}

// PlanDeleteUnreadable reads every key under prefix that match keeps
// (nil: every one), page by page, and plans the delete of each value the
// apiserver cannot read, by the rule PlanDelete follows: the same diff,
// backup, compare-and-delete on the mod revision read. Readable objects
// and keys under no resource's storage path are left alone (keys under
// one that name no object are planned: resource.BadKey), and so are the values of
// which it cannot be told whether the apiserver reads them (Unknown: no
// encryption config, a KMS plugin that did not answer). The plans are written
// through the one executor (Execute), each its own compare-and-delete:
// a run interrupted or stopped part way is resumed by running it again,
// which finds only what is left.
func (c Planner) PlanDeleteUnreadable(ctx context.Context, r store.Reader, prefix string, match func(key string) bool, pageSize int64) (*UnreadableScan, error) {
	scan := &UnreadableScan{}
	// What one key is: not in the scope, not an object, readable, or a
	// plan. Keys are opened on several cores (store.ListMap).
	type seen struct {
		skipped, object bool
		plan            *Plan
		unknown         *UnknownReadabilityError
		unjudged        bool // plan deletes unknown
	}
	mapFn := func(kv *store.KeyValue) (seen, error) {
		if match != nil && !match(kv.Key) {
			return seen{}, nil
		}
		res, ns, name, ok := resource.ParseKey(c.StorePrefix(), kv.Key)
		if !ok {
			bad := false
			if res, ns, bad = resource.BadKey(c.StorePrefix(), kv.Key); !bad {
				return seen{skipped: true}, nil
			}
		}
		if _, err := c.Check(ctx, *kv); err == nil {
			return seen{object: true}, nil
		}
		held := *kv
		held.Value = append([]byte(nil), kv.Value...)
		p, err := c.planDelete(ctx, held, res, ns, name, false)
		var ue *UnknownReadabilityError
		if errors.As(err, &ue) {
			u, err := c.planDelete(ctx, held, res, ns, name, true)
			if err != nil {
				return seen{}, err
			}
			u.Description = strings.Replace(u.Description, "(--force)", "(the apiserver asked first, --verify=always)", 1)
			return seen{object: true, unknown: ue, plan: u, unjudged: true}, nil
		}
		return seen{object: true, plan: p}, err
	}
	emit := func(s seen) error {
		switch {
		case s.skipped:
			scan.Skipped++
		case s.object:
			scan.Read++
		}
		switch {
		case s.unjudged:
			scan.Unjudged = append(scan.Unjudged, s.plan)
		case s.plan != nil:
			scan.Plans = append(scan.Plans, s.plan)
		}
		if s.unknown != nil {
			scan.Unknown = append(scan.Unknown, s.unknown)
		}
		return nil
	}
	rev, err := store.ListMap(ctx, r, prefix, store.ListOptions{PageSize: pageSize, OnCompacted: scan.Span.Record}, 0, mapFn, emit)
	if err != nil {
		return nil, fmt.Errorf("scan %s for values the apiserver cannot read: %w; nothing written", prefix, err)
	}
	scan.Revision = rev
	if scan.Span.From != 0 {
		scan.Revision = scan.Span.From
	}
	return scan, nil
}

// kubectlDelete is the kubectl command that deletes the object.
func kubectlDelete(r resource.Resource, ns, name string) string {
	what := r.Plural
	if r.Group != "" {
		what += "." + r.Group
	}
	if ns == "" {
		return fmt.Sprintf("kubectl delete %s %s", what, name)
	}
	return fmt.Sprintf("kubectl delete %s %s -n %s", what, name, ns)
}
