// Package codec reads and writes the values kube-apiserver stores in etcd.
//
// A stored value is one of:
//
//   - A protobuf envelope, used for built-in kinds: the 4-byte magic
//     "k8s\x00" followed by a runtime.Unknown message:
//
//     1: typeMeta        (message: 1: apiVersion, 2: kind)
//     2: raw             (bytes: the object's own protobuf message)
//     3: contentEncoding (string, stored empty)
//     4: contentType     (string, stored empty)
//
//     In every top-level Kubernetes type, field 1 of the object message is
//     metadata (ObjectMeta), so the metadata of a kind this build does not
//     know can still be read and edited at the wire level.
//
//   - JSON, used for custom resources, CustomResourceDefinitions and
//     APIServices: one compact JSON document followed by "\n".
//
//   - CBOR (self-described, starting d9 d9 f7), written by apiservers with
//     CBOR storage enabled. It is detected and reported, not decoded.
//
//   - An encrypted value: "k8s:enc:<provider>:v1:<key name>:" followed by
//     ciphertext (KMS v2: "k8s:enc:kms:v2:<provider name>:"). Decryption is
//     the business of package codec/encryption; codec reports ErrEncrypted.
//
// Decoding goes through apimachinery's serializers and a scheme holding every
// client-go type plus apiextensions and apiregistration. Edits that must not
// lose data (fields unknown to this build) are made at the wire level by
// EditMeta, which rewrites only the ObjectMeta submessage and the lengths
// enclosing it, or at the JSON level with the original key order and literals
// kept.
//
// JSON is written sorted where a record must read the same whatever the
// value's own member order (dump): SortedEncoder writes a typed object
// with every object's members sorted, in one pass, or declines, and
// CanonicalJSON rewrites what encoding/json wrote into the bytes a
// decode into maps and an encode give. Both follow encoding/json's rules
// byte for byte; what they cannot reproduce exactly they decline, and the
// caller takes the long way. They are hand-written for speed: SortedEncoder
// says what the library engines measured.
//
// Package codec imports neither etcd nor the CLI; a test asserts it.
package codec
