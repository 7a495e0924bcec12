package resource

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func mustLookup(t *testing.T, name string) Resource {
	t.Helper()
	r, err := Lookup(name)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", name, err)
	}
	return r
}

func TestKey(t *testing.T) {
	widgets := mustLookup(t, "widgets.e2e.example.com")
	widgets.Namespaced = true
	clusterWidgets := mustLookup(t, "clusterwidgets.e2e.example.com")
	tests := []struct {
		res             string
		r               *Resource // instead of res
		prefix, ns, obj string
		want            string
	}{
		{res: "pvc", prefix: "/registry", ns: "demo", obj: "www-web-0", want: "/registry/persistentvolumeclaims/demo/www-web-0"},
		{res: "pv", prefix: "/registry", obj: "pv-www-web-0", want: "/registry/persistentvolumes/pv-www-web-0"},
		{res: "sts", prefix: "/registry", ns: "demo", obj: "web", want: "/registry/statefulsets/demo/web"},
		{res: "svc", prefix: "/registry", ns: "demo", obj: "nginx", want: "/registry/services/specs/demo/nginx"},
		{res: "ep", prefix: "/registry", ns: "demo", obj: "nginx", want: "/registry/services/endpoints/demo/nginx"},
		{res: "no", prefix: "/registry", obj: "node-1", want: "/registry/minions/node-1"},
		{res: "rc", prefix: "/registry", ns: "demo", obj: "old", want: "/registry/controllers/demo/old"},
		{res: "ing", prefix: "/registry", ns: "demo", obj: "web", want: "/registry/ingress/demo/web"},
		{res: "ingresses.extensions", prefix: "/registry", ns: "demo", obj: "web", want: "/registry/ingress/demo/web"},
		{res: "events.events.k8s.io", prefix: "/registry", ns: "demo", obj: "e1", want: "/registry/events/demo/e1"},
		{res: "endpointslices", prefix: "/registry", ns: "demo", obj: "nginx-abc", want: "/registry/endpointslices/demo/nginx-abc"},
		{res: "ns", prefix: "/registry", obj: "demo", want: "/registry/namespaces/demo"},
		{res: "sc", prefix: "/registry", obj: "standard", want: "/registry/storageclasses/standard"},
		{res: "clusterroles", prefix: "/registry", obj: "system:controller:foo", want: "/registry/clusterroles/system:controller:foo"},
		{res: "crd", prefix: "/registry", obj: "widgets.e2e.example.com", want: "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.e2e.example.com"},
		{res: "apiservices", prefix: "/registry", obj: "v1.apps", want: "/registry/apiregistration.k8s.io/apiservices/v1.apps"},
		{res: "ipaddresses", prefix: "/registry", obj: "10.0.0.1", want: "/registry/ipaddresses/10.0.0.1"},
		{r: &widgets, prefix: "/registry", ns: "demo", obj: "w1", want: "/registry/e2e.example.com/widgets/demo/w1"},
		{r: &clusterWidgets, prefix: "/registry", obj: "w1", want: "/registry/e2e.example.com/clusterwidgets/w1"},
		// Prefixes are joined like the apiserver's etcd3 store does.
		{res: "pods", prefix: "/registry/", ns: "demo", obj: "web-0", want: "/registry/pods/demo/web-0"},
		{res: "pods", prefix: "registry", ns: "demo", obj: "web-0", want: "/registry/pods/demo/web-0"},
		{res: "pods", prefix: "/kubernetes.io/cluster-a", ns: "demo", obj: "web-0", want: "/kubernetes.io/cluster-a/pods/demo/web-0"},
		{res: "pods", prefix: "", ns: "demo", obj: "web-0", want: "/pods/demo/web-0"},
		{res: "pods", prefix: "/", ns: "demo", obj: "web-0", want: "/pods/demo/web-0"},
	}
	for _, tt := range tests {
		r := tt.r
		if r == nil {
			l := mustLookup(t, tt.res)
			r = &l
		}
		t.Run(r.String()+"/"+tt.want, func(t *testing.T) {
			got, err := r.Key(tt.prefix, tt.ns, tt.obj)
			if err != nil {
				t.Fatalf("Key(%q, %q, %q): %v", tt.prefix, tt.ns, tt.obj, err)
			}
			if got != tt.want {
				t.Errorf("Key(%q, %q, %q) = %q, want %q", tt.prefix, tt.ns, tt.obj, got, tt.want)
			}
			// ParseKey inverts Key.
			pr, pns, pname, ok := ParseKey(tt.prefix, got)
			if !ok {
				t.Fatalf("ParseKey(%q, %q) not ok", tt.prefix, got)
			}
			if diff := cmp.Diff([]any{*r, tt.ns, tt.obj}, []any{pr, pns, pname}); diff != "" {
				t.Errorf("ParseKey(%q, %q) (-want +got):\n%s", tt.prefix, got, diff)
			}
		})
	}
}

