// Package verify asks the kube-apiserver whether it accepts what etcdpvc
// writes to etcd behind its back. Writing etcd skips admission and
// validation: before a write, a server-side dry-run create of the edited
// object (under a generated name, so that the immutability rules the
// surgery bypasses do not apply) shows the apiserver's own validation
// errors; after it, the apiserver must serve the object at the key's new
// mod revision and accept a dry-run update of it as it stands. When no
// apiserver answers, or it cannot be shown to serve the etcd written (the
// uid of kube-system, which an etcd without one cannot tell), nothing is
// verified and the Verifier says so. A request the kubeconfig's user is
// not authorized to make (a 403 the authorizer gives, told apart from
// admission's by a SelfSubjectAccessReview) verifies nothing and rejects
// nothing: "not verified".
//
// A Verifier checks Writes, which package flows makes of surgery's plans
// (flows.Verifier is the surgery.Verifier): package surgery does not
// import client-go, and this package does not import surgery.
package verify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// Sentinels callers branch on.
var (
	// ErrRejected means the apiserver's validation or admission refuses
	// the edited object (a server-side dry run); nothing was written.
	ErrRejected = errors.New("the apiserver rejects the edited object")
	// ErrCannotVerify means --verify=always and the edit could not be
	// verified; nothing was written.
	ErrCannotVerify = errors.New("cannot verify the write with the apiserver")
)

// Defaults of Options.
const (
	DefaultProbeTimeout = 3 * time.Second
	DefaultTimeout      = 15 * time.Second
	// DefaultServeWait bounds the wait for the apiserver to serve a
	// written revision (its watch cache follows etcd).
	DefaultServeWait = 10 * time.Second
	fieldManager     = "etcdpvc-verify"
)

// Options configure New.
type Options struct {
	Mode Mode
	// Kubeconfig is where the apiserver is; its error (ErrNoKubeconfig,
	// a --kubeconfig that does not exist) when Find failed.
	Kubeconfig    Kubeconfig
	KubeconfigErr error
	// Offline, when set, says why no apiserver serves the target (a db
	// file): nothing is asked.
	Offline string
	// ProbeTimeout bounds the first request (default
	// DefaultProbeTimeout); Timeout each later one (DefaultTimeout).
	ProbeTimeout, Timeout time.Duration
	// ServeWait bounds the wait for the written revision (default
	// DefaultServeWait).
	ServeWait time.Duration
	// Reader and Codec read the etcd written, to check that the
	// apiserver is the one of that cluster (kube-system's uid); without
	// them nothing is verified.
	Reader store.Reader
	Codec  *kubevalue.Codec
	// Note prints one line for the operator ("verified: ...").
	Note func(string)
}

// Write is one write as a Verifier checks it, before and after it is
// made: what a surgery.Plan holds of it (package flows gives one for each
// plan, so that this package does not import the write package).
type Write struct {
	// Key is the etcd key written; Object names the object as kubectl
	// does, for the messages.
	Key, Object string
	// Delete: the write deletes the key.
	Delete bool
	// Expect is the mod revision the write compares against (0: a
	// create).
	Expect int64
	// NewPlain is the object written, decoded (none for a delete).
	NewPlain []byte
	// Before is the key's state before the write (nil: it is absent).
	Before *kubevalue.Current
}

// Verifier checks writes with the apiserver: Before each write, and After
// it with the revision it made. Its zero value is not usable: use New.
type Verifier struct {
	o      Options
	reach  Reach
	why    string // why nothing can be verified (reach != Reachable)
	host   string
	dyn    dynamic.Interface
	mapper meta.RESTMapper

	mu       sync.Mutex
	said     bool
	verdicts map[*Write]error
	tally    Tally
	access   map[accessKey]accessAnswer
	// missingNS is, for a plan whose dry run found no namespace, that
	// namespace.
	missingNS map[*Write]string
}

