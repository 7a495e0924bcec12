package encryption

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/klog/v2"

	"github.com/etcdpvc/etcdpvc/codec/encryption/internal/kmstest"
)

const (
	corpusDir    = "../../fixtures/corpus"
	corpusConfig = corpusDir + "/encryption/encryption-config.yaml"
)

// Test keys, base64. They protect nothing.
const (
	key32a = "JwZyTNKn26qbebTfacnDRp5J4Ymoc6RQtQS2YnHUDmM=" // the corpus aescbc key
	key32b = "rbB6LjrZub5gRV01ELWZ6mI0N+OtcBXH6utF7xqgmk4=" // the corpus aesgcm key
	key32c = "MaSFlCta5RBW5jBy4CSB+Bti2xuNab48pwtmvKZOvq8=" // the corpus secretbox key
	key32d = "dGVzdC1vbmx5LWtleS1kLTMyLWJ5dGVzLWxvbmchISE=" // "test-only-key-d-32-bytes-long!!!"
	key16  = "dGVzdC1rZXktMTYtYnl0ZQ=="                     // "test-key-16-byte"
)

func TestMain(m *testing.M) {
	// The apiserver's transformers log every failed decryption through
	// klog; the tests provoke many on purpose.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// corpusValue is one value a real kube-apiserver v1.37.2 stored.
type corpusValue struct {
	file     string // base name without extension
	gr       schema.GroupResource
	etcdKey  string
	name     string // metadata.name from kubectl's view
	provider string // last part of the file name: aescbc, aesgcm, secretbox, identity
	stored   []byte
}

// loadCorpus reads fixtures/corpus/encrypted.
func loadCorpus(tb testing.TB) []corpusValue {
	tb.Helper()
	bins, err := filepath.Glob(filepath.Join(corpusDir, "encrypted", "*.bin"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(bins) == 0 {
		tb.Fatalf("no corpus values in %s/encrypted", corpusDir)
	}
	var vs []corpusValue
	for _, bin := range bins {
		base := strings.TrimSuffix(bin, ".bin")
		stored, err := os.ReadFile(bin)
		if err != nil {
			tb.Fatal(err)
		}
		meta, err := os.ReadFile(base + ".meta.txt")
		if err != nil {
			tb.Fatal(err)
		}
		var etcdKey string
		for _, line := range strings.Split(string(meta), "\n") {
			if k, ok := strings.CutPrefix(line, "key="); ok {
				etcdKey = k
			}
		}
		if etcdKey == "" {
			tb.Fatalf("%s.meta.txt: no key= line", base)
		}
		js, err := os.ReadFile(base + ".json")
		if err != nil {
			tb.Fatal(err)
		}
		var obj struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(js, &obj); err != nil {
			tb.Fatalf("%s.json: %v", base, err)
		}
		parts := strings.Split(filepath.Base(base), "__")
		vs = append(vs, corpusValue{
			file:     filepath.Base(base),
			gr:       schema.ParseGroupResource(parts[0]),
			etcdKey:  etcdKey,
			name:     obj.Metadata.Name,
			provider: parts[len(parts)-1],
			stored:   stored,
		})
	}
	return vs
}

// load loads the config at path and closes it at the end of the test.
func load(tb testing.TB, path string) *Config {
	tb.Helper()
	c, err := Load(context.Background(), path)
	if err != nil {
		tb.Fatalf("Load(%s): %v", path, err)
	}
	tb.Cleanup(c.Close)
	return c
}

// writeConfig writes an EncryptionConfiguration whose rules are given as
// YAML list items (each "- resources: ...\n  providers: ...") and returns
// its path.
func writeConfig(tb testing.TB, rules string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "encryption-config.yaml")
	data := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n" + rules
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// rule returns one rule for writeConfig.
func rule(resources string, providers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- resources: [%s]\n  providers:\n", resources)
	for _, p := range providers {
		fmt.Fprintf(&b, "  - %s\n", p)
	}
	return b.String()
}

// Provider snippets for rule.
func aescbc(name, secret string) string {
	return fmt.Sprintf("aescbc: {keys: [{name: %q, secret: %q}]}", name, secret)
}

func aesgcm(name, secret string) string {
	return fmt.Sprintf("aesgcm: {keys: [{name: %q, secret: %q}]}", name, secret)
}

func secretbox(name, secret string) string {
	return fmt.Sprintf("secretbox: {keys: [{name: %q, secret: %q}]}", name, secret)
}

func kmsv2(name, endpoint string) string {
	return fmt.Sprintf("kms: {apiVersion: v2, name: %q, endpoint: %q, timeout: 3s}", name, endpoint)
}

const identity = "identity: {}"

// apiserverTransformer builds, independently of Config, the transformer
// kube-apiserver would use for gr: encryptionconfig.LoadEncryptionConfig
// wrapped in StaticTransformers, as the apiserver's EtcdOptions does
// without automatic reload.
func apiserverTransformer(tb testing.TB, path string, gr schema.GroupResource) value.Transformer {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	ec, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "test-apiserver")
	if err != nil {
		tb.Fatalf("LoadEncryptionConfig(%s): %v", path, err)
	}
	return encryptionconfig.StaticTransformers(ec.Transformers).TransformerForResource(gr)
}

// startKMS starts the test KMS v2 plugin on a socket in a temporary
// directory and stops it at the end of the test.
func startKMS(tb testing.TB) *kmstest.Plugin {
	tb.Helper()
	p, err := kmstest.Start(socketPath(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Stop)
	return p
}

// socketPath returns a path for a unix socket in a temporary directory.
func socketPath(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if len(dir) > 80 { // a unix socket path must fit in 108 bytes
		var err error
		if dir, err = os.MkdirTemp("", "kms"); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { os.RemoveAll(dir) })
	}
	return filepath.Join(dir, "kms.sock")
}