func TestKeyErrors(t *testing.T) {
	tests := []struct {
		res, ns, name string
		contains      string
	}{
		{"pvc", "", "www-web-0", "namespaced but no namespace"},
		{"pv", "demo", "pv-1", "cluster-scoped but namespace"},
		{"pvc", "demo", "", "empty name"},
		{"pvc", "demo", "a/b", `invalid name "a/b"`},
		{"pvc", "de/mo", "a", `invalid namespace "de/mo"`},
		{"pvc", "demo", "..", `invalid name ".."`},
		{"pvc", ".", "a", `invalid namespace "."`},
		{"pv", "", "a%2Fb", `invalid name "a%2Fb"`},
	}
	for _, tt := range tests {
		t.Run(tt.res+"/"+tt.ns+"/"+tt.name, func(t *testing.T) {
			r := mustLookup(t, tt.res)
			got, err := r.Key("/registry", tt.ns, tt.name)
			if err == nil {
				t.Fatalf("Key(%q, %q) = %q, want an error", tt.ns, tt.name, got)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("Key(%q, %q) error %q does not contain %q", tt.ns, tt.name, err, tt.contains)
			}
		})
	}
	if _, err := (Resource{}).Key("/registry", "", "x"); err == nil {
		t.Error("zero Resource: Key succeeded")
	}
}

func TestClusterScopedKeysHaveNoNamespace(t *testing.T) {
	for _, name := range []string{"pv", "ns", "no", "sc", "crd", "clusterroles", "clusterrolebindings", "csr", "apiservices", "priorityclasses", "ingressclasses"} {
		t.Run(name, func(t *testing.T) {
			r := mustLookup(t, name)
			if r.Namespaced {
				t.Fatalf("%s is namespaced", r)
			}
			key, err := r.Key("/registry", "", "x")
			if err != nil {
				t.Fatal(err)
			}
			if want := "/registry/" + r.Path + "/x"; key != want {
				t.Errorf("Key = %q, want %q", key, want)
			}
		})
	}
}

