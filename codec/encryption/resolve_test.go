package encryption

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
)

// TestResolve checks that a GroupResource resolves to the same providers
// as in the apiserver, wildcards included: the prefix Encrypt writes, read
// back by the apiserver's own transformer for that resource, proves it.
func TestResolve(t *testing.T) {
	const wildcards = "testdata/wildcards.yaml"
	tests := []struct {
		config     string
		gr         schema.GroupResource
		wantNames  []string
		wantPrefix string
	}{
		{wildcards, schema.GroupResource{Resource: "secrets"}, []string{"aescbc/exact", "identity"}, "k8s:enc:aescbc:v1:exact:"},
		{wildcards, schema.GroupResource{Group: "e2e.example.com", Resource: "widgets"}, []string{"aescbc/exact", "identity"}, "k8s:enc:aescbc:v1:exact:"},
		{wildcards, schema.GroupResource{Resource: "configmaps"}, []string{"secretbox/core"}, "k8s:enc:secretbox:v1:core:"},
		{wildcards, schema.GroupResource{Group: "apps", Resource: "deployments"}, []string{"aesgcm/apps", "identity"}, "k8s:enc:aesgcm:v1:apps:"},
		{wildcards, schema.GroupResource{Group: "apps", Resource: "statefulsets"}, []string{"aesgcm/apps", "identity"}, "k8s:enc:aesgcm:v1:apps:"},
		{wildcards, schema.GroupResource{Group: "batch", Resource: "jobs"}, []string{"aescbc/everything", "identity"}, "k8s:enc:aescbc:v1:everything:"},
		{wildcards, schema.GroupResource{Group: "e2e.example.com", Resource: "gadgets"}, []string{"aescbc/everything", "identity"}, "k8s:enc:aescbc:v1:everything:"},
		{corpusConfig, schema.GroupResource{Resource: "secrets"}, []string{"aescbc/key1", "identity"}, "k8s:enc:aescbc:v1:key1:"},
		{corpusConfig, schema.GroupResource{Resource: "configmaps"}, []string{"aesgcm/key1", "identity"}, "k8s:enc:aesgcm:v1:key1:"},
		{corpusConfig, schema.GroupResource{Resource: "persistentvolumeclaims"}, []string{"secretbox/key1", "identity"}, "k8s:enc:secretbox:v1:key1:"},
		{corpusConfig, schema.GroupResource{Resource: "pods"}, []string{"identity"}, ""},
		{corpusConfig, schema.GroupResource{Group: "apps", Resource: "deployments"}, []string{"identity"}, ""},
		{corpusConfig, schema.GroupResource{Group: "e2e.example.com", Resource: "widgets"}, []string{"identity"}, ""},
	}
	ctx := context.Background()
	configs := map[string]*Config{wildcards: load(t, wildcards), corpusConfig: load(t, corpusConfig)}
	for _, tt := range tests {
		name := strings.TrimSuffix(tt.config[strings.LastIndex(tt.config, "/")+1:], ".yaml") + "/" + tt.gr.String()
		t.Run(name, func(t *testing.T) {
			c := configs[tt.config]
			if diff := cmp.Diff(tt.wantNames, c.Providers(tt.gr)); diff != "" {
				t.Errorf("Providers (-want +got):\n%s", diff)
			}
			etcdKey := "/registry/" + tt.gr.String() + "/demo/x"
			plain := []byte("k8s\x00 resolve " + tt.gr.String())
			stored, err := c.Encrypt(ctx, tt.gr, etcdKey, plain)
			if err != nil {
				t.Fatalf("Encrypt: %v", err)
			}
			if tt.wantPrefix == "" && !bytes.Equal(stored, plain) {
				t.Errorf("Encrypt = %q, want the plaintext unchanged", stored)
			}
			if !bytes.HasPrefix(stored, []byte(tt.wantPrefix)) {
				t.Errorf("Encrypt wrote %q, want prefix %q", stored[:min(len(stored), 32)], tt.wantPrefix)
			}
			got, stale, err := apiserverTransformer(t, tt.config, tt.gr).TransformFromStorage(ctx, stored, value.DefaultContext(etcdKey))
			if err != nil || stale || !bytes.Equal(got, plain) {
				t.Errorf("apiserver read %q, stale %v, %v; want %q, false", got, stale, err, plain)
			}
		})
	}
}

// TestLoadErrors checks that Load reports the apiserver loader's
// validation errors.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{"missing file", "testdata/does-not-exist.yaml", "does-not-exist.yaml"},
		{"masked rule", "testdata/masked.yaml", `resource "deployments.apps" is masked by earlier rule "*.apps"`},
		{"bad key size", writeConfig(t, rule("secrets", aescbc("k", "c2hvcnQ="))), "secret is not of the expected length"},
		{"no providers", writeConfig(t, "- resources: [secrets]\n  providers: []\n"), "at least one"},
		{"kms v1", writeConfig(t, rule("secrets", "kms: {name: old, endpoint: unix:///nonexistent.sock}")), "KMSv1 is deprecated"},
		{"unknown field", writeConfig(t, rule("secrets", "aescbc: {keys: [{name: k, secret: "+key32a+", extra: 1}]}")), "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(context.Background(), tt.path)
			if err == nil {
				c.Close()
				t.Fatalf("Load succeeded, want an error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "load encryption config") {
				t.Errorf("Load error %q, want it to start with %q and contain %q", err, "load encryption config", tt.wantErr)
			}
		})
	}

	t.Run("canceled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if c, err := Load(ctx, corpusConfig); err == nil {
			c.Close()
			t.Errorf("Load with a canceled context succeeded")
		}
	})
}
