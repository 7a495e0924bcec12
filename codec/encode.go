package codec

import (
	"bytes"
	encjson "encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// jsonStoredGroups are the API groups whose objects the apiserver stores as
// JSON even though their types are compiled in: CRDs and APIServices are
// served by the apiextensions and aggregator servers, which store JSON.
var jsonStoredGroups = map[string]bool{
	"apiextensions.k8s.io":   true,
	"apiregistration.k8s.io": true,
}

// StorageFormat returns the format the apiserver stores gvk in: protobuf
// for built-in kinds, JSON for custom resources, CRDs and APIServices.
func StorageFormat(gvk schema.GroupVersionKind) Format {
	if jsonStoredGroups[gvk.Group] || !Known(gvk) {
		return FormatJSON
	}
	return FormatProtobuf
}

// EncodeTyped encodes a typed object the way the apiserver stores it, in
// format (FormatProtobuf or FormatJSON). Like the apiserver, it never stores
// resourceVersion or selfLink; obj itself is not modified.
func EncodeTyped(obj runtime.Object, format Format) ([]byte, error) {
	gvks, _, err := Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		gvk = gvks[0]
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if acc, ok := obj.(metav1.Object); ok {
		acc.SetResourceVersion("")
		acc.SetSelfLink("")
	}
	var buf bytes.Buffer
	switch format {
	case FormatProtobuf:
		err = protoSerializer.Encode(obj, &buf)
	case FormatJSON:
		err = jsonSerializer.Encode(obj, &buf)
	default:
		return nil, fmt.Errorf("encode %s as %s: %w", gvk.Kind, format, ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", gvk.Kind, err)
	}
	return buf.Bytes(), nil
}

// EncodeContent encodes JSON-compatible object content in format. For
// FormatProtobuf the kind must be in the scheme; for FormatJSON the content
// is written as the apiserver writes unstructured objects: compact JSON with
// sorted keys and a trailing newline. resourceVersion and selfLink are
// dropped.
func EncodeContent(content map[string]any, format Format) ([]byte, error) {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(content)}
	u.SetResourceVersion("")
	u.SetSelfLink("")
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(u.Object, "metadata", "selfLink")
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, fmt.Errorf("encode: object has no apiVersion and kind: %w", ErrNotObject)
	}
	switch format {
	case FormatJSON:
		var buf bytes.Buffer
		if err := encjson.NewEncoder(&buf).Encode(u.Object); err != nil {
			return nil, fmt.Errorf("encode %s: %w", gvk.Kind, err)
		}
		return buf.Bytes(), nil
	case FormatProtobuf:
		typed, err := ToTyped(u.Object)
		if err != nil {
			return nil, err
		}
		return EncodeTyped(typed, FormatProtobuf)
	default:
		return nil, fmt.Errorf("encode %s as %s: %w", gvk.Kind, format, ErrUnsupported)
	}
}

// ToTyped converts JSON-compatible content into its Go type. Unknown fields
// are an error, so that nothing is dropped silently.
func ToTyped(content map[string]any) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: content}
	gvk := u.GroupVersionKind()
	if !Known(gvk) {
		return nil, fmt.Errorf("encode: %s is not in this build's scheme: %w", gvk, ErrUnsupported)
	}
	typed, err := Scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", gvk.Kind, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(content, typed, true); err != nil {
		return nil, fmt.Errorf("encode %s: %w", gvk.Kind, err)
	}
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	return typed, nil
}

// EncodeManifest turns a YAML or JSON manifest into the bytes the apiserver
// would store for it: protobuf for built-in kinds, JSON for the rest.
func EncodeManifest(manifest []byte) ([]byte, error) {
	js, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		return nil, fmt.Errorf("encode: parse manifest: %w", err)
	}
	content := map[string]any{}
	if err := encjson.Unmarshal(js, &content); err != nil {
		return nil, fmt.Errorf("encode: manifest is not one object: %w", err)
	}
	u := &unstructured.Unstructured{Object: content}
	return EncodeContent(content, StorageFormat(u.GroupVersionKind()))
}

// Reencode encodes o again from its decoded form, the way the apiserver
// would write it. For protobuf it needs Typed.
func (o *Object) Reencode() ([]byte, error) {
	switch {
	case o.Format == FormatProtobuf && o.Typed != nil:
		return EncodeTyped(o.Typed, FormatProtobuf)
	case o.Format == FormatJSON && o.Typed != nil:
		return EncodeTyped(o.Typed, FormatJSON)
	case o.Format == FormatJSON:
		return EncodeContent(o.Content, FormatJSON)
	default:
		return nil, fmt.Errorf("re-encode %s: kind not in this build's scheme: %w", o.GVK.Kind, ErrUnsupported)
	}
}

// RoundTrips reports whether re-encoding o reproduces its stored bytes
// exactly, and so whether an edit through its decoded form keeps every byte
// it does not mean to change. It returns nil or an error wrapping ErrLossy
// that says why.
func (o *Object) RoundTrips() error {
	b, err := o.Reencode()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrLossy, err)
	}
	if !bytes.Equal(b, o.Stored) {
		return fmt.Errorf("%w: re-encoding %s gives %d bytes instead of the %d stored (fields unknown to this build, or another writer's field order)", ErrLossy, o.GVK.Kind, len(b), len(o.Stored))
	}
	return nil
}
