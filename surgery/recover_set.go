package surgery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// SetAction is what a RecoverSet plan does with one object.
type SetAction string

// The actions of a RecoverSet plan.
const (
	// ActionCreate creates the object: its key is absent from the target.
	ActionCreate SetAction = "create"
	// ActionIdentical: the key exists with the value recover would write
	// (an earlier run created it); nothing to do.
	ActionIdentical SetAction = "exists-identical"
	// ActionDifferent: the key exists with another value; it is never
	// overwritten unless RecoverSetOptions.ReplaceDifferent.
	ActionDifferent SetAction = "exists-different"
	// ActionReplace overwrites an existing key with a compare-and-swap
	// (RecoverSetOptions.ReplaceDifferent).
	ActionReplace SetAction = "replace"
	// ActionSkipped: excluded (SetItem.Reason says why).
	ActionSkipped SetAction = "skipped"
	// ActionUnreadable: the source value could not be decrypted or
	// decoded; it is not recovered and the plan is incomplete.
	ActionUnreadable SetAction = "unreadable"
)

// RecoverSetOptions says which objects PlanRecoverSet recovers.
type RecoverSetOptions struct {
	// Namespace, when set, recovers the Namespace of that name and every
	// namespaced object it held, in every resource, custom resources
	// included. Resource must then be nil.
	Namespace string
	// Resource, with InNamespace ("" for every namespace) and Selector
	// (nil for every object), recovers a selection of one resource.
	Resource    *resource.Resource
	InNamespace string
	Selector    labels.Selector
	// Rev is the source revision read (0: the source's latest).
	Rev int64
	// Include and Exclude are resources (storage paths, as
	// resource.Resource.Path) taken out of, or added to, the default
	// exclusions (DefaultExclusions, and Pods and ReplicaSets whose owner
	// is recovered).
	Include, Exclude []resource.Resource
	// ReplaceDifferent overwrites an existing object whose value differs
	// (with a compare-and-swap and a backup) instead of skipping it.
	ReplaceDifferent bool
}

// DefaultExclusions are the resources a RecoverSet leaves out unless
// included, and why.
var DefaultExclusions = []struct {
	Path, Reason string
}{
	{"events", "events are not recovered (--include events to recover them)"},
	{"services/endpoints", "endpoints are regenerated from their Service (--include endpoints to recover them)"},
	{"endpointslices", "endpointslices are regenerated from their Service (--include endpointslices.discovery.k8s.io to recover them)"},
	{"leases", "leases are renewed by their holders (--include leases to recover them)"},
}

// SetItem is one object of a RecoverSet plan.
type SetItem struct {
	// Key is the etcd key; Resource, Namespace and Name name it.
	Key       string
	Resource  resource.Resource
	Namespace string
	Name      string
	// Kind is the stored kind ("" when unreadable).
	Kind string
	// UID is the object's uid, kept.
	UID types.UID
	// Action is what the plan does; Reason says why for a skip, an
	// unreadable value or an existing object.
	Action SetAction
	Reason string
	// Plan is the write of a create or a replace.
	Plan *Plan
	// Warnings are what the operator should know about this object.
	Warnings []string
	// SourceRevision is the revision of the source value.
	SourceRevision int64
	// LiveSHA256 is the sha256 of the value the live key holds, for an
	// item found there identical (ActionIdentical).
	LiveSHA256 string

	rank  int
	owner []metav1.OwnerReference
	node  string
	claim *corev1.PersistentVolumeClaim // as in the source
}

// What names the item as kubectl would: "persistentvolumeclaim data-0".
func (it *SetItem) What() string {
	kind := it.Resource.Singular
	if kind == "" {
		kind = it.Resource.String()
	} else if it.Resource.Group != "" {
		kind += "." + it.Resource.Group
	}
	return kind + " " + it.Name
}

