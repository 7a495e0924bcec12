package codec

import (
	"bytes"
	"encoding/base64"
	encjson "encoding/json"
	"errors"
	"fmt"
	"strings"

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
// *EncryptedError). An error about a value that is not an object quotes
// its first bytes; for a Secret's value, use DecodeSecret.
func Decode(value []byte) (*Object, error) {
	return decode(value, false)
}

// DecodeSecret is Decode for a value that is, or may be, a Secret's
// (IsSecretKey): its errors say what is wrong with the value and give its
// size, but never quote its bytes, nor the words of a JSON decoder that
// could (only the position of a syntax error, the field of a wrong type).
func DecodeSecret(value []byte) (*Object, error) {
	return decode(value, true)
}

// DecodeAt is Decode for the value stored at key: DecodeSecret when the
// key may hold a Secret (IsSecretKey), unless showSecrets.
func DecodeAt(key string, value []byte, showSecrets bool) (*Object, error) {
	return decode(value, IsSecretKey(key) && !showSecrets)
}

// IsSecretKey reports whether key may hold a Secret: it has a path
// segment "secrets" (<prefix>/secrets/NAMESPACE/NAME, whatever the
// apiserver's --etcd-prefix). A key of another resource named secrets
// matches too: its values are treated as secret, the safe side.
func IsSecretKey(key string) bool {
	return strings.Contains(key, "/secrets/")
}

// secretDetail is what a redacted error says instead of a decoder's words.
const secretDetail = "details not shown: a Secret's value"

// detail is a JSON decoder's error as an error message shows it: its
// words, or with redact only what cannot hold the value's bytes: where a
// syntax error is (and its words when they quote nothing), which field
// has the wrong type.
func detail(err error, redact bool) string {
	if !redact {
		return err.Error()
	}
	var se *encjson.SyntaxError
	var te *encjson.UnmarshalTypeError
	switch {
	case errors.As(err, &se) && !strings.ContainsAny(se.Error(), `'"`):
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d (%s)", se.Offset, secretDetail)
	case errors.As(err, &te):
		what, _, _ := strings.Cut(te.Value, " ") // "number 123": the kind only
		return fmt.Sprintf("cannot unmarshal %s into field %s of type %v", what, te.Field, te.Type)
	}
	return secretDetail
}

// DecodeAs is DecodeAt for a value stored under a key of a resource whose
// kind is defaults (zero: not known): JSON without apiVersion or kind
// gets them from defaults, as the apiserver's JSON decoder fills them
// from the resource's type.
func DecodeAs(key string, value []byte, defaults schema.GroupVersionKind, showSecrets bool) (*Object, error) {
	return decodeAs(value, defaults, IsSecretKey(key) && !showSecrets)
}

func decode(value []byte, redact bool) (*Object, error) {
	return decodeAs(value, schema.GroupVersionKind{}, redact)
}

// unwrapBase64 returns what a value stored base64-wrapped holds, as the
// apiserver's storage codec's last decoder reads it (standard encoding),
// when that is protobuf or JSON; ok is false otherwise.
func unwrapBase64(value []byte) (inner []byte, ok bool) {
	inner = make([]byte, base64.StdEncoding.DecodedLen(len(value)))
	n, err := base64.StdEncoding.Decode(inner, value)
	if err != nil {
		return nil, false
	}
	inner = inner[:n]
	switch Detect(inner) {
	case FormatProtobuf, FormatJSON:
		return inner, true
	}
	return nil, false
}

func decodeAs(value []byte, defaults schema.GroupVersionKind, redact bool) (*Object, error) {
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
		return decodeProtobuf(value, nil, redact, false)
	case FormatJSON:
		return decodeJSON(value, defaults, redact)
	case FormatCBOR:
		return nil, fmt.Errorf("decode: CBOR-encoded value (apiserver CBOR storage): %w", ErrUnsupported)
	}
	if inner, ok := unwrapBase64(value); ok {
		// Stored base64-wrapped: the object is what it holds (a write
		// stores it unwrapped, as the apiserver would).
		return decodeAs(inner, defaults, redact)
	}
	return nil, fmt.Errorf("decode: %d bytes that are neither a protobuf envelope, JSON, CBOR, an encrypted value nor either of the first two base64-wrapped (%s): %w", len(value), sniff(value, redact), ErrNotObject)
}

