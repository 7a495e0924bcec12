package kubevalue

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// DefaultPrefix is kube-apiserver's default --etcd-prefix.
const DefaultPrefix = "/registry"

// Codec reads and seals stored values: it decrypts values encrypted at rest
// and encrypts new values with the resource's first provider, as the
// apiserver does. The zero Codec reads a cluster without encryption at
// rest under the default prefix, and redacts Secret values in diffs.
type Codec struct {
	// Enc is the cluster's EncryptionConfiguration; nil means none: values
	// are read and written in the clear and an encrypted value is an error
	// wrapping codec.ErrEncrypted.
	Enc *encryption.Config
	// Prefix is the apiserver's --etcd-prefix (default "/registry"). It is
	// needed to tell a key's resource, which picks its encryption provider,
	// and to find related objects (owners, namespaces, volumes).
	Prefix string
	// ShowSecrets shows the values of a Secret's data and stringData in
	// diffs; by default they are redacted.
	ShowSecrets bool
	// HideManagedFields leaves metadata.managedFields and the annotation
	// kubectl.kubernetes.io/last-applied-configuration out of diffs, as
	// get leaves managedFields out (the write paths set it unless
	// --show-managed-fields); the header says when they changed.
	HideManagedFields bool
}

// Current is a key as read: its revision, its plaintext and the object
// decoded from it.
type Current struct {
	// KV is the key as stored: value (ciphertext when encrypted), mod and
	// create revision, version and lease.
	KV store.KeyValue
	// GR is the key's resource, which selects its encryption provider (zero
	// when the key names no known resource).
	GR schema.GroupResource
	// Plain is the stored value decrypted (KV.Value when not encrypted).
	Plain []byte
	// Obj is Plain decoded.
	Obj *codec.Object
	// Encrypted is the envelope of an encrypted value; nil when the value
	// is stored in the clear.
	Encrypted *codec.EncryptionHeader
	// Stale is true when the value is not stored the way the resource's
	// first provider would store it, so a write re-encrypts it differently.
	Stale bool
}

// StorePrefix is the --etcd-prefix the keys are under (Prefix, or the
// default).
func (c Codec) StorePrefix() string {
	if c.Prefix == "" {
		return DefaultPrefix
	}
	return c.Prefix
}

// GroupResource returns the resource of key, and whether the key names one.
func (c Codec) GroupResource(key string) (schema.GroupResource, bool) {
	r, _, _, ok := resource.ParseKey(c.StorePrefix(), key)
	if !ok {
		return schema.GroupResource{}, false
	}
	return r.GroupResource(), true
}

// Load reads key at revision rev (0: the latest, with a linearizable read),
// decrypts it when it is encrypted at rest, and decodes it.
func (c Codec) Load(ctx context.Context, r store.Reader, key string, rev int64) (*Current, error) {
	kv, err := r.Get(ctx, key, rev)
	if errors.Is(err, store.ErrNotFound) {
		return nil, NotFound(ctx, r, c.StorePrefix(), key, rev, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return c.open(ctx, *kv)
}

// Open decrypts and decodes a key-value already read, for example one
// revision of a key's history.
func (c Codec) Open(ctx context.Context, kv store.KeyValue) (*Current, error) {
	return c.open(ctx, kv)
}

// open decrypts and decodes a stored key-value.
func (c Codec) open(ctx context.Context, kv store.KeyValue) (*Current, error) {
	cur := &Current{KV: kv}
	gr, known := c.GroupResource(kv.Key)
	cur.GR = gr
	plain, env, stale, err := c.Decrypt(ctx, gr, known, kv.Key, kv.Value)
	if err != nil {
		return nil, err
	}
	cur.Plain, cur.Encrypted, cur.Stale = plain, env, stale
	// A Secret's bytes are never quoted in an error (unless ShowSecrets).
	res, _, _, _ := resource.ParseKey(c.StorePrefix(), kv.Key)
	obj, err := codec.DecodeAs(kv.Key, plain, res.StoredKind(), c.ShowSecrets)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", kv.Key, err)
	}
	cur.Obj = obj
	return cur, nil
}

// Check decrypts kv's value when it is encrypted at rest and checks that
// the apiserver reads it (codec.CheckStored, then resource.CheckKind),
// without building the decoded object: the stored apiVersion and kind, or
// why the apiserver cannot read the value. A key that names no object but
// lies under a resource's storage path (resource.BadKey) is judged as a
// key of that resource: the apiserver's LIST reads it so.
func (c Codec) Check(ctx context.Context, kv store.KeyValue) (schema.GroupVersionKind, error) {
	res, _, _, ok := resource.ParseKey(c.StorePrefix(), kv.Key)
	if !ok {
		res, _, ok = resource.BadKey(c.StorePrefix(), kv.Key)
	}
	gr := res.GroupResource()
	plain, _, _, err := c.Decrypt(ctx, gr, ok, kv.Key, kv.Value)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	sum, err := codec.CheckStored(plain, res.StoredKind(), codec.IsSecretKey(kv.Key) && !c.ShowSecrets)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("decode %s: %w", kv.Key, err)
	}
	gvk := schema.FromAPIVersionAndKind(sum.APIVersion, sum.Kind)
	if ok {
		if err := resource.CheckKind(res, sum.APIVersion, sum.Kind); err != nil {
			return gvk, err
		}
	}
	return gvk, nil
}

// Decrypt returns the plaintext of a value stored at key (of resource gr,
// when known), its encryption header and whether it is stored otherwise
// than the resource's first provider would store it.
func (c Codec) Decrypt(ctx context.Context, gr schema.GroupResource, known bool, key string, stored []byte) (plain []byte, env *codec.EncryptionHeader, stale bool, err error) {
	if codec.Detect(stored) != codec.FormatEncrypted {
		if c.Enc == nil {
			return stored, nil, false, nil
		}
		plain, stale, err := c.Enc.DecryptStale(ctx, gr, key, stored)
		if err != nil {
			return nil, nil, false, fmt.Errorf("read %s: %w", key, err)
		}
		return plain, nil, stale, nil
	}
	e, ok := codec.ParseEncryptionHeader(stored)
	if ok {
		env = &e
	}
	if c.Enc == nil {
		if !ok {
			_, err := codec.Decode(stored)
			return nil, nil, false, fmt.Errorf("read %s: %w", key, err)
		}
		return nil, env, false, fmt.Errorf("read %s: %w", key, &codec.EncryptedError{Header: e})
	}
	if !known {
		return nil, env, false, fmt.Errorf("read %s: the value is encrypted at rest but the key names no resource under prefix %q, so its encryption provider is unknown", key, c.StorePrefix())
	}
	plain, stale, err = c.Enc.DecryptStale(ctx, gr, key, stored)
	if err != nil {
		return nil, env, false, fmt.Errorf("read %s: %w", key, err)
	}
	return plain, env, stale, nil
}

// Seal returns what the apiserver would store for plain at key: plain
// encrypted with the first provider and key the encryption config lists for
// gr, with the etcd key as authenticated data, or plain itself when that
// provider is identity or there is no encryption config.
func (c Codec) Seal(ctx context.Context, gr schema.GroupResource, key string, plain []byte) ([]byte, error) {
	out, err := c.Enc.Encrypt(ctx, gr, key, plain)
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", key, err)
	}
	return out, nil
}
