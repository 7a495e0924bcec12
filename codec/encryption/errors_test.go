package encryption

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
)

func TestParsePrefix(t *testing.T) {
	tests := []struct {
		in     string
		want   codec.EncryptionHeader
		wantOK bool
	}{
		{"k8s:enc:aescbc:v1:key1:\x01\x02", codec.EncryptionHeader{Provider: "aescbc", Version: "v1", KeyName: "key1", HeaderLen: 23}, true},
		{"k8s:enc:secretbox:v1:key1:", codec.EncryptionHeader{Provider: "secretbox", Version: "v1", KeyName: "key1", HeaderLen: 26}, true},
		{"k8s:enc:kms:v2:my-kms:\n\x0a", codec.EncryptionHeader{Provider: "kms", Version: "v2", KeyName: "my-kms", HeaderLen: 22}, true},
		{"k8s:enc:aesgcm:v1:a:b:c", codec.EncryptionHeader{Provider: "aesgcm", Version: "v1", KeyName: "a", HeaderLen: 20}, true},
		{"k8s\x00\n\x09\n\x02v1", codec.EncryptionHeader{}, false},
		{`{"kind":"Widget"}`, codec.EncryptionHeader{}, false},
		{"", codec.EncryptionHeader{}, false},
		{"k8s:enc:", codec.EncryptionHeader{}, false},
		{"k8s:enc:aescbc:v1:key1", codec.EncryptionHeader{}, false},
		{"k8s:enc:aescbc::key1:", codec.EncryptionHeader{}, false},
		{"k8s:enc::v1:key1:", codec.EncryptionHeader{}, false},
		{"k8s:enc:aescbc:v1:" + strings.Repeat("k", 513) + ":", codec.EncryptionHeader{}, false},
		{"k8s:enc:aescbc:v1:" + strings.Repeat("k", 512) + ":", codec.EncryptionHeader{Provider: "aescbc", Version: "v1", KeyName: strings.Repeat("k", 512), HeaderLen: 531}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in[:min(len(tt.in), 30)], func(t *testing.T) {
			got, ok := codec.ParseEncryptionHeader([]byte(tt.in))
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParsePrefix (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecryptErrors checks that every failure is a clean error naming
// what is missing, and ErrKeyNotFound exactly when the config lacks the
// value's provider or key for its resource.
func TestDecryptErrors(t *testing.T) {
	ctx := context.Background()
	c := load(t, corpusConfig)
	secrets := schema.GroupResource{Resource: "secrets"}
	plain := []byte("k8s\x00 errors")
	const etcdKey = "/registry/secrets/demo/s"

	// A value written with a key the corpus config does not hold, and one
	// with the corpus key name but different key material.
	key2Value, err := load(t, writeConfig(t, rule("secrets", aescbc("key2", key32d)))).Encrypt(ctx, secrets, etcdKey, plain)
	if err != nil {
		t.Fatal(err)
	}
	wrongSecretValue, err := load(t, writeConfig(t, rule("configmaps", aesgcm("key1", key32d)))).Encrypt(ctx, schema.GroupResource{Resource: "configmaps"}, etcdKey, plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]byte{key2Value, wrongSecretValue} {
		if _, ok := codec.ParseEncryptionHeader(v); !ok {
			t.Fatalf("test value %q is not encrypted", v)
		}
	}
	var corpusSecret, corpusConfigMap []byte
	for _, v := range loadCorpus(t) {
		switch v.provider {
		case "aescbc":
			corpusSecret = v.stored
		case "aesgcm":
			corpusConfigMap = v.stored
		}
	}

	tests := []struct {
		name    string
		c       *Config
		gr      schema.GroupResource
		stored  []byte
		wantIs  error
		wantMsg string
	}{
		{"key not in config", c, secrets, key2Value, ErrKeyNotFound,
			`value encrypted with aescbc key "key2", which the encryption config does not hold for secrets`},
		{"provider not configured for resource", c, secrets, corpusConfigMap, ErrKeyNotFound,
			`value encrypted with aesgcm key "key1", which the encryption config does not hold for secrets`},
		{"encrypted value of an unencrypted resource", c, schema.GroupResource{Resource: "pods"}, corpusSecret, ErrKeyNotFound,
			`value encrypted with aescbc key "key1", which the encryption config does not hold for pods`},
		{"kms provider not in config", c, schema.GroupResource{Group: "apps", Resource: "deployments"}, []byte("k8s:enc:kms:v2:vault:\x0a\x01x"), ErrKeyNotFound,
			`value encrypted with kms v2 provider "vault", which the encryption config does not hold for deployments.apps`},
		{"unknown provider", c, secrets, []byte("k8s:enc:rot13:v1:key1:abc"), ErrKeyNotFound,
			`value encrypted with rot13 key "key1", which the encryption config does not hold for secrets`},
		{"nil config", nil, secrets, corpusSecret, ErrNoConfig,
			`value encrypted with aescbc key "key1", but no encryption config was given`},
		{"nil config, malformed header", nil, secrets, []byte("k8s:enc:aescbc"), ErrNoConfig,
			`encrypted value with unparsable header "k8s:enc:aescbc", but no encryption config was given`},
		{"same key name, other secret", c, schema.GroupResource{Resource: "configmaps"}, wrongSecretValue, ErrWrongKey,
			`decrypt value at "/registry/secrets/demo/s": value encrypted with aesgcm key "key1", but the encryption config's key of that name does not decrypt it: a key rotated under the same name, another cluster's config, or a damaged value (cipher: message authentication failed)`},
		{"malformed header", c, secrets, []byte("k8s:enc:aescbc"), nil,
			`decrypt value at "/registry/secrets/demo/s": value starts with "k8s:enc:" but has no valid header: "k8s:enc:aescbc"`},
		{"empty ciphertext", c, secrets, []byte("k8s:enc:aescbc:v1:key1:"), nil,
			`decrypt value at "/registry/secrets/demo/s" with aescbc key "key1": the stored data was shorter than the required size`},
		{"cbc garbage", c, secrets, []byte("k8s:enc:aescbc:v1:key1:0123456789abcdef0123456789abcdef"), ErrWrongKey,
			`decrypt value at "/registry/secrets/demo/s": value encrypted with aescbc key "key1", but the encryption config's key of that name does not decrypt it: `},
		{"cbc IV only", c, secrets, []byte("k8s:enc:aescbc:v1:key1:0000000000000000"), nil,
			`decrypt value at "/registry/secrets/demo/s" with aescbc key "key1": the stored data holds an IV but no ciphertext`},
		{"cbc not block aligned", c, secrets, []byte("k8s:enc:aescbc:v1:key1:0123456789abcdef0123"), nil,
			`with aescbc key "key1": the stored data is not a multiple of the block size`},
		{"gcm garbage", c, schema.GroupResource{Resource: "configmaps"}, []byte("k8s:enc:aesgcm:v1:key1:garbage garbage garbage"), ErrWrongKey,
			`decrypt value at "/registry/secrets/demo/s": value encrypted with aesgcm key "key1", but the encryption config's key of that name does not decrypt it: `},
		{"gcm short", c, schema.GroupResource{Resource: "configmaps"}, []byte("k8s:enc:aesgcm:v1:key1:xy"), nil,
			`with aesgcm key "key1": the stored data was shorter than the required size`},
		{"secretbox garbage", c, schema.GroupResource{Resource: "persistentvolumeclaims"}, []byte("k8s:enc:secretbox:v1:key1:" + strings.Repeat("x", 64)), ErrWrongKey,
			`decrypt value at "/registry/secrets/demo/s": value encrypted with secretbox key "key1", but the encryption config's key of that name does not decrypt it: `},
		{"secretbox short", c, schema.GroupResource{Resource: "persistentvolumeclaims"}, []byte("k8s:enc:secretbox:v1:key1:x"), nil,
			`with secretbox key "key1": the stored data was shorter than the required size`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.c.Decrypt(ctx, tt.gr, etcdKey, tt.stored)
			if err == nil {
				t.Fatalf("Decrypt = %q, want an error", got)
			}
			t.Log(err)
			if got != nil {
				t.Errorf("Decrypt returned %q with the error, want nil", got)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.wantMsg)
			}
			for _, sentinel := range []error{ErrKeyNotFound, ErrNoConfig, ErrWrongKey} {
				if is := errors.Is(err, sentinel); is != (sentinel == tt.wantIs) {
					t.Errorf("errors.Is(err, %v) = %v", sentinel, is)
				}
			}
			var keyErr *KeyError
			if as := errors.As(err, &keyErr); as != (tt.wantIs != nil) {
				t.Errorf("errors.As(err, *KeyError) = %v, want %v", as, !as)
			}
			if keyErr != nil && keyErr.Resource != tt.gr {
				t.Errorf("KeyError.Resource = %v, want %v", keyErr.Resource, tt.gr)
			}
		})
	}
}

func TestEncryptErrors(t *testing.T) {
	ctx := context.Background()
	c := load(t, corpusConfig)
	for _, tt := range []struct {
		name string
		c    *Config
		gr   schema.GroupResource
	}{
		{"secrets", c, schema.GroupResource{Resource: "secrets"}},
		{"pods", c, schema.GroupResource{Resource: "pods"}},
		{"nil config", nil, schema.GroupResource{Resource: "pods"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.c.Encrypt(ctx, tt.gr, "/registry/x/y", []byte("k8s:enc:aescbc:v1:key1:already"))
			if err == nil {
				t.Fatalf("Encrypt of an encrypted value = %q, want an error", out)
			}
			if want := `encrypt value at "/registry/x/y": value already starts with "k8s:enc:"`; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
}

// panicTransformer panics on every call, like a transformer bug.
type panicTransformer struct{}

func (panicTransformer) TransformFromStorage(context.Context, []byte, value.Context) ([]byte, bool, error) {
	var b []byte
	return b[:1], false, nil
}

func (panicTransformer) TransformToStorage(context.Context, []byte, value.Context) ([]byte, error) {
	panic("unreachable")
}

func TestTransformerPanicRecovered(t *testing.T) {
	out, _, err := transformFromStorage(context.Background(), panicTransformer{}, "/registry/x", []byte("x"))
	if out != nil || !errors.Is(err, errTransformerPanic) {
		t.Errorf("transformFromStorage = %q, %v; want nil, errTransformerPanic", out, err)
	}
}