func TestListPrefix(t *testing.T) {
	pods := mustLookup(t, "pods")
	pv := mustLookup(t, "pv")
	svc := mustLookup(t, "svc")
	tests := []struct {
		r          Resource
		prefix, ns string
		want       string
	}{
		{pods, "/registry", "", "/registry/pods/"},
		{pods, "/registry", "demo", "/registry/pods/demo/"},
		{pods, "/registry/", "default", "/registry/pods/default/"},
		{svc, "/registry", "demo", "/registry/services/specs/demo/"},
		{svc, "/registry", "", "/registry/services/specs/"},
		{pv, "/registry", "", "/registry/persistentvolumes/"},
		{pv, "/registry", "demo", "/registry/persistentvolumes/"}, // ignored, as kubectl does
		{mustLookup(t, "crd"), "/registry", "", "/registry/apiextensions.k8s.io/customresourcedefinitions/"},
		{mustLookup(t, "widgets.e2e.example.com"), "/registry", "", "/registry/e2e.example.com/widgets/"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := tt.r.ListPrefix(tt.prefix, tt.ns)
			if got != tt.want {
				t.Errorf("ListPrefix(%q, %q) = %q, want %q", tt.prefix, tt.ns, got, tt.want)
			}
			if !strings.HasSuffix(got, "/") {
				t.Errorf("ListPrefix(%q, %q) = %q does not end in /", tt.prefix, tt.ns, got)
			}
		})
	}
	// The trailing slash keeps a namespace from matching its longer
	// namesakes.
	p := pods.ListPrefix("/registry", "default")
	for key, match := range map[string]bool{
		"/registry/pods/default/web-0":   true,
		"/registry/pods/default-2/web-0": false,
		"/registry/pods/defaultx/web-0":  false,
		"/registry/podsx/default/web-0":  false,
	} {
		if got := strings.HasPrefix(key, p); got != match {
			t.Errorf("prefix %q matches %q: %v, want %v", p, key, got, match)
		}
	}
	// Every resource's prefix ends in "/" for every namespace.
	for _, r := range All() {
		for _, ns := range []string{"", "demo"} {
			if got := r.ListPrefix("/registry", ns); !strings.HasSuffix(got, "/") {
				t.Errorf("%s.ListPrefix(%q) = %q", r, ns, got)
			}
		}
	}
}

func TestParseKey(t *testing.T) {
	tests := []struct {
		key      string
		res      string // "" for a custom resource given by custom
		custom   Resource
		ns, name string
	}{
		{key: "/registry/services/specs/demo/nginx", res: "svc", ns: "demo", name: "nginx"},
		{key: "/registry/services/endpoints/demo/nginx", res: "ep", ns: "demo", name: "nginx"},
		{key: "/registry/minions/node-1", res: "nodes", name: "node-1"},
		{key: "/registry/controllers/demo/rc", res: "rc", ns: "demo", name: "rc"},
		{key: "/registry/ingress/demo/web", res: "ing", ns: "demo", name: "web"},
		{key: "/registry/persistentvolumeclaims/demo/www-web-0", res: "pvc", ns: "demo", name: "www-web-0"},
		{key: "/registry/persistentvolumes/pv-www-web-0", res: "pv", name: "pv-www-web-0"},
		{key: "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.e2e.example.com", res: "crd", name: "widgets.e2e.example.com"},
		{key: "/registry/apiregistration.k8s.io/apiservices/v1.", res: "apiservices", name: "v1."},
		{key: "/registry/e2e.example.com/widgets/demo/w1", custom: Resource{Group: "e2e.example.com", Plural: "widgets", Namespaced: true, Path: "e2e.example.com/widgets", JSON: true}, ns: "demo", name: "w1"},
		{key: "/registry/e2e.example.com/clusterwidgets/w1", custom: Resource{Group: "e2e.example.com", Plural: "clusterwidgets", Path: "e2e.example.com/clusterwidgets", JSON: true}, name: "w1"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			want := tt.custom
			if tt.res != "" {
				want = mustLookup(t, tt.res)
			}
			r, ns, name, ok := ParseKey("/registry", tt.key)
			if !ok {
				t.Fatalf("ParseKey(%q) not ok", tt.key)
			}
			if diff := cmp.Diff([]any{want, tt.ns, tt.name}, []any{r, ns, name}); diff != "" {
				t.Errorf("ParseKey(%q) (-want +got):\n%s", tt.key, diff)
			}
		})
	}
}

