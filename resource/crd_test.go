package resource

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const corpus = "../fixtures/corpus"

func TestScopeFromCRD(t *testing.T) {
	stored, err := os.ReadFile(filepath.Join(corpus, "plain", "customresourcedefinitions__-__widgets.e2e.example.com.bin"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		data       string
		namespaced bool
	}{
		{"stored v1beta1 from the corpus", string(stored), true},
		{"stored with etcdctl's newline", string(stored) + "\n", true},
		{"v1 namespaced", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"scope":"Namespaced"}}`, true},
		{"v1 cluster", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"scope":"Cluster"}}`, false},
		{"v1beta1 cluster", `{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1beta1","spec":{"scope":"Cluster"}}`, false},
		{"v1beta1 defaults to namespaced", `{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1beta1","spec":{}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ScopeFromCRD([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.namespaced {
				t.Errorf("ScopeFromCRD = %v, want %v", got, tt.namespaced)
			}
		})
	}
}

func TestScopeFromCRDErrors(t *testing.T) {
	tests := []struct {
		name, data, contains string
	}{
		{"empty", ``, "customresourcedefinition scope"},
		{"not json", `k8s` + "\x00" + `\n...`, "customresourcedefinition scope"},
		{"encrypted", `k8s:enc:aescbc:v1:key1:xxxx`, "encrypted at rest"},
		{"other kind", `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService"}`, `kind "APIService"`},
		{"other version", `{"apiVersion":"apiextensions.k8s.io/v2","kind":"CustomResourceDefinition","spec":{"scope":"Cluster"}}`, `unsupported apiVersion "apiextensions.k8s.io/v2"`},
		{"v1 without scope", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"w.example.com"},"spec":{}}`, "spec.scope is missing"},
		{"bad scope", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"w.example.com"},"spec":{"scope":"namespaced"}}`, `spec.scope is "namespaced"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ScopeFromCRD([]byte(tt.data))
			if err == nil {
				t.Fatalf("ScopeFromCRD = %v, want an error", got)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

// TestResolverFromStoredCRD wires a Resolver the way the CLI does: read the
// CRD at its key and decode its scope.
func TestResolverFromStoredCRD(t *testing.T) {
	stored, err := os.ReadFile(filepath.Join(corpus, "plain", "customresourcedefinitions__-__widgets.e2e.example.com.bin"))
	if err != nil {
		t.Fatal(err)
	}
	crd := mustLookup(t, "crd")
	key, err := crd.Key("/registry", "", "widgets.e2e.example.com")
	if err != nil {
		t.Fatal(err)
	}
	etcd := map[string][]byte{key: stored}
	res := Resolver{Scope: func(plural, group string) (bool, error) {
		k, err := crd.Key("/registry", "", plural+"."+group)
		if err != nil {
			return false, err
		}
		v, ok := etcd[k]
		if !ok {
			return false, errNoCRD
		}
		return ScopeFromCRD(v)
	}}
	ref, err := res.ParseArgs("/registry", []string{"widgets.e2e.example.com", "w1"}, "demo", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "/registry/e2e.example.com/widgets/demo/w1"; ref.Key != want {
		t.Errorf("key %q, want %q", ref.Key, want)
	}
}
