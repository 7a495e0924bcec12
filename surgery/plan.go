package surgery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// Plan is a write worked out and not yet made: Apply makes it.
type Plan struct {
	// Key is the etcd key written.
	Key string
	// GR is the key's resource, which selects its encryption provider.
	GR schema.GroupResource
	// Before is the key as read; nil when the plan creates the key.
	Before *kubevalue.Current
	// Expect is the mod revision the write requires the key to be at (0:
	// the key must not exist).
	Expect int64
	// Lease is the lease the write attaches: the key's own lease for an
	// edit, none for a create.
	Lease int64
	// NewPlain is the new value in the clear; NewStored is what is written
	// (NewPlain encrypted when the resource is encrypted at rest).
	NewPlain, NewStored []byte
	// NoOp is true when the edit changes nothing; such a plan must not be
	// applied.
	NoOp bool
	// NoOpReason says why the edit changes nothing, when it says
	// (NoOpReasoner): "persistentvolumeclaim x in namespace demo is not
	// Terminating".
	NoOpReason string
	// Diff is a unified diff of the object's YAML before and after.
	Diff string
	// Warnings are things that could undo the edit or that the operator
	// should know before applying it.
	Warnings []string
	// Description says what the write does.
	Description string
	// Delete makes the write a compare-and-delete of Key at Expect instead
	// of a put (restore of a backup that recorded a create).
	Delete bool
	// Settles is the backup of a write of unknown outcome that this plan,
	// a fence, makes unable to apply (recorded in its audit lines).
	Settles string
}

// MakePlan reads key at the latest revision with a linearizable read,
// applies e, proves the result decodes to the same object, refuses
// metadata the edit made invalid (ErrInvalid, with the apiserver's own
// validation message), seals it, diffs it and collects warnings. An edit
// that changes nothing yields a plan with NoOp set.
func (c Planner) MakePlan(ctx context.Context, r store.Reader, key string, e Edit) (*Plan, error) {
	cur, err := c.Load(ctx, r, key, 0)
	if err != nil {
		gr, _ := c.GroupResource(key)
		return nil, fmt.Errorf("plan %s: %w", describe(e, gr == secretsGR), err)
	}
	p := &Plan{
		Key:         key,
		GR:          cur.GR,
		Before:      cur,
		Expect:      cur.KV.ModRevision,
		Lease:       cur.KV.Lease,
		Description: describe(e, codec.IsSecret(cur.Obj.Content) || cur.GR == secretsGR),
	}
	if d, ok := e.(ObjectDescriber); ok {
		p.Description = d.DescribeObject(cur)
	}
	keyErr := c.checkKey(key, cur.Obj)
	if keyErr != nil && !c.AllowKeyMismatch {
		return nil, fmt.Errorf("plan %s: %w; nothing written", p.Description, keyErr)
	}
	newPlain, err := e.Transform(cur)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(newPlain, cur.Plain) {
		p.NoOp = true
		p.NewPlain, p.NewStored = cur.Plain, cur.KV.Value
		if r, ok := e.(NoOpReasoner); ok {
			p.NoOpReason = r.NoOpReason(cur)
		}
		return p, nil
	}
	after, err := verifyNew(key, cur.Obj, newPlain)
	if err != nil {
		return nil, err
	}
	metaWarning, err := checkMeta(cur.Obj, after)
	if err != nil {
		return nil, err
	}
	p.NewPlain = newPlain
	if p.NewStored, err = c.Seal(ctx, cur.GR, key, newPlain); err != nil {
		return nil, err
	}
	rev := cur.KV.ModRevision
	if p.Diff, err = c.RenderDiff(fmt.Sprintf("%s (revision %d)", key, rev), cur.Obj, rev, key+" (edited)", after, rev); err != nil {
		return nil, err
	}
	p.Warnings = c.warnings(ctx, r, cur, after, terminating(cur.Obj.Meta) && !terminating(after.Meta))
	if n, ok := e.(Noter); ok {
		p.Warnings = append(p.Warnings, n.Notes(cur)...)
	}
	if metaWarning != "" {
		p.Warnings = append(p.Warnings, metaWarning)
	}
	if keyErr != nil {
		p.Warnings = append([]string{keyErr.Error() + "; writing it anyway, as forced"}, p.Warnings...)
	}
	return p, nil
}