// Tally counts what a Verifier found, for a summary of many writes.
type Tally struct {
	// Validated and Unvalidated count the plans a dry run accepted
	// before the write, and those it could not check.
	Validated, Unvalidated int
	// Verified, Unverified and NotAccepted count the writes the
	// apiserver serves and accepts updates of, those it could not be
	// asked about (its permission refused, a kind it cannot be asked
	// about), and those it does not accept.
	Verified, Unverified, NotAccepted int
}

// Tally returns the counts so far.
func (v *Verifier) Tally() Tally {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.tally
}

func (v *Verifier) count(f func(*Tally)) {
	v.mu.Lock()
	f(&v.tally)
	v.mu.Unlock()
}

// Summary says in one line what verification established for the writes
// made: "verification: 12 verified, 1 not verified, 0 not accepted", or
// why nothing was verified.
func (v *Verifier) Summary() string {
	if v.reach != Reachable {
		return "verification: nothing verified: " + v.why
	}
	t := v.Tally()
	return fmt.Sprintf("verification: %d verified, %d not verified, %d not accepted by the apiserver", t.Verified, t.Unverified, t.NotAccepted)
}

// New connects to the apiserver unless mode is Never or the target is
// offline. An apiserver that does not answer within ProbeTimeout, or
// serves another cluster, is recorded as unreachable, not an error.
func New(ctx context.Context, o Options) *Verifier {
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ServeWait <= 0 {
		o.ServeWait = DefaultServeWait
	}
	if o.Note == nil {
		o.Note = func(string) {}
	}
	v := &Verifier{o: o, verdicts: map[*Write]error{}, access: map[accessKey]accessAnswer{}, missingNS: map[*Write]string{}}
	switch {
	case o.Mode == Never:
		v.reach, v.why = Unreachable, "--verify=never"
	case o.Offline != "":
		v.reach, v.why = Offline, o.Offline
	default:
		v.connect(ctx)
	}
	return v
}

// Reach says whether the apiserver can be asked, and why not.
func (v *Verifier) Reach() (Reach, string) { return v.reach, v.why }

// Host is the apiserver's URL, when one was found.
func (v *Verifier) Host() string { return v.host }

func (v *Verifier) connect(ctx context.Context) {
	v.reach = Unreachable
	if v.o.KubeconfigErr != nil {
		v.why = v.o.KubeconfigErr.Error()
		return
	}
	rc, err := v.o.Kubeconfig.RESTConfig()
	if err != nil {
		v.why = err.Error()
		return
	}
	v.host = rc.Host
	rc = rest.CopyConfig(rc)
	rc.Timeout = v.o.Timeout
	rc.WarningHandler = rest.NoWarnings{}
	probe := rest.CopyConfig(rc)
	probe.Timeout = v.o.ProbeTimeout
	pdc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		v.why = err.Error()
		return
	}
	if _, err := pdc.ServerVersion(); err != nil {
		v.why = fmt.Sprintf("apiserver unreachable: %s did not answer within %s (%v)", rc.Host, v.o.ProbeTimeout, shortErr(err))
		return
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		v.why = err.Error()
		return
	}
	if v.dyn, err = dynamic.NewForConfig(rc); err != nil {
		v.why = err.Error()
		return
	}
	v.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	if why := v.sameCluster(ctx); why != "" {
		v.why = why
		return
	}
	v.reach = Reachable
}

