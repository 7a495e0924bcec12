package encryption

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption/internal/kmstest"
)

// TestEncryptRoundTrip encrypts with every provider and decrypts the
// result with the apiserver's own transformer, built independently of
// Config: what Encrypt writes is what kube-apiserver reads.
func TestEncryptRoundTrip(t *testing.T) {
	kms := startKMS(t)
	secrets := schema.GroupResource{Resource: "secrets"}
	tests := []struct {
		name       string
		providers  []string
		wantPrefix string // "" means stored unencrypted
		wantNames  []string
	}{
		{
			name:       "aescbc",
			providers:  []string{aescbc("cbc-key", key32a), identity},
			wantPrefix: "k8s:enc:aescbc:v1:cbc-key:",
			wantNames:  []string{"aescbc/cbc-key", "identity"},
		},
		{
			name:       "aescbc 16-byte key",
			providers:  []string{aescbc("short", key16)},
			wantPrefix: "k8s:enc:aescbc:v1:short:",
			wantNames:  []string{"aescbc/short"},
		},
		{
			name:       "aesgcm",
			providers:  []string{aesgcm("gcm-key", key32b), identity},
			wantPrefix: "k8s:enc:aesgcm:v1:gcm-key:",
			wantNames:  []string{"aesgcm/gcm-key", "identity"},
		},
		{
			name:       "secretbox",
			providers:  []string{secretbox("box-key", key32c), identity},
			wantPrefix: "k8s:enc:secretbox:v1:box-key:",
			wantNames:  []string{"secretbox/box-key", "identity"},
		},
		{
			name:       "kms v2",
			providers:  []string{kmsv2("testkms", kms.Endpoint), identity},
			wantPrefix: "k8s:enc:kms:v2:testkms:",
			wantNames:  []string{"kms/testkms", "identity"},
		},
		{
			name:       "identity first",
			providers:  []string{identity, aescbc("cbc-key", key32a)},
			wantPrefix: "",
			wantNames:  []string{"identity", "aescbc/cbc-key"},
		},
		{
			name:       "first of several keys",
			providers:  []string{"aescbc: {keys: [{name: new, secret: " + key32d + "}, {name: old, secret: " + key32a + "}]}", secretbox("box-key", key32c)},
			wantPrefix: "k8s:enc:aescbc:v1:new:",
			wantNames:  []string{"aescbc/new", "aescbc/old", "secretbox/box-key"},
		},
		{
			name:       "key name with colon",
			providers:  []string{aesgcm("a:b", key32b)},
			wantPrefix: "k8s:enc:aesgcm:v1:a:b:",
			wantNames:  []string{"aesgcm/a:b"},
		},
	}
	ctx := context.Background()
	plain := []byte("k8s\x00\n\x0c\n\x02v1\x12\x06Secret\x12 plaintext bytes of web-secret")
	const etcdKey = "/registry/secrets/demo/web-secret"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, rule("secrets", tt.providers...))
			c := load(t, path)
			if diff := cmp.Diff(tt.wantNames, c.Providers(secrets)); diff != "" {
				t.Errorf("Providers(secrets) (-want +got):\n%s", diff)
			}

			stored, err := c.Encrypt(ctx, secrets, etcdKey, plain)
			if err != nil {
				t.Fatalf("Encrypt: %v", err)
			}
			if tt.wantPrefix == "" {
				if !bytes.Equal(stored, plain) {
					t.Fatalf("Encrypt = %q, want the plaintext unchanged", stored)
				}
			} else {
				if !bytes.HasPrefix(stored, []byte(tt.wantPrefix)) {
					t.Fatalf("Encrypt wrote header %q, want %q", stored[:min(len(stored), len(tt.wantPrefix))], tt.wantPrefix)
				}
				if bytes.Contains(stored, plain[4:]) {
					t.Errorf("Encrypt output contains the plaintext")
				}
				again, err := c.Encrypt(ctx, secrets, etcdKey, plain)
				if err != nil {
					t.Fatalf("Encrypt again: %v", err)
				}
				if bytes.Equal(again, stored) {
					t.Errorf("two encryptions are identical; the nonce or IV is not random")
				}
			}

			// The apiserver reads it, and considers it fresh.
			got, stale, err := apiserverTransformer(t, path, secrets).TransformFromStorage(ctx, stored, value.DefaultContext(etcdKey))
			if err != nil {
				t.Fatalf("apiserver TransformFromStorage: %v", err)
			}
			if !bytes.Equal(got, plain) {
				t.Errorf("apiserver read %q, want %q", got, plain)
			}
			if stale {
				t.Errorf("apiserver reports the written value stale")
			}

			// And so do we.
			got, stale, err = c.DecryptStale(ctx, secrets, etcdKey, stored)
			if err != nil {
				t.Fatalf("Decrypt: %v", err)
			}
			if !bytes.Equal(got, plain) || stale {
				t.Errorf("Decrypt = %q, stale %v; want %q, false", got, stale, plain)
			}
		})
	}
}