// SetPlan is a RecoverSet worked out and not yet written: items in write
// order.
type SetPlan struct {
	Items []*SetItem
	// SourceRevision is the revision the source was read at.
	SourceRevision int64
	// Warnings concern the whole plan.
	Warnings []string
	// Preview is a plan made with no write target (PlanRecoverSet with a
	// nil live): only to print, never to write.
	Preview bool
}

// Count returns how many items have action a.
func (p *SetPlan) Count(a SetAction) int {
	n := 0
	for _, it := range p.Items {
		if it.Action == a {
			n++
		}
	}
	return n
}

// SkipReasons counts the skipped items by reason, existing objects
// included ("exists-identical", "exists-different").
func (p *SetPlan) SkipReasons() map[string]int {
	out := map[string]int{}
	for _, it := range p.Items {
		switch it.Action {
		case ActionSkipped:
			out[skipCategory(it.Reason)]++
		case ActionIdentical, ActionDifferent:
			out[string(it.Action)]++
		}
	}
	return out
}

// skipCategory shortens a skip reason to its category for totals.
func skipCategory(reason string) string {
	switch {
	case strings.HasPrefix(reason, "owned by "):
		return "owner recovered"
	case strings.HasPrefix(reason, "bound to node "):
		return "pod bound to a node"
	case strings.HasPrefix(reason, "excluded by "):
		return "--exclude"
	}
	if kind, _, ok := strings.Cut(reason, " are "); ok {
		return kind
	}
	return reason
}

// ErrMissingCRD means a custom resource to recover has no
// CustomResourceDefinition in the live cluster nor in the source.
var ErrMissingCRD = errors.New("customresourcedefinition missing")

// crdPath is the storage path of CustomResourceDefinitions.
const crdPath = "apiextensions.k8s.io/customresourcedefinitions"

// rankOf orders writes: the namespace, CRDs, ServiceAccounts, Secrets,
// ConfigMaps, RBAC, PersistentVolumeClaims, then the rest.
func rankOf(r resource.Resource) int {
	switch r.Path {
	case "namespaces":
		return 0
	case crdPath:
		return 1
	case "serviceaccounts":
		return 2
	case "secrets":
		return 3
	case "configmaps":
		return 4
	case "roles", "rolebindings":
		return 5
	case "persistentvolumeclaims":
		return 6
	}
	return 7
}