// sameCluster checks that the apiserver serves the etcd written: the
// namespace kube-system has the same uid in both. It returns why not, or
// "" when it does. An etcd that holds no kube-system to compare with (or
// one that cannot be read) cannot tell: that is a reason too, never a
// match.
func (v *Verifier) sameCluster(ctx context.Context) string {
	if v.o.Reader == nil || v.o.Codec == nil {
		return fmt.Sprintf("whether apiserver %s serves the etcd written cannot be told (nothing to compare it with)", v.host)
	}
	prefix := v.o.Codec.Prefix
	if prefix == "" {
		prefix = "/registry"
	}
	cur, err := v.o.Codec.Load(ctx, v.o.Reader, prefix+"/namespaces/kube-system", 0)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("whether apiserver %s serves the etcd written cannot be told: etcd holds no namespace kube-system to compare with the apiserver's", v.host)
	case err != nil:
		return fmt.Sprintf("whether apiserver %s serves the etcd written cannot be told: namespace kube-system cannot be read from etcd (%v)", v.host, err)
	case cur.Obj == nil || cur.Obj.Meta == nil || cur.Obj.Meta.UID == "":
		return fmt.Sprintf("whether apiserver %s serves the etcd written cannot be told: etcd's namespace kube-system has no uid to compare", v.host)
	}
	ns, err := v.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("apiserver %s cannot be compared with etcd (get namespace kube-system: %v)", v.host, shortErr(err))
	}
	if ns.GetUID() != cur.Obj.Meta.UID {
		return fmt.Sprintf("apiserver %s serves another cluster than the etcd written (namespace kube-system has uid %s there, %s in etcd)", v.host, ns.GetUID(), cur.Obj.Meta.UID)
	}
	return ""
}

// note prints the "not verified" line once.
func (v *Verifier) notVerified() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.said {
		v.said = true
		v.o.Note("not verified: " + v.why)
	}
}

// Before asks the apiserver, with a server-side dry run, whether it
// accepts the plan's new object, and decides (Decide) whether to write.
// It prints what it found. The answer for a plan is kept: a second call
// neither asks nor prints again.
func (v *Verifier) Before(ctx context.Context, p *Write) error {
	v.mu.Lock()
	if err, ok := v.verdicts[p]; ok {
		v.mu.Unlock()
		return err
	}
	v.mu.Unlock()
	err := v.before(ctx, p)
	v.mu.Lock()
	v.verdicts[p] = err
	v.mu.Unlock()
	return err
}

func (v *Verifier) before(ctx context.Context, p *Write) error {
	name := p.Object
	verdict, msg := Unknown, v.why
	if v.reach == Reachable {
		verdict, msg = v.dryRun(ctx, p)
	}
	if verdict == Accepted && v.o.Mode == Always {
		// The write will be made only if it can be verified after it:
		// the user must be allowed to read it and update it (dry runs).
		if why := v.canCheckAfter(ctx, p); why != "" {
			verdict, msg = Unknown, why
		}
	}
	switch Decide(v.o.Mode, v.reach, verdict) {
	case WriteVerified:
		v.count(func(t *Tally) { t.Validated++ })
		v.o.Note(fmt.Sprintf("validated: the apiserver accepts %s (%s)", name, msg))
		return nil
	case WriteUnverified:
		v.count(func(t *Tally) { t.Unvalidated++ })
		if v.reach == Reachable {
			// After still checks the write: nothing is concluded yet.
			v.o.Note(fmt.Sprintf("not validated before the write (it is checked after it): %s: %s", name, msg))
		} else {
			v.notVerified()
		}
		return nil
	case RefuseRejected:
		return &RejectedError{Object: name, Message: msg}
	default:
		ue := &UnverifiableError{Object: name, Reason: msg, Reachable: v.reach == Reachable}
		if verdict == Unknown && v.reach == Reachable && v.missingNS[p] != "" {
			ue.MissingNamespace = v.missingNS[p]
		}
		return ue
	}
}

// UnverifiableError is the refusal, under --verify=always, of a write
// that cannot be verified; nothing was written. It matches
// ErrCannotVerify.
type UnverifiableError struct {
	Object, Reason string
	// MissingNamespace is the namespace the apiserver does not have,
	// when that is why the object cannot be checked before the write.
	MissingNamespace string
	// Reachable is true when an apiserver of the cluster answers, but
	// cannot check this object (or this user may not).
	Reachable bool
}

