package codec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRedactTypedSecret checks that a Secret redacted in its Go type and
// encoded gives the content RedactSecret gives for the Secret's content.
func TestRedactTypedSecret(t *testing.T) {
	applied := `{"apiVersion":"v1","data":{"password":"aHVudGVyMg=="},"kind":"Secret"}`
	tests := []struct {
		name string
		s    corev1.Secret
	}{
		{"data", corev1.Secret{Data: map[string][]byte{"password": []byte("hunter2"), "empty": {}, "bin": {0, 0xff}}}},
		{"stringData", corev1.Secret{StringData: map[string]string{"token": "abc", "é": "日本"}}},
		{"last-applied", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{LastAppliedAnnotation: applied, "other": "kept"}}}},
		{"empty last-applied", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{LastAppliedAnnotation: ""}}}},
		{"nothing secret", corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}},
		{"everything", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: map[string]string{LastAppliedAnnotation: applied}},
			Data: map[string][]byte{"a": []byte("1")}, StringData: map[string]string{"b": "22"}, Type: corev1.SecretTypeTLS}},
	}
	toMap := func(v any) map[string]any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s.DeepCopy()
			s.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}
			want := RedactSecret(toMap(s))
			before := s.DeepCopy()
			orig := s.Annotations
			r, ok := RedactTypedSecret(s)
			if !ok {
				t.Fatal("declined")
			}
			if diff := cmp.Diff(want, toMap(r)); diff != "" {
				t.Errorf("redacted (-RedactSecret +RedactTypedSecret):\n%s", diff)
			}
			// The Secret's own annotations map is not written to.
			if diff := cmp.Diff(before.Annotations, orig); diff != "" {
				t.Errorf("annotations changed:\n%s", diff)
			}
		})
	}
	if _, ok := RedactTypedSecret(&corev1.Secret{Data: map[string][]byte{"nil": nil}}); ok {
		t.Error("a nil data value (encoded null) not declined")
	}
	// Invalid UTF-8: JSON writes each bad byte as U+FFFD (3 bytes), so the
	// map form's size differs; declined to the long way.
	if _, ok := RedactTypedSecret(&corev1.Secret{StringData: map[string]string{"k": "ab\xffcd"}}); ok {
		t.Error("invalid UTF-8 in stringData not declined")
	}
	if _, ok := RedactTypedSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{LastAppliedAnnotation: "{\xff\xfe}"}}}); ok {
		t.Error("invalid UTF-8 in the last-applied annotation not declined")
	}
}

// TestRedactTypedSecretCoversSecretFields keeps RedactTypedSecret in step
// with RedactSecret: it covers data, stringData and the last-applied
// annotation; a field added to secretFields must be added to it too.
func TestRedactTypedSecretCoversSecretFields(t *testing.T) {
	covered := map[string]bool{"data": true, "stringData": true, "metadata.annotations/" + LastAppliedAnnotation: true}
	for _, f := range secretFields {
		name := strings.Join(f.path, ".")
		if f.key != "" {
			name += "/" + f.key
		}
		if !covered[name] {
			t.Errorf("secretFields redacts %s, which RedactTypedSecret does not: add it there", name)
		}
		delete(covered, name)
	}
	for name := range covered {
		t.Errorf("RedactTypedSecret redacts %s, which secretFields no longer names", name)
	}
}