// verifyNew decodes a new plaintext value and checks that it is the same
// object as before: same storage format, apiVersion, kind, name, namespace
// and uid. MakePlan also validates the metadata the edit changed
// (checkMeta); a restore puts back bytes that were stored and is not.
func verifyNew(key string, before *codec.Object, newPlain []byte) (*codec.Object, error) {
	after, err := codec.Decode(newPlain)
	if err != nil {
		return nil, fmt.Errorf("check new value of %s: it does not decode: %w", key, err)
	}
	for _, f := range []struct{ what, a, b string }{
		{"storage format", before.Format.String(), after.Format.String()},
		{"apiVersion", before.GVK.GroupVersion().String(), after.GVK.GroupVersion().String()},
		{"kind", before.GVK.Kind, after.GVK.Kind},
		{"metadata.name", before.Meta.Name, after.Meta.Name},
		{"metadata.namespace", before.Meta.Namespace, after.Meta.Namespace},
		{"metadata.uid", string(before.Meta.UID), string(after.Meta.UID)},
	} {
		if f.a != f.b {
			return nil, fmt.Errorf("check new value of %s: %s would change from %q to %q: %w", key, f.what, f.a, f.b, ErrImmutableField)
		}
	}
	return after, nil
}

// secretPatchNote ends the description of a Secret's patch.
const secretPatchNote = "(values not shown: Secret)"

// secretsGR is the resource of Secrets.
var secretsGR = schema.GroupResource{Resource: "secrets"}

// describe returns e's description for plans, backups, the audit log and
// dry runs. For a Secret (secret) the values an edit sets are left out,
// since these land on screen and on disk: a patch is described by the
// paths it patches. (Other edits name no values beyond labels: annotate
// names the annotations it sets, not their values.)
func describe(e Edit, secret bool) string {
	if !secret {
		return e.Describe()
	}
	switch e := e.(type) {
	case Patch:
		return fmt.Sprintf("%s patch of %s %s", e.Type, strings.Join(patchedPaths(e), ", "), secretPatchNote)
	}
	return e.Describe()
}

// secretOperation returns a backup's recorded operation for a restore's
// description, leaving out a Secret's patch recorded with its values (as
// backups made before patches of Secrets were described by their paths
// hold them).
func secretOperation(op string, secret bool) string {
	if secret && (strings.HasPrefix(op, PatchMerge+" patch ") || strings.HasPrefix(op, PatchJSON+" patch ")) && !strings.HasSuffix(op, secretPatchNote) {
		return "a patch, values not shown: Secret"
	}
	return op
}

// patchedPaths lists the fields a patch sets or removes, without their
// values: JSON pointer paths with their operation for a JSON patch
// ("replace /data/password"), dotted paths for a merge patch
// ("data.password", "-data.old" for a removal). A patch that does not
// parse is described as such.
func patchedPaths(p Patch) []string {
	var out []string
	switch p.Type {
	case PatchJSON:
		var ops []struct {
			Op   string `json:"op"`
			Path string `json:"path"`
			From string `json:"from"`
		}
		if err := yaml.Unmarshal(p.Patch, &ops); err != nil {
			return []string{"a JSON patch that does not parse"}
		}
		for _, op := range ops {
			s := op.Op + " " + op.Path
			if op.From != "" {
				s += " from " + op.From
			}
			out = append(out, s)
		}
	default:
		var doc any
		if err := yaml.Unmarshal(p.Patch, &doc); err != nil {
			return []string{"a merge patch that does not parse"}
		}
		var walk func(prefix string, v any)
		walk = func(prefix string, v any) {
			m, ok := v.(map[string]any)
			if !ok || len(m) == 0 {
				switch {
				case prefix == "":
					out = append(out, "the whole object")
				case v == nil:
					out = append(out, "-"+prefix)
				default:
					out = append(out, prefix)
				}
				return
			}
			for _, k := range slices.Sorted(maps.Keys(m)) {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, m[k])
			}
		}
		walk("", doc)
	}
	if len(out) == 0 {
		return []string{"nothing"}
	}
	return out
}

