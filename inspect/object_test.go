package inspect

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRenderObject(t *testing.T) {
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "s", "managedFields": []any{map[string]any{"manager": "kubectl"}}},
		"data":     map[string]any{"password": "aHVudGVyMg=="}}
	for _, tc := range []struct {
		name string
		o    ObjectFormat
		want string
	}{
		{"yaml, redacted, managed fields hidden", ObjectFormat{Output: "yaml", HideManagedFields: true},
			"apiVersion: v1\ndata:\n  password: '<redacted: 7 bytes>'\nkind: Secret\nmetadata:\n  name: s\n"},
		{"json, shown", ObjectFormat{Output: "json", ShowSecrets: true},
			"{\n    \"apiVersion\": \"v1\",\n    \"data\": {\n        \"password\": \"aHVudGVyMg==\"\n    },\n    \"kind\": \"Secret\",\n" +
				"    \"metadata\": {\n        \"managedFields\": [\n            {\n                \"manager\": \"kubectl\"\n            }\n        ],\n        \"name\": \"s\"\n    }\n}\n"},
		{"json, redaction not HTML-escaped", ObjectFormat{Output: "json", HideManagedFields: true},
			"{\n    \"apiVersion\": \"v1\",\n    \"data\": {\n        \"password\": \"<redacted: 7 bytes>\"\n    },\n    \"kind\": \"Secret\",\n    \"metadata\": {\n        \"name\": \"s\"\n    }\n}\n"},
	} {
		got, err := RenderObject(secret, tc.o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if md := secret["metadata"].(map[string]any); md["managedFields"] == nil {
		t.Errorf("RenderObject changed its input")
	}
	rv := WithResourceVersion(secret, 42)
	if got := rv["metadata"].(map[string]any)["resourceVersion"]; got != "42" {
		t.Errorf("WithResourceVersion: resourceVersion %v", got)
	}
	if _, ok := secret["metadata"].(map[string]any)["resourceVersion"]; ok {
		t.Errorf("WithResourceVersion changed its input")
	}
	if got := WithResourceVersion(map[string]any{"kind": "X"}, 7); !cmp.Equal(got, map[string]any{"kind": "X", "metadata": map[string]any{"resourceVersion": "7"}}) {
		t.Errorf("WithResourceVersion without metadata = %v", got)
	}
}
