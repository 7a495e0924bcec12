package encryption

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/internal/regular"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/apis/apiserver"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"
)

// apiServerID is the apiserver identity handed to the loader. The loader
// only uses it to label KMS v2 metrics.
const apiServerID = "etcdpvc"

// configCodecs decodes EncryptionConfiguration files into the apiserver's
// internal type, with defaults applied, like the loader does.
var configCodecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	utilruntime.Must(apiserver.AddToScheme(scheme))
	utilruntime.Must(apiserverv1.AddToScheme(scheme))
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict)
}()

// Config is a loaded EncryptionConfiguration: the apiserver's transformers
// for each configured resource, plus the names and prefixes of their
// providers and keys. A Config is safe for concurrent use. A nil *Config
// stands for an apiserver started without an encryption config: it reads
// and writes values unencrypted and refuses encrypted ones with ErrNoConfig.
type Config struct {
	transformers encryptionconfig.StaticTransformers
	rules        map[schema.GroupResource][]provider
	cancel       context.CancelFunc
	closeOnce    sync.Once
}

// provider is one provider key of a resource rule, in config order. An
// aescbc, aesgcm or secretbox provider with several keys yields one
// provider per key.
type provider struct {
	kind       string // aescbc, aesgcm, secretbox, kms or identity
	name       string // key name, or KMS provider name
	kmsVersion string // KMS API version, v1 or v2
	endpoint   string // KMS plugin endpoint
	prefix     []byte // full header up to the ciphertext; empty for identity
}

// identityOnly is what a resource that no rule matches gets.
var identityOnly = []provider{{kind: "identity"}}

// String returns the name Providers reports: "aescbc/key1", "kms/testkms"
// or "identity".
func (p provider) String() string {
	if p.kind == "identity" {
		return p.kind
	}
	return p.kind + "/" + p.name
}

// describe names the provider in error messages.
func (p provider) describe() string {
	switch p.kind {
	case "identity":
		return "identity"
	case "kms":
		return fmt.Sprintf("kms %s provider %q (plugin %s)", p.kmsVersion, p.name, p.endpoint)
	default:
		return fmt.Sprintf("%s key %q", p.kind, p.name)
	}
}

// Load reads the EncryptionConfiguration (apiserver.config.k8s.io/v1) at
// path and builds its transformers with k8s.io/apiserver's
// encryptionconfig.LoadEncryptionConfig, with automatic reload off, as
// kube-apiserver does for --encryption-provider-config.
//
// For each KMS v2 provider the loader dials the plugin's unix socket and
// probes it once, waiting up to the provider's timeout (3s by default); an
// unreachable plugin does not fail Load, but values of that provider can
// neither be decrypted nor written until a background probe reaches it.
// Those probes and connections live until Close; canceling ctx only aborts
// Load itself.
func Load(ctx context.Context, path string) (*Config, error) {
	// The apiserver's loader opens the file itself: a FIFO would block it.
	if err := regular.Check(path); err != nil {
		return nil, fmt.Errorf("load encryption config %q: %w", path, err)
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	ec, err := encryptionconfig.LoadEncryptionConfig(tctx, path, false, apiServerID)
	if !stop() {
		cancel()
		return nil, fmt.Errorf("load encryption config %q: %w", path, context.Cause(ctx))
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("load encryption config %q: %w", path, err)
	}
	rules, err := readRules(path, ec.EncryptionFileContentHash)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("load encryption config %q: %w", path, err)
	}
	return &Config{
		transformers: encryptionconfig.StaticTransformers(ec.Transformers),
		rules:        rules,
		cancel:       cancel,
	}, nil
}

// readRules reads the config file again and lists, for each resource rule,
// its providers in the order the loader appends them. wantHash is the
// loader's hash of the file it read; a different hash means the file
// changed in between.
func readRules(path, wantHash string) (map[schema.GroupResource][]provider, error) {
	data, err := regular.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if got := fmt.Sprintf("sha256:%x", sha256.Sum256(data)); got != wantHash {
		return nil, errors.New("file changed while it was being loaded")
	}
	obj, gvk, err := configCodecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	cfg, ok := obj.(*apiserver.EncryptionConfiguration)
	if !ok {
		return nil, fmt.Errorf("decode: got %v, want EncryptionConfiguration", gvk)
	}

	rules := map[schema.GroupResource][]provider{}
	for _, rc := range cfg.Resources {
		var ps []provider
		for _, pc := range rc.Providers {
			// Same order of cases as the loader's prefixTransformersAndProbes.
			switch {
			case pc.AESGCM != nil:
				ps = appendKeys(ps, "aesgcm", pc.AESGCM.Keys)
			case pc.AESCBC != nil:
				ps = appendKeys(ps, "aescbc", pc.AESCBC.Keys)
			case pc.Secretbox != nil:
				ps = appendKeys(ps, "secretbox", pc.Secretbox.Keys)
			case pc.KMS != nil:
				ps = append(ps, provider{
					kind:       "kms",
					name:       pc.KMS.Name,
					kmsVersion: pc.KMS.APIVersion,
					endpoint:   pc.KMS.Endpoint,
					prefix:     []byte(encPrefix + "kms:" + pc.KMS.APIVersion + ":" + pc.KMS.Name + ":"),
				})
			case pc.Identity != nil:
				ps = append(ps, provider{kind: "identity"})
			}
		}
		// Like the loader, a resource named by several rules gets the
		// providers of all of them, in rule order.
		for _, r := range rc.Resources {
			gr := schema.ParseGroupResource(r)
			rules[gr] = append(rules[gr], ps...)
		}
	}
	return rules, nil
}

