package resource

import (
	"errors"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
)

// fullScheme holds every type kube-apiserver, apiextensions-apiserver and
// kube-aggregator v1.37 serve, as client-go v0.37.2 knows them.
func fullScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		scheme.AddToScheme,
		apiextensionsv1.AddToScheme, apiextensionsv1beta1.AddToScheme,
		apiregistrationv1.AddToScheme, apiregistrationv1beta1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// persistedKinds returns, for every group, the kinds that look like stored
// resources: objects with ObjectMeta and a <Kind>List in the same version.
// Kinds without a list (Binding, Scale, Eviction, the reviews,
// RangeAllocation, ...) are requests or subresources.
func persistedKinds(t *testing.T, s *runtime.Scheme) map[schema.GroupKind][]string {
	t.Helper()
	all := s.AllKnownTypes()
	out := map[schema.GroupKind][]string{}
	for gvk := range all {
		if strings.HasSuffix(gvk.Kind, "List") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		if _, hasList := all[gvk.GroupVersion().WithKind(gvk.Kind+"List")]; !hasList {
			continue
		}
		obj, err := s.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := obj.(metav1.Object); !ok {
			continue
		}
		out[gvk.GroupKind()] = append(out[gvk.GroupKind()], gvk.Version)
	}
	return out
}

// TestTableCoversScheme checks that every persisted kind of the client-go,
// apiextensions and apiregistration schemes is in the table (or is an alias
// of, or is known not to be stored), and that each row's Version is the
// newest version the schemes know for its kind, CustomResourceDefinitions
// (stored as v1beta1) aside.
func TestTableCoversScheme(t *testing.T) {
	s := fullScheme(t)
	kinds := persistedKinds(t, s)
	covered := map[schema.GroupKind]bool{}
	for gk := range kinds {
		name := strings.ToLower(gk.Kind)
		if gk.Group != "" {
			name += "." + gk.Group
		}
		r, err := Lookup(name)
		if errors.Is(err, ErrNotStored) {
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", gk, err)
			continue
		}
		if r.Kind != gk.Kind {
			t.Errorf("%s: resolves to kind %s", gk, r.Kind)
		}
		if r.Group != gk.Group {
			// Only cohabitating resources live in another group.
			switch gk.Group {
			case "events.k8s.io", "extensions":
			default:
				t.Errorf("%s: resolves to group %q", gk, r.Group)
			}
			continue
		}
		covered[gk] = true
	}
	for _, r := range All() {
		gk := schema.GroupKind{Group: r.Group, Kind: r.Kind}
		if !covered[gk] {
			t.Errorf("%s (%s) is not a persisted kind of the schemes", r, gk)
			continue
		}
		versions := kinds[gk]
		sort.Slice(versions, func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(versions[i], versions[j]) > 0
		})
		want := versions[0]
		if gk.Group == "apiextensions.k8s.io" {
			want = "v1beta1" // apiextensions-apiserver's storage version
		}
		if r.Version != want {
			t.Errorf("%s: Version %q, want %q (of %v)", r, r.Version, want, versions)
		}
	}
}
