package resource

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// internalKey reports whether key is one of the apiserver-internal keys
// that ParseKey documents as not belonging to a resource.
func internalKey(key string) bool {
	for _, p := range []string{"/registry/ranges/", "/registry/masterleases/", "/registry/peerserverleases/"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return key == "compact_rev_key"
}

func corpusKeys(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(corpus, "etcd-keys.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var keys []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k := strings.TrimSpace(sc.Text()); k != "" {
			keys = append(keys, k)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(keys) < 200 {
		t.Fatalf("only %d keys in etcd-keys.txt", len(keys))
	}
	return keys
}

// TestCorpusKeys parses every key of a real kube-apiserver v1.37.2 cluster
// and regenerates it with Key.
func TestCorpusKeys(t *testing.T) {
	custom := map[string]bool{}
	internal := 0
	for _, key := range corpusKeys(t) {
		r, ns, name, ok := ParseKey("/registry", key)
		if internalKey(key) {
			internal++
			if ok {
				t.Errorf("ParseKey(%q) = %s %q %q, want not ok for an internal key", key, r, ns, name)
			}
			continue
		}
		if !ok {
			t.Errorf("ParseKey(%q) not ok", key)
			continue
		}
		if !r.BuiltIn {
			custom[r.String()] = true
		}
		if r.Namespaced != (ns != "") {
			t.Errorf("ParseKey(%q): %s namespaced %v with namespace %q", key, r, r.Namespaced, ns)
		}
		got, err := r.Key("/registry", ns, name)
		if err != nil {
			t.Errorf("Key for %q: %v", key, err)
			continue
		}
		if got != key {
			t.Errorf("Key(%s, %q, %q) = %q, want %q", r, ns, name, got, key)
		}
		// The resource's own name resolves back to it (custom resources
		// need a resolver for their scope).
		if r.BuiltIn {
			l, err := Lookup(r.String())
			if err != nil || l.Path != r.Path {
				t.Errorf("Lookup(%q) = %v, %v; want path %q", r.String(), l.Path, err, r.Path)
			}
		}
	}
	if internal == 0 {
		t.Error("no internal keys seen; the exceptions are untested")
	}
	if !custom["widgets.e2e.example.com"] || len(custom) != 1 {
		t.Errorf("custom resources %v, want just widgets.e2e.example.com", custom)
	}
}

// TestCorpusSnapshotKinds reads every live object of the corpus snapshot and
// checks that the resource ParseKey finds for its key names the kind and
// encoding actually stored there.
func TestCorpusSnapshotKinds(t *testing.T) {
	latest := snapshotKVs(t, filepath.Join(corpus, "etcd-snapshot.db"))
	keys := corpusKeys(t)
	if len(latest) != len(keys) {
		t.Errorf("snapshot holds %d live keys, etcd-keys.txt %d", len(latest), len(keys))
	}
	encrypted, checked := 0, 0
	for _, key := range keys {
		value, ok := latest[key]
		if !ok {
			t.Errorf("%s: not in the snapshot", key)
			continue
		}
		r, _, _, ok := ParseKey("/registry", key)
		if !ok {
			continue // internal keys; TestCorpusKeys covers them
		}
		if bytes.HasPrefix(value, []byte("k8s:enc:")) {
			encrypted++ // encrypted at rest: kind and encoding are hidden
			continue
		}
		gv, kind, isJSON, err := storedKind(value)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			continue
		}
		if isJSON != r.JSON {
			t.Errorf("%s: stored as JSON %v, %s says %v", key, isJSON, r, r.JSON)
		}
		if gv.Group != r.Group {
			t.Errorf("%s: stored group %q, %s says %q", key, gv.Group, r, r.Group)
		}
		if r.BuiltIn && kind != r.Kind {
			t.Errorf("%s: stored kind %q, %s says %q", key, kind, r, r.Kind)
		}
		if r.BuiltIn && gv.Version != r.Version {
			// Allowed by the package contract, but this cluster is
			// v1.37 and everything in it should be at the preferred
			// version.
			t.Errorf("%s: stored version %q, %s says %q", key, gv.Version, r, r.Version)
		}
		checked++
	}
	if checked < 150 || encrypted == 0 {
		t.Errorf("checked %d values and skipped %d encrypted ones; the corpus changed?", checked, encrypted)
	}
}

// snapshotKVs returns the newest value of every live key in an etcd backend
// file.
func snapshotKVs(t *testing.T, path string) map[string][]byte {
	t.Helper()
	// bbolt locks and may mmap the file: work on a private copy.
	src, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	cp := filepath.Join(t.TempDir(), "snapshot.db")
	dst, err := os.Create(cp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(cp, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	type rev struct {
		main, sub int64
		tomb      bool
		value     []byte
	}
	newest := map[string]rev{}
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil {
			t.Fatal("no key bucket")
		}
		return b.ForEach(func(k, v []byte) error {
			// A revision key is 8 bytes main, '_', 8 bytes sub, and a
			// trailing 't' for a tombstone.
			if len(k) < 17 {
				t.Fatalf("revision key %x too short", k)
			}
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				t.Fatalf("revision %x: %v", k, err)
			}
			r := rev{main: int64(be64(k[:8])), sub: int64(be64(k[9:17])), tomb: len(k) == 18 && k[17] == 't', value: kv.Value}
			cur, seen := newest[string(kv.Key)]
			if !seen || r.main > cur.main || (r.main == cur.main && r.sub > cur.sub) {
				newest[string(kv.Key)] = r
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for k, r := range newest {
		if !r.tomb {
			out[k] = r.value
		}
	}
	return out
}

func be64(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// storedKind reads the apiVersion and kind of a stored value: a JSON
// document, or a protobuf envelope "k8s\x00" + runtime.Unknown whose field 1
// is the TypeMeta (1: apiVersion, 2: kind).
func storedKind(value []byte) (gv schema.GroupVersion, kind string, isJSON bool, err error) {
	if bytes.HasPrefix(value, []byte("{")) {
		var tm struct{ APIVersion, Kind string }
		if err := json.Unmarshal(value, &tm); err != nil {
			return gv, "", true, err
		}
		gv, err = schema.ParseGroupVersion(tm.APIVersion)
		return gv, tm.Kind, true, err
	}
	rest, ok := bytes.CutPrefix(value, []byte("k8s\x00"))
	if !ok {
		return gv, "", false, fmt.Errorf("value starts %q: neither JSON nor a protobuf envelope", value[:min(len(value), 8)])
	}
	typeMeta, err := protoField(rest, 1)
	if err != nil {
		return gv, "", false, err
	}
	apiVersion, err := protoField(typeMeta, 1)
	if err != nil {
		return gv, "", false, err
	}
	k, err := protoField(typeMeta, 2)
	if err != nil {
		return gv, "", false, err
	}
	gv, err = schema.ParseGroupVersion(string(apiVersion))
	return gv, string(k), false, err
}

// protoField returns the first length-delimited field num of a protobuf
// message.
func protoField(msg []byte, num protowire.Number) ([]byte, error) {
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return nil, protowire.ParseError(l)
		}
		msg = msg[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(msg)
			if l < 0 {
				return nil, protowire.ParseError(l)
			}
			return v, nil
		}
		l = protowire.ConsumeFieldValue(n, typ, msg)
		if l < 0 {
			return nil, protowire.ParseError(l)
		}
		msg = msg[l:]
	}
	return nil, io.ErrUnexpectedEOF
}
