// Package encryption reads and writes Kubernetes values that are encrypted
// at rest, exactly as kube-apiserver does, by running k8s.io/apiserver's own
// EncryptionConfiguration loader and value transformers.
//
// # Stored format
//
// kube-apiserver stores an encrypted value as a prefix followed by the
// provider's ciphertext:
//
//	k8s:enc:<provider>:v1:<keyname>:<ciphertext>       aescbc, aesgcm, secretbox
//	k8s:enc:kms:v1:<providername>:<ciphertext>         KMS v1 (deprecated)
//	k8s:enc:kms:v2:<providername>:<EncryptedObject>    KMS v2
//
// For aescbc, aesgcm and secretbox the ciphertext starts with the random
// IV or nonce. For KMS v2 it is a protobuf EncryptedObject that carries the
// plugin's key ID, the DEK (or DEK seed) encrypted by the plugin, and the
// data encrypted with AES-GCM under that DEK. A value without the k8s:enc:
// prefix is stored in the clear (the identity provider): a protobuf
// envelope starting with "k8s\x00", or JSON.
//
// # Authenticated data
//
// The apiserver's etcd3 store passes the full etcd key of the value (for
// example "/registry/secrets/demo/web-secret") to every transformer as
// authenticated data. The AEAD providers, aesgcm and KMS v2, bind the
// ciphertext to it, so such a value only decrypts under the key it was
// written to: a value copied to another key fails to decrypt. aescbc and
// secretbox ignore the authenticated data in k8s.io/apiserver v0.37, so
// their values decrypt under any key. Callers must always pass the value's
// real etcd key, both when decrypting and when encrypting.
//
// # Provider order
//
// For each resource the configuration lists providers in order. The first
// provider encrypts every write; every listed provider (and every key of
// it) can decrypt. A resource that no rule matches, exactly or through the
// "*.<group>" and "*.*" wildcards, is stored unencrypted. A value read
// through any but the first provider and key is stale: the apiserver
// rewrites it with the first provider on its next write.
package encryption
