package inspect

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

func loadEncryption(t *testing.T, path string) *encryption.Config {
	t.Helper()
	c, err := encryption.Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// secretboxConfig is an encryption config for persistentvolumeclaims with
// one secretbox key named name, which is not the corpus's key.
func secretboxConfig(t *testing.T, name string) *encryption.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "enc.yaml")
	if err := os.WriteFile(path, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [persistentvolumeclaims]
  providers:
  - secretbox:
      keys:
      - {name: `+name+`, secret: rbB6LjrZub5gRV01ELWZ6mI0N+OtcBXH6utF7xqgmk4=}
  - identity: {}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return loadEncryption(t, path)
}

func TestRead(t *testing.T) {
	pvcs, err := resource.Lookup("pvc")
	if err != nil {
		t.Fatal(err)
	}
	right := loadEncryption(t, filepath.Join(corpusDir, "encryption", "encryption-config.yaml"))
	wrong := secretboxConfig(t, "key2")
	plain := corpus(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	sealed := corpus(t, "encrypted/persistentvolumeclaims__demo__www-web-0__terminating__secretbox.bin")
	for _, tc := range []struct {
		name      string
		enc       Decrypter
		value     []byte
		unread    string
		encrypted bool
	}{
		{"plain", nil, plain, "", false},
		{"plain with a config", right, plain, "", false},
		{"encrypted, no config", nil, sealed, "Encrypted (secretbox/key1): no key", true},
		{"encrypted, the key", right, sealed, "", false},
		{"encrypted, another key", wrong, sealed, "Encrypted (secretbox/key1): key not in the encryption config", true},
		{"garbage", nil, []byte("k8s\x00\x0a\x02garbage"), "Undecodable: ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv := &store.KeyValue{Key: "/registry/persistentvolumeclaims/demo/www-web-0", Value: tc.value, ModRevision: 7}
			it, p := Read(context.Background(), tc.enc, pvcs, "demo", "www-web-0", kv, 0)
			switch {
			case tc.unread == "Undecodable: ":
				if len(it.Unread) <= len(tc.unread) || it.Unread[:len(tc.unread)] != tc.unread || it.Summary != nil || p != nil {
					t.Fatalf("Unread %q, want an Undecodable reason", it.Unread)
				}
			case it.Unread != tc.unread || it.UnreadEncrypted != tc.encrypted:
				t.Fatalf("Unread %q (encrypted %v), want %q (%v)", it.Unread, it.UnreadEncrypted, tc.unread, tc.encrypted)
			case tc.unread == "" && (it.Summary == nil || !it.Summary.Terminating() || p == nil):
				t.Fatalf("summary %+v: want the Terminating claim's metadata", it.Summary)
			}
			if want := StoredUnder(tc.value); it.Encryption != want {
				t.Errorf("Encryption %q, want %q", it.Encryption, want)
			}
			if it.Key != kv.Key || it.ModRevision != 7 || it.Namespace != "demo" || it.Name != "www-web-0" {
				t.Errorf("item %+v does not carry the key's place", it)
			}
		})
	}
}

