package codec

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestDecodeTypedBareFailsAsDecodeTyped checks that DecodeTypedBare
// fails exactly when DecodeTyped does, with its words, on every corpus
// value and on pods whose JSON form the conversion refuses while the
// encoding accepts it (a number beyond float64, a nesting past the
// decoder's limit in fieldsV1) or that do not encode at all.
func TestDecodeTypedBareFailsAsDecodeTyped(t *testing.T) {
	values := corpusValues(t)
	pod := readFile(t, "../fixtures/corpus/plain/pods__demo__web-0.bin")
	withFields := func(raw string) []byte {
		return withPod(t, pod, func(p *corev1.Pod) {
			p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}})
		})
	}
	crafted := map[string][]byte{
		"bad fieldsV1":       withFields(`{"f:spec":`),
		"huge number":        withFields(`{"f:spec":{"n":1e999}}`),
		"big integer":        withFields(`{"f:spec":{"n":123456789012345678901234567890,"m":-12.5e-3}}`),
		"deep fieldsV1":      withFields(strings.Repeat("[", 9998) + strings.Repeat("]", 9998)),
		"nested fieldsV1":    withFields(strings.Repeat("[", 100) + strings.Repeat("]", 100)),
		"number in a string": withFields(`{"f:spec":{"1e999":"\"1e999\\\\"}}`),
		"bad int-or-string": withPod(t, pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.IntOrString{Type: 7}}}}
		}),
	}
	for name, v := range crafted {
		values[name] = v
	}
	failed := map[string]bool{}
	for name, v := range values {
		_, typed, err := CheckStoredTyped(v, schema.GroupVersionKind{}, false)
		if err != nil || typed == nil {
			continue // not a protobuf value of a built-in kind
		}
		_, typed2, _ := CheckStoredTyped(v, schema.GroupVersionKind{}, false)
		want, werr := DecodeTyped(v, typed)
		got, gerr := DecodeTypedBare(v, typed2)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Errorf("%s: DecodeTypedBare error %v, DecodeTyped's %v", name, gerr, werr)
			continue
		}
		if werr == nil && (got.Meta == nil || got.Typed == nil || got.Meta.Name != want.Meta.Name) {
			t.Errorf("%s: DecodeTypedBare's object lacks its metadata or typed object", name)
		}
		failed[name] = werr != nil
	}
	for name, fails := range map[string]bool{"bad fieldsV1": true, "huge number": true, "deep fieldsV1": true, "bad int-or-string": true,
		"big integer": false, "nested fieldsV1": false, "number in a string": false} {
		if got, ok := failed[name]; !ok || got != fails {
			t.Errorf("%s: DecodeTyped fails %v, want %v (checked %v)", name, got, fails, ok)
		}
	}
}

// withPod is the stored pod value changed by edit.
func withPod(t *testing.T, value []byte, edit func(*corev1.Pod)) []byte {
	t.Helper()
	obj, err := Decode(value)
	if err != nil {
		t.Fatal(err)
	}
	pod := obj.Typed.(*corev1.Pod).DeepCopy()
	edit(pod)
	b, err := EncodeTyped(pod, FormatProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConvertsToJSONWalksStatusKinds checks that the kinds a listing
// reads the STATUS of are checked by their fieldsV1 and int-or-string
// values, not encoded whole: the day a Kubernetes release gives them a
// field checkJSON does not know, they are encoded again, slower but
// right, and this test says so.
func TestConvertsToJSONWalksStatusKinds(t *testing.T) {
	for _, obj := range []any{&corev1.Pod{}, &corev1.Namespace{}, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}} {
		if r := riskOf(reflect.TypeOf(obj)); r == riskDoubt {
			t.Errorf("%T is encoded whole to check it", obj)
		}
	}
	if r := riskOf(reflect.TypeFor[struct{ F float64 }]()); r != riskDoubt {
		t.Errorf("a float is not doubted: %v", r)
	}
}
