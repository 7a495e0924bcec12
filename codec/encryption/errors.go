package encryption

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/etcdpvc/etcdpvc/codec"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// ErrKeyNotFound means a value is encrypted with a provider or key that
	// the encryption config does not hold for the value's resource. The
	// error returned is a *KeyError naming the provider and key.
	ErrKeyNotFound = errors.New("encryption key not found in the encryption config")

	// ErrNoConfig means a value is encrypted but no encryption config was
	// given (a nil *Config). The error returned is a *KeyError naming the
	// provider and key.
	ErrNoConfig = errors.New("no encryption config given")

	// ErrWrongKey means the encryption config holds a key of the name a
	// value's header gives, for its provider (aescbc, aesgcm, secretbox),
	// but that key does not decrypt the value: the key of that name was
	// rotated (new key material under the old name), the config is
	// another cluster's, or the value is damaged or was copied from
	// another etcd key (the key is authenticated data). The error
	// returned is a *KeyError naming the provider and key, with the
	// cipher's words as its Cause.
	ErrWrongKey = errors.New("the encryption key of that name does not decrypt the value")

	// ErrPluginFailed means a KMS plugin did not decrypt a value: it did
	// not answer, or answered with an error. That says nothing of the
	// value (the plugin may be down on this node only), so a caller must
	// not take the value for one the apiserver cannot read.
	ErrPluginFailed = errors.New("the KMS plugin did not decrypt the value")

	// ErrNoIdentity means a value is stored in the clear under a resource
	// whose providers in the encryption config include no identity: the
	// apiserver's transformer finds no matching prefix for it, so it
	// cannot read it (every LIST of the resource fails), nor rewrite it
	// through the API. Deleting it, or adding identity to the resource's
	// providers (last), makes the LIST succeed again.
	ErrNoIdentity = errors.New("stored in the clear, and the encryption config lists no identity provider for its resource")
)

// KeyError reports an encrypted value whose provider or key is not
// available, or does not decrypt it. It matches ErrKeyNotFound,
// ErrNoConfig or ErrWrongKey with errors.Is.
type KeyError struct {
	// Encryption is the value's parsed header. It is the zero value when
	// the header did not parse (only with ErrNoConfig: with a config, such
	// a value is a plain decryption error).
	Encryption codec.EncryptionHeader
	// Header holds the first bytes of the value when its header did not
	// parse.
	Header string
	// Resource is the resource the value was read for.
	Resource schema.GroupResource
	// Err is ErrKeyNotFound, ErrNoConfig or ErrWrongKey.
	Err error
	// Cause is, with ErrWrongKey, what the cipher said.
	Cause error
}

// Error returns, for example, `value encrypted with aescbc key "key2",
// which the encryption config does not hold for secrets`.
func (e *KeyError) Error() string {
	what := "value encrypted with " + e.Encryption.String()
	if e.Encryption.Provider == "" {
		what = "encrypted value with unparsable header " + strconv.Quote(e.Header)
	}
	switch {
	case errors.Is(e.Err, ErrNoConfig):
		return what + ", but no encryption config was given"
	case errors.Is(e.Err, ErrWrongKey):
		return fmt.Sprintf("%s, but the encryption config's key of that name does not decrypt it: a key rotated under the same name, another cluster's config, or a damaged value (%v)", what, e.Cause)
	}
	return fmt.Sprintf("%s, which the encryption config does not hold for %s", what, e.Resource.String())
}

// Unwrap returns ErrKeyNotFound, ErrNoConfig or ErrWrongKey.
func (e *KeyError) Unwrap() error { return e.Err }

// headerExcerpt returns the start of stored for messages about a header
// that did not parse.
func headerExcerpt(stored []byte) string {
	const n = 48
	if len(stored) > n {
		return string(stored[:n]) + "..."
	}
	return string(stored)
}