// appendKeys appends one provider per key, in key order.
func appendKeys(ps []provider, kind string, keys []apiserver.Key) []provider {
	for _, k := range keys {
		ps = append(ps, provider{
			kind:   kind,
			name:   k.Name,
			prefix: []byte(encPrefix + kind + ":v1:" + k.Name + ":"),
		})
	}
	return ps
}

// Close stops the KMS plugin connections and probes that Load started. It
// is safe to call more than once, and on a nil *Config.
func (c *Config) Close() {
	if c == nil {
		return
	}
	c.closeOnce.Do(c.cancel)
}

// providersFor resolves gr to its providers the way the apiserver's
// transformerFromOverrides resolves it to a transformer: the exact
// resource, then "*.<group>", then "*.*", else identity.
func (c *Config) providersFor(gr schema.GroupResource) []provider {
	for _, key := range []schema.GroupResource{
		gr,
		{Group: gr.Group, Resource: "*"},
		{Group: "*", Resource: "*"},
	} {
		if ps := c.rules[key]; len(ps) > 0 {
			return ps
		}
	}
	return identityOnly
}

// transformer returns the apiserver's transformer for gr.
func (c *Config) transformer(gr schema.GroupResource) value.Transformer {
	return c.transformers.TransformerForResource(gr)
}

// Providers reports, for gr, the names of its providers in config order,
// one per key: e.g. ["aescbc/key1", "aescbc/key0", "identity"] or
// ["kms/mykms", "identity"]. The first one encrypts writes. A resource no
// rule matches, and every resource of a nil *Config, reports ["identity"].
func (c *Config) Providers(gr schema.GroupResource) []string {
	ps := identityOnly
	if c != nil {
		ps = c.providersFor(gr)
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.String()
	}
	return names
}

// Decrypt returns the plaintext of a value stored at etcdKey for resource
// gr. Values without the k8s:enc: prefix are returned unchanged (identity).
// An encrypted value is decrypted by the apiserver's transformer for gr,
// with etcdKey as authenticated data. If gr's providers do not hold the
// value's provider and key, Decrypt returns a *KeyError matching
// ErrKeyNotFound; on a nil *Config, one matching ErrNoConfig.
func (c *Config) Decrypt(ctx context.Context, gr schema.GroupResource, etcdKey string, stored []byte) ([]byte, error) {
	out, _, err := c.DecryptStale(ctx, gr, etcdKey, stored)
	return out, err
}

// DecryptStale is Decrypt, and also reports whether the value is stale as
// the apiserver's TransformFromStorage reports it: true when it was not
// written by gr's first provider and key, so that the apiserver would
// write it differently now. An unencrypted value is stale when gr's first
// provider is not identity; when gr lists no identity provider at all,
// the apiserver's transformer cannot read it ("no matching prefix found")
// and neither does DecryptStale: the error matches ErrNoIdentity.
func (c *Config) DecryptStale(ctx context.Context, gr schema.GroupResource, etcdKey string, stored []byte) (plaintext []byte, stale bool, err error) {
	if !isEncrypted(stored) {
		if c == nil {
			return stored, false, nil
		}
		if !hasIdentity(c.providersFor(gr)) {
			return nil, false, fmt.Errorf("read value at %q: %w (%s)", etcdKey, ErrNoIdentity, strings.Join(c.Providers(gr), ", "))
		}
		out, stale, err := transformFromStorage(ctx, c.transformer(gr), etcdKey, stored)
		if err != nil {
			return nil, false, fmt.Errorf("read unencrypted value at %q: %w", etcdKey, err)
		}
		return out, stale, nil
	}

	env, parsed := codec.ParseEncryptionHeader(stored)
	if c == nil {
		keyErr := &KeyError{Encryption: env, Resource: gr, Err: ErrNoConfig}
		if !parsed {
			keyErr.Header = headerExcerpt(stored)
		}
		return nil, false, keyErr
	}
	p, ok := matchProvider(c.providersFor(gr), stored)
	if !ok {
		if !parsed {
			return nil, false, fmt.Errorf("decrypt value at %q: value starts with %q but has no valid header: %q", etcdKey, encPrefix, headerExcerpt(stored))
		}
		return nil, false, &KeyError{Encryption: env, Resource: gr, Err: ErrKeyNotFound}
	}
	if p.kind == "aescbc" && len(stored)-len(p.prefix) == aes.BlockSize {
		// k8s.io/apiserver v0.37's aescbc transformer panics on a value
		// that holds an IV and no ciphertext.
		return nil, false, fmt.Errorf("decrypt value at %q with %s: the stored data holds an IV but no ciphertext", etcdKey, p.describe())
	}
	out, stale, err := transformFromStorage(ctx, c.transformer(gr), etcdKey, stored)
	if err != nil {
		if wrongKey(p, err) {
			return nil, false, fmt.Errorf("decrypt value at %q: %w", etcdKey, &KeyError{Encryption: env, Resource: gr, Err: ErrWrongKey, Cause: err})
		}
		if p.kind == "kms" {
			return nil, false, fmt.Errorf("decrypt value at %q with %s: %w: %w", etcdKey, p.describe(), ErrPluginFailed, err)
		}
		return nil, false, fmt.Errorf("decrypt value at %q with %s: %w", etcdKey, p.describe(), err)
	}
	return out, stale, nil
}

