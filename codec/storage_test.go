package codec

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var configMapKind = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// TestCheckStored: CheckStored accepts every value a real apiserver wrote,
// with the envelope's kind, and refuses what Decode refuses for damage:
// cut short, not an object; a Secret's bytes are never quoted.
func TestCheckStored(t *testing.T) {
	files, err := filepath.Glob("../fixtures/corpus/plain/*.bin")
	if err != nil || len(files) == 0 {
		t.Fatalf("corpus: %v", err)
	}
	for _, f := range files {
		v, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		key := "/registry/" + strings.ReplaceAll(strings.TrimSuffix(filepath.Base(f), ".bin"), "__", "/")
		want, derr := DecodeAt(key, v, false)
		s, err := CheckStored(v, schema.GroupVersionKind{}, IsSecretKey(key))
		if (err == nil) != (derr == nil) || (derr == nil && (s.APIVersion != want.GVK.GroupVersion().String() || s.Kind != want.GVK.Kind)) {
			t.Errorf("%s: CheckStored = %+v, %v; Decode = %v", filepath.Base(f), s, err, derr)
		}
		// Cut in the middle: refused always.
		if _, err := CheckStored(v[:len(v)/2], schema.GroupVersionKind{}, false); err == nil {
			t.Errorf("%s cut to half: accepted", filepath.Base(f))
		}
	}
	if _, err := CheckStored([]byte("hunter2-PLAINTEXT"), schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, true); err == nil || strings.Contains(err.Error(), "hunter") {
		t.Errorf("a Secret's bytes: %v", err)
	}
}

// TestCheckStoredAsTheAPIServer: what the apiserver's storage decoder
// reads and what Summarize alone took for readable: a value stored
// base64-wrapped, JSON without its kind (filled from the resource), YAML;
// a wrong wire type in the body of a kind the scheme holds is refused.
func TestCheckStoredAsTheAPIServer(t *testing.T) {
	cm, err := os.ReadFile("../fixtures/corpus/plain/configmaps__demo__web-config.bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		value    []byte
		defaults schema.GroupVersionKind
		ok       bool
	}{
		{"base64-wrapped protobuf", []byte(base64.StdEncoding.EncodeToString(cm)), configMapKind, true},
		{"JSON with apiVersion, no kind", []byte(`{"apiVersion":"v1","metadata":{"name":"x"}}`), configMapKind, true},
		{"JSON with apiVersion, no kind, no resource kind", []byte(`{"apiVersion":"v1","metadata":{"name":"x"}}`), schema.GroupVersionKind{}, false},
		{"YAML", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), configMapKind, true},
		{"JSON of the wrong type", []byte(`{"apiVersion":"v1","kind":"ConfigMap","data":[1]}`), configMapKind, false},
		{"wrong wire type in the body", wrongWireType(t, cm), configMapKind, false},
		{"CBOR", append(append([]byte{}, CBORMagic...), 0xa0), configMapKind, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Summarize(tc.value); tc.name == "wrong wire type in the body" && err != nil {
				t.Fatalf("the metadata does not summarize: nothing to test: %v", err)
			}
			s, err := CheckStored(tc.value, tc.defaults, false)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckStored = %+v, %v; want ok %v", s, err, tc.ok)
			}
			if err == nil && (s.Kind != "ConfigMap" || s.Name == "") {
				t.Errorf("summary %+v", s)
			}
			if tc.name == "CBOR" && !errors.Is(err, ErrUnsupported) {
				t.Errorf("CBOR: %v, want ErrUnsupported", err)
			}
		})
	}
}

// wrongWireType is value, a protobuf ConfigMap with data, with the wire
// type of its data field (2) changed to varint, every length kept.
func wrongWireType(t *testing.T, value []byte) []byte {
	env, err := ParseUnknown(value)
	if err != nil {
		t.Fatal(err)
	}
	raw := append([]byte{}, env.Raw...)
	fields, err := parseFields(raw)
	if err != nil {
		t.Fatal(err)
	}
	at := 0
	for _, f := range fields {
		if f.num == 2 {
			raw[at] &^= 7
			return env.WithRaw(raw)
		}
		at += len(f.data)
	}
	t.Fatal("no data field")
	return nil
}

// TestDecodeAsTheAPIServer: Decode reads a value stored base64-wrapped,
// and DecodeAs JSON without its kind, which the apiserver reads.
func TestDecodeAsTheAPIServer(t *testing.T) {
	cm, err := os.ReadFile("../fixtures/corpus/plain/configmaps__demo__web-config.bin")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := Decode([]byte(base64.StdEncoding.EncodeToString(cm)))
	if err != nil || obj.Meta.Name != "web-config" || obj.Typed == nil {
		t.Fatalf("base64-wrapped: %v, %v", obj, err)
	}
	obj, err = DecodeAs("/registry/configmaps/demo/x", []byte(`{"apiVersion":"v1","metadata":{"name":"x"},"data":{"a":"1"}}`), configMapKind, false)
	if err != nil || obj.GVK != configMapKind || obj.Content["kind"] != "ConfigMap" || obj.Typed == nil {
		t.Fatalf("JSON without kind: %+v, %v", obj, err)
	}
}
