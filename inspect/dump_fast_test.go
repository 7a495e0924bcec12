package inspect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/codec/encryption"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// dumpCorpusValue is a stored value of a corpus, with its key.
type dumpCorpusValue struct {
	name  string
	key   string
	value []byte
}

// corpusValues reads the values INDEX.tsv of a corpus directory lists.
func corpusValues(t *testing.T, dir string) []dumpCorpusValue {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "INDEX.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []dumpCorpusValue
	s := bufio.NewScanner(f)
	for s.Scan() {
		cols := strings.Split(s.Text(), "\t")
		if len(cols) < 3 || cols[0] == "file" || !strings.HasSuffix(cols[0], ".bin") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, cols[0]))
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, dumpCorpusValue{name: cols[0], key: cols[2], value: b})
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 {
		t.Fatalf("%s lists no values", dir)
	}
	return vs
}

// dumpProto encodes and decodes the protobuf kinds of codec.Scheme as the
// apiserver does.
var dumpProto = protobuf.NewSerializer(codec.Scheme, codec.Scheme)

// envelope returns a stored protobuf value made of the given envelope
// fields (runtime.Unknown), each a field number and its bytes.
func envelope(fields ...any) []byte {
	b := append([]byte(nil), codec.ProtobufMagic...)
	for i := 0; i < len(fields); i += 2 {
		num := protowire.Number(fields[i].(int))
		switch v := fields[i+1].(type) {
		case []byte:
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendBytes(b, v)
		case uint64:
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, v)
		}
	}
	return b
}

// typeMeta is the envelope's typeMeta message.
func typeMeta(apiVersion, kind string) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, apiVersion)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendString(b, kind)
}

