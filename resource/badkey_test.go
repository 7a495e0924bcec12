package resource

import "testing"

// TestBadKey: a key under a resource's storage path that names no object
// is that resource's (and its namespace's, when one is named); object keys
// and keys under no resource's path are not bad keys.
func TestBadKey(t *testing.T) {
	for _, tc := range []struct {
		key, res, ns string
		bad          bool
	}{
		{"/registry/configmaps/demo/", "configmaps", "demo", true},
		{"/registry/configmaps/demo/a/b", "configmaps", "demo", true},
		{"/registry/configmaps/demo", "configmaps", "", true},
		{"/registry/configmaps/", "configmaps", "", true},
		{"/registry/services/specs/demo/", "services", "demo", true},
		{"/registry/namespaces/", "namespaces", "", true},
		{"/registry/namespaces/a/b", "namespaces", "", true},
		{"/registry/e2e.example.com/widgets/demo/a/b", "widgets.e2e.example.com", "demo", true},
		{"/registry/e2e.example.com/widgets/", "widgets.e2e.example.com", "", true},
		{"/registry/configmaps/demo/web", "", "", false},
		{"/registry/namespaces/demo", "", "", false},
		{"/registry/configmaps", "", "", false},
		{"/registry/ranges/serviceips", "", "", false},
		{"/registry/masterleases/10.0.0.1", "", "", false},
		{"/other/configmaps/demo/", "", "", false},
	} {
		r, ns, bad := BadKey("/registry", tc.key)
		if bad != tc.bad || (bad && (r.String() != tc.res || ns != tc.ns)) {
			t.Errorf("BadKey(%q) = %s, %q, %v; want %s, %q, %v", tc.key, r, ns, bad, tc.res, tc.ns, tc.bad)
		}
	}
}
