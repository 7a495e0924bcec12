package resource

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseArgs(t *testing.T) {
	pvc := mustLookup(t, "pvc")
	pv := mustLookup(t, "pv")
	sts := mustLookup(t, "sts")
	svc := mustLookup(t, "svc")
	widgetsNS := mustLookup(t, "widgets.e2e.example.com")
	widgetsNS.Namespaced = true
	widgetsCluster := mustLookup(t, "widgets.e2e.example.com")

	tests := []struct {
		name      string
		args      []string
		namespace string
		rawKey    string
		want      Ref
	}{
		{"resource name", []string{"pvc", "www-web-0"}, "demo", "",
			Ref{pvc, "demo", "www-web-0", "/registry/persistentvolumeclaims/demo/www-web-0"}},
		{"resource/name", []string{"pvc/www-web-0"}, "demo", "",
			Ref{pvc, "demo", "www-web-0", "/registry/persistentvolumeclaims/demo/www-web-0"}},
		{"namespace defaults to default", []string{"pvc", "www-web-0"}, "", "",
			Ref{pvc, "default", "www-web-0", "/registry/persistentvolumeclaims/default/www-web-0"}},
		{"cluster-scoped", []string{"pv/pv-www-web-0"}, "", "",
			Ref{pv, "", "pv-www-web-0", "/registry/persistentvolumes/pv-www-web-0"}},
		{"namespace ignored for cluster-scoped", []string{"pv", "pv-www-web-0"}, "demo", "",
			Ref{pv, "", "pv-www-web-0", "/registry/persistentvolumes/pv-www-web-0"}},
		{"kind", []string{"StatefulSet", "web"}, "demo", "",
			Ref{sts, "demo", "web", "/registry/statefulsets/demo/web"}},
		{"plural.group", []string{"statefulsets.apps/web"}, "demo", "",
			Ref{sts, "demo", "web", "/registry/statefulsets/demo/web"}},
		{"services", []string{"svc", "nginx"}, "demo", "",
			Ref{svc, "demo", "nginx", "/registry/services/specs/demo/nginx"}},
		{"custom resource with namespace", []string{"widgets.e2e.example.com", "w1"}, "demo", "",
			Ref{widgetsNS, "demo", "w1", "/registry/e2e.example.com/widgets/demo/w1"}},
		{"custom resource without namespace", []string{"widgets.e2e.example.com/w1"}, "", "",
			Ref{widgetsCluster, "", "w1", "/registry/e2e.example.com/widgets/w1"}},
		{"raw key", nil, "", "/registry/services/specs/demo/nginx",
			Ref{svc, "demo", "nginx", "/registry/services/specs/demo/nginx"}},
		{"raw key with matching namespace", nil, "demo", "/registry/persistentvolumeclaims/demo/www-web-0",
			Ref{pvc, "demo", "www-web-0", "/registry/persistentvolumeclaims/demo/www-web-0"}},
		{"raw key of a custom resource", nil, "", "/registry/e2e.example.com/widgets/demo/w1",
			Ref{widgetsNS, "demo", "w1", "/registry/e2e.example.com/widgets/demo/w1"}},
		{"raw key of a cluster-scoped object ignores namespace", nil, "demo", "/registry/persistentvolumes/pv-www-web-0",
			Ref{pv, "", "pv-www-web-0", "/registry/persistentvolumes/pv-www-web-0"}},
		{"raw key ParseKey does not understand", nil, "", "/registry/ranges/serviceips",
			Ref{Key: "/registry/ranges/serviceips"}},
		{"raw key outside the prefix", nil, "", "compact_rev_key",
			Ref{Key: "compact_rev_key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolver{}.ParseArgs("/registry", tt.args, tt.namespace, tt.rawKey)
			if err != nil {
				t.Fatalf("ParseArgs(%q, %q, %q): %v", tt.args, tt.namespace, tt.rawKey, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseArgs(%q, %q, %q) (-want +got):\n%s", tt.args, tt.namespace, tt.rawKey, diff)
			}
		})
	}
}

func TestParseArgsErrors(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		namespace string
		rawKey    string
		is        error
		contains  string
	}{
		{"no arguments", nil, "", "", nil, "missing resource and name"},
		{"missing name", []string{"pvc"}, "demo", "", nil, "missing name of pvc"},
		{"empty name after slash", []string{"pvc/"}, "demo", "", nil, `missing name in "pvc/"`},
		{"empty resource before slash", []string{"/www-web-0"}, "demo", "", nil, `missing resource in "/www-web-0"`},
		{"empty name argument", []string{"pvc", ""}, "demo", "", nil, "empty name of pvc"},
		{"too many arguments", []string{"pvc", "a", "b"}, "demo", "", nil, "too many arguments (3)"},
		{"resource/name and name", []string{"pvc/a", "b"}, "demo", "", nil, `"pvc/a" is in RESOURCE/NAME form`},
		{"name with slash", []string{"pvc/a/b"}, "demo", "", nil, `invalid name "a/b"`},
		{"name with slash, two args", []string{"pvc", "a/b"}, "demo", "", nil, `invalid name "a/b"`},
		{"unknown resource", []string{"widget", "w1"}, "demo", "", ErrUnknownResource, "<plural>.<group>"},
		{"not stored", []string{"cs", "etcd-0"}, "", "", ErrNotStored, "componentstatuses"},
		{"key and arguments", []string{"pvc", "a"}, "", "/registry/persistentvolumeclaims/demo/a", nil, "must not be given too"},
		{"key in another namespace", nil, "other", "/registry/persistentvolumeclaims/demo/a", nil, `namespace "other" was given but key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolver{}.ParseArgs("/registry", tt.args, tt.namespace, tt.rawKey)
			if err == nil {
				t.Fatalf("ParseArgs(%q, %q, %q) = %+v, want an error", tt.args, tt.namespace, tt.rawKey, got)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

func TestResolverParseArgs(t *testing.T) {
	res := Resolver{Scope: func(plural, group string) (bool, error) {
		switch plural {
		case "widgets":
			return true, nil
		case "clusterwidgets":
			return false, nil
		}
		return false, errNoCRD
	}}
	tests := []struct {
		args      []string
		namespace string
		wantKey   string
		wantNS    string
	}{
		// A namespaced custom resource defaults to "default" like kubectl.
		{[]string{"widgets.e2e.example.com", "w1"}, "", "/registry/e2e.example.com/widgets/default/w1", "default"},
		{[]string{"widgets.e2e.example.com/w1"}, "demo", "/registry/e2e.example.com/widgets/demo/w1", "demo"},
		// A cluster-scoped one ignores the namespace.
		{[]string{"clusterwidgets.e2e.example.com", "w1"}, "demo", "/registry/e2e.example.com/clusterwidgets/w1", ""},
		// Built-ins are unaffected.
		{[]string{"pvc", "www-web-0"}, "", "/registry/persistentvolumeclaims/default/www-web-0", "default"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := res.ParseArgs("/registry", tt.args, tt.namespace, "")
			if err != nil {
				t.Fatal(err)
			}
			if got.Key != tt.wantKey || got.Namespace != tt.wantNS {
				t.Errorf("got key %q namespace %q, want %q %q", got.Key, got.Namespace, tt.wantKey, tt.wantNS)
			}
		})
	}
	_, err := res.ParseArgs("/registry", []string{"gadgets.e2e.example.com", "g1"}, "demo", "")
	if !errors.Is(err, errNoCRD) {
		t.Errorf("gadgets: got %v, want an error wrapping %v", err, errNoCRD)
	}
}