// damaged are the words of the apiserver's local ciphers for a value too
// short or misshapen to be a ciphertext, whatever the key.
var damaged = []string{"shorter than the required size", "not a multiple of the block size"}

// wrongKey reports whether err, from provider p's decryption of a value
// whose header names p, says that p's key does not decrypt it: the
// padding (aescbc) or the authentication (aesgcm, secretbox) failed on a
// value of the right shape. A KMS plugin's failure says nothing of the
// key; a panic is not an answer.
func wrongKey(p provider, err error) bool {
	switch p.kind {
	case "aescbc", "aesgcm", "secretbox":
	default:
		return false
	}
	if errors.Is(err, errTransformerPanic) {
		return false
	}
	for _, d := range damaged {
		if strings.Contains(err.Error(), d) {
			return false
		}
	}
	return true
}

// errTransformerPanic marks a panic recovered from the apiserver's
// transformer code.
var errTransformerPanic = errors.New("apiserver transformer panicked")

// transformFromStorage runs t.TransformFromStorage with etcdKey as
// authenticated data, as the apiserver's etcd3 store does. Stored bytes
// are untrusted, so a panic in the transformer code becomes an error.
func transformFromStorage(ctx context.Context, t value.Transformer, etcdKey string, stored []byte) (out []byte, stale bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, stale, err = nil, false, fmt.Errorf("%w: %v", errTransformerPanic, r)
		}
	}()
	return t.TransformFromStorage(ctx, stored, value.DefaultContext(etcdKey))
}

// matchProvider returns the first provider whose full header starts stored.
func matchProvider(ps []provider, stored []byte) (provider, bool) {
	for _, p := range ps {
		if len(p.prefix) > 0 && bytes.HasPrefix(stored, p.prefix) {
			return p, true
		}
	}
	return provider{}, false
}

// hasIdentity reports whether ps holds the identity provider.
func hasIdentity(ps []provider) bool {
	for _, p := range ps {
		if p.kind == "identity" {
			return true
		}
	}
	return false
}

// Encrypt returns what the apiserver would store for plaintext at etcdKey
// for resource gr: plaintext encrypted by gr's first provider and key, with
// etcdKey as authenticated data, or plaintext unchanged when that provider
// is identity. Before returning, Encrypt decrypts the result with the same
// transformer and checks that it yields plaintext. A nil *Config writes
// plaintext unchanged, as an apiserver without an encryption config does;
// use it only for such clusters. Encrypt refuses plaintext that already
// starts with k8s:enc:. With a KMS v2 provider first, Encrypt fails, rather
// than writing plaintext, until the plugin has answered a status probe.
func (c *Config) Encrypt(ctx context.Context, gr schema.GroupResource, etcdKey string, plaintext []byte) ([]byte, error) {
	if isEncrypted(plaintext) {
		return nil, fmt.Errorf("encrypt value at %q: value already starts with %q", etcdKey, encPrefix)
	}
	if c == nil {
		return plaintext, nil
	}
	first := c.providersFor(gr)[0]
	t := c.transformer(gr)
	dataCtx := value.DefaultContext(etcdKey)
	out, err := t.TransformToStorage(ctx, plaintext, dataCtx)
	if err != nil {
		return nil, fmt.Errorf("encrypt value at %q with %s: %w", etcdKey, first.describe(), err)
	}
	if !bytes.HasPrefix(out, first.prefix) || (first.kind != "identity" && len(out) == len(first.prefix)) {
		return nil, fmt.Errorf("encrypt value at %q with %s: transformer wrote an unexpected header %q", etcdKey, first.describe(), headerExcerpt(out))
	}
	back, _, err := transformFromStorage(ctx, t, etcdKey, out)
	if err != nil {
		return nil, fmt.Errorf("encrypt value at %q with %s: check the written value: %w", etcdKey, first.describe(), err)
	}
	if !bytes.Equal(back, plaintext) {
		return nil, fmt.Errorf("encrypt value at %q with %s: written value does not decrypt to the plaintext", etcdKey, first.describe())
	}
	return out, nil
}
