package main

import (
	"fmt"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/connect"
	"github.com/etcdpvc/etcdpvc/resource"
)

// loadEncryption loads the encryption config the global flags name (after
// --kubeadm), or returns nil when there is none.
func loadEncryption(e *env, g *globalOptions) (*encryption.Config, error) {
	if err := applyKubeadm(g); err != nil {
		return nil, err
	}
	return connect.LoadEncryption(e.ctx, g.connectOptions(nil))
}

// keyResource returns the resource a key belongs to, which selects the
// encryption provider.
func keyResource(g *globalOptions, key string) (resource.Resource, error) {
	if key == "" {
		return resource.Resource{}, usagef("an encrypted value needs its etcd key (--etcd-key): it selects the provider and is authenticated data")
	}
	r, _, _, ok := resource.ParseKey(g.Prefix, key)
	if !ok {
		return resource.Resource{}, usagef("--etcd-key %q is not an object key under the prefix %q", key, g.Prefix)
	}
	return r, nil
}

// decryptValue returns the plaintext of a stored value read from a file or
// pipe, decrypting it with --encryption-config when it is encrypted.
func decryptValue(e *env, g *globalOptions, key string, value []byte) ([]byte, error) {
	if codec.Detect(value) != codec.FormatEncrypted {
		return value, nil
	}
	enc, err := loadEncryption(e, g)
	if err != nil {
		return nil, err
	}
	if enc == nil {
		_, err := codec.Decode(value)
		return nil, err
	}
	defer enc.Close()
	r, err := keyResource(g, key)
	if err != nil {
		return nil, err
	}
	plain, err := enc.Decrypt(e.ctx, r.GroupResource(), key, value)
	if err != nil {
		return nil, fmt.Errorf("decrypt %s: %w", key, err)
	}
	return plain, nil
}

// encryptValue encrypts plaintext for key with the first provider the
// encryption config lists for its resource, as the apiserver would. Without
// --encryption-config the plaintext is returned.
func encryptValue(e *env, g *globalOptions, key string, plain []byte) ([]byte, error) {
	enc, err := loadEncryption(e, g)
	if err != nil || enc == nil {
		return plain, err
	}
	defer enc.Close()
	r, err := keyResource(g, key)
	if err != nil {
		return nil, err
	}
	out, err := enc.Encrypt(e.ctx, r.GroupResource(), key, plain)
	if err != nil {
		return nil, fmt.Errorf("encrypt %s: %w", key, err)
	}
	return out, nil
}