func TestStoredUnder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value []byte
		want  string
	}{
		{"protobuf in clear", corpus(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin"), "identity"},
		{"json in clear", []byte(`{"kind":"ConfigMap"}`), "identity"},
		{"secretbox", corpus(t, "encrypted/persistentvolumeclaims__demo__www-web-0__terminating__secretbox.bin"), "secretbox/key1"},
		{"aescbc", corpus(t, "encrypted/secrets__demo__web-secret__aescbc.bin"), "aescbc/key1"},
		{"aesgcm", corpus(t, "encrypted/configmaps__demo__web-config__aesgcm.bin"), "aesgcm/key1"},
		{"kms v2", []byte("k8s:enc:kms:v2:testkms:\x0a\x01x"), "kms/testkms"},
		{"kms v1", []byte("k8s:enc:kms:v1:vault:\x00\x10x"), "kms/vault"},
		{"damaged header", []byte("k8s:enc:aescbc"), "k8s:enc: (malformed header)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StoredUnder(tc.value); got != tc.want {
				t.Errorf("StoredUnder = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUnreadMessage(t *testing.T) {
	for _, tc := range []struct {
		u    Unread
		want string
	}{
		{Unread{}, ""},
		{Unread{Encrypted: 1}, "1 value was not read: encrypted at rest, no usable key"},
		{Unread{Encrypted: 2}, "2 values were not read: encrypted at rest, no usable key"},
		{Unread{Undecodable: 1}, "1 value was not read: undecodable"},
		{Unread{Encrypted: 2, Undecodable: 1}, "3 values were not read: 2 encrypted (no usable key), 1 undecodable"},
		{Unread{Encrypted: 2, WrongKey: 2}, "2 values were not read: encrypted at rest, and the config's keys of their names do not decrypt them"},
		{Unread{Encrypted: 2, WrongKey: 1}, "2 values were not read: encrypted at rest, no usable key"},
	} {
		if got := tc.u.Message(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.u, got, tc.want)
		}
	}
}

// TestUnreadHint: the hint says what to do about the values not read,
// never to pass an --encryption-config that was passed.
func TestUnreadHint(t *testing.T) {
	var u Unread
	for _, err := range []error{nil, encryption.ErrKeyNotFound, encryption.ErrWrongKey} {
		u.AddEncrypted(err)
	}
	if u != (Unread{Encrypted: 3, NotHeld: 1, WrongKey: 1}) {
		t.Errorf("counted %+v", u)
	}
	for _, tc := range []struct {
		u    Unread
		want string
	}{
		{Unread{Encrypted: 1}, "pass --encryption-config"},
		{Unread{Encrypted: 1, NotHeld: 1}, "the EncryptionConfiguration given does not hold the keys"},
		{Unread{Encrypted: 2, NotHeld: 1, WrongKey: 1}, WrongKeyHint},
		{Unread{Undecodable: 1}, "etcdpvc get --etcd-key KEY -o raw"},
	} {
		if got := tc.u.Hint(); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: hint %q, want it to hold %q", tc.u, got, tc.want)
		}
	}
}

// TestReadReasons: a value that cannot be read is listed with precisely
// why: the key name a wrong key has, a truncated protobuf, JSON syntax, an
// object of another kind under the key.
func TestReadReasons(t *testing.T) {
	pvcs, err := resource.Lookup("pvc")
	if err != nil {
		t.Fatal(err)
	}
	rotated := secretboxConfig(t, "key1") // the corpus's name, another key
	plain := corpus(t, "plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	sealed := corpus(t, "encrypted/persistentvolumeclaims__demo__www-web-0__terminating__secretbox.bin")
	configMap := corpus(t, "plain/configmaps__demo__web-config.bin")
	for _, tc := range []struct {
		name  string
		enc   Decrypter
		value []byte
		want  string // a prefix
	}{
		{"a key of that name that does not decrypt it", rotated, sealed, "Encrypted (secretbox/key1): key1 in this config does not decrypt it: a rotated or another cluster's key?"},
		{"truncated protobuf", nil, plain[:len(plain)-7], "Undecodable: truncated protobuf: "},
		{"truncated protobuf, half", nil, plain[:len(plain)/2], "Undecodable: truncated protobuf: "},
		{"JSON cut short", nil, []byte(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"www-web-0"`), "Undecodable: truncated JSON: "},
		{"JSON syntax", nil, []byte(`{"apiVersion":"v1","kind":"PersistentVolumeClaim",}`), "Undecodable: JSON syntax error: "},
		{"JSON of another shape than the kind's", nil, []byte(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","spec":{"accessModes":"RWO"}}`), "Undecodable: JSON that is not a Kubernetes object: "},
		{"another kind under the key", nil, configMap, "Undecodable: kind ConfigMap under a persistentvolumeclaim key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv := &store.KeyValue{Key: "/registry/persistentvolumeclaims/demo/www-web-0", Value: tc.value, ModRevision: 7}
			it, p := Read(context.Background(), tc.enc, pvcs, "demo", "www-web-0", kv, 0)
			if !strings.HasPrefix(it.Unread, tc.want) || it.Summary != nil || p != nil {
				t.Fatalf("Unread %q, want %q…", it.Unread, tc.want)
			}
			var u Unread
			u.Add(it)
			if u.Total() != 1 {
				t.Fatalf("not counted as unread: %+v", u)
			}
		})
	}
}

// TestReadCorpusKinds: every object a real kube-apiserver wrote is of its
// key's resource's kind, so the kind check flags none of them.
func TestReadCorpusKinds(t *testing.T) {
	b, err := store.OpenBolt(filepath.Join(corpusDir, "etcd-snapshot.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	enc := loadEncryption(t, filepath.Join(corpusDir, "encryption", "encryption-config.yaml"))
	n := 0
	_, err = b.List(context.Background(), "/registry/", store.ListOptions{}, func(kv *store.KeyValue) error {
		r, ns, name, ok := resource.ParseKey("/registry", kv.Key)
		if !ok {
			return nil
		}
		it, _ := Read(context.Background(), enc, r, ns, name, kv, 0)
		if strings.Contains(it.Unread, "kind") {
			t.Errorf("%s: %s", kv.Key, it.Unread)
		}
		n++
		return nil
	})
	if err != nil || n < 50 {
		t.Fatalf("read %d objects: %v", n, err)
	}
}
