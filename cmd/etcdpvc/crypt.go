package main

import (
	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/flows"
)

// decryptValue returns the plaintext of a stored value read from a file or
// pipe (flows.DecryptValue), --kubeadm applied when it is encrypted.
func decryptValue(e *env, g *globalOptions, key string, value []byte) ([]byte, error) {
	if codec.Detect(value) != codec.FormatEncrypted {
		return value, nil
	}
	if err := applyKubeadm(g); err != nil {
		return nil, err
	}
	return flows.DecryptValue(e.ctx, g.Options, key, value)
}

// encryptValue encrypts plaintext for key as the apiserver would
// (flows.EncryptValue), --kubeadm applied.
func encryptValue(e *env, g *globalOptions, key string, plain []byte) ([]byte, error) {
	if err := applyKubeadm(g); err != nil {
		return nil, err
	}
	return flows.EncryptValue(e.ctx, g.Options, key, plain)
}