// PlanRecoverSet plans recovering many objects from src, read at o.Rev,
// into live: a namespace and everything it held, or a selection of one
// resource. Each object is decrypted, its deletion cleared as Undelete
// does (finalizers kept, a Namespace made Active), its uid kept, and
// sealed with the resource's first provider. An object whose key exists
// in live is never overwritten unless o.ReplaceDifferent: identical is
// reported and skipped, different too. A custom resource whose
// CustomResourceDefinition is in neither live nor src refuses the whole
// plan (ErrMissingCRD); one found only in src is recovered first. A
// namespace written into that is Terminating in live refuses the whole
// plan (a *TerminatingError): its namespace controller would delete what
// is recovered.
//
// A nil live is a plan with no write target, only to print: every object
// is a create, CustomResourceDefinitions are taken from src, and nothing
// of a live cluster is checked (Preview says so).
func (c Planner) PlanRecoverSet(ctx context.Context, src, live store.Reader, o RecoverSetOptions) (*SetPlan, error) {
	prefix := c.StorePrefix()
	var listPrefix, what string
	switch {
	case o.Namespace != "" && o.Resource == nil:
		listPrefix = strings.TrimSuffix(path.Join("/", prefix), "/") + "/"
		what = "namespace " + o.Namespace
	case o.Namespace == "" && o.Resource != nil:
		listPrefix = o.Resource.ListPrefix(prefix, o.InNamespace)
		what = o.Resource.String()
		if o.InNamespace != "" {
			what += " in namespace " + o.InNamespace
		}
	default:
		return nil, errors.New("recover: name a namespace or a resource")
	}
	excluded := map[string]string{}
	for _, d := range DefaultExclusions {
		excluded[d.Path] = d.Reason
	}
	if o.Resource != nil {
		delete(excluded, o.Resource.Path) // named explicitly
	}
	included := map[string]bool{}
	for _, r := range o.Include {
		delete(excluded, r.Path)
		included[r.Path] = true
	}
	for _, r := range o.Exclude {
		excluded[r.Path] = "excluded by --exclude " + r.String()
	}

	plan := &SetPlan{}
	crds := map[string]store.KeyValue{} // CRD name -> source value
	var nsItem *SetItem
	// Each key is read, decrypted, decoded and worked out on every core
	// (on a db file; one at a time elsewhere), then collected in key
	// order. mapFn touches nothing shared.
	type listed struct {
		it  *SetItem
		crd *store.KeyValue
	}
	mapFn := func(kv *store.KeyValue) (listed, error) {
		r, ns, name, ok := resource.ParseKey(prefix, kv.Key)
		if !ok {
			return listed{}, nil
		}
		if o.Namespace != "" {
			if r.Path == crdPath {
				crd := *kv
				crd.Value = bytes.Clone(kv.Value)
				return listed{crd: &crd}, nil
			}
			isNS := r.Path == "namespaces" && name == o.Namespace
			if ns != o.Namespace && !isNS {
				return listed{}, nil
			}
		}
		it := &SetItem{Key: kv.Key, Resource: r, Namespace: ns, Name: name, SourceRevision: kv.ModRevision, rank: rankOf(r)}
		reason, skip := excluded[r.Path]
		if skip && o.Selector == nil {
			// Not decoded: it is not written, and an exclusion needs
			// nothing from its value.
			it.Action, it.Reason = ActionSkipped, reason
			return listed{it: it}, nil
		}
		own := *kv
		own.Value = bytes.Clone(kv.Value) // kv is valid only during the call
		cur, err := c.Open(ctx, own)
		if err != nil {
			it.Action, it.Reason = ActionUnreadable, err.Error()
			return listed{it: it}, nil
		}
		if o.Selector != nil && !o.Selector.Matches(labels.Set(cur.Obj.Meta.Labels)) {
			return listed{}, nil
		}
		it.Kind, it.UID = cur.Obj.GVK.Kind, cur.Obj.Meta.UID
		it.owner = cur.Obj.Meta.OwnerReferences
		switch typed := cur.Obj.Typed.(type) {
		case *corev1.Pod:
			it.node = typed.Spec.NodeName
		case *corev1.PersistentVolumeClaim:
			it.claim = typed
		}
		if skip {
			it.Action, it.Reason = ActionSkipped, reason
			return listed{it: it}, nil
		}
		p, err := c.recoverValue(ctx, cur)
		if err != nil {
			it.Action, it.Reason = ActionUnreadable, err.Error()
			return listed{it: it}, nil
		}
		it.Plan, it.Action = p, ActionCreate
		return listed{it: it}, nil
	}
	// The source is read at one revision, so that the plan is of one
	// state: the latest of a live etcd that a compaction passes while it
	// is read is read again, whole, at the newer revision (a few times at
	// most); a revision named (o.Rev) cannot be, and the plan is refused.
	var rev int64
	var err error
	for attempt := 1; ; attempt++ {
		rev, err = store.ListMap(ctx, src, listPrefix, store.ListOptions{Revision: o.Rev}, 0, mapFn, func(l listed) error {
			switch {
			case l.crd != nil:
				_, _, name, _ := resource.ParseKey(prefix, l.crd.Key)
				crds[name] = *l.crd
			case l.it != nil:
				if l.it.Resource.Path == "namespaces" {
					nsItem = l.it
				}
				plan.Items = append(plan.Items, l.it)
			}
			return nil
		})
		if o.Rev != 0 || attempt == sourceReadAttempts || !errors.Is(err, store.ErrCompacted) {
			break
		}
		plan.Items, nsItem = nil, nil
		clear(crds)
	}
	if err != nil {
		return nil, fmt.Errorf("recover %s: read the source (nothing written): %w", what, err)
	}
	plan.SourceRevision = rev
	if o.Namespace != "" && nsItem == nil {
		at := "at its latest revision"
		if o.Rev != 0 {
			at = fmt.Sprintf("at revision %d", o.Rev)
		}
		return nil, fmt.Errorf("recover namespace %s: the source holds no namespace %s %s: %w", o.Namespace, o.Namespace, at, store.ErrNotFound)
	}

	c.skipOwned(plan, included)
	if live == nil {
		plan.Preview = true
		plan.Warnings = append(plan.Warnings, "no write target was given: every object is shown as it would be created where its key is absent; whether it exists in the live cluster, and whether a namespace written into is Terminating there, was not checked (add --endpoints or --kubeadm)")
	}
	if err := c.addCRDs(ctx, src, live, plan, crds, o.Rev); err != nil {
		return nil, fmt.Errorf("recover %s: %w", what, err)
	}
	slices.SortStableFunc(plan.Items, func(a, b *SetItem) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return strings.Compare(a.Key, b.Key)
	})
	if live == nil {
		return plan, nil
	}
	if err := c.checkExisting(ctx, live, plan, o.ReplaceDifferent); err != nil {
		return nil, fmt.Errorf("recover %s: %w", what, err)
	}
	if err := c.checkTerminating(ctx, live, plan); err != nil {
		return nil, fmt.Errorf("recover %s: %w", what, err)
	}
	c.claimWarnings(ctx, live, plan)
	return plan, nil
}

