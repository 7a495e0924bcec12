package encryption

import (
	"bytes"
)

const (
	// encPrefix starts every value that kube-apiserver stored encrypted.
	// The apiserver's identity transformer refuses to read values starting
	// with it.
	encPrefix = "k8s:enc:"
)

// isEncrypted reports whether stored carries the k8s:enc: prefix, parsable
// or not.
func isEncrypted(stored []byte) bool {
	return bytes.HasPrefix(stored, []byte(encPrefix))
}
