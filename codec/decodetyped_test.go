package codec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDecodeTypedIsDecode checks that DecodeTyped, on the object
// CheckStoredTyped decoded, gives what Decode gives, on every corpus value
// and on one whose managedFields hold bytes that are no JSON (Decode
// fails on it, and so must DecodeTyped).
func TestDecodeTypedIsDecode(t *testing.T) {
	values := corpusValues(t)
	pod := readFile(t, "../fixtures/corpus/plain/pods__demo__web-0.bin")
	values["bad fieldsV1"] = withBadFieldsV1(t, pod)
	for name, v := range values {
		_, typed, err := CheckStoredTyped(v, schema.GroupVersionKind{}, false)
		if err != nil || typed == nil {
			continue // not a protobuf value of a built-in kind
		}
		want, werr := Decode(v)
		got, gerr := DecodeTyped(v, typed)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Errorf("%s: DecodeTyped error %v, Decode's %v", name, gerr, werr)
			continue
		}
		if werr == nil {
			if d := cmp.Diff(want.Content, got.Content); d != "" {
				t.Errorf("%s: DecodeTyped differs from Decode (-want +got):\n%s", name, d)
			}
		} else if name == "bad fieldsV1" {
			t.Logf("both fail: %v", werr)
		}
	}
	if _, ok := values["bad fieldsV1"]; !ok {
		t.Fatal("no crafted value")
	}
}

// withBadFieldsV1 is the stored pod value with a managedFields entry
// whose fieldsV1 is cut short: well-formed protobuf, no JSON.
func withBadFieldsV1(t *testing.T, value []byte) []byte {
	t.Helper()
	obj, err := Decode(value)
	if err != nil {
		t.Fatal(err)
	}
	pod := obj.Typed.(*corev1.Pod).DeepCopy()
	pod.ManagedFields = append(pod.ManagedFields, metav1.ManagedFieldsEntry{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":`)}})
	b, err := EncodeTyped(pod, FormatProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// corpusValues are the corpus's values by name.
func corpusValues(t *testing.T) map[string][]byte {
	t.Helper()
	values := map[string][]byte{}
	for _, f := range corpusFiles(t) {
		values[corpusName(f)] = readFile(t, f)
	}
	return values
}
