package inspect

import (
	"context"
	"errors"
	"fmt"
	"github.com/etcdpvc/etcdpvc/clock"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// Decrypter decrypts values encrypted at rest; *encryption.Config is one.
type Decrypter interface {
	Decrypt(ctx context.Context, gr schema.GroupResource, etcdKey string, stored []byte) ([]byte, error)
}

// ListItem is one listed key: its place and revisions, and either the
// summary of its metadata or why its value was not read.
type ListItem struct {
	Resource       resource.Resource
	Namespace      string
	Name           string
	Key            string
	ModRevision    int64
	CreateRevision int64
	Version        int64
	Lease          int64
	// DeleteRevision is the revision of the deletion that ended the key
	// (listings of deleted keys; -1: a deletion whose revision is not
	// established), else 0.
	DeleteRevision int64
	// RecreateRevision, in a listing of deleted keys, is set for an
	// incarnation the deletion ended and that another followed (the key
	// exists again, or was deleted again, as another object: a new uid):
	// the create revision of the one after it, -1 when that is not
	// established. 0 otherwise.
	RecreateRevision int64
	// DeleteTime, in a listing of deleted keys read with a clock, is when
	// the deletion happened (nil: not asked for).
	DeleteTime *clock.Interval
	// Summary is the value's metadata; nil when the value was not read.
	Summary *codec.Summary
	// Unread says why the value was not read ("" when it was), as a
	// listing's STATUS shows it: "Encrypted (secretbox/key1): no key",
	// "Undecodable: <reason>".
	Unread string
	// UnreadEncrypted is true when the value was not read because it is
	// encrypted and could not be decrypted.
	UnreadEncrypted bool
	// DecryptErr is why an encrypted value could not be decrypted with the
	// encryption config given (nil: it was, or no config was given).
	DecryptErr error
	// Problem is, for a value that was decrypted (or stored in the clear)
	// but not decoded, why in a few words: codec.Problem's, or "kind
	// ConfigMap under a secret key". "" otherwise.
	Problem string
	// Encryption is how the value is stored at rest (StoredUnder):
	// "identity", "aescbc/key1", "kms/NAME".
	Encryption string
	// BadKey is true for a key under the resource's storage path that
	// names no single object (resource.BadKey; Name is then the whole
	// key): the apiserver's LIST reads its value, but no GET, update or
	// delete through the API reaches it.
	BadKey bool
}

// Read fills a ListItem from kv, a key of resource r. It decrypts with enc
// (nil: no encryption config) and summarizes the metadata. It returns the
// plaintext (nil when unread), which is valid as long as kv.Value. A value
// that cannot be decrypted or decoded is not an error: the item says why.
// Read keeps nothing of kv and touches nothing shared, so that keys can be
// read on several cores.
func Read(ctx context.Context, enc Decrypter, r resource.Resource, ns, name string, kv *store.KeyValue, deleteRev int64) (ListItem, []byte) {
	it, plain, _ := read(ctx, enc, r, ns, name, kv, deleteRev)
	return it, plain
}

// read is Read, and also returns the typed object the value's check
// decoded (codec.CheckStoredTyped; nil when there is none), for a caller
// that decodes the value further.
func read(ctx context.Context, enc Decrypter, r resource.Resource, ns, name string, kv *store.KeyValue, deleteRev int64) (ListItem, []byte, runtime.Object) {
	it := ListItem{Resource: r, Namespace: ns, Name: name, Key: kv.Key, ModRevision: kv.ModRevision,
		CreateRevision: kv.CreateRevision, Version: kv.Version, Lease: kv.Lease, DeleteRevision: deleteRev,
		Encryption: StoredUnder(kv.Value)}
	plain := kv.Value
	if codec.Detect(plain) == codec.FormatEncrypted {
		env, _ := codec.ParseEncryptionHeader(plain)
		if enc == nil {
			it.Unread, it.UnreadEncrypted = EncryptedStatus(env, nil), true
			return it, nil, nil
		}
		p, err := enc.Decrypt(ctx, r.GroupResource(), kv.Key, plain)
		if err != nil {
			it.Unread, it.UnreadEncrypted, it.DecryptErr = EncryptedStatus(env, err), true, err
			return it, nil, nil
		}
		plain = p
	} else if enc != nil {
		// The apiserver reads a value in the clear only through an
		// identity provider of the resource's.
		if _, err := enc.Decrypt(ctx, r.GroupResource(), kv.Key, plain); err != nil {
			it.Problem = "stored in the clear, no identity provider"
			it.Unread = "Unreadable: " + it.Problem + " for " + r.String() + " in the encryption config"
			if !errors.Is(err, encryption.ErrNoIdentity) {
				it.Problem = "unreadable by the encryption config's providers"
				it.Unread = "Unreadable: " + shorten(err.Error(), 60)
			}
			return it, nil, nil
		}
	}
	redact := r.GroupResource() == (schema.GroupResource{Resource: "secrets"}) || codec.IsSecretKey(kv.Key)
	sum, typed, err := codec.CheckStoredTyped(plain, r.StoredKind(), redact)
	if err == nil {
		err = resource.CheckKind(r, sum.APIVersion, sum.Kind)
	}
	if err != nil {
		it.Unread, it.Problem = UndecodableStatus(plain, err), problem(plain, err)
		return it, nil, nil
	}
	it.Summary = sum
	return it, plain, typed
}

// ReadBadKey is Read for kv, a key under r's storage path that names no
// single object (resource.BadKey), in namespace ns ("" when the key says
// none): its value judged as the apiserver's LIST of r judges it, the
// item named by its whole key and marked BadKey.
func ReadBadKey(ctx context.Context, enc Decrypter, r resource.Resource, ns string, kv *store.KeyValue, deleteRev int64) (ListItem, []byte) {
	it, plain := Read(ctx, enc, r, ns, kv.Key, kv, deleteRev)
	it.BadKey = true
	return it, plain
}

// EncryptedStatus is the STATUS of a value encrypted with env that could
// not be decrypted: err is the decryption error, nil when no encryption
// config was given. It names the provider and key the value needs, and
// why the config given does not read it: it has no such key, or a key of
// that name that does not decrypt it.
func EncryptedStatus(env codec.EncryptionHeader, err error) string {
	what := "Encrypted"
	switch {
	case env.Provider == "kms":
		what += fmt.Sprintf(" (kms %s/%s)", env.Version, env.KeyName)
	case env.Provider != "":
		what += fmt.Sprintf(" (%s/%s)", env.Provider, env.KeyName)
	}
	switch {
	case err == nil, errors.Is(err, encryption.ErrNoConfig):
		return what + ": no key"
	case errors.Is(err, encryption.ErrKeyNotFound):
		return what + ": key not in the encryption config"
	case errors.Is(err, encryption.ErrWrongKey):
		return what + ": " + env.KeyName + " in this config does not decrypt it: a rotated or another cluster's key?"
	default:
		return what + ": cannot decrypt: " + shorten(err.Error(), 60)
	}
}

// problem is why a value was not decoded, in a few words.
func problem(plain []byte, err error) string {
	var km *resource.KindMismatchError
	if errors.As(err, &km) {
		what := km.Resource.Singular
		if what == "" {
			what = km.Resource.String()
		}
		return fmt.Sprintf("kind %s under a %s key", km.Kind, what)
	}
	return codec.Problem(plain, err)
}

// UndecodableStatus is the STATUS of a value (plain: decrypted) that could
// not be decoded, err being the decoder's error: why, as codec.Problem
// names it (truncated protobuf, JSON syntax error, ...), then the
// decoder's words; for an object of another kind than the key's resource,
// which kind.
func UndecodableStatus(plain []byte, err error) string {
	if errors.Is(err, resource.ErrKindMismatch) {
		return "Undecodable: " + problem(plain, err)
	}
	msg := strings.TrimPrefix(err.Error(), "summarize: ")
	return "Undecodable: " + problem(plain, err) + ": " + shorten(msg, 60)
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Unread counts the values a read could not read.
type Unread struct {
	// Encrypted are values encrypted at rest that could not be decrypted.
	Encrypted int
	// Undecodable are values that could not be decoded.
	Undecodable int
	// NotHeld and WrongKey are among Encrypted: values whose key the
	// encryption config given does not hold (encryption.ErrKeyNotFound),
	// or holds under the value's key name but with other key material
	// (encryption.ErrWrongKey).
	NotHeld, WrongKey int
}

// Add counts it when it was not read.
func (u *Unread) Add(it ListItem) {
	switch {
	case it.Unread == "":
	case it.UnreadEncrypted:
		u.AddEncrypted(it.DecryptErr)
	default:
		u.Undecodable++
	}
}

// AddEncrypted counts an encrypted value not read: err is the decryption
// error, nil when no encryption config was given.
func (u *Unread) AddEncrypted(err error) {
	u.Encrypted++
	switch {
	case errors.Is(err, encryption.ErrWrongKey):
		u.WrongKey++
	case errors.Is(err, encryption.ErrKeyNotFound):
		u.NotHeld++
	}
}

// Total is the number of values not read.
func (u Unread) Total() int { return u.Encrypted + u.Undecodable }

// Message says how many values were not read, and why, for example
// "2 values were not read: encrypted at rest, no usable key". It is ""
// when every value was read.
func (u Unread) Message() string {
	head := Count(u.Total(), "value was", "values were") + " not read: "
	switch {
	case u.Total() == 0:
		return ""
	case u.Undecodable == 0 && u.WrongKey == u.Encrypted:
		return head + "encrypted at rest, and the config's keys of their names do not decrypt them"
	case u.Undecodable == 0:
		return head + "encrypted at rest, no usable key"
	case u.Encrypted == 0:
		return head + "undecodable"
	default:
		return fmt.Sprintf("%s%d encrypted (no usable key), %d undecodable", head, u.Encrypted, u.Undecodable)
	}
}

// WrongKeyHint is what to do about a value the encryption config's key of
// the right name does not decrypt (encryption.ErrWrongKey).
const WrongKeyHint = "this EncryptionConfiguration has a key of that name, but not the one the value was written with: use the file this cluster's kube-apiserver runs with (--kubeadm finds it); after a key was rotated under the same name, a config that still holds the old key material"

// Hint says how to read the values not read.
func (u Unread) Hint() string {
	switch {
	case u.WrongKey > 0:
		return WrongKeyHint
	case u.NotHeld > 0:
		return "the EncryptionConfiguration given does not hold the keys these values were written with: use the file the kube-apiserver runs with (--kubeadm finds it)"
	case u.Encrypted > 0:
		return "pass --encryption-config with the apiserver's EncryptionConfiguration, or --kubeadm"
	}
	return "see one value's bytes with `etcdpvc get --etcd-key KEY -o raw | xxd | head`; `etcdpvc delete --all-unreadable RESOURCE -n NAMESPACE` removes what the apiserver cannot read, each value backed up"
}

// Count renders n with the singular or plural phrase: "1 value is",
// "2 values are".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
