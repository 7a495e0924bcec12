package encryption

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FuzzDecrypt feeds arbitrary values, etcd keys and resources to Decrypt
// under the corpus config and without a config. It must never panic, and
// must return either plaintext or an error, never both.
func FuzzDecrypt(f *testing.F) {
	for _, v := range loadCorpus(f) {
		f.Add(v.gr.Resource, v.etcdKey, v.stored)
		f.Add(v.gr.Resource, v.etcdKey, v.stored[:len(v.stored)/2])
		if env, ok := codec.ParseEncryptionHeader(v.stored); ok {
			f.Add(v.gr.Resource, v.etcdKey, v.stored[:env.HeaderLen])
			f.Add(v.gr.Resource, v.etcdKey, v.stored[:env.HeaderLen+1])
		}
	}
	f.Add("secrets", "/registry/secrets/a/b", []byte("k8s:enc:"))
	f.Add("secrets", "/registry/secrets/a/b", []byte("k8s:enc:aescbc:v1:key1"))
	f.Add("deployments.apps", "/registry/deployments/a/b", []byte("k8s:enc:kms:v2:x:\x0a\x00"))
	f.Add("widgets.e2e.example.com", "/registry/e2e.example.com/widgets/a/b", []byte(`{"kind":"Widget"}`))

	c := load(f, corpusConfig)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, resource, etcdKey string, stored []byte) {
		gr := schema.ParseGroupResource(resource)
		codec.ParseEncryptionHeader(stored)
		for _, c := range []*Config{c, nil} {
			plain, err := c.Decrypt(ctx, gr, etcdKey, stored)
			if errors.Is(err, errTransformerPanic) {
				t.Fatalf("Decrypt recovered a transformer panic: %v", err)
			}
			if err != nil && plain != nil {
				t.Fatalf("Decrypt returned both %q and %v", plain, err)
			}
			if err == nil && !isEncrypted(stored) && !bytes.Equal(plain, stored) {
				t.Fatalf("Decrypt changed an unencrypted value")
			}
		}
	})
}