func TestParseKeyNotOK(t *testing.T) {
	for _, key := range []string{
		"",
		"compact_rev_key",
		"/registry",
		"/registry/",
		"/registry/pods",
		"/registry/pods/",
		"/registry/pods/demo",
		"/registry/pods/demo/",
		"/registry/pods//web-0",
		"/registry/pods/demo/web-0/extra",
		"/registry/persistentvolumes/demo/pv-1",
		"/registry/persistentvolumes/",
		"/registry/services/specs",
		"/registry/services/specs/demo",
		"/registry/services/nginx",
		"/registry/ranges/serviceips",
		"/registry/ranges/servicenodeports",
		"/registry/masterleases/10.0.0.1",
		"/registry/peerserverleases/apiserver-wlv32tlttr4jl3gtroqexyxapa",
		"/registry/nosuchresources/x",
		"/registry/e2e.example.com/widgets",
		"/registry/e2e.example.com/widgets/",
		"/registry/e2e.example.com//w1",
		"/registry/e2e.example.com/widgets/demo/w1/extra",
		"/registry/apiextensions.k8s.io/other/x",
		"/registry/storage.k8s.io/foos/x",
		"/other/pods/demo/web-0",
		"/registryx/pods/demo/web-0",
	} {
		t.Run(key, func(t *testing.T) {
			if r, ns, name, ok := ParseKey("/registry", key); ok {
				t.Errorf("ParseKey(%q) = %v %q %q, want not ok", key, r, ns, name)
			}
		})
	}
}

func TestAll(t *testing.T) {
	a, b := All(), All()
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("All is not stable (-first +second):\n%s", diff)
	}
	// Callers may scribble on what they get.
	a[0].ShortNames[0] = "scribbled"
	a[0].Path = "scribbled"
	if diff := cmp.Diff(b, All()); diff != "" {
		t.Fatalf("All shares state with its callers:\n%s", diff)
	}

	paths := map[string]string{}
	grs := map[schema.GroupResource]bool{}
	for _, r := range b {
		if other, dup := paths[r.Path]; dup {
			t.Errorf("path %q of %s is also %s's", r.Path, r, other)
		}
		paths[r.Path] = r.String()
		if grs[r.GroupResource()] {
			t.Errorf("%s listed twice", r)
		}
		grs[r.GroupResource()] = true
		if !r.BuiltIn || r.Kind == "" || r.Version == "" || r.Plural == "" || r.Singular != strings.ToLower(r.Kind) {
			t.Errorf("incomplete built-in %+v", r)
		}
		wantJSON := r.Group == "apiextensions.k8s.io" || r.Group == "apiregistration.k8s.io"
		if r.JSON != wantJSON {
			t.Errorf("%s: JSON = %v, want %v", r, r.JSON, wantJSON)
		}
	}

	// The storage paths that are not the plural, and their sources.
	special := map[string]string{}
	for _, r := range b {
		if r.Path != r.Plural {
			special[r.String()] = r.Path
		}
	}
	if diff := cmp.Diff(map[string]string{
		// SpecialDefaultResourcePrefixes
		"services":                    "services/specs",
		"endpoints":                   "services/endpoints",
		"nodes":                       "minions",
		"replicationcontrollers":      "controllers",
		"ingresses.networking.k8s.io": "ingress",
		// SimpleStorageFactory: <group>/<plural>
		"customresourcedefinitions.apiextensions.k8s.io": "apiextensions.k8s.io/customresourcedefinitions",
		"apiservices.apiregistration.k8s.io":             "apiregistration.k8s.io/apiservices",
	}, special); diff != "" {
		t.Errorf("special storage paths (-want +got):\n%s", diff)
	}
}

func TestStringAndGroupResource(t *testing.T) {
	tests := []struct {
		name string
		gr   schema.GroupResource
		str  string
	}{
		{"pvc", schema.GroupResource{Resource: "persistentvolumeclaims"}, "persistentvolumeclaims"},
		{"svc", schema.GroupResource{Resource: "services"}, "services"},
		{"sts", schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "statefulsets.apps"},
		{"ev.events.k8s.io", schema.GroupResource{Resource: "events"}, "events"},
		{"crd", schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "customresourcedefinitions.apiextensions.k8s.io"},
		{"widgets.e2e.example.com", schema.GroupResource{Group: "e2e.example.com", Resource: "widgets"}, "widgets.e2e.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustLookup(t, tt.name)
			if got := r.GroupResource(); got != tt.gr {
				t.Errorf("GroupResource() = %v, want %v", got, tt.gr)
			}
			if got := r.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
		})
	}
}