// Hint says what to do: for an apiserver that answers, "" (the
// sentinel's hint, to make one reachable, applies only when none does).
func (e *UnverifiableError) Hint() string {
	if !e.Reachable {
		return ""
	}
	return "the apiserver answers but cannot check this object before the write (or this user may not): --verify=auto writes it and checks what it can after the write (exit 12 if the apiserver does not accept it); or give a kubeconfig whose user may create, get and update it"
}

func (e *UnverifiableError) Error() string {
	return fmt.Sprintf("%s: %v: %s (--verify=always); nothing written", e.Object, ErrCannotVerify, e.Reason)
}

// Unwrap returns ErrCannotVerify.
func (e *UnverifiableError) Unwrap() error { return ErrCannotVerify }

// RejectedError is the apiserver's refusal of an edited object before
// the write. It matches ErrRejected.
type RejectedError struct {
	Object  string
	Message string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("%s: %v (server-side dry run): %s; nothing written", e.Object, ErrRejected, e.Message)
}

// Unwrap returns ErrRejected.
func (e *RejectedError) Unwrap() error { return ErrRejected }

// dryRun asks the apiserver to create the plan's new object with
// dryRun=All: under a generated name in its namespace for an edit of an
// existing object, under its own name for a create. A deletion needs no
// validation.
func (v *Verifier) dryRun(ctx context.Context, p *Write) (Verdict, string) {
	if p.Delete && (p.Before == nil || p.Before.Obj == nil) {
		return v.servesUnreadable(ctx, p)
	}
	if p.Delete {
		return Accepted, "a deletion: nothing to validate"
	}
	obj, err := codec.Decode(p.NewPlain)
	if err != nil {
		return Unknown, fmt.Sprintf("cannot decode the new object: %v", err)
	}
	if obj.Undecoded != nil {
		return Unknown, fmt.Sprintf("%s is a kind this tool cannot turn into JSON for the apiserver", obj.GVK.Kind)
	}
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj.Content)}
	ri, err := v.resourceFor(obj.GVK, u.GetNamespace(), true)
	if err != nil {
		return Unknown, err.Error()
	}
	how := "server-side dry-run create"
	create := p.Expect == 0
	if !create {
		switch obj.GVK.GroupKind() {
		case schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}:
			return Unknown, fmt.Sprintf("a %s's name is part of its validation: it cannot be validated under another name", obj.GVK.Kind)
		}
	}
	prepare(u, !create)
	if !create {
		how += " under a generated name"
	}
	_, err = ri.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager})
	switch {
	case err == nil:
		return Accepted, how
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return Rejected, apiMessage(err, obj.Meta.Name)
	case apierrors.IsForbidden(err) && hasCause(err, corev1.NamespaceTerminatingCause):
		return Rejected, apiMessage(err, obj.Meta.Name)
	case apierrors.IsForbidden(err):
		// The authorizer (this user may not create it) or admission
		// (the apiserver refuses it): ask which.
		gvr, _ := v.gvrFor(obj.GVK)
		allowed, aerr := v.allowed(ctx, "create", gvr, u.GetNamespace())
		switch {
		case aerr != nil:
			return Unknown, fmt.Sprintf("%s is forbidden (%s), and whether this user may create it cannot be told (%v)", how, shortErr(err), aerr)
		case !allowed:
			return Unknown, fmt.Sprintf("the kubeconfig's user may not create %s (%s): %s", gvr.Resource, shortErr(err), how+" not made")
		}
		return Rejected, apiMessage(err, obj.Meta.Name)
	case apierrors.IsNotFound(err) && u.GetNamespace() != "":
		v.mu.Lock()
		v.missingNS[p] = u.GetNamespace()
		v.mu.Unlock()
		return Unknown, fmt.Sprintf("the apiserver has no namespace %s (yet), so a %s cannot be made before it exists (%s)", u.GetNamespace(), how, shortErr(err))
	}
	return Unknown, fmt.Sprintf("%s failed: %v", how, shortErr(err))
}