// TestKMSv2 covers what is particular to KMS v2: values bind to their
// etcd key, the plugin decrypts DEKs written by another apiserver, and an
// unreachable plugin makes writes fail instead of writing plaintext.
func TestKMSv2(t *testing.T) {
	ctx := context.Background()
	kms := startKMS(t)
	secrets := schema.GroupResource{Resource: "secrets"}
	path := writeConfig(t, rule("secrets", kmsv2("testkms", kms.Endpoint), identity))
	const etcdKey = "/registry/secrets/demo/kms-secret"
	plain := []byte("k8s\x00 kms plaintext")

	t.Run("parse prefix", func(t *testing.T) {
		c := load(t, path)
		stored, err := c.Encrypt(ctx, secrets, etcdKey, plain)
		if err != nil {
			t.Fatal(err)
		}
		env, ok := codec.ParseEncryptionHeader(stored)
		want := codec.EncryptionHeader{Provider: "kms", Version: "v2", KeyName: "testkms", HeaderLen: len("k8s:enc:kms:v2:testkms:")}
		if !ok || env != want {
			t.Fatalf("ParsePrefix = %+v, %v; want %+v, true", env, ok, want)
		}
		// After the header: the apiserver's EncryptedObject, naming the
		// plugin's key ID.
		var obj kmstypes.EncryptedObject
		if err := proto.Unmarshal(stored[env.HeaderLen:], &obj); err != nil {
			t.Fatalf("decode EncryptedObject: %v", err)
		}
		if obj.KeyID != kmstest.KeyID || len(obj.EncryptedDEKSource) == 0 || len(obj.EncryptedData) == 0 {
			t.Errorf("EncryptedObject key ID %q, %d DEK bytes, %d data bytes; want key ID %q and both non-empty",
				obj.KeyID, len(obj.EncryptedDEKSource), len(obj.EncryptedData), kmstest.KeyID)
		}
	})

	t.Run("written by the apiserver", func(t *testing.T) {
		stored, err := apiserverTransformer(t, path, secrets).TransformToStorage(ctx, plain, value.DefaultContext(etcdKey))
		if err != nil {
			t.Fatal(err)
		}
		c := load(t, path)
		_, decrypts := kms.Calls()
		got, err := c.Decrypt(ctx, secrets, etcdKey, stored)
		if err != nil {
			t.Fatalf("Decrypt: %v", err)
		}
		if !bytes.Equal(got, plain) {
			t.Errorf("Decrypt = %q, want %q", got, plain)
		}
		if _, after := kms.Calls(); after == decrypts {
			t.Errorf("the plugin decrypted no DEK; the value was not read through it")
		}
	})

	t.Run("bound to the etcd key", func(t *testing.T) {
		c := load(t, path)
		stored, err := c.Encrypt(ctx, secrets, etcdKey, plain)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Decrypt(ctx, secrets, etcdKey+"-moved", stored); err == nil || errors.Is(err, ErrKeyNotFound) {
			t.Errorf("Decrypt under another etcd key: error %v, want an authentication failure", err)
		}
	})

	t.Run("plugin unreachable", func(t *testing.T) {
		gone := "unix://" + socketPath(t) // nothing listens there
		path := writeConfig(t, rule("secrets", strings.Replace(kmsv2("gonekms", gone), "timeout: 3s", "timeout: 1s", 1), identity))
		c := load(t, path)
		stored, err := c.Encrypt(ctx, secrets, etcdKey, plain)
		if err == nil {
			t.Fatalf("Encrypt with an unreachable plugin = %q, want an error", stored)
		}
		if !strings.Contains(err.Error(), `kms v2 provider "gonekms"`) {
			t.Errorf("error %q does not name the provider", err)
		}
		// A value under it cannot be read here, which says nothing of
		// the value: ErrPluginFailed, never a wrong or missing key.
		_, err = c.Decrypt(ctx, secrets, etcdKey, []byte("k8s:enc:kms:v2:gonekms:\x0a\x03abc\x12\x03def"))
		if !errors.Is(err, ErrPluginFailed) || errors.Is(err, ErrWrongKey) || errors.Is(err, ErrKeyNotFound) {
			t.Errorf("Decrypt with an unreachable plugin: error %v, want ErrPluginFailed", err)
		}
	})
}

