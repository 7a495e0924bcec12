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

// EncryptionHeader is the clear-text header of a value encrypted at
// rest: "k8s:enc:<provider>:<version>:<key name>:".
type EncryptionHeader struct {
	// Provider is aescbc, aesgcm, secretbox or kms.
	Provider string
	// Version is "v1" (aescbc, aesgcm, secretbox, kms v1) or "v2" (kms v2).
	Version string
	// KeyName is the key's name in the EncryptionConfiguration (for kms,
	// the provider's name). It is read up to the next ':'; a local key name
	// that itself contains ':' (the apiserver allows it) is cut short here,
	// and package encryption matches it exactly.
	KeyName string
	// HeaderLen is the length of the header, up to and including the colon
	// after the key name: value[HeaderLen:] is the provider's ciphertext.
	HeaderLen int
}

// String names the header the way error messages do: `aescbc key "key1"`
// or `kms v2 provider "testkms"`.
func (e EncryptionHeader) String() string {
	if e.Provider == "kms" {
		return fmt.Sprintf("kms %s provider %q", e.Version, e.KeyName)
	}
	return fmt.Sprintf("%s key %q", e.Provider, e.KeyName)
}

// maxHeaderField bounds each header field, so that garbage after
// "k8s:enc:" is not mistaken for a huge key name.
const maxHeaderField = 512

// ParseEncryptionHeader parses the header of an encrypted value without
// decrypting it. It returns false when value does not start with
// "k8s:enc:" followed by three non-empty, ':'-terminated fields of at most
// 512 bytes each.
func ParseEncryptionHeader(value []byte) (EncryptionHeader, bool) {
	if !bytes.HasPrefix(value, EncryptedMagic) {
		return EncryptionHeader{}, false
	}
	pos := len(EncryptedMagic)
	var fields [3]string
	for i := range fields {
		field := value[pos:]
		if len(field) > maxHeaderField+1 {
			field = field[:maxHeaderField+1]
		}
		n := bytes.IndexByte(field, ':')
		if n <= 0 {
			return EncryptionHeader{}, false
		}
		fields[i] = string(value[pos : pos+n])
		pos += n + 1
	}
	return EncryptionHeader{Provider: fields[0], Version: fields[1], KeyName: fields[2], HeaderLen: pos}, true
}