// ErrNamespaceTerminating means objects would be written into a
// namespace that is being deleted: its namespace controller would delete
// them again.
var ErrNamespaceTerminating = errors.New("the namespace is Terminating in the live cluster")

// TerminatingError refuses a RecoverSet into namespaces that are
// Terminating in the live cluster. It matches ErrNamespaceTerminating.
type TerminatingError struct {
	// Namespaces are the namespaces Terminating, sorted; Since their
	// deletionTimestamps.
	Namespaces, Since []string
}

func (e *TerminatingError) Error() string {
	parts := make([]string, len(e.Namespaces))
	for i, ns := range e.Namespaces {
		parts[i] = fmt.Sprintf("%s (deletionTimestamp %s)", ns, e.Since[i])
	}
	return fmt.Sprintf("namespace %s: %v: its namespace controller would delete again every object recovered into it; nothing written", strings.Join(parts, ", "), ErrNamespaceTerminating)
}

// Unwrap returns ErrNamespaceTerminating.
func (e *TerminatingError) Unwrap() error { return ErrNamespaceTerminating }

// Hint says the way out.
func (e *TerminatingError) Hint() string {
	cmds := make([]string, len(e.Namespaces))
	for i, ns := range e.Namespaces {
		cmds[i] = "etcdpvc undelete namespace " + ns
	}
	return fmt.Sprintf("take the namespace out of Terminating first (%s, with the same connection flags; it goes back to Active and the namespace controller stops deleting), then run this command again: what the controller deleted meanwhile is recovered then", strings.Join(cmds, "; "))
}

// checkTerminating refuses (a *TerminatingError) a plan that writes into
// a namespace Terminating in live: the namespace recovered, or the
// namespace of any object created or replaced.
func (c Planner) checkTerminating(ctx context.Context, live store.Reader, plan *SetPlan) error {
	names := map[string]bool{}
	for _, it := range plan.Items {
		switch {
		case it.Resource.Path == "namespaces" && it.Action != ActionSkipped && it.Action != ActionUnreadable:
			names[it.Name] = true
		case it.Plan != nil && it.Namespace != "":
			names[it.Namespace] = true
		}
	}
	te := &TerminatingError{}
	prefix := strings.TrimSuffix(path.Join("/", c.StorePrefix()), "/") + "/namespaces/"
	for _, ns := range slices.Sorted(mapsKeys(names)) {
		cur, err := c.Load(ctx, live, prefix+ns, 0)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return fmt.Errorf("read the live namespace %s (to check that it is not Terminating): %w", ns, err)
		}
		if terminating(cur.Obj.Meta) {
			since := "set"
			if cur.Obj.Meta.DeletionTimestamp != nil {
				since = cur.Obj.Meta.DeletionTimestamp.UTC().Format("2006-01-02T15:04:05Z")
			}
			te.Namespaces, te.Since = append(te.Namespaces, ns), append(te.Since, since)
		}
	}
	if len(te.Namespaces) > 0 {
		return te
	}
	return nil
}