// sniff describes bytes that are not an object, for error messages: their
// start, quoted, unless redact.
func sniff(b []byte, redact bool) string {
	if redact {
		if len(b) == 8 {
			return "its bytes not shown: a Secret's value; an 8-byte value such as etcd's compact_rev_key is a revision, not an object"
		}
		return "its bytes not shown: a Secret's value"
	}
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

// DecodeTyped is Decode for a protobuf value that CheckStoredTyped
// decoded into typed: the same Object and the same errors, without
// decoding the value a second time. typed is the caller's no more.
func DecodeTyped(value []byte, typed runtime.Object) (*Object, error) {
	return decodeProtobuf(value, typed, false, false)
}

// DecodeTypedBare is DecodeTyped for a caller that reads only the typed
// object: it fails when DecodeTyped fails, with the same errors, but its
// Object's Content may be nil, the object's JSON form not built when the
// value surely converts to it (convertsToJSON).
func DecodeTypedBare(value []byte, typed runtime.Object) (*Object, error) {
	return decodeProtobuf(value, typed, false, true)
}

// decodeProtobuf decodes a protobuf value; typed, when not nil, is the
// value already decoded by protoSerializer. With bare, Content may be
// left nil (DecodeTypedBare).
func decodeProtobuf(value []byte, typed runtime.Object, redact, bare bool) (*Object, error) {
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
		if typed == nil {
			typed, err = decodeProto(value)
		}
		if err != nil {
			// The protobuf decoder's words name fields and wire types,
			// never values.
			return nil, malformed("decode %s: %v", gvk.Kind, err)
		}
		obj.Typed = typed
		if err := obj.fillFromTyped(bare); err != nil {
			if errors.Is(err, ErrNotObject) {
				return nil, fmt.Errorf("decode %s: %w", gvk.Kind, err)
			}
			// Bytes the protobuf carries unchecked (managedFields'
			// fieldsV1 is raw JSON) that do not convert.
			return nil, malformed("decode %s: %s", gvk.Kind, detail(err, redact))
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

// fillFromTyped sets Meta and Content from Typed; with bare, Content
// only when Typed may not convert to JSON, to find out whether it does.
func (o *Object) fillFromTyped(bare bool) error {
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
	if bare && convertsToJSON(o.Typed) {
		return nil
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

func decodeJSON(value []byte, defaults schema.GroupVersionKind, redact bool) (*Object, error) {
	doc := bytes.TrimRight(value, "\r\n")
	if !encjson.Valid(doc) {
		return nil, malformed("decode: invalid JSON: %s", detail(jsonError(doc), redact))
	}
	content := map[string]any{}
	if err := utiljson.Unmarshal(doc, &content); err != nil {
		return nil, malformed("decode: JSON: %s", detail(err, redact))
	}
	apiVersion, _ := content["apiVersion"].(string)
	kind, _ := content["kind"].(string)
	if kind == "" && defaults.Kind != "" {
		kind, content["kind"] = defaults.Kind, defaults.Kind
	}
	if apiVersion == "" && defaults.Version != "" {
		apiVersion = defaults.GroupVersion().String()
		content["apiVersion"] = apiVersion
	}
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
		return nil, malformed("decode %s: metadata: %s", kind, detail(err, redact))
	}
	obj.Meta = meta
	if Known(obj.GVK) {
		typed, _, err := jsonSerializer.Decode(doc, &obj.GVK, nil)
		if err != nil {
			return nil, malformed("decode %s: %s", kind, detail(err, redact))
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
