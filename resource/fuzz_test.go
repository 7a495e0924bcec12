package resource

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseKey checks that whatever ParseKey accepts, Key writes back
// byte for byte, and that the pieces are valid key segments.
func FuzzParseKey(f *testing.F) {
	data, err := os.ReadFile(filepath.Join(corpus, "etcd-keys.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, key := range strings.Fields(string(data)) {
		f.Add("/registry", key)
	}
	f.Add("", "/pods/demo/web-0")
	f.Add("registry/", "/registry/e2e.example.com/widgets/w1")
	f.Add("/registry", "/registry/pods/../web-0")
	f.Fuzz(func(t *testing.T, prefix, key string) {
		r, ns, name, ok := ParseKey(prefix, key)
		if !ok {
			return
		}
		got, err := r.Key(prefix, ns, name)
		if err != nil {
			// ParseKey splits on "/", so the pieces hold none; but a
			// name the apiserver would refuse ("..", "%") may sit in
			// etcd only if written by something else.
			if checkSegment("name", name) == nil && (ns == "" || checkSegment("namespace", ns) == nil) {
				t.Fatalf("ParseKey(%q, %q) = %s %q %q, but Key fails: %v", prefix, key, r, ns, name, err)
			}
			return
		}
		if got != key {
			t.Fatalf("ParseKey(%q, %q) = %s %q %q; Key gives back %q", prefix, key, r, ns, name, got)
		}
	})
}

// FuzzLookup checks that Lookup never panics and that what it resolves has
// a storage path and a valid GroupResource.
func FuzzLookup(f *testing.F) {
	for _, r := range All() {
		f.Add(r.Plural)
		f.Add(r.Kind + "." + r.Group)
	}
	f.Add("widgets.v1.e2e.example.com")
	f.Add("cs")
	f.Fuzz(func(t *testing.T, name string) {
		r, err := Lookup(name)
		if err != nil {
			return
		}
		if r.Path == "" || r.Plural == "" {
			t.Fatalf("Lookup(%q) = %+v: no path or plural", name, r)
		}
		if !r.BuiltIn && (!strings.Contains(r.Group, ".") || r.Path != r.Group+"/"+r.Plural) {
			t.Fatalf("Lookup(%q) = %+v: bad custom resource", name, r)
		}
	})
}

// TestCutPrefix: cutPrefix is strings.CutPrefix with normPrefix.
func TestCutPrefix(t *testing.T) {
	prefixes := []string{"/registry", "/registry/", "registry", "/", "", "//registry", "/a/b", "/a/../b", "/registry/."}
	keys := []string{"/registry/pods/ns/a", "/registry", "/registry/", "/registryx/pods", "/a/b/c", "/b/c", "registry/pods", "/", "", "//registry/pods"}
	for _, p := range prefixes {
		for _, k := range keys {
			wantRest, wantOK := strings.CutPrefix(k, normPrefix(p))
			rest, ok := cutPrefix(k, p)
			if ok != wantOK || ok && rest != wantRest {
				t.Errorf("cutPrefix(%q, %q) = %q, %v; want %q, %v", k, p, rest, ok, wantRest, wantOK)
			}
		}
	}
}