// sourceReadAttempts is how many times PlanRecoverSet reads the latest
// state of a live source whole when etcd's compaction passes the revision
// it reads at.
const sourceReadAttempts = 3

// recoverValue works out the value recover writes for cur: its deletion
// cleared (finalizers kept), checked to decode to the same object, sealed.
func (c Planner) recoverValue(ctx context.Context, cur *kubevalue.Current) (*Plan, error) {
	newPlain, err := Undelete{KeepGCFinalizers: true}.Transform(cur)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(newPlain, cur.Plain) {
		after, err := verifyNew(cur.KV.Key, cur.Obj, newPlain)
		if err != nil {
			return nil, err
		}
		if err := c.checkKey(cur.KV.Key, after); err != nil {
			return nil, err
		}
	} else if err := c.checkKey(cur.KV.Key, cur.Obj); err != nil {
		return nil, err
	}
	p := &Plan{Key: cur.KV.Key, GR: cur.GR, NewPlain: newPlain,
		Description: fmt.Sprintf("recover %s from revision %d", cur.KV.Key, cur.KV.ModRevision)}
	if p.NewStored, err = c.Seal(ctx, cur.GR, cur.KV.Key, newPlain); err != nil {
		return nil, err
	}
	return p, nil
}

// skipOwned skips Pods and ReplicaSets whose owner is among the objects
// recovered (their controllers recreate them), and Pods bound to a node
// (a pod bound to a node must not come back), unless included.
func (c Planner) skipOwned(plan *SetPlan, included map[string]bool) {
	recovered := map[types.UID]*SetItem{}
	for _, it := range plan.Items {
		if it.UID != "" && it.Action != ActionSkipped && it.Action != ActionUnreadable {
			recovered[it.UID] = it
		}
	}
	for _, it := range plan.Items {
		if it.Action != ActionCreate || included[it.Resource.Path] {
			continue
		}
		if it.Resource.Path != "pods" && it.Resource.Path != "replicasets" {
			continue
		}
		for _, ref := range it.owner {
			if owner, ok := recovered[ref.UID]; ok {
				it.Action, it.Plan = ActionSkipped, nil
				it.Reason = fmt.Sprintf("owned by %s %s, which is recovered: its controller recreates it (--include %s to recover it)", ref.Kind, owner.Name, it.Resource.String())
				break
			}
		}
		if it.Action == ActionCreate && it.node != "" {
			it.Action, it.Plan = ActionSkipped, nil
			it.Reason = fmt.Sprintf("bound to node %s: a pod bound to a node must not come back; recreate it from its manifest (--include pods to recover it)", it.node)
		}
	}
}