// warnings looks, through r, for what could undo a write of after or what
// the operator should know first. before is the key as read (nil for a
// create); revived says the write takes the object out of deletion.
func (c Planner) warnings(ctx context.Context, r store.Reader, before *kubevalue.Current, after *codec.Object, revived bool) []string {
	var out []string
	warn := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	deleting := revived || terminating(after.Meta) || (before != nil && terminating(before.Obj.Meta))
	ns := after.Meta.Namespace
	what := after.GVK.Kind + " " + after.Name()

	if before != nil && before.Stale {
		warn("%s is not stored the way the encryption config's first provider for %s stores it; it will be written with %s", before.KV.Key, before.GR, c.Enc.Providers(before.GR)[0])
	}
	if terminating(after.Meta) && len(after.Meta.Finalizers) == 0 && (before == nil || len(before.Obj.Meta.Finalizers) > 0) {
		warn("%s keeps its deletionTimestamp and has no finalizers left: the API server deletes it for good on its next update", what)
	}
	if revived {
		for _, ref := range after.Meta.OwnerReferences {
			if w := c.checkOwner(ctx, r, ns, what, ref); w != "" {
				out = append(out, w)
			}
		}
	}
	if ns != "" {
		if w := c.checkNamespace(ctx, r, ns, what); w != "" {
			out = append(out, w)
		}
	}
	if !deleting {
		return out
	}
	switch obj := after.Typed.(type) {
	case *corev1.PersistentVolumeClaim:
		for _, ref := range obj.OwnerReferences {
			if ref.Kind == "StatefulSet" && strings.HasPrefix(ref.APIVersion, "apps/") {
				out = append(out, c.checkRetention(ctx, r, ns, what, ref)...)
			}
		}
		if obj.Spec.VolumeName != "" {
			if w := c.checkVolume(ctx, r, obj); w != "" {
				out = append(out, w)
			}
		} else if w := c.checkPreboundVolume(ctx, r, obj); w != "" {
			out = append(out, w)
		}
	case *corev1.PersistentVolume:
		if ref := obj.Spec.ClaimRef; ref != nil && ref.Name != "" {
			if w := c.checkClaim(ctx, r, obj); w != "" {
				out = append(out, w)
			}
		}
	}
	return out
}

// lookup loads the object kind/namespace/name, where kind is a kind,
// optionally qualified by its group ("StatefulSet.apps").
func (c Planner) lookup(ctx context.Context, r store.Reader, kind, namespace, name string) (*kubevalue.Current, error) {
	res, err := resource.Lookup(kind)
	if err != nil {
		return nil, err
	}
	if !res.Namespaced {
		namespace = ""
	}
	key, err := res.Key(c.StorePrefix(), namespace, name)
	if err != nil {
		return nil, err
	}
	return c.Load(ctx, r, key, 0)
}

