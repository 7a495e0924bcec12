package codec

import (
	"errors"
	"fmt"
)

// Sentinel errors callers branch on; errors returned by this package wrap
// them.
var (
	// ErrEncrypted means the value is encrypted at rest and no decryption
	// was done. The error is an *EncryptedError naming provider and key.
	ErrEncrypted = errors.New("value is encrypted at rest")
	// ErrEmpty means there was no input at all.
	ErrEmpty = errors.New("empty value")
	// ErrMalformed means the bytes claim a format but do not parse as it.
	ErrMalformed = errors.New("malformed value")
	// ErrNotObject means the bytes are not a stored Kubernetes object.
	ErrNotObject = errors.New("not a stored Kubernetes object")
	// ErrUnsupported means a recognised format that this build does not
	// decode (CBOR).
	ErrUnsupported = errors.New("unsupported storage format")
	// ErrLossy means re-encoding the typed object would not reproduce the
	// stored bytes (for example fields unknown to this build), so a typed
	// edit would lose data.
	ErrLossy = errors.New("re-encoding would lose data")
)

// EncryptedError reports an encrypted value. It matches ErrEncrypted.
type EncryptedError struct {
	Header EncryptionHeader
}

func (e *EncryptedError) Error() string {
	return fmt.Sprintf("value is encrypted at rest with %s", e.Header)
}

// Is reports whether target is ErrEncrypted.
func (e *EncryptedError) Is(target error) bool { return target == ErrEncrypted }

// Hint tells the user how to read the value.
func (e *EncryptedError) Hint() string {
	return fmt.Sprintf("pass --encryption-config with the EncryptionConfiguration that holds %s (or --kubeadm on a control-plane node)", e.Header)
}

// malformedError is a message that matches ErrMalformed, and the error it
// was made from (a parser's), if any.
type malformedError struct {
	msg   string
	cause error
}

func (e *malformedError) Error() string        { return e.msg }
func (e *malformedError) Is(target error) bool { return target == ErrMalformed }

// Unwrap returns the parser's error the message quotes (nil: none), so
// that errors.Is finds, say, io.ErrUnexpectedEOF in a truncated value's.
func (e *malformedError) Unwrap() error { return e.cause }

// malformed returns an error matching ErrMalformed, context first; the
// first error among args is kept as its cause.
func malformed(format string, args ...any) error {
	e := &malformedError{msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.cause = err
			break
		}
	}
	return e
}
