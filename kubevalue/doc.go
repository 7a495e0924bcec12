// Package kubevalue reads and seals the values kube-apiserver stores in etcd:
// a key's value decrypted with the cluster's EncryptionConfiguration (the
// apiserver's own transformers, codec/encryption) and decoded (codec), as
// a Current; a new value encrypted with the resource's first provider, as
// the apiserver would write it (Seal); a YAML diff of two objects with a
// Secret's values redacted (RenderDiff); and an object not found named as
// kubectl names it (NotFound).
//
// It is the read side every package shares: inspect's reports, verify's
// checks and surgery's plans all load values through a Codec. It writes
// nothing; package surgery holds the edits, the plans and the write path.
package kubevalue