// addCRDs makes sure every custom resource created has its
// CustomResourceDefinition: in live, else recovered from src (first), else
// the plan is refused.
func (c Planner) addCRDs(ctx context.Context, src, live store.Reader, plan *SetPlan, crds map[string]store.KeyValue, rev int64) error {
	need := map[string]bool{}
	for _, it := range plan.Items {
		if it.Action == ActionCreate && !it.Resource.BuiltIn && it.Resource.Path != crdPath {
			need[it.Resource.Plural+"."+it.Resource.Group] = true
		}
	}
	for _, name := range slices.Sorted(mapsKeys(need)) {
		key := strings.TrimSuffix(path.Join("/", c.StorePrefix()), "/") + "/" + crdPath + "/" + name
		if live != nil {
			if _, err := live.Get(ctx, key, 0); err == nil {
				continue
			} else if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("check customresourcedefinition %s: %w", name, err)
			}
		}
		kv, ok := crds[name]
		if !ok {
			got, err := src.Get(ctx, key, rev)
			switch {
			case errors.Is(err, store.ErrNotFound):
				return fmt.Errorf("custom resources %s cannot be recovered: %w: customresourcedefinition %s is not in the live cluster nor in the source; create it first (or --exclude %s)", name, ErrMissingCRD, name, name)
			case err != nil:
				return fmt.Errorf("read customresourcedefinition %s from the source: %w", name, err)
			}
			kv = *got
		}
		r, _, _, _ := resource.ParseKey(c.StorePrefix(), key)
		it := &SetItem{Key: key, Resource: r, Name: name, SourceRevision: kv.ModRevision, rank: rankOf(r)}
		cur, err := c.Open(ctx, kv)
		if err != nil {
			return fmt.Errorf("customresourcedefinition %s, needed by the custom resources recovered, cannot be read from the source: %w", name, err)
		}
		it.Kind, it.UID = cur.Obj.GVK.Kind, cur.Obj.Meta.UID
		if it.Plan, err = c.recoverValue(ctx, cur); err != nil {
			return fmt.Errorf("customresourcedefinition %s: %w", name, err)
		}
		it.Action = ActionCreate
		it.Warnings = append(it.Warnings, fmt.Sprintf("customresourcedefinition %s is gone from the live cluster and is recovered from the source, since the custom resources recovered need it", name))
		plan.Items = append(plan.Items, it)
	}
	return nil
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkExisting reads which keys exist in live (one keys-only list per
// resource listed) and compares each existing one with the value recover
// would write.
func (c Planner) checkExisting(ctx context.Context, live store.Reader, plan *SetPlan, replace bool) error {
	prefixes := map[string]bool{}
	for _, it := range plan.Items {
		if it.Action == ActionCreate {
			prefixes[it.Resource.ListPrefix(c.StorePrefix(), it.Namespace)] = true
		}
	}
	exists := map[string]bool{}
	for _, p := range slices.Sorted(mapsKeys(prefixes)) {
		// Which keys exist may be read across a compaction: each create
		// is checked again by its compare-and-swap.
		if _, err := live.List(ctx, p, store.ListOptions{KeysOnly: true, OnCompacted: kubevalue.AcrossCompaction}, func(kv *store.KeyValue) error {
			exists[kv.Key] = true
			return nil
		}); err != nil {
			return fmt.Errorf("list the live keys under %s: %w", p, err)
		}
	}
	for _, it := range plan.Items {
		if it.Action != ActionCreate || !exists[it.Key] {
			continue
		}
		cur, err := c.Load(ctx, live, it.Key, 0)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since the list
		}
		if err != nil {
			if errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("read the live %s: %w", it.What(), err)
			}
			// It exists, so it is never created; it cannot be compared,
			// so it is never replaced.
			it.Action, it.Plan = ActionDifferent, nil
			it.Reason = fmt.Sprintf("the live object exists and cannot be read (%v); it is left as it is", err)
			continue
		}
		if bytes.Equal(cur.Plain, it.Plan.NewPlain) {
			it.Action, it.Plan, it.LiveSHA256 = ActionIdentical, nil, digest(cur.KV.Value)
			continue
		}
		it.Reason = fmt.Sprintf("the live object (revision %d, uid %s) differs from the source", cur.KV.ModRevision, cur.Obj.Meta.UID)
		if !replace {
			it.Action, it.Plan = ActionDifferent, nil
			it.Reason += " (--replace-different to overwrite it)"
			continue
		}
		it.Action = ActionReplace
		it.Plan.Before, it.Plan.Expect, it.Plan.Lease = cur, cur.KV.ModRevision, cur.KV.Lease
		it.Plan.Description = fmt.Sprintf("recover: replace %s with revision %d of the source", it.Key, it.SourceRevision)
		after, err := codec.Decode(it.Plan.NewPlain)
		if err != nil {
			return fmt.Errorf("decode the recovered %s: %w", it.What(), err)
		}
		if it.Plan.Diff, err = c.RenderDiff(fmt.Sprintf("%s (revision %d)", it.Key, cur.KV.ModRevision), cur.Obj, cur.KV.ModRevision,
			fmt.Sprintf("%s (recovered from revision %d)", it.Key, it.SourceRevision), after, cur.KV.ModRevision); err != nil {
			return err
		}
	}
	return nil
}