// hasCause reports whether err is an API status with a cause of type t.
func hasCause(err error, t metav1.CauseType) bool {
	_, ok := apierrors.StatusCause(err, t)
	return ok
}

// canCheckAfter returns why the write of p could not be verified after
// it (this user may not get it, or update it, as After does), or "".
func (v *Verifier) canCheckAfter(ctx context.Context, p *Write) string {
	if p.Delete && (p.Before == nil || p.Before.Obj == nil || !v.namesObject(p.Key)) {
		// A value it cannot read, or a key no GET reaches: After lists
		// its resource.
		gvr, ns, err := v.listTarget(p)
		if err != nil {
			return err.Error()
		}
		return v.mayDo(ctx, []string{"list"}, gvr, ns)
	}
	id, err := identify(p)
	if err != nil {
		return err.Error()
	}
	gvr, err := v.gvrFor(id.gvk)
	if err != nil {
		return err.Error()
	}
	verbs := []string{"get", "update"}
	if p.Delete {
		verbs = verbs[:1]
	}
	return v.mayDo(ctx, verbs, gvr, id.namespace)
}

// prepare strips what a create may not carry (server-set metadata, the
// status the apiserver resets) and, when rename, puts a generateName in
// place of the name. A Service's allocated IPs and ports are dropped: the
// original holds them.
func prepare(u *unstructured.Unstructured, rename bool) {
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	if rename {
		base := u.GetName()
		if len(base) > 40 {
			base = base[:40]
		}
		u.SetName("")
		u.SetGenerateName(strings.TrimRight(base, "-.") + "-etcdpvc-")
	}
	if u.GetAPIVersion() == "v1" && u.GetKind() == "Service" {
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		unstructured.RemoveNestedField(u.Object, "spec", "healthCheckNodePort")
		if ports, ok, _ := unstructured.NestedSlice(u.Object, "spec", "ports"); ok {
			for _, p := range ports {
				if m, ok := p.(map[string]any); ok {
					delete(m, "nodePort")
				}
			}
			_ = unstructured.SetNestedSlice(u.Object, ports, "spec", "ports")
		}
	}
}

// apiMessage is the apiserver's message, with the name generated for a
// dry run put back as the object's own name.
func apiMessage(err error, name string) string {
	msg := err.Error()
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Message != "" {
		msg = se.Status().Message
		if d := se.Status().Details; d != nil && d.Name != "" && name != "" && d.Name != name {
			msg = strings.ReplaceAll(msg, fmt.Sprintf("%q", d.Name), fmt.Sprintf("%q", name))
		}
	}
	return msg
}

// mapping maps gvk to its resource. With exact, only gvk's own version
// will do (an object of that version is sent); otherwise, when the
// apiserver no longer serves the version the object is stored in (a
// CustomResourceDefinition stored as v1beta1), its preferred version of
// the kind.
func (v *Verifier) mapping(gvk schema.GroupVersionKind, exact bool) (*meta.RESTMapping, error) {
	m, err := v.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil {
		return m, nil
	}
	other, oerr := v.mapper.RESTMapping(gvk.GroupKind())
	switch {
	case oerr == nil && !exact:
		return other, nil
	case oerr == nil:
		return nil, fmt.Errorf("the object is stored as %s, a version the apiserver does not serve (it serves %s), so it cannot be sent to it as it is", gvk.GroupVersion(), other.GroupVersionKind.GroupVersion())
	}
	return nil, fmt.Errorf("the apiserver does not serve %s: %v", gvk, shortErr(err))
}

// gvrFor maps gvk to its resource, in any version served.
func (v *Verifier) gvrFor(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	m, err := v.mapping(gvk, false)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return m.Resource, nil
}

