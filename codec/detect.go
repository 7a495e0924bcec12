package codec

import (
	"bytes"
	"fmt"
)

// Format is a stored value's encoding.
type Format int

// The formats Detect recognises.
const (
	FormatUnknown Format = iota
	FormatProtobuf
	FormatJSON
	FormatCBOR
	FormatEncrypted
)

func (f Format) String() string {
	switch f {
	case FormatProtobuf:
		return "protobuf"
	case FormatJSON:
		return "json"
	case FormatCBOR:
		return "cbor"
	case FormatEncrypted:
		return "encrypted"
	default:
		return "unknown"
	}
}

var (
	// ProtobufMagic starts every protobuf-encoded stored object.
	ProtobufMagic = []byte("k8s\x00")
	// CBORMagic is the self-described CBOR tag (55799) the apiserver's CBOR
	// serializer writes first.
	CBORMagic = []byte{0xd9, 0xd9, 0xf7}
	// EncryptedMagic starts every value encrypted at rest.
	EncryptedMagic = []byte("k8s:enc:")
)

// Detect reports the format of a stored value. It looks at the first bytes
// only and never fails.
func Detect(value []byte) Format {
	switch {
	case bytes.HasPrefix(value, EncryptedMagic):
		return FormatEncrypted
	case bytes.HasPrefix(value, ProtobufMagic):
		return FormatProtobuf
	case bytes.HasPrefix(value, CBORMagic):
		return FormatCBOR
	}
	if t := bytes.TrimLeft(value, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return FormatJSON
	}
	return FormatUnknown
}

// EncryptionEnvelope is the clear-text prefix of a value encrypted at rest:
// "k8s:enc:<provider>:<version>:<key name>:".
type EncryptionEnvelope struct {
	// Provider is aescbc, aesgcm, secretbox or kms.
	Provider string
	// Version is "v1" (aescbc, aesgcm, secretbox, kms v1) or "v2" (kms v2).
	Version string
	// KeyName is the key's name in the EncryptionConfiguration (for kms,
	// the provider's name).
	KeyName string
	// HeaderLen is the length of the prefix, up to and including the colon
	// after the key name.
	HeaderLen int
}

func (e EncryptionEnvelope) String() string {
	if e.Provider == "kms" {
		return fmt.Sprintf("kms %s provider %q", e.Version, e.KeyName)
	}
	return fmt.Sprintf("%s key %q", e.Provider, e.KeyName)
}

// ParseEncryptionEnvelope parses the prefix of an encrypted value. It returns
// false when value does not start with a well-formed "k8s:enc:" prefix.
func ParseEncryptionEnvelope(value []byte) (EncryptionEnvelope, bool) {
	if !bytes.HasPrefix(value, EncryptedMagic) {
		return EncryptionEnvelope{}, false
	}
	rest := value[len(EncryptedMagic):]
	var parts [3]string
	off := len(EncryptedMagic)
	for i := range parts {
		j := bytes.IndexByte(rest, ':')
		if j <= 0 || j > 256 {
			return EncryptionEnvelope{}, false
		}
		parts[i] = string(rest[:j])
		rest = rest[j+1:]
		off += j + 1
	}
	if parts[1] != "v1" && parts[1] != "v2" {
		return EncryptionEnvelope{}, false
	}
	return EncryptionEnvelope{Provider: parts[0], Version: parts[1], KeyName: parts[2], HeaderLen: off}, true
}
