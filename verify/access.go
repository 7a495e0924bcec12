package verify

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// accessKey is one question of a SelfSubjectAccessReview.
type accessKey struct {
	verb      string
	gvr       schema.GroupVersionResource
	namespace string
}

// accessAnswer is its answer: allowed, or why it could not be asked.
type accessAnswer struct {
	allowed bool
	err     error
}

// mayDo returns why the kubeconfig's user may not do one of verbs on gvr
// in namespace (so that the write could not be verified after it), or "".
func (v *Verifier) mayDo(ctx context.Context, verbs []string, gvr schema.GroupVersionResource, namespace string) string {
	for _, verb := range verbs {
		allowed, err := v.allowed(ctx, verb, gvr, namespace)
		switch {
		case err != nil:
			return fmt.Sprintf("whether the kubeconfig's user may %s %s cannot be told (%v), so the write could not be verified after it", verb, gvr.Resource, err)
		case !allowed:
			where := ""
			if namespace != "" {
				where = " in namespace " + namespace
			}
			return fmt.Sprintf("the kubeconfig's user may not %s %s%s, so the write could not be verified after it", verb, gvr.Resource, where)
		}
	}
	return ""
}

// allowed asks the apiserver (a SelfSubjectAccessReview, remembered)
// whether the kubeconfig's user may do verb on gvr in namespace.
func (v *Verifier) allowed(ctx context.Context, verb string, gvr schema.GroupVersionResource, namespace string) (bool, error) {
	k := accessKey{verb: verb, gvr: gvr, namespace: namespace}
	v.mu.Lock()
	a, ok := v.access[k]
	v.mu.Unlock()
	if ok {
		return a.allowed, a.err
	}
	ssar := v.dyn.Resource(schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"})
	req := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "authorization.k8s.io/v1",
		"kind":       "SelfSubjectAccessReview",
		"spec": map[string]any{"resourceAttributes": map[string]any{
			"verb": verb, "group": gvr.Group, "resource": gvr.Resource, "namespace": namespace,
		}},
	}}
	got, err := ssar.Create(ctx, req, metav1.CreateOptions{})
	if err != nil {
		a.err = fmt.Errorf("self subject access review: %s", shortErr(err))
	} else {
		a.allowed, _, _ = unstructured.NestedBool(got.Object, "status", "allowed")
	}
	v.mu.Lock()
	v.access[k] = a
	v.mu.Unlock()
	return a.allowed, a.err
}

// forbiddenAfter is what After says of a request forbidden to this user:
// nothing is verified, and nothing is known to be wrong with the write.
func (v *Verifier) forbiddenAfter(name, verb string, err error) error {
	v.count(func(t *Tally) { t.Unverified++ })
	v.o.Note(fmt.Sprintf("not verified: %s: the kubeconfig's user may not %s it (%s)", name, verb, shortErr(err)))
	return nil
}

// Permitted asks the apiserver whether the kubeconfig's user may create
// and update persistentvolumeclaims in namespace default, the requests
// verification makes as dry runs. It returns the verbs refused, or an
// error when it cannot ask.
func (v *Verifier) Permitted(ctx context.Context) ([]string, error) {
	if v.reach != Reachable {
		return nil, fmt.Errorf("%s", v.why)
	}
	pvcs := schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	var refused []string
	for _, verb := range []string{"create", "update"} {
		ok, err := v.allowed(ctx, verb, pvcs, "default")
		if err != nil {
			return nil, err
		}
		if !ok {
			refused = append(refused, verb)
		}
	}
	return refused, nil
}
