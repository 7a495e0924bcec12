package encryption

import (
	"bytes"
	"fmt"
)

const (
	// encPrefix starts every value that kube-apiserver stored encrypted.
	// The apiserver's identity transformer refuses to read values starting
	// with it.
	encPrefix = "k8s:enc:"

	// maxHeaderField bounds each header field ParsePrefix accepts, so that
	// garbage after the prefix is not mistaken for a huge key name.
	maxHeaderField = 512
)

// Envelope is the parsed header of an encrypted value:
// k8s:enc:<Provider>:<Version>:<KeyName>:.
type Envelope struct {
	// Provider is the provider name, e.g. "aescbc", "aesgcm", "secretbox"
	// or "kms".
	Provider string
	// Version is the format version, "v1" for the local providers and
	// KMS v1, "v2" for KMS v2.
	Version string
	// KeyName is the key's name for aescbc, aesgcm and secretbox, and the
	// KMS provider's name for KMS. It is read up to the next ':'; a key
	// name that itself contains ':' (the apiserver allows that for local
	// keys) is cut short here, but Config still matches it exactly.
	KeyName string
	// HeaderLen is the length of the header, including its final ':';
	// stored[HeaderLen:] is the provider's ciphertext.
	HeaderLen int
}

// String returns the envelope in the words used by error messages, e.g.
// `aescbc key "key1"` or `kms v2 provider "testkms"`.
func (e Envelope) String() string {
	if e.Provider == "kms" {
		return fmt.Sprintf("kms %s provider %q", e.Version, e.KeyName)
	}
	return fmt.Sprintf("%s key %q", e.Provider, e.KeyName)
}

// ParsePrefix parses the k8s:enc: header of a stored value without
// decrypting it. It reports false when stored does not start with
// "k8s:enc:" or when the header after it is not three non-empty,
// ':'-terminated fields of at most 512 bytes each.
func ParsePrefix(stored []byte) (Envelope, bool) {
	if !bytes.HasPrefix(stored, []byte(encPrefix)) {
		return Envelope{}, false
	}
	pos := len(encPrefix)
	var fields [3]string
	for i := range fields {
		field := stored[pos:]
		if len(field) > maxHeaderField+1 {
			field = field[:maxHeaderField+1]
		}
		n := bytes.IndexByte(field, ':')
		if n <= 0 {
			return Envelope{}, false
		}
		fields[i] = string(stored[pos : pos+n])
		pos += n + 1
	}
	return Envelope{
		Provider:  fields[0],
		Version:   fields[1],
		KeyName:   fields[2],
		HeaderLen: pos,
	}, true
}

// isEncrypted reports whether stored carries the k8s:enc: prefix, parsable
// or not.
func isEncrypted(stored []byte) bool {
	return bytes.HasPrefix(stored, []byte(encPrefix))
}