// TestStale checks the apiserver's stale reporting: a value read through
// any but the first provider and key must be rewritten.
func TestStale(t *testing.T) {
	ctx := context.Background()
	secrets := schema.GroupResource{Resource: "secrets"}
	const etcdKey = "/registry/secrets/demo/s"
	plain := []byte("k8s\x00 stale test")

	oldPath := writeConfig(t, rule("secrets", aescbc("old", key32a)))
	oldValue, err := load(t, oldPath).Encrypt(ctx, secrets, etcdKey, plain)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		providers []string
		stored    []byte
		wantStale bool
	}{
		{"unencrypted, identity first", []string{identity, aescbc("old", key32a)}, plain, false},
		{"unencrypted, aescbc first", []string{aescbc("new", key32d), identity}, plain, true},
		{"first key", []string{aescbc("old", key32a), identity}, oldValue, false},
		{"second key", []string{"aescbc: {keys: [{name: new, secret: " + key32d + "}, {name: old, secret: " + key32a + "}]}"}, oldValue, true},
		{"second provider", []string{secretbox("box", key32c), aescbc("old", key32a)}, oldValue, true},
		{"after identity", []string{identity, aescbc("old", key32a)}, oldValue, true},
	}
	// With no identity provider, the apiserver's transformer finds no
	// prefix for a value in the clear: neither does DecryptStale.
	t.Run("unencrypted, no identity provider", func(t *testing.T) {
		c := load(t, writeConfig(t, rule("secrets", aescbc("new", key32d))))
		if _, _, err := c.transformer(secrets).TransformFromStorage(ctx, plain, value.DefaultContext(etcdKey)); err == nil {
			t.Fatal("the apiserver's transformer reads it: nothing to test")
		}
		if _, _, err := c.DecryptStale(ctx, secrets, etcdKey, plain); !errors.Is(err, ErrNoIdentity) {
			t.Fatalf("DecryptStale: %v, want ErrNoIdentity", err)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := load(t, writeConfig(t, rule("secrets", tt.providers...)))
			got, stale, err := c.DecryptStale(ctx, secrets, etcdKey, tt.stored)
			if err != nil {
				t.Fatalf("DecryptStale: %v", err)
			}
			if !bytes.Equal(got, plain) {
				t.Errorf("DecryptStale = %q, want %q", got, plain)
			}
			if stale != tt.wantStale {
				t.Errorf("stale = %v, want %v", stale, tt.wantStale)
			}
			if len(tt.providers) > 0 && !strings.HasPrefix(tt.providers[0], "identity") {
				rewritten, err := c.Encrypt(ctx, secrets, etcdKey, got)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := codec.ParseEncryptionHeader(rewritten); !ok {
					t.Errorf("rewrite under a non-identity first provider is not encrypted: %q", rewritten)
				}
			}
		})
	}
}

// TestNilConfig checks the nil *Config: an apiserver without encryption.
func TestNilConfig(t *testing.T) {
	var c *Config
	ctx := context.Background()
	gr := schema.GroupResource{Resource: "secrets"}
	plain := []byte("k8s\x00 nil config")
	out, err := c.Encrypt(ctx, gr, "/registry/secrets/a/b", plain)
	if err != nil || !bytes.Equal(out, plain) {
		t.Errorf("Encrypt = %q, %v; want the plaintext", out, err)
	}
	if got := c.Providers(gr); !cmp.Equal(got, []string{"identity"}) {
		t.Errorf("Providers = %q, want [identity]", got)
	}
	c.Close()
	if _, err := c.Decrypt(ctx, gr, "/registry/secrets/a/b", []byte("k8s:enc:")); !errors.Is(err, ErrNoConfig) {
		t.Errorf("Decrypt of a malformed encrypted value: %v, want ErrNoConfig", err)
	}
}