// claimListThreshold is the number of claims above which claimWarnings
// reads the live volumes with one list instead of one read per claim.
const claimListThreshold = 32

// claimWarnings warns, for each claim recovered, about its volume: gone
// from the live cluster (its data went with it), or Released (to bind
// again with rebind). With many claims the live volumes are listed once
// rather than read one by one.
func (c Planner) claimWarnings(ctx context.Context, live store.Reader, plan *SetPlan) {
	var claims []*SetItem
	for _, it := range plan.Items {
		if it.Plan != nil && it.Resource.Path == "persistentvolumeclaims" && it.claim != nil && it.claim.Spec.VolumeName != "" {
			claims = append(claims, it)
		}
	}
	if len(claims) == 0 {
		return
	}
	pvPrefix := strings.TrimSuffix(path.Join("/", c.StorePrefix()), "/") + "/persistentvolumes/"
	// volume reads one volume: nil, nil when it is absent.
	volume := func(name string) (*kubevalue.Current, error) {
		cur, err := c.Load(ctx, live, pvPrefix+name, 0)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		return cur, err
	}
	if len(claims) > claimListThreshold {
		wanted := map[string]bool{}
		for _, it := range claims {
			wanted[pvPrefix+it.claim.Spec.VolumeName] = true
		}
		found := map[string]*kubevalue.Current{}
		_, err := live.List(ctx, pvPrefix, store.ListOptions{OnCompacted: kubevalue.AcrossCompaction}, func(kv *store.KeyValue) error {
			if !wanted[kv.Key] {
				return nil
			}
			own := *kv
			own.Value = bytes.Clone(kv.Value)
			cur, err := c.Open(ctx, own)
			if err != nil {
				return fmt.Errorf("read %s: %w", kv.Key, err)
			}
			found[kv.Key] = cur
			return nil
		})
		if err == nil {
			volume = func(name string) (*kubevalue.Current, error) { return found[pvPrefix+name], nil }
		}
		// On an error, fall back to reading each volume, which reports
		// the volumes that cannot be read one by one.
	}
	for _, it := range claims {
		pvc, vol := it.claim, it.claim.Spec.VolumeName
		pv, err := volume(vol)
		switch {
		case err != nil:
			it.Warnings = append(it.Warnings, fmt.Sprintf("cannot check persistentvolume %s of persistentvolumeclaim %s in namespace %s: %v", vol, pvc.Name, pvc.Namespace, err))
		case pv == nil:
			it.Warnings = append(it.Warnings, fmt.Sprintf("persistentvolumeclaim %s in namespace %s was bound to persistentvolume %s, which is gone from the live cluster: with reclaim policy Delete its data was deleted with it; the claim will be Lost", pvc.Name, pvc.Namespace, vol))
		default:
			v, _ := pv.Obj.Typed.(*corev1.PersistentVolume)
			if v != nil && v.Status.Phase == corev1.VolumeReleased {
				it.Warnings = append(it.Warnings, fmt.Sprintf("persistentvolume %s is Released; if it does not bind to the recovered claim, bind it again with: etcdpvc rebind pv %s --to-claim %s/%s", vol, vol, pvc.Namespace, pvc.Name))
			}
		}
	}
}
