package encryption

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
)

// TestDecryptCorpus decrypts every value a real kube-apiserver v1.37.2
// stored with the config it used.
func TestDecryptCorpus(t *testing.T) {
	c := load(t, corpusConfig)
	ctx := context.Background()
	for _, v := range loadCorpus(t) {
		t.Run(v.file, func(t *testing.T) {
			env, encrypted := codec.ParseEncryptionHeader(v.stored)
			if want := v.provider != "identity"; encrypted != want {
				t.Fatalf("ParsePrefix encrypted = %v, want %v", encrypted, want)
			}
			if encrypted {
				want := codec.EncryptionHeader{Provider: v.provider, Version: "v1", KeyName: "key1", HeaderLen: len("k8s:enc::v1:key1:") + len(v.provider)}
				if env != want {
					t.Errorf("ParsePrefix = %+v, want %+v", env, want)
				}
			}

			plain, stale, err := c.DecryptStale(ctx, v.gr, v.etcdKey, v.stored)
			if err != nil {
				t.Fatalf("Decrypt: %v", err)
			}
			if stale {
				t.Errorf("stale = true, want false: the value was written by the first provider")
			}
			if !bytes.HasPrefix(plain, []byte("k8s\x00")) {
				t.Errorf("plaintext starts with %q, want the protobuf envelope magic k8s\\x00", plain[:min(len(plain), 8)])
			}
			if !bytes.Contains(plain, []byte(v.name)) {
				t.Errorf("plaintext does not contain the object name %q", v.name)
			}
			if encrypted && bytes.Contains(v.stored, []byte(v.name)) {
				t.Errorf("stored value contains the object name %q in the clear", v.name)
			}

			// Without the config, encrypted values fail with ErrNoConfig
			// and unencrypted ones pass through.
			var nilConfig *Config
			got, err := nilConfig.Decrypt(ctx, v.gr, v.etcdKey, v.stored)
			switch {
			case !encrypted && (err != nil || !bytes.Equal(got, v.stored)):
				t.Errorf("nil Config: Decrypt = %q, %v; want the value unchanged", got[:min(len(got), 8)], err)
			case encrypted && !errors.Is(err, ErrNoConfig):
				t.Errorf("nil Config: Decrypt error = %v, want ErrNoConfig", err)
			case encrypted && (!strings.Contains(err.Error(), v.provider) || !strings.Contains(err.Error(), `"key1"`)):
				t.Errorf("nil Config: error %q does not name provider %s and key1", err, v.provider)
			}
		})
	}
}

// TestAuthenticatedData checks which providers bind a value to its etcd
// key. The apiserver passes the full etcd key as authenticated data to
// every transformer, but in k8s.io/apiserver v0.37 only the AEAD
// transformers use it: aesgcm binds the value to its key (and so does
// KMS v2, see TestKMSv2); aescbc and secretbox ignore it.
func TestAuthenticatedData(t *testing.T) {
	c := load(t, corpusConfig)
	ctx := context.Background()
	bindsKey := map[string]bool{"aesgcm": true, "aescbc": false, "secretbox": false}
	corpus := loadCorpus(t)
	for _, v := range corpus {
		if v.provider == "identity" {
			continue
		}
		// Another real key of the same resource, and the same key moved.
		others := []string{v.etcdKey + "-moved", strings.Replace(v.etcdKey, "/demo/", "/default/", 1)}
		for _, w := range corpus {
			if w.gr == v.gr && w.etcdKey != v.etcdKey {
				others = append(others, w.etcdKey)
				break
			}
		}
		for _, other := range others {
			t.Run(v.file+"@"+other, func(t *testing.T) {
				plain, err := c.Decrypt(ctx, v.gr, other, v.stored)
				if bindsKey[v.provider] {
					if err == nil {
						t.Fatalf("Decrypt under %s succeeded, want an authentication failure", other)
					}
					if errors.Is(err, ErrKeyNotFound) {
						t.Errorf("error %v is ErrKeyNotFound; the key is in the config", err)
					}
					if !strings.Contains(err.Error(), other) {
						t.Errorf("error %q does not name the etcd key", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Decrypt under %s: %v (%s does not authenticate the etcd key)", other, err, v.provider)
				}
				if !bytes.Contains(plain, []byte(v.name)) {
					t.Errorf("plaintext does not contain %q", v.name)
				}
			})
		}
	}
}