// checkOwner warns when an ownerReference's owner is gone, has another uid
// or is being deleted: the garbage collector would delete the object again.
func (c Planner) checkOwner(ctx context.Context, r store.Reader, ns, what string, ref metav1.OwnerReference) string {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return fmt.Sprintf("%s has an ownerReference with an invalid apiVersion %q; the garbage collector may delete it again", what, ref.APIVersion)
	}
	kind := ref.Kind
	if gv.Group != "" {
		kind += "." + gv.Group
	}
	owner := fmt.Sprintf("%s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
	res, err := resource.Lookup(kind)
	if err != nil || !res.BuiltIn || res.Kind != ref.Kind {
		return fmt.Sprintf("cannot check that the owner %s of %s still exists (not a built-in kind); if it is gone, the garbage collector will delete %s again", owner, what, what)
	}
	cur, err := c.lookup(ctx, r, kind, ns, ref.Name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("the owner %s of %s no longer exists: the garbage collector will delete %s again unless the ownerReference is removed first", owner, what, what)
	case err != nil:
		return fmt.Sprintf("cannot check the owner %s of %s: %v", owner, what, err)
	case cur.Obj.Meta.UID != ref.UID:
		return fmt.Sprintf("the owner %s of %s was replaced: %s %s now has uid %s, so the garbage collector treats the owner as gone and will delete %s again unless the ownerReference is removed first", owner, what, ref.Kind, ref.Name, cur.Obj.Meta.UID, what)
	case terminating(cur.Obj.Meta):
		return fmt.Sprintf("the owner %s of %s is itself being deleted: the garbage collector may delete %s again", owner, what, what)
	}
	return ""
}

// checkNamespace warns when the object's namespace is gone or Terminating.
func (c Planner) checkNamespace(ctx context.Context, r store.Reader, ns, what string) string {
	cur, err := c.lookup(ctx, r, "namespaces", "", ns)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("the namespace %s of %s does not exist: recreate or recover the namespace first", ns, what)
	case err != nil:
		return fmt.Sprintf("cannot check the namespace %s of %s: %v", ns, what, err)
	}
	nsObj, _ := cur.Obj.Typed.(*corev1.Namespace)
	if terminating(cur.Obj.Meta) || (nsObj != nil && nsObj.Status.Phase == corev1.NamespaceTerminating) {
		since := ""
		if t := cur.Obj.Meta.DeletionTimestamp; t != nil {
			since = " since " + t.UTC().Format("2006-01-02T15:04:05Z")
		}
		return fmt.Sprintf("the namespace %s is Terminating%s: the namespace controller deletes everything in it, %s included; undelete the namespace first", ns, since, what)
	}
	return ""
}

// checkRetention warns when the StatefulSet owning a claim deletes its
// claims.
func (c Planner) checkRetention(ctx context.Context, r store.Reader, ns, what string, ref metav1.OwnerReference) []string {
	cur, err := c.lookup(ctx, r, "statefulsets.apps", ns, ref.Name)
	if err != nil || cur.Obj.Meta.UID != ref.UID {
		return nil // reported by checkOwner when it matters
	}
	sts, _ := cur.Obj.Typed.(*appsv1.StatefulSet)
	if sts == nil || sts.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		return nil
	}
	var out []string
	policy := sts.Spec.PersistentVolumeClaimRetentionPolicy
	if policy.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		out = append(out, fmt.Sprintf("%s is owned by StatefulSet %s/%s, whose persistentVolumeClaimRetentionPolicy.whenDeleted is Delete: deleting the StatefulSet deletes this claim", what, ns, ref.Name))
	}
	if policy.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		out = append(out, fmt.Sprintf("%s belongs to StatefulSet %s/%s, whose persistentVolumeClaimRetentionPolicy.whenScaled is Delete: scaling the StatefulSet down past this claim's ordinal deletes it", what, ns, ref.Name))
	}
	return out
}

