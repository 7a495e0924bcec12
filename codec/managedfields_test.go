package codec

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCorruptManagedFields decodes values whose managedFields hold bytes
// that are not JSON (the protobuf is well formed; fieldsV1 is carried as
// raw bytes): they cannot be decoded, and the error says so with
// ErrMalformed, for a compiled-in kind and for one this build does not know.
func TestCorruptManagedFields(t *testing.T) {
	bad := []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":`)}}}

	obj, err := Decode(readFile(t, "../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-1__bound.bin"))
	if err != nil {
		t.Fatal(err)
	}
	pvc := obj.Typed.(*corev1.PersistentVolumeClaim).DeepCopy()
	pvc.ManagedFields = bad
	typed, err := EncodeTyped(pvc, FormatProtobuf)
	if err != nil {
		t.Fatal(err)
	}

	meta := metav1.ObjectMeta{Name: "x", Namespace: "demo", UID: "u", ManagedFields: bad}
	mb, err := meta.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var tm, raw []byte
	tm = protowire.AppendTag(tm, 1, protowire.BytesType)
	tm = protowire.AppendString(tm, "example.com/v1")
	tm = protowire.AppendTag(tm, 2, protowire.BytesType)
	tm = protowire.AppendString(tm, "Thing")
	raw = protowire.AppendTag(raw, 1, protowire.BytesType)
	raw = protowire.AppendBytes(raw, mb)
	unknown := append([]byte{}, ProtobufMagic...)
	unknown = protowire.AppendTag(unknown, 1, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, tm)
	unknown = protowire.AppendTag(unknown, 2, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, raw)

	for name, value := range map[string][]byte{"known kind": typed, "unknown kind": unknown} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(value)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode = %v, want ErrMalformed", err)
			}
		})
	}
}
