package inspect

import (
	"errors"
	"testing"

	"github.com/etcdpvc/etcdpvc/resource"
)

func TestScope(t *testing.T) {
	type key struct {
		key string
		ok  bool
	}
	for _, tc := range []struct {
		name          string
		res, ns       string
		all           bool
		wantPrefix    string
		wantResource  string // the resource's Path; "" for none
		wantNamespace string
		keys          []key
	}{
		{name: "everything", wantPrefix: "/registry/",
			keys: []key{{"/registry/pods/demo/a", true}, {"/registry/persistentvolumes/pv-a", true}, {"/registry/unparsed", true}}},
		{name: "every resource, one namespace", ns: "demo", wantPrefix: "/registry/", wantNamespace: "demo",
			keys: []key{{"/registry/pods/demo/a", true}, {"/registry/pods/other/a", false}, {"/registry/persistentvolumes/pv-a", false}, {"/registry/unparsed", false}}},
		{name: "-A overrides -n without a resource", ns: "demo", all: true, wantPrefix: "/registry/",
			keys: []key{{"/registry/pods/other/a", true}}},
		{name: "namespaced defaults to default", res: "pvc", wantPrefix: "/registry/persistentvolumeclaims/default/",
			wantResource: "persistentvolumeclaims", wantNamespace: "default",
			keys: []key{{"/registry/persistentvolumeclaims/default/a", true}, {"/registry/persistentvolumeclaims/demo/a", false}, {"/registry/pods/default/a", false}}},
		{name: "namespaced in a namespace", res: "pods", ns: "demo", wantPrefix: "/registry/pods/demo/",
			wantResource: "pods", wantNamespace: "demo",
			keys: []key{{"/registry/pods/demo/a", true}, {"/registry/pods/default/a", false}}},
		{name: "namespaced, all namespaces", res: "pvc", ns: "demo", all: true, wantPrefix: "/registry/persistentvolumeclaims/",
			wantResource: "persistentvolumeclaims",
			keys:         []key{{"/registry/persistentvolumeclaims/demo/a", true}, {"/registry/persistentvolumeclaims/other/a", true}, {"/registry/pods/demo/a", false}}},
		{name: "cluster-scoped ignores -n", res: "pv", ns: "demo", wantPrefix: "/registry/persistentvolumes/",
			wantResource: "persistentvolumes",
			keys:         []key{{"/registry/persistentvolumes/pv-a", true}, {"/registry/persistentvolumeclaims/demo/a", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := NewScope(resource.Resolver{}, "/registry", tc.res, tc.ns, tc.all)
			if err != nil {
				t.Fatal(err)
			}
			res := ""
			if k.Resource != nil {
				res = k.Resource.Path
			}
			if k.Prefix != tc.wantPrefix || res != tc.wantResource || k.Namespace != tc.wantNamespace {
				t.Errorf("NewScope = prefix %q, resource %q, namespace %q; want %q, %q, %q", k.Prefix, res, k.Namespace, tc.wantPrefix, tc.wantResource, tc.wantNamespace)
			}
			for _, kk := range tc.keys {
				if _, _, _, _, ok := k.Match("/registry", kk.key); ok != kk.ok {
					t.Errorf("Match(%q) = %v, want %v", kk.key, ok, kk.ok)
				}
			}
		})
	}
	if _, err := NewScope(resource.Resolver{}, "/registry", "pvcz", "", false); !errors.Is(err, resource.ErrUnknownResource) {
		t.Errorf("NewScope(pvcz) err = %v, want ErrUnknownResource", err)
	}
}
