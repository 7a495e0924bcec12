package main

import (
	"github.com/etcdpvc/etcdpvc/codec"
)

// decryptValue returns the plaintext of a stored value. Until an encryption
// config is loaded, an encrypted value is reported by the codec.
func decryptValue(e *env, g *globalOptions, key string, value []byte) ([]byte, error) {
	return value, nil
}

// encryptValue encrypts plaintext for key with the first provider the
// encryption config lists for its resource.
func encryptValue(e *env, g *globalOptions, key string, plain []byte) ([]byte, error) {
	_ = codec.Detect
	return plain, nil
}
