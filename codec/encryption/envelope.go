package encryption

import (
	"bytes"

	"github.com/etcdpvc/etcdpvc/codec"
)

const (
	// encPrefix starts every value that kube-apiserver stored encrypted.
	// The apiserver's identity transformer refuses to read values starting
	// with it.
	encPrefix = "k8s:enc:"
)

// Envelope is the parsed header of an encrypted value:
// k8s:enc:<Provider>:<Version>:<KeyName>:. Package codec owns the format.
type Envelope = codec.EncryptionEnvelope

// ParsePrefix parses the k8s:enc: header of a stored value without
// decrypting it (codec.ParseEncryptionEnvelope).
func ParsePrefix(stored []byte) (Envelope, bool) {
	return codec.ParseEncryptionEnvelope(stored)
}

// isEncrypted reports whether stored carries the k8s:enc: prefix, parsable
// or not.
func isEncrypted(stored []byte) bool {
	return bytes.HasPrefix(stored, []byte(encPrefix))
}