// checkVolume warns when the volume a claim is bound to would be deleted
// with the claim, is gone, or is bound to another claim.
// checkPreboundVolume warns, for a claim without spec.volumeName, about a
// PersistentVolume whose claimRef names the claim (a pre-bound volume, or
// one whose binding the claim never recorded) and whose reclaim policy is
// Delete. It reads every PersistentVolume once, page by page.
func (c Planner) checkPreboundVolume(ctx context.Context, r store.Reader, pvc *corev1.PersistentVolumeClaim) string {
	res, err := resource.Lookup("persistentvolumes")
	if err != nil {
		return ""
	}
	what := fmt.Sprintf("PersistentVolumeClaim %s/%s", pvc.Namespace, pvc.Name)
	var found string
	_, err = r.List(ctx, res.ListPrefix(c.StorePrefix(), ""), store.ListOptions{OnCompacted: kubevalue.AcrossCompaction}, func(kv *store.KeyValue) error {
		cur, err := c.Open(ctx, *kv)
		if err != nil {
			return nil // an unreadable volume cannot be checked; others still are
		}
		pv, _ := cur.Obj.Typed.(*corev1.PersistentVolume)
		if pv == nil || pv.Spec.ClaimRef == nil {
			return nil
		}
		ref := pv.Spec.ClaimRef
		if ref.Namespace != pvc.Namespace || ref.Name != pvc.Name || (ref.UID != "" && ref.UID != pvc.UID) {
			return nil
		}
		if pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
			found = fmt.Sprintf("PersistentVolume %s's claimRef names %s and its persistentVolumeReclaimPolicy is Delete: if the claim goes, the volume and its data are deleted; consider setting the policy to Retain first", pv.Name, what)
			return errStopList
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopList) {
		return fmt.Sprintf("cannot check the PersistentVolumes that may name %s: %v", what, err)
	}
	return found
}

// errStopList ends a List early.
var errStopList = errors.New("stop listing")

func (c Planner) checkVolume(ctx context.Context, r store.Reader, pvc *corev1.PersistentVolumeClaim) string {
	name := pvc.Spec.VolumeName
	what := fmt.Sprintf("PersistentVolumeClaim %s/%s", pvc.Namespace, pvc.Name)
	cur, err := c.lookup(ctx, r, "persistentvolumes", "", name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("%s is bound to PersistentVolume %s, which does not exist: the claim will be Lost", what, name)
	case err != nil:
		return fmt.Sprintf("cannot check PersistentVolume %s of %s: %v", name, what, err)
	}
	pv, _ := cur.Obj.Typed.(*corev1.PersistentVolume)
	if pv == nil {
		return ""
	}
	if ref := pv.Spec.ClaimRef; ref != nil && ref.UID != "" && ref.UID != pvc.UID {
		return fmt.Sprintf("PersistentVolume %s's claimRef names uid %s, not %s's uid %s: the binder treats the claim as lost", name, ref.UID, what, pvc.UID)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
		return fmt.Sprintf("%s is bound to PersistentVolume %s, whose persistentVolumeReclaimPolicy is Delete: if the claim goes, the volume and its data are deleted; consider setting the policy to Retain first", what, name)
	}
	return ""
}

// checkClaim warns when the claim a volume's claimRef names is gone or has
// another uid.
func (c Planner) checkClaim(ctx context.Context, r store.Reader, pv *corev1.PersistentVolume) string {
	ref := pv.Spec.ClaimRef
	what := "PersistentVolume " + pv.Name
	cur, err := c.lookup(ctx, r, "persistentvolumeclaims", ref.Namespace, ref.Name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("%s's claimRef names PersistentVolumeClaim %s/%s, which does not exist: with reclaim policy %s the volume will be Released (or deleted, if Delete)", what, ref.Namespace, ref.Name, pv.Spec.PersistentVolumeReclaimPolicy)
	case err != nil:
		return fmt.Sprintf("cannot check the claim %s/%s of %s: %v", ref.Namespace, ref.Name, what, err)
	case ref.UID != "" && cur.Obj.Meta.UID != ref.UID:
		return fmt.Sprintf("%s's claimRef names uid %s, but PersistentVolumeClaim %s/%s has uid %s: the binder treats the claim as lost", what, ref.UID, ref.Namespace, ref.Name, cur.Obj.Meta.UID)
	}
	return ""
}
