package flows

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/codec/encryption"
)

// TestDecodeInputEtcdctlNewline: an encrypted value is decoded as
// `etcdctl get --print-value-only` writes it (with a newline appended),
// and a cipher text that itself ends in a newline is decoded as it is,
// with or without etcdctl's: no valid value loses a byte.
func TestDecodeInputEtcdctlNewline(t *testing.T) {
	ctx := context.Background()
	cfg, err := encryption.Load(ctx, filepath.Join("..", "fixtures", "corpus", "encryption", "encryption-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	for _, tc := range []struct {
		gr         schema.GroupResource
		key, plain string
	}{
		{schema.GroupResource{Resource: "configmaps"}, "/registry/configmaps/demo/web-config", "configmaps__demo__web-config"},
		{schema.GroupResource{Resource: "secrets"}, "/registry/secrets/demo/web-secret", "secrets__demo__web-secret"},
		{schema.GroupResource{Resource: "persistentvolumeclaims"}, "/registry/persistentvolumeclaims/demo/www-web-1", "persistentvolumeclaims__demo__www-web-1__bound"},
	} {
		plain := corpus(t, tc.plain)
		decrypt := func(key string, v []byte) ([]byte, error) { return cfg.Decrypt(ctx, tc.gr, key, v) }
		decode := func(v []byte) map[string]any {
			t.Helper()
			got, err := DecodeInput(&terminal{}, bytes.NewReader(v), tc.key, decrypt)
			if err != nil {
				t.Fatalf("%s: %v", tc.key, err)
			}
			return got
		}
		// Encrypted with a fresh nonce or IV each time: one cipher text
		// that ends in a newline, and one that does not.
		var nl, other []byte
		for i := 0; i < 20000 && (nl == nil || other == nil); i++ {
			v, err := cfg.Encrypt(ctx, tc.gr, tc.key, plain)
			if err != nil {
				t.Fatal(err)
			}
			if v[len(v)-1] == '\n' {
				nl = v
			} else {
				other = v
			}
		}
		if nl == nil {
			t.Fatalf("%s: no cipher text ending in a newline", tc.key)
		}
		want := decode(other)
		for name, v := range map[string][]byte{
			"as stored": other, "with etcdctl's newline": append(bytes.Clone(other), '\n'),
			"ending in a newline": nl, "ending in a newline, with etcdctl's": append(bytes.Clone(nl), '\n'),
		} {
			if got := decode(v); !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: decoded to another object", tc.key, name)
			}
		}
	}
}