// resourceFor maps gvk to its resource client in namespace ns (exact: in
// gvk's own version, see mapping).
func (v *Verifier) resourceFor(gvk schema.GroupVersionKind, ns string, exact bool) (dynamic.ResourceInterface, error) {
	m, err := v.mapping(gvk, exact)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return v.dyn.Resource(m.Resource).Namespace(ns), nil
	}
	return v.dyn.Resource(m.Resource), nil
}

// After checks a written plan: the apiserver serves the object at the
// key's new mod revision (polling while its watch cache catches up), and
// a server-side dry-run update of the object as served passes; for a
// deletion, that it no longer serves it. It prints the outcome; the error
// says what failed. Without a reachable apiserver it does nothing (Before
// said so).
func (v *Verifier) After(ctx context.Context, p *Write, revision int64) error {
	if v.reach != Reachable {
		return nil
	}
	v.mu.Lock()
	before := v.verdicts[p]
	v.mu.Unlock()
	if before != nil {
		return nil
	}
	name := p.Object
	if p.Delete && (p.Before == nil || p.Before.Obj == nil || !v.namesObject(p.Key)) {
		return v.listAfterDelete(ctx, p)
	}
	ident, err := identify(p)
	if err != nil {
		v.count(func(t *Tally) { t.Unverified++ })
		v.o.Note(fmt.Sprintf("not verified: %s: %v", name, err))
		return nil
	}
	deadline := time.Now().Add(v.o.ServeWait)
	// A kind the apiserver does not serve yet (a custom resource whose
	// CustomResourceDefinition was just written) is looked up again, with
	// fresh discovery, until it is served or the wait is over.
	ri, err := v.resourceFor(ident.gvk, ident.namespace, false)
	for err != nil && time.Now().Before(deadline) && ctx.Err() == nil {
		if rm, ok := v.mapper.(meta.ResettableRESTMapper); ok {
			rm.Reset()
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
		ri, err = v.resourceFor(ident.gvk, ident.namespace, false)
	}
	if err != nil {
		v.count(func(t *Tally) { t.NotAccepted++ })
		return fmt.Errorf("the apiserver cannot be asked about it: %w (waited %s)", err, v.o.ServeWait)
	}
	want := strconv.FormatInt(revision, 10)
	var last string
	for {
		got, err := ri.Get(ctx, ident.name, metav1.GetOptions{})
		switch {
		case apierrors.IsForbidden(err):
			return v.forbiddenAfter(name, "get", err)
		case p.Delete && apierrors.IsNotFound(err):
			v.count(func(t *Tally) { t.Verified++ })
			v.o.Note(fmt.Sprintf("verified: the apiserver no longer serves %s", name))
			return nil
		case p.Delete && err == nil:
			last = fmt.Sprintf("the apiserver still serves it (resourceVersion %s)", got.GetResourceVersion())
		case err != nil:
			last = fmt.Sprintf("the apiserver does not serve it: %v", shortErr(err))
		case got.GetResourceVersion() == want:
			return v.dryRunUpdate(ctx, ri, got, ident, name, want)
		default:
			last = fmt.Sprintf("the apiserver serves resourceVersion %s, not the written revision %s", got.GetResourceVersion(), want)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			v.count(func(t *Tally) { t.NotAccepted++ })
			return fmt.Errorf("%s (waited %s)", last, v.o.ServeWait)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// listAfterDelete checks the delete of a value the apiserver could not
// read (every LIST of its resource in its namespace failed while it was
// there), or of a key that names no object (no GET reaches it): now the
// LIST must succeed, every page of it (each object of a page is decoded).
// It waits, as After does, for the watch cache to catch up.
func (v *Verifier) listAfterDelete(ctx context.Context, p *Write) error {
	gvr, ns, err := v.listTarget(p)
	if err != nil {
		v.count(func(t *Tally) { t.Unverified++ })
		v.o.Note(fmt.Sprintf("not verified: %s: %v", p.Object, err))
		return nil
	}
	ri := dynamic.ResourceInterface(v.dyn.Resource(gvr))
	where := gvr.Resource + " cluster-wide"
	if ns != "" {
		ri, where = v.dyn.Resource(gvr).Namespace(ns), fmt.Sprintf("%s in namespace %s", gvr.Resource, ns)
	}
	listAll := func() error {
		opts := metav1.ListOptions{Limit: 500}
		for {
			l, err := ri.List(ctx, opts)
			if err != nil {
				return err
			}
			if opts.Continue = l.GetContinue(); opts.Continue == "" {
				return nil
			}
		}
	}
	deadline := time.Now().Add(v.o.ServeWait)
	for {
		err := listAll()
		switch {
		case err == nil:
			v.count(func(t *Tally) { t.Verified++ })
			v.o.Note(fmt.Sprintf("verified: the list of %s succeeds", where))
			return nil
		case apierrors.IsForbidden(err):
			return v.forbiddenAfter(where, "list", err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			v.count(func(t *Tally) { t.NotAccepted++ })
			return fmt.Errorf("the list of %s still fails: %s (waited %s; another value it cannot read? `etcdpvc ls %s` lists them)", where, v.apiError(p, err), v.o.ServeWait, gvr.Resource)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// listTarget returns the resource a deleted value's key names, as the
// apiserver serves it, and its namespace ("" for a cluster-scoped one).
// servesUnreadable asks the apiserver, before a value this tool cannot
// read is deleted, for the object it stores: one the apiserver serves is
// one it reads (etcdpvc read it otherwise: an encryption config that is
// not the one the apiserver runs with, say), and the delete is refused;
// an internal error (it failed to decrypt or decode it) is what delete is
// for. Anything else (not found, forbidden, no answer) tells nothing.
func (v *Verifier) servesUnreadable(ctx context.Context, p *Write) (Verdict, string) {
	gvr, ns, err := v.listTarget(p)
	if err != nil {
		return Unknown, err.Error()
	}
	ri := dynamic.ResourceInterface(v.dyn.Resource(gvr))
	if ns != "" {
		ri = v.dyn.Resource(gvr).Namespace(ns)
	}
	if !v.namesObject(p.Key) {
		// No GET reaches a key that names no object: its LIST reads it.
		_, err := ri.List(ctx, metav1.ListOptions{})
		switch {
		case err == nil:
			return Rejected, "the apiserver's LIST of " + gvr.Resource + " succeeds with it, so it reads it: etcdpvc could not (is the encryption config given the one the apiserver runs with? --kubeadm reads it)"
		case apierrors.IsInternalError(err) || statusCode(err) == http.StatusInternalServerError:
			return Accepted, "the apiserver cannot read it either: " + v.apiError(p, err)
		case apierrors.IsForbidden(err):
			return Unknown, "this user may not list " + gvr.Resource
		}
		return Unknown, "the apiserver could not be asked: " + v.apiError(p, err)
	}
	got, err := ri.Get(ctx, path.Base(p.Key), metav1.GetOptions{})
	switch {
	case err == nil:
		return Rejected, fmt.Sprintf("the apiserver serves it (resourceVersion %s), so it reads it: etcdpvc could not (is the encryption config given the one the apiserver runs with? --kubeadm reads it); delete it through the apiserver", got.GetResourceVersion())
	case apierrors.IsInternalError(err) || statusCode(err) == http.StatusInternalServerError:
		return Accepted, "the apiserver cannot read it either: " + v.apiError(p, err)
	case apierrors.IsNotFound(err):
		return Unknown, "the apiserver says it does not exist, although etcd holds it"
	case apierrors.IsForbidden(err):
		return Unknown, "this user may not get it from the apiserver"
	}
	return Unknown, "the apiserver could not be asked for it: " + v.apiError(p, err)
}

// apiError is the apiserver's message of err about p's object, unless the
// object may be a Secret (its bytes could be quoted) and secrets are not
// shown.
func (v *Verifier) apiError(p *Write, err error) string {
	if codec.IsSecretKey(p.Key) && (v.o.Codec == nil || !v.o.Codec.ShowSecrets) {
		var se apierrors.APIStatus
		if errors.As(err, &se) {
			return fmt.Sprintf("HTTP %d, %s (its words not shown: a Secret's)", se.Status().Code, se.Status().Reason)
		}
		return "its words not shown: a Secret's"
	}
	return shortErr(err)
}

// statusCode is the HTTP status of the apiserver's answer err (0: none).
func statusCode(err error) int32 {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Code
	}
	return 0
}

// namesObject reports whether key names one object, which a GET reaches
// (not a key under a resource's path that names none: resource.BadKey).
func (v *Verifier) namesObject(key string) bool {
	_, _, _, ok := resource.ParseKey(v.o.Codec.StorePrefix(), key)
	return ok
}

func (v *Verifier) listTarget(p *Write) (schema.GroupVersionResource, string, error) {
	r, ns, _, ok := resource.ParseKey(v.o.Codec.StorePrefix(), p.Key)
	if !ok {
		// A key under r's path that names no object: r's LIST reads it.
		if r, ns, ok = resource.BadKey(v.o.Codec.StorePrefix(), p.Key); !ok {
			return schema.GroupVersionResource{}, "", fmt.Errorf("its key %s names no resource", p.Key)
		}
	}
	gvr, err := v.mapper.ResourceFor(schema.GroupVersionResource{Group: r.Group, Resource: r.Plural})
	if err != nil {
		return schema.GroupVersionResource{}, "", fmt.Errorf("the apiserver does not serve %s (%v)", r.Plural, err)
	}
	if !r.Namespaced {
		ns = ""
	}
	return gvr, ns, nil
}

func (v *Verifier) dryRunUpdate(ctx context.Context, ri dynamic.ResourceInterface, got *unstructured.Unstructured, id ident, name, rev string) error {
	_, err := ri.Update(ctx, got, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager})
	if apierrors.IsForbidden(err) {
		// The authorizer (this user may not update it: nothing is
		// known) or admission (the apiserver refuses it): ask which.
		gvr, gerr := v.gvrFor(id.gvk)
		if gerr != nil {
			return v.forbiddenAfter(name, "update", err)
		}
		allowed, aerr := v.allowed(ctx, "update", gvr, id.namespace)
		if aerr != nil || !allowed {
			return v.forbiddenAfter(name, "update", err)
		}
	}
	if err != nil {
		v.count(func(t *Tally) { t.NotAccepted++ })
		return fmt.Errorf("the apiserver serves revision %s but refuses an update of it (server-side dry run): %s", rev, apiMessage(err, ""))
	}
	v.count(func(t *Tally) { t.Verified++ })
	v.o.Note(fmt.Sprintf("verified: the apiserver serves %s at revision %s and accepts updates", name, rev))
	return nil
}

// ident is what names a plan's object to the apiserver.
type ident struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

func identify(p *Write) (ident, error) {
	var obj *codec.Object
	if p.Before != nil && p.Before.Obj != nil {
		obj = p.Before.Obj
	}
	if !p.Delete && len(p.NewPlain) > 0 {
		if o, err := codec.Decode(p.NewPlain); err == nil {
			obj = o
		}
	}
	if obj == nil || obj.Meta == nil || obj.GVK.Kind == "" || obj.Meta.Name == "" {
		return ident{}, fmt.Errorf("the object's kind and name cannot be read")
	}
	return ident{gvk: obj.GVK, namespace: obj.Meta.Namespace, name: obj.Meta.Name}, nil
}

// shortErr is err's message without client-go's repetition of the URL.
func shortErr(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Message != "" {
		return se.Status().Message
	}
	return err.Error()
}