// storedSecret is s as the apiserver stores it (protobuf, in the clear).
func storedSecret(t *testing.T, s *corev1.Secret) []byte {
	t.Helper()
	s.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}
	var buf bytes.Buffer
	if err := dumpProto.Encode(s, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// previousObject is the object JSON dump wrote before the short way: the
// value read as every other command reads it (kubevalue.Codec.Open), its
// content redacted unless show, encoded from the map.
func previousObject(t *testing.T, p kubevalue.Codec, kv store.KeyValue, show bool) ([]byte, error) {
	t.Helper()
	cur, err := p.Open(context.Background(), kv)
	if err != nil {
		return nil, err
	}
	content := cur.Obj.Content
	if !show {
		content = codec.RedactSecret(content)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(content); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// TestDumpShortWayCorpus checks, value by value, that the short way
// (dumpWorker.fast) writes byte for byte the object the previous path
// wrote, for every value of the corpora (every kind the apiserver stores,
// in the clear and encrypted at rest, JSON custom resources and their
// definitions, Secrets) and for Secrets made to exercise redaction, with
// and without the encryption config and --show-secrets. It also checks the
// short way is taken where it should be, so that the comparison is not
// vacuous.
func TestDumpShortWayCorpus(t *testing.T) {
	ctx := context.Background()
	lastApplied := map[string]string{codec.LastAppliedAnnotation: `{"apiVersion":"v1","data":{"password":"aHVudGVyMg=="},"kind":"Secret"}`, "a": "<b> & c"}
	made := []dumpCorpusValue{
		{name: "secret with data, stringData, last-applied", key: "/registry/secrets/demo/made-1", value: storedSecret(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "made-1", Namespace: "demo", Annotations: lastApplied, Labels: map[string]string{"z": "1", "a": "2"}},
			Data:       map[string][]byte{"password": []byte("hunter2"), "empty": {}, "bin": {0, 1, 2, 0xff}, "z": []byte("x")},
			StringData: map[string]string{"token": "abc", "é": "日本"},
			Type:       corev1.SecretTypeOpaque,
		})},
		{name: "secret without data", key: "/registry/secrets/demo/made-2", value: storedSecret(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "made-2", Namespace: "demo"}, Type: corev1.SecretTypeServiceAccountToken,
		})},
		{name: "secret with an empty data map", key: "/registry/secrets/demo/made-3", value: storedSecret(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "made-3", Namespace: "demo", Annotations: map[string]string{codec.LastAppliedAnnotation: ""}},
			Data:       map[string][]byte{}, Immutable: new(bool),
		})},
	}
	// Envelopes as the apiserver never writes them: the short way must
	// read them as the serializer does, or leave them to the long way.
	cm, err := os.ReadFile("../fixtures/corpus/plain/configmaps__demo__web-config.bin")
	if err != nil {
		t.Fatal(err)
	}
	u, err := codec.ParseUnknown(cm)
	if err != nil {
		t.Fatal(err)
	}
	tm := typeMeta("v1", "ConfigMap")
	made = append(made,
		dumpCorpusValue{name: "envelope with raw twice", key: "/registry/configmaps/demo/web-config", value: envelope(1, tm, 2, []byte{0x0a, 0x00}, 2, u.Raw)},
		dumpCorpusValue{name: "envelope with typeMeta twice", key: "/registry/configmaps/demo/web-config", value: envelope(1, typeMeta("v1", "Secret"), 2, u.Raw, 1, tm)},
		dumpCorpusValue{name: "envelope with an unknown field", key: "/registry/configmaps/demo/web-config", value: envelope(1, tm, 2, u.Raw, 9, uint64(5))},
		dumpCorpusValue{name: "envelope with a content type", key: "/registry/configmaps/demo/web-config", value: envelope(1, tm, 2, u.Raw, 4, []byte("application/vnd.kubernetes.protobuf"))},
		dumpCorpusValue{name: "envelope with a content encoding", key: "/registry/configmaps/demo/web-config", value: envelope(1, tm, 2, u.Raw, 3, []byte("gzip"))},
		dumpCorpusValue{name: "envelope with raw truncated", key: "/registry/configmaps/demo/web-config", value: envelope(1, tm, 2, u.Raw[:len(u.Raw)-3])},
		dumpCorpusValue{name: "envelope with raw of another kind", key: "/registry/configmaps/demo/web-config", value: envelope(1, typeMeta("v1", "Namespace"), 2, u.Raw)},
		dumpCorpusValue{name: "envelope with raw a varint", key: "/registry/configmaps/demo/web-config", value: envelope(1, tm, 2, uint64(1))},
	)
	for _, dir := range []string{"../fixtures/corpus", "../fixtures/corpus-v1.34", "../fixtures/corpus-v1.36"} {
		values := append(corpusValues(t, dir), made...)
		enc, err := encryption.Load(ctx, filepath.Join(dir, "encryption", "encryption-config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, withEnc := range []bool{false, true} {
			for _, show := range []bool{false, true} {
				o := DumpOptions{ShowSecrets: show}
				if withEnc {
					o.Codec.Enc = enc
				}
				d := newDumpWorker(ctx, &o)
				short, read := map[string]bool{}, map[string]bool{}
				for _, v := range values {
					kv := store.KeyValue{Key: v.key, Value: v.value, ModRevision: 7, CreateRevision: 5, Version: 2}
					want, werr := previousObject(t, o.Codec, kv, show)
					read[v.name] = werr == nil
					got, ok := d.fast(&kv)
					if !ok {
						continue // the long way: the previous path itself
					}
					short[v.name] = true
					if werr != nil {
						t.Errorf("%s enc=%v show=%v: the short way wrote an object, the previous path: %v", v.name, withEnc, show, werr)
						continue
					}
					if !bytes.Equal(got, want) {
						t.Errorf("%s enc=%v show=%v: the short way differs:\n got %s\nwant %s", v.name, withEnc, show, got, want)
					}
				}
				// Every protobuf value in the clear, or decrypted, that
				// the previous path reads takes the short way; Secrets
				// included.
				for _, v := range values {
					if !read[v.name] {
						continue
					}
					plain := codec.Detect(v.value) == codec.FormatProtobuf
					decryptable := withEnc && codec.Detect(v.value) == codec.FormatEncrypted
					if (plain || decryptable) && !short[v.name] {
						t.Errorf("%s enc=%v show=%v: took the long way", v.name, withEnc, show)
					}
					if codec.Detect(v.value) == codec.FormatJSON && short[v.name] {
						t.Errorf("%s: a JSON value took the short way", v.name)
					}
				}
			}
		}
	}
}

// TestDumpDeclinedObject checks that an object the short way's encoder
// declines (a string that is not valid UTF-8, which encoding/json writes
// with \ufffd and the map form holds as U+FFFD) is written by the long
// way, as the previous path wrote it.
func TestDumpDeclinedObject(t *testing.T) {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "bad-utf8", Namespace: "demo", Labels: map[string]string{"a": "b"}},
		Data:       map[string]string{"k": "a\xffb\xfe", "z": "<&>"},
	}
	var buf bytes.Buffer
	if err := dumpProto.Encode(cm, &buf); err != nil {
		t.Fatal(err)
	}
	kv := store.KeyValue{Key: "/registry/configmaps/demo/bad-utf8", Value: buf.Bytes(), ModRevision: 7, CreateRevision: 5, Version: 2}
	o := DumpOptions{}
	d := newDumpWorker(context.Background(), &o)
	if _, ok := d.fast(&kv); ok {
		t.Fatal("the short way wrote an object with a string that is not valid UTF-8")
	}
	want, err := previousObject(t, o.Codec, kv, false)
	if err != nil {
		t.Fatal(err)
	}
	var rec DumpRecord
	if u := d.decode(&kv, &rec); u != readOK {
		t.Fatalf("decode: %v, %s", u, rec.Error)
	}
	if !bytes.Equal(rec.Object, want) {
		t.Errorf("the long way differs:\n got %s\nwant %s", rec.Object, want)
	}
	if !bytes.Contains(rec.Object, []byte("a\ufffdb\ufffd")) {
		t.Errorf("bad bytes not written as U+FFFD: %s", rec.Object)
	}
}
