package resource

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// want returns the built-in resource with the given group and plural.
func want(t *testing.T, group, plural string) Resource {
	t.Helper()
	for _, r := range All() {
		if r.Group == group && r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no built-in %s.%s", plural, group)
	return Resource{}
}

// kubectlShortNames are the short names kube-apiserver v1.37 advertises in
// discovery (and so kubectl accepts), by resource.
var kubectlShortNames = map[string][2]string{
	"po":     {"", "pods"},
	"svc":    {"", "services"},
	"ep":     {"", "endpoints"},
	"no":     {"", "nodes"},
	"ns":     {"", "namespaces"},
	"pvc":    {"", "persistentvolumeclaims"},
	"pv":     {"", "persistentvolumes"},
	"cm":     {"", "configmaps"},
	"sa":     {"", "serviceaccounts"},
	"rc":     {"", "replicationcontrollers"},
	"ev":     {"", "events"},
	"limits": {"", "limitranges"},
	"quota":  {"", "resourcequotas"},
	"ds":     {"apps", "daemonsets"},
	"deploy": {"apps", "deployments"},
	"rs":     {"apps", "replicasets"},
	"sts":    {"apps", "statefulsets"},
	"hpa":    {"autoscaling", "horizontalpodautoscalers"},
	"cj":     {"batch", "cronjobs"},
	"csr":    {"certificates.k8s.io", "certificatesigningrequests"},
	"ing":    {"networking.k8s.io", "ingresses"},
	"netpol": {"networking.k8s.io", "networkpolicies"},
	"ip":     {"networking.k8s.io", "ipaddresses"},
	"pdb":    {"policy", "poddisruptionbudgets"},
	"pc":     {"scheduling.k8s.io", "priorityclasses"},
	"sc":     {"storage.k8s.io", "storageclasses"},
	"vac":    {"storage.k8s.io", "volumeattributesclasses"},
	"crd":    {"apiextensions.k8s.io", "customresourcedefinitions"},
	"crds":   {"apiextensions.k8s.io", "customresourcedefinitions"},
}

func TestLookupShortNames(t *testing.T) {
	for short, gr := range kubectlShortNames {
		t.Run(short, func(t *testing.T) {
			got, err := Lookup(short)
			if err != nil {
				t.Fatalf("Lookup(%q): %v", short, err)
			}
			if diff := cmp.Diff(want(t, gr[0], gr[1]), got); diff != "" {
				t.Errorf("Lookup(%q) (-want +got):\n%s", short, diff)
			}
		})
	}
	// And the table has no short name the list above lacks.
	for _, r := range All() {
		for _, s := range r.ShortNames {
			if _, ok := kubectlShortNames[s]; !ok {
				t.Errorf("%s has short name %q that kubectl does not know", r, s)
			}
		}
	}
}

func TestLookupEveryName(t *testing.T) {
	for _, r := range All() {
		names := []string{r.Plural, r.Singular, r.Kind, strings.ToUpper(r.Plural)}
		names = append(names, r.ShortNames...)
		if r.Group != "" {
			names = append(names, r.Plural+"."+r.Group, r.Singular+"."+r.Group, r.Kind+"."+r.Group)
		}
		for _, n := range names {
			t.Run(r.String()+"/"+n, func(t *testing.T) {
				got, err := Lookup(n)
				if err != nil {
					t.Fatalf("Lookup(%q): %v", n, err)
				}
				if diff := cmp.Diff(r, got); diff != "" {
					t.Errorf("Lookup(%q) (-want +got):\n%s", n, diff)
				}
			})
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name string
		want Resource
	}{
		{"pvc", Resource{Version: "v1", Kind: "PersistentVolumeClaim", Plural: "persistentvolumeclaims", Singular: "persistentvolumeclaim", ShortNames: []string{"pvc"}, Namespaced: true, Path: "persistentvolumeclaims", BuiltIn: true}},
		{"persistentvolumeclaim", Resource{Version: "v1", Kind: "PersistentVolumeClaim", Plural: "persistentvolumeclaims", Singular: "persistentvolumeclaim", ShortNames: []string{"pvc"}, Namespaced: true, Path: "persistentvolumeclaims", BuiltIn: true}},
		{"PersistentVolumeClaim", Resource{Version: "v1", Kind: "PersistentVolumeClaim", Plural: "persistentvolumeclaims", Singular: "persistentvolumeclaim", ShortNames: []string{"pvc"}, Namespaced: true, Path: "persistentvolumeclaims", BuiltIn: true}},
		{" PVC ", Resource{Version: "v1", Kind: "PersistentVolumeClaim", Plural: "persistentvolumeclaims", Singular: "persistentvolumeclaim", ShortNames: []string{"pvc"}, Namespaced: true, Path: "persistentvolumeclaims", BuiltIn: true}},
		{"pv", Resource{Version: "v1", Kind: "PersistentVolume", Plural: "persistentvolumes", Singular: "persistentvolume", ShortNames: []string{"pv"}, Path: "persistentvolumes", BuiltIn: true}},
		{"sts", Resource{Group: "apps", Version: "v1", Kind: "StatefulSet", Plural: "statefulsets", Singular: "statefulset", ShortNames: []string{"sts"}, Namespaced: true, Path: "statefulsets", BuiltIn: true}},
		{"statefulsets.apps", Resource{Group: "apps", Version: "v1", Kind: "StatefulSet", Plural: "statefulsets", Singular: "statefulset", ShortNames: []string{"sts"}, Namespaced: true, Path: "statefulsets", BuiltIn: true}},
		{"sts.apps", Resource{Group: "apps", Version: "v1", Kind: "StatefulSet", Plural: "statefulsets", Singular: "statefulset", ShortNames: []string{"sts"}, Namespaced: true, Path: "statefulsets", BuiltIn: true}},
		{"statefulsets.v1.apps", Resource{Group: "apps", Version: "v1", Kind: "StatefulSet", Plural: "statefulsets", Singular: "statefulset", ShortNames: []string{"sts"}, Namespaced: true, Path: "statefulsets", BuiltIn: true}},
		{"StatefulSet.apps", Resource{Group: "apps", Version: "v1", Kind: "StatefulSet", Plural: "statefulsets", Singular: "statefulset", ShortNames: []string{"sts"}, Namespaced: true, Path: "statefulsets", BuiltIn: true}},
		{"svc", Resource{Version: "v1", Kind: "Service", Plural: "services", Singular: "service", ShortNames: []string{"svc"}, Namespaced: true, Path: "services/specs", BuiltIn: true}},
		{"endpoints", Resource{Version: "v1", Kind: "Endpoints", Plural: "endpoints", Singular: "endpoints", ShortNames: []string{"ep"}, Namespaced: true, Path: "services/endpoints", BuiltIn: true}},
		{"node", Resource{Version: "v1", Kind: "Node", Plural: "nodes", Singular: "node", ShortNames: []string{"no"}, Path: "minions", BuiltIn: true}},
		{"rc", Resource{Version: "v1", Kind: "ReplicationController", Plural: "replicationcontrollers", Singular: "replicationcontroller", ShortNames: []string{"rc"}, Namespaced: true, Path: "controllers", BuiltIn: true}},
		{"ing", Resource{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Plural: "ingresses", Singular: "ingress", ShortNames: []string{"ing"}, Namespaced: true, Path: "ingress", BuiltIn: true}},
		{"endpointslices", Resource{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice", Plural: "endpointslices", Singular: "endpointslice", Namespaced: true, Path: "endpointslices", BuiltIn: true}},
		{"crd", Resource{Group: "apiextensions.k8s.io", Version: "v1beta1", Kind: "CustomResourceDefinition", Plural: "customresourcedefinitions", Singular: "customresourcedefinition", ShortNames: []string{"crd", "crds"}, Path: "apiextensions.k8s.io/customresourcedefinitions", JSON: true, BuiltIn: true}},
		{"apiservices", Resource{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService", Plural: "apiservices", Singular: "apiservice", Path: "apiregistration.k8s.io/apiservices", JSON: true, BuiltIn: true}},
		{"clusterroles", Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Plural: "clusterroles", Singular: "clusterrole", Path: "clusterroles", BuiltIn: true}},
		// Cohabitating resources resolve to the owner of the storage.
		{"events.events.k8s.io", Resource{Version: "v1", Kind: "Event", Plural: "events", Singular: "event", ShortNames: []string{"ev"}, Namespaced: true, Path: "events", BuiltIn: true}},
		{"ev.events.k8s.io", Resource{Version: "v1", Kind: "Event", Plural: "events", Singular: "event", ShortNames: []string{"ev"}, Namespaced: true, Path: "events", BuiltIn: true}},
		{"deployments.extensions", Resource{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Singular: "deployment", ShortNames: []string{"deploy"}, Namespaced: true, Path: "deployments", BuiltIn: true}},
		{"ingresses.v1beta1.extensions", Resource{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Plural: "ingresses", Singular: "ingress", ShortNames: []string{"ing"}, Namespaced: true, Path: "ingress", BuiltIn: true}},
		// Custom resources: scope unknown without a resolver.
		{"widgets.e2e.example.com", Resource{Group: "e2e.example.com", Plural: "widgets", Path: "e2e.example.com/widgets", JSON: true}},
		{"Widgets.E2E.example.com", Resource{Group: "e2e.example.com", Plural: "widgets", Path: "e2e.example.com/widgets", JSON: true}},
		{"widgets.v1.e2e.example.com", Resource{Group: "e2e.example.com", Plural: "widgets", Path: "e2e.example.com/widgets", JSON: true}},
		{"gateways.gateway.networking.k8s.io", Resource{Group: "gateway.networking.k8s.io", Plural: "gateways", Path: "gateway.networking.k8s.io/gateways", JSON: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Lookup(tt.name)
			if err != nil {
				t.Fatalf("Lookup(%q): %v", tt.name, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Lookup(%q) (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

func TestLookupErrors(t *testing.T) {
	tests := []struct {
		name     string
		is       error
		contains []string
	}{
		{"", ErrUnknownResource, []string{`""`, "empty"}},
		{"foo", ErrUnknownResource, []string{`"foo"`, "<plural>.<group>", "foo.example.com"}},
		{"persistentvolumeclaimz", ErrUnknownResource, []string{`"persistentvolumeclaimz"`, "<plural>.<group>"}},
		{"psp", ErrUnknownResource, []string{`"psp"`}},
		{"podsecuritypolicies.policy", ErrUnknownResource, []string{`"podsecuritypolicies.policy"`, `built-in group "policy"`}},
		{"foos.apps", ErrUnknownResource, []string{`"foos.apps"`, `"apps"`, `"foos"`}},
		{"foos.notagroup", ErrUnknownResource, []string{`"foos.notagroup"`, `"notagroup" is not a custom resource group`, "<plural>.<group>"}},
		{"foo_bars.example.com", ErrUnknownResource, []string{`"foo_bars.example.com"`, `"foo_bars" is not a custom resource plural`}},
		{"cs", ErrNotStored, []string{`"cs"`, "componentstatuses"}},
		{"componentstatuses", ErrNotStored, []string{"componentstatuses"}},
		{"tokenreviews", ErrNotStored, []string{"tokenreviews.authentication.k8s.io"}},
		{"subjectaccessreviews.authorization.k8s.io", ErrNotStored, nil},
		{"bindings", ErrNotStored, nil},
		{"evictions.policy", ErrNotStored, []string{"evictions.policy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Lookup(tt.name)
			if !errors.Is(err, tt.is) {
				t.Fatalf("Lookup(%q) = %v, want an error wrapping %v", tt.name, err, tt.is)
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Lookup(%q) error %q does not contain %q", tt.name, err, s)
				}
			}
		})
	}
}

func TestResolverLookup(t *testing.T) {
	var asked []string
	scope := func(plural, group string) (bool, error) {
		asked = append(asked, plural+"."+group)
		switch plural + "." + group {
		case "widgets.e2e.example.com":
			return true, nil
		case "clusterwidgets.e2e.example.com":
			return false, nil
		}
		return false, errNoCRD
	}
	res := Resolver{Scope: scope}

	got, err := res.Lookup("widgets.e2e.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Namespaced || got.BuiltIn || !got.JSON || got.Path != "e2e.example.com/widgets" {
		t.Errorf("widgets: got %+v", got)
	}
	got, err = res.Lookup("clusterwidgets.e2e.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if got.Namespaced {
		t.Errorf("clusterwidgets: got namespaced")
	}
	_, err = res.Lookup("gadgets.e2e.example.com")
	if !errors.Is(err, errNoCRD) || !strings.Contains(err.Error(), "gadgets.e2e.example.com") {
		t.Errorf("gadgets: got %v, want an error naming the resource and wrapping %v", err, errNoCRD)
	}
	// Built-ins never consult the resolver.
	if _, err := res.Lookup("pvc"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"widgets.e2e.example.com", "clusterwidgets.e2e.example.com", "gadgets.e2e.example.com"}, asked); diff != "" {
		t.Errorf("scope calls (-want +got):\n%s", diff)
	}
}

var errNoCRD = errors.New("no such customresourcedefinition")

// TestNamesUnambiguous checks that no unqualified name of one built-in
// shadows another's, so that table order never silently decides.
func TestNamesUnambiguous(t *testing.T) {
	seen := map[string]string{}
	for _, e := range builtins {
		for _, n := range e.names() {
			if other, dup := seen[n]; dup {
				t.Errorf("name %q is both %s and %s", n, other, entryString(e))
			}
			seen[n] = entryString(e)
		}
	}
	// The only stored/not-stored overlap is policy's pods/eviction
	// subresource against lifecycle.k8s.io evictions, which need the group.
	var overlap []string
	for _, e := range notStored {
		for _, n := range e.names() {
			if other, dup := seen[n]; dup {
				overlap = append(overlap, fmt.Sprintf("%s: %s/%s", n, other, entryString(e)))
			}
		}
	}
	if diff := cmp.Diff([]string{
		"evictions: evictions.lifecycle.k8s.io/evictions.policy",
		"eviction: evictions.lifecycle.k8s.io/evictions.policy",
	}, overlap); diff != "" {
		t.Errorf("stored/not-stored name overlap (-want +got):\n%s", diff)
	}
}
