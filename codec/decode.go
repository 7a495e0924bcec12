package codec

import (
	"bytes"
	encjson "encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Object is a decoded stored value.
type Object struct {
	// Format is the storage format the value was in.
	Format Format
	// GVK is the stored apiVersion and kind.
	GVK schema.GroupVersionKind
	// Typed is the object decoded into its Go type when the scheme holds the
	// kind; nil otherwise.
	Typed runtime.Object
	// Meta is the object's metadata. It is always set on success.
	Meta *metav1.ObjectMeta
	// Content is the object as JSON-compatible data, the way
	// `kubectl get -o json` shows it. For a protobuf kind the scheme does not
	// hold, it has apiVersion, kind and metadata only.
	Content map[string]any
	// Undecoded holds, for a protobuf kind the scheme does not hold, the
	// object's fields other than metadata, as stored.
	Undecoded []byte
	// Stored is the value that was decoded.
	Stored []byte
}

// Decode decodes a stored value (plaintext: an encrypted value yields an
// *EncryptedError).
func Decode(value []byte) (*Object, error) {
	if len(value) == 0 {
		return nil, fmt.Errorf("decode: %w", ErrEmpty)
	}
	switch Detect(value) {
	case FormatEncrypted:
		env, ok := ParseEncryptionHeader(value)
		if !ok {
			return nil, malformed("decode: value starts with %q but has no provider:version:key prefix", EncryptedMagic)
		}
		return nil, &EncryptedError{Header: env}
	case FormatProtobuf:
		return decodeProtobuf(value)
	case FormatJSON:
		return decodeJSON(value)
	case FormatCBOR:
		return nil, fmt.Errorf("decode: CBOR-encoded value (apiserver CBOR storage): %w", ErrUnsupported)
	default:
		return nil, fmt.Errorf("decode: %d bytes that are neither a protobuf envelope, JSON, CBOR nor an encrypted value (%s): %w", len(value), sniff(value), ErrNotObject)
	}
}

// sniff describes bytes that are not an object, for error messages.
func sniff(b []byte) string {
	const max = 16
	s := b
	if len(s) > max {
		s = s[:max]
	}
	if len(b) == 8 {
		return fmt.Sprintf("starts %q; an 8-byte value such as etcd's compact_rev_key is a revision, not an object", s)
	}
	return fmt.Sprintf("starts %q", s)
}

func decodeProtobuf(value []byte) (*Object, error) {
	env, err := ParseUnknown(value)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	gv, err := schema.ParseGroupVersion(env.APIVersion)
	if err != nil {
		return nil, malformed("decode: envelope apiVersion %q: %v", env.APIVersion, err)
	}
	gvk := gv.WithKind(env.Kind)
	obj := &Object{Format: FormatProtobuf, GVK: gvk, Stored: value}
	if Known(gvk) {
		typed, _, err := protoSerializer.Decode(value, nil, nil)
		if err != nil {
			return nil, malformed("decode %s: %v", gvk.Kind, err)
		}
		obj.Typed = typed
		if err := obj.fillFromTyped(); err != nil {
			if errors.Is(err, ErrNotObject) {
				return nil, fmt.Errorf("decode %s: %w", gvk.Kind, err)
			}
			// Bytes the protobuf carries unchecked (managedFields'
			// fieldsV1 is raw JSON) that do not convert.
			return nil, malformed("decode %s: %v", gvk.Kind, err)
		}
		return obj, nil
	}
	// A kind this build does not know: metadata is field 1 of every
	// top-level type; the rest stays undecoded.
	meta, rest, err := splitMetadata(env.Raw)
	if err != nil {
		return nil, malformed("decode %s: %v", gvk.Kind, err)
	}
	obj.Meta = meta
	obj.Undecoded = rest
	metaMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(meta)
	if err != nil {
		return nil, malformed("decode %s metadata: %v", gvk.Kind, err)
	}
	obj.Content = map[string]any{
		"apiVersion": env.APIVersion,
		"kind":       env.Kind,
		"metadata":   metaMap,
	}
	return obj, nil
}

// splitMetadata decodes field 1 of an object message as ObjectMeta and
// returns the remaining fields as stored.
func splitMetadata(raw []byte) (*metav1.ObjectMeta, []byte, error) {
	fields, err := parseFields(raw)
	if err != nil {
		return nil, nil, err
	}
	meta := &metav1.ObjectMeta{}
	var rest []byte
	found := false
	for _, f := range fields {
		if f.num == 1 && f.val != nil {
			if err := meta.Unmarshal(f.val); err != nil {
				return nil, nil, fmt.Errorf("metadata: %w", err)
			}
			found = true
			continue
		}
		rest = append(rest, f.data...)
	}
	if !found {
		return nil, nil, fmt.Errorf("no metadata (field 1)")
	}
	return meta, rest, nil
}

// fillFromTyped sets Meta and Content from Typed.
func (o *Object) fillFromTyped() error {
	o.Typed.GetObjectKind().SetGroupVersionKind(o.GVK)
	acc, ok := o.Typed.(metav1.Object)
	if !ok {
		return fmt.Errorf("%T has no metadata: %w", o.Typed, ErrNotObject)
	}
	if m, ok := any(acc).(interface{ GetObjectMeta() metav1.Object }); ok {
		if om, ok := m.GetObjectMeta().(*metav1.ObjectMeta); ok {
			o.Meta = om
		}
	}
	if o.Meta == nil {
		return fmt.Errorf("%T: cannot reach ObjectMeta", o.Typed)
	}
	b, err := encjson.Marshal(o.Typed)
	if err != nil {
		return err
	}
	content := map[string]any{}
	if err := utiljson.Unmarshal(b, &content); err != nil {
		return err
	}
	o.Content = content
	return nil
}

func decodeJSON(value []byte) (*Object, error) {
	doc := bytes.TrimRight(value, "\r\n")
	if !encjson.Valid(doc) {
		return nil, malformed("decode: invalid JSON: %v", jsonError(doc))
	}
	content := map[string]any{}
	if err := utiljson.Unmarshal(doc, &content); err != nil {
		return nil, malformed("decode: JSON: %v", err)
	}
	apiVersion, _ := content["apiVersion"].(string)
	kind, _ := content["kind"].(string)
	if apiVersion == "" || kind == "" {
		return nil, fmt.Errorf("decode: JSON without apiVersion and kind: %w", ErrNotObject)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, malformed("decode: apiVersion %q: %v", apiVersion, err)
	}
	obj := &Object{Format: FormatJSON, GVK: gv.WithKind(kind), Content: content, Stored: value}
	metaMap, _ := content["metadata"].(map[string]any)
	if metaMap == nil {
		return nil, fmt.Errorf("decode %s: no metadata: %w", kind, ErrNotObject)
	}
	meta := &metav1.ObjectMeta{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(metaMap, meta); err != nil {
		return nil, malformed("decode %s: metadata: %v", kind, err)
	}
	obj.Meta = meta
	if Known(obj.GVK) {
		typed, _, err := jsonSerializer.Decode(doc, nil, nil)
		if err != nil {
			return nil, malformed("decode %s: %v", kind, err)
		}
		typed.GetObjectKind().SetGroupVersionKind(obj.GVK)
		obj.Typed = typed
	}
	return obj, nil
}

// jsonError returns the decoder's error for invalid JSON.
func jsonError(doc []byte) error {
	var v any
	if err := encjson.Unmarshal(doc, &v); err != nil {
		return err
	}
	return fmt.Errorf("invalid JSON")
}

// Name returns "namespace/name" or "name".
func (o *Object) Name() string {
	if o.Meta.Namespace != "" {
		return o.Meta.Namespace + "/" + o.Meta.Name
	}
	return o.Meta.Name
}
