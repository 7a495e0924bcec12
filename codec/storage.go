package codec

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/recognizer"
)

// storageDecoder is the decoder kube-apiserver's storage codec is built
// on (k8s.io/apiserver/pkg/server/storage.NewStorageCodec): the protobuf
// serializer, then the universal deserializer (JSON, YAML, protobuf), then
// the universal deserializer behind base64, for values stored
// base64-wrapped. CBOR is not among them: the apiserver reads it only with
// the alpha feature gate CBORServingAndStorage, off by default.
var storageDecoder = func() runtime.Decoder {
	universal := serializer.NewCodecFactory(Scheme).UniversalDeserializer()
	return recognizer.NewDecoder(protoSerializer, universal, runtime.NewBase64Serializer(nil, universal))
}()

// CheckStored reports whether value, a plaintext stored under a key of a
// resource whose kind is defaults (zero: not known, a custom resource),
// is read by kube-apiserver's decoding path, and what it holds: its
// Summary, or why not (an error matching ErrMalformed, ErrNotObject,
// ErrEmpty or ErrUnsupported; a Secret's bytes never quoted when redact).
//
// A protobuf value of a kind the scheme holds is decoded whole into its
// Go type, as the apiserver decodes it, so that a wrong wire type in its
// body is found and not only in its metadata. A value that is not
// protobuf goes through the apiserver's own storage decoder (JSON, YAML,
// the base64-wrapped forms of all three), whose JSON decoder fills an
// apiVersion or kind the value lacks from defaults, as the apiserver's
// does from the resource's type. A kind the scheme does not hold (a
// custom resource's JSON, a protobuf kind newer than this build) has
// only its metadata read: the apiserver's scheme is not known here.
// Which kind may be stored under the key is the caller's to check
// (resource.CheckKind).
func CheckStored(value []byte, defaults schema.GroupVersionKind, redact bool) (*Summary, error) {
	s, _, err := CheckStoredTyped(value, defaults, redact)
	return s, err
}

// CheckStoredTyped is CheckStored, and also returns the typed object it
// decoded a protobuf value of a built-in kind into (nil for any other
// value), which DecodeTyped then reads without decoding the value again.
func CheckStoredTyped(value []byte, defaults schema.GroupVersionKind, redact bool) (*Summary, runtime.Object, error) {
	s, err := summarize(value, redact)
	if err == nil {
		gvk := schema.FromAPIVersionAndKind(s.APIVersion, s.Kind)
		switch {
		case !Known(gvk):
			return s, nil, nil
		case s.Format == FormatProtobuf:
			typed, err := decodeProto(value)
			if err != nil {
				// The protobuf decoder's words name fields and wire
				// types, never values.
				return nil, nil, malformed("decode %s: %v", gvk.Kind, err)
			}
			return s, typed, nil
		}
	}
	if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrEmpty) {
		return nil, nil, err
	}
	var d *schema.GroupVersionKind
	if !defaults.Empty() {
		d = &defaults
	}
	obj, gvk, derr := storageDecoder.Decode(value, d, nil)
	switch {
	case derr != nil && err != nil:
		return nil, nil, err // summarize's words are the more precise
	case derr != nil:
		return nil, nil, malformed("decode %s: %s", s.Kind, detail(derr, redact))
	}
	format := Detect(value)
	if err != nil {
		// Read only by the apiserver's fallbacks: base64, YAML, or JSON
		// whose kind or apiVersion the resource supplies.
		format = FormatUnknown
	}
	m, merr := meta.Accessor(obj)
	if merr != nil {
		return nil, nil, fmt.Errorf("decode %s: %v: %w", gvk.Kind, merr, ErrNotObject)
	}
	return summaryOf(m, *gvk, format), nil, nil
}

// summaryOf is the Summary of an object of kind gvk with metadata m.
func summaryOf(m metav1.Object, gvk schema.GroupVersionKind, format Format) *Summary {
	s := &Summary{Format: format, APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Name: m.GetName(), Namespace: m.GetNamespace(), UID: string(m.GetUID()),
		CreationTimestamp: m.GetCreationTimestamp().UTC(), Finalizers: m.GetFinalizers(),
		DeletionGracePeriodSeconds: m.GetDeletionGracePeriodSeconds(), OwnerReferences: len(m.GetOwnerReferences())}
	if t := m.GetDeletionTimestamp(); t != nil {
		s.DeletionTimestamp = t.UTC()
	}
	return s
}
