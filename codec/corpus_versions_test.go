package codec_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
)

// TestOlderApiserverEncrypted decrypts every encrypted value an older
// kube-apiserver stored (fixtures/corpus-v1.*/encrypted) with the
// EncryptionConfiguration it ran with, and checks that the plaintext
// decodes to the apiserver's own JSON view, re-encodes to the same bytes,
// and encrypts again to a value that decrypts to them. The plain values of
// the same corpora are covered by the golden, summary and wire-edit tests
// through corpusFiles.
func TestOlderApiserverEncrypted(t *testing.T) {
	dirs, err := filepath.Glob("../fixtures/corpus-v1.*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpus of an older apiserver: %v", err)
	}
	ctx := context.Background()
	for _, dir := range dirs {
		enc, err := encryption.Load(ctx, filepath.Join(dir, "encryption", "encryption-config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(enc.Close)
		bins, err := filepath.Glob(filepath.Join(dir, "encrypted", "*.bin"))
		if err != nil || len(bins) == 0 {
			t.Fatalf("%s: no encrypted values: %v", dir, err)
		}
		for _, bin := range bins {
			t.Run(strings.TrimPrefix(filepath.Base(dir), "corpus-")+"-"+filepath.Base(bin), func(t *testing.T) {
				stored := mustRead(t, bin)
				key := metaField(t, strings.TrimSuffix(bin, ".bin")+".meta.txt", "key")
				gr := schema.GroupResource{Resource: strings.SplitN(filepath.Base(bin), "__", 2)[0]}
				plain := stored
				if codec.Detect(stored) == codec.FormatEncrypted {
					if plain, err = enc.Decrypt(ctx, gr, key, stored); err != nil {
						t.Fatalf("Decrypt: %v", err)
					}
				} else if ps := enc.Providers(gr); ps[0] != "identity" {
					t.Fatalf("%s is stored in the clear although %v is encrypted with %s", key, gr, ps[0])
				}
				obj, err := codec.Decode(plain)
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				var want map[string]any
				if err := json.Unmarshal(mustRead(t, strings.TrimSuffix(bin, ".bin")+".json"), &want); err != nil {
					t.Fatal(err)
				}
				got := jsonCopy(t, obj.Content)
				for _, m := range []map[string]any{want, got} {
					if md, ok := m["metadata"].(map[string]any); ok {
						delete(md, "resourceVersion")
						delete(md, "managedFields")
					}
					// A PVC's status.phase defaults to Pending on read.
					if st, ok := m["status"].(map[string]any); ok && st["phase"] == "Pending" {
						delete(st, "phase")
					}
				}
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("decoded object differs from the apiserver's view (-apiserver +decoded):\n%s", diff)
				}
				if err := obj.RoundTrips(); err != nil {
					t.Errorf("Encode(Decode(v)) != v: %v", err)
				}
				again, err := enc.Encrypt(ctx, gr, key, plain)
				if err != nil {
					t.Fatalf("Encrypt: %v", err)
				}
				back, err := enc.Decrypt(ctx, gr, key, again)
				if err != nil || !bytes.Equal(back, plain) {
					t.Errorf("re-encrypted value decrypts to %q, %v", back, err)
				}
			})
		}
	}
}

// jsonCopy gives m the types encoding/json decodes to (float64 numbers).
func jsonCopy(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// metaField returns NAME's value in a .meta.txt file (NAME=VALUE lines).
func metaField(t *testing.T, path, name string) string {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(mustRead(t, path)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+"="); ok {
			return v
		}
	}
	t.Fatalf("%s: no %s", path, name)
	return ""
}
